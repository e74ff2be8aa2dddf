/* test_opsev.c - operational events: names and the operator's choice of
 * types, payloads, the free-space rule, the breaker's quiet period (fake
 * clock), auto-disable's clock, and notify's queueing into a store
 * (rows for the ops endpoint, rolled back with their round). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "breaker.h"
#include "config.h"
#include "notify.h"
#include "opsev.h"
#include "store_mem.h"

#define SEC ((int64_t)1000)
#define MIN (60 * SEC)
#define T0 ((int64_t)1800000000000)

static void types_parse_and_name(void **state)
{
    unsigned m;
    char err[400];
    int t;

    for (t = 1; t < OPSEV__COUNT; t++) {
        assert_non_null(opsev_type_name((enum opsev_type)t));
        assert_int_equal(opsev_parse_types(opsev_type_name((enum opsev_type)t), &m, err, sizeof err), 0);
        assert_int_equal(m, OPSEV_BIT(t));
    }
    assert_null(opsev_type_name(OPSEV_NONE));
    assert_null(opsev_type_name(OPSEV__COUNT));
    assert_int_equal(opsev_parse_types("*", &m, err, sizeof err), 0);
    assert_int_equal(m, OPSEV_ALL);
    assert_int_equal(opsev_parse_types(" endpoint.disabled ,storage.low_space", &m, err, sizeof err), 0);
    assert_int_equal(m, OPSEV_BIT(OPSEV_DISABLED) | OPSEV_BIT(OPSEV_LOW_SPACE));
    assert_int_equal(opsev_parse_types("", &m, err, sizeof err), 0);
    assert_int_equal(m, 0);
    assert_int_equal(opsev_parse_types("endpoint.disabled, endpoint.exploded", &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "'endpoint.exploded'"));
    assert_int_equal(opsev_parse_types("endpoint.disable", &m, err, sizeof err), -1);   /* no prefixes */
}

static void payload_is_json_with_figures(void **state)
{
    struct opsev ev;
    struct buf b = {0};
    cJSON *j, *f;

    opsev_init(&ev, OPSEV_DISABLED, T0, "partner-a", "disabled: no successful delivery for %s", "72h");
    opsev_fig(&ev, "consecutive_failures", 41);
    opsev_fig(&ev, "failing_since_ms", T0 - 72 * 60 * MIN);
    ev.text_key = "last_error_class";
    strcpy(ev.text, "http_503 \"quoted\"");
    assert_int_equal(opsev_payload(&ev, &b), 0);
    j = cJSON_ParseWithLength(b.p, b.len);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "type")->valuestring, "endpoint.disabled");
    assert_string_equal(cJSON_GetObjectItem(j, "time")->valuestring, "2027-01-15T08:00:00.000Z");
    assert_string_equal(cJSON_GetObjectItem(j, "endpoint")->valuestring, "partner-a");
    assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "disabled: no successful delivery for 72h");
    f = cJSON_GetObjectItem(j, "figures");
    assert_int_equal(cJSON_GetObjectItem(f, "consecutive_failures")->valuedouble, 41);
    assert_true(cJSON_GetObjectItem(f, "failing_since_ms")->valuedouble == (double)(T0 - 72 * 60 * MIN));
    assert_string_equal(cJSON_GetObjectItem(f, "last_error_class")->valuestring, "http_503 \"quoted\"");
    cJSON_Delete(j);
    buf_reset(&b);
    /* not about an endpoint: null; figures past the cap are dropped */
    opsev_init(&ev, OPSEV_LOW_SPACE, T0, NULL, "low");
    for (int i = 0; i < OPSEV_FIGURES_MAX + 3; i++)
        opsev_fig(&ev, "n", i);
    assert_int_equal(ev.nfig, OPSEV_FIGURES_MAX);
    assert_int_equal(opsev_payload(&ev, &b), 0);
    j = cJSON_ParseWithLength(b.p, b.len);
    assert_non_null(j);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "endpoint")));
    cJSON_Delete(j);
    buf_free(&b);
}

static void min_free_rule(void **state)
{
    struct opsev_min_free m;
    const uint64_t G = 1ULL << 30;

    assert_int_equal(opsev_parse_min_free("10%, 1GiB", &m), 0);
    assert_true(m.pct == 10 && m.bytes == (int64_t)G);
    /* the smaller of the two: 10% of 4 GiB is 409.6 MiB */
    assert_true(opsev_low_space(&m, 400ULL << 20, 4 * G));
    assert_false(opsev_low_space(&m, 410ULL << 20, 4 * G));
    /* on 100 GiB, 1 GiB is the smaller */
    assert_true(opsev_low_space(&m, G - 1, 100 * G));
    assert_false(opsev_low_space(&m, 2 * G, 100 * G));
    assert_int_equal(opsev_parse_min_free("2GiB", &m), 0);
    assert_true(m.pct < 0 && m.bytes == 2 * (int64_t)G);
    assert_true(opsev_low_space(&m, G, 1000 * G));
    assert_int_equal(opsev_parse_min_free("25%", &m), 0);
    assert_true(opsev_low_space(&m, 24, 100));
    assert_false(opsev_low_space(&m, 25, 100));
    assert_int_equal(opsev_parse_min_free("0%", &m), 0);
    assert_false(opsev_low_space(&m, 0, 100));
    assert_int_equal(opsev_parse_min_free("", &m), 0);   /* no rule */
    assert_false(opsev_low_space(&m, 0, 100));
    assert_int_equal(opsev_parse_min_free("101%", &m), -1);
    assert_int_equal(opsev_parse_min_free("-1%", &m), -1);
    assert_int_equal(opsev_parse_min_free("10%, 20%", &m), -1);
    assert_int_equal(opsev_parse_min_free("lots", &m), -1);
    assert_int_equal(opsev_parse_min_free("1GiB, 2GiB", &m), -1);
}

static void flapping_breaker_is_summarised(void **state)
{
    struct opsev_flap f = {0};
    const int64_t quiet = 10 * MIN;
    uint32_t held = 0;

    /* the first change goes at once */
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_OPENED, T0, quiet), 1);
    assert_int_equal(opsev_flap_due(&f, T0 + quiet, quiet, &held), OPSEV_NONE);
    /* closed, opened, closed within the period: held */
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_CLOSED, T0 + 1 * MIN, quiet), 0);
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_OPENED, T0 + 2 * MIN, quiet), 0);
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_CLOSED, T0 + 3 * MIN, quiet), 0);
    assert_int_equal(opsev_flap_due(&f, T0 + quiet - 1, quiet, &held), OPSEV_NONE);
    /* one summary when the period is over, in the state it ended in */
    assert_int_equal(opsev_flap_due(&f, T0 + quiet, quiet, &held), OPSEV_BREAKER_CLOSED);
    assert_int_equal(held, 3);
    assert_int_equal(opsev_flap_due(&f, T0 + 2 * quiet, quiet, &held), OPSEV_NONE);
    /* the summary started a new period: a change inside it is held */
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_OPENED, T0 + quiet + MIN, quiet), 0);
    assert_int_equal(opsev_flap_due(&f, T0 + 2 * quiet, quiet, &held), OPSEV_BREAKER_OPENED);
    assert_int_equal(held, 1);
    /* quiet long enough: sent at once again */
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_CLOSED, T0 + 5 * quiet, quiet), 1);
    /* a change while a summary waits past its period joins the summary */
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_OPENED, T0 + 5 * quiet + 1, quiet), 0);
    assert_int_equal(opsev_flap_note(&f, OPSEV_BREAKER_CLOSED, T0 + 7 * quiet, quiet), 0);
    assert_int_equal(opsev_flap_due(&f, T0 + 7 * quiet, quiet, &held), OPSEV_BREAKER_CLOSED);
    assert_int_equal(held, 2);
    /* quiet = 0: every change is sent */
    memset(&f, 0, sizeof f);
    for (int i = 0; i < 5; i++)
        assert_int_equal(opsev_flap_note(&f, i % 2 ? OPSEV_BREAKER_CLOSED : OPSEV_BREAKER_OPENED, T0, 0), 1);
}

static void failing_clock_for_auto_disable(void **state)
{
    struct breaker_cfg c = {.failure_threshold = 3, .cooldown_ms = MIN, .max_cooldown_ms = 60 * MIN};
    struct breaker b;
    struct breaker_transition t;
    const int64_t after = 72 * 60 * MIN;

    breaker_init(&b, &c);
    assert_false(breaker_failing_for(&b, after, T0 + 100 * after));   /* never attempted */
    breaker_record(&b, &c, 0, 0, 3, T0, &t);
    assert_int_equal(b.failing_since, T0);
    breaker_record(&b, &c, 0, 0, 3, T0 + MIN, &t);
    assert_int_equal(b.failing_since, T0);   /* the run's first failure */
    assert_false(breaker_failing_for(&b, after, T0 + after - 1));
    assert_true(breaker_failing_for(&b, after, T0 + after));
    assert_false(breaker_failing_for(&b, 0, T0 + 100 * after));       /* 0: never */
    /* one success ends the run */
    breaker_record(&b, &c, 1, 0, 3, T0 + 2 * MIN, &t);
    assert_int_equal(b.failing_since, 0);
    assert_false(breaker_failing_for(&b, after, T0 + 100 * after));
    breaker_record(&b, &c, 0, 0, 3, T0 + 3 * MIN, &t);
    assert_int_equal(b.failing_since, T0 + 3 * MIN);
}

/* ---- notify against the in-memory store ---- */

struct fx {
    struct mem_db *db;
    struct store *w;
    struct config c;
    struct notify n;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    f->db = mem_db_new();
    f->w = mem_store_open(f->db, STORE_WRITER);
    config_init(&f->c);
    free(f->c.ops_endpoint);
    f->c.ops_endpoint = strdup("alerts");
    f->c.ops_event_mask = OPSEV_ALL & ~OPSEV_BIT(OPSEV_LOW_SPACE);
    notify_init(&f->n, &f->c);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    notify_free(&f->n);
    store_close(f->w);
    mem_db_free(f->db);
    config_free(&f->c);
    free(f);
    return 0;
}

struct rows {
    int n;
    char types[8][64];
    int64_t ep[8];
};

static int take(void *ctx, const struct store_claimed *row)
{
    struct rows *r = ctx;
    cJSON *j = cJSON_ParseWithLength(row->payload, row->payload_len);

    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "type")->valuestring, row->event_type);
    assert_int_equal(strncmp(row->event_id, "ops_", 4), 0);
    cJSON_Delete(j);
    if (r->n < 8) {
        snprintf(r->types[r->n], sizeof r->types[0], "%s", row->event_type);
        r->ep[r->n] = row->endpoint_id;
    }
    r->n++;
    return 0;
}

static struct rows queued(struct fx *f, int64_t ep)
{
    struct rows r = {0};
    int n = 0;

    assert_int_equal(f->w->ops->begin(f->w, 1), 0);
    assert_int_equal(f->w->ops->claim(f->w, ep, T0 + 1, 100, 0, take, &r, &n), 0);
    f->w->ops->rollback(f->w);
    return r;
}

static void ev(struct fx *f, enum opsev_type t, const char *endpoint)
{
    struct opsev e;

    opsev_init(&e, t, T0, endpoint, "test");
    assert_int_equal(notify_emit(&f->n, &e), 0);
}

static void notify_queues_rows_for_the_ops_endpoint(void **state)
{
    struct fx *f = *state;
    size_t stored;
    struct rows r;
    const int64_t OPS = 7;

    /* not chosen, or about the ops endpoint itself: nowhere */
    ev(f, OPSEV_LOW_SPACE, NULL);
    ev(f, OPSEV_BREAKER_OPENED, "alerts");
    assert_int_equal(f->n.n, 0);
    ev(f, OPSEV_BREAKER_OPENED, "partner");
    ev(f, OPSEV_DEAD_LETTERS, NULL);
    assert_int_equal(f->n.n, 2);
    /* stored in the caller's transaction, gone once it commits */
    assert_int_equal(f->w->ops->begin(f->w, 1), 0);
    assert_int_equal(notify_flush(&f->n, f->w, OPS, 5, T0, &stored), 0);
    assert_int_equal(stored, 2);
    assert_int_equal(f->w->ops->commit(f->w), 0);
    notify_committed(&f->n);
    assert_int_equal(f->n.n, 0);
    r = queued(f, OPS);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.types[0], "endpoint.breaker_opened");
    assert_string_equal(r.types[1], "dead_letters.growing");
}

static void notify_rolls_back_with_its_round(void **state)
{
    struct fx *f = *state;
    size_t stored;
    const int64_t OPS = 7;

    ev(f, OPSEV_OLDEST_PENDING, NULL);   /* outside a round (the reader's) */
    notify_round_begin(&f->n);
    ev(f, OPSEV_BREAKER_OPENED, "partner");   /* the round's */
    assert_int_equal(f->w->ops->begin(f->w, 1), 0);
    assert_int_equal(notify_flush(&f->n, f->w, OPS, 5, T0, &stored), 0);
    assert_int_equal(stored, 2);
    f->w->ops->rollback(f->w);
    notify_undo(&f->n);
    /* the round's event went with it; the reader's waits */
    assert_int_equal(f->n.n, 1);
    assert_int_equal(queued(f, OPS).n, 0);
    assert_int_equal(f->w->ops->begin(f->w, 1), 0);
    assert_int_equal(notify_flush(&f->n, f->w, OPS, 5, T0, &stored), 0);
    assert_int_equal(stored, 1);
    assert_int_equal(f->w->ops->commit(f->w), 0);
    notify_committed(&f->n);
    assert_string_equal(queued(f, OPS).types[0], "queue.oldest_pending_alert");
    /* no ops endpoint in the table: dropped, nothing stored */
    ev(f, OPSEV_DISABLED, "partner");
    assert_int_equal(f->w->ops->begin(f->w, 1), 0);
    assert_int_equal(notify_flush(&f->n, f->w, 0, 5, T0, &stored), 0);
    assert_int_equal(stored, 0);
    f->w->ops->rollback(f->w);
    assert_int_equal(f->n.n, 0);
}

static void no_ops_endpoint_no_events(void **state)
{
    struct config c;
    struct notify n;
    struct opsev e;

    config_init(&c);
    notify_init(&n, &c);   /* [ops] endpoint empty by default */
    opsev_init(&e, OPSEV_DISABLED, T0, "partner", "x");
    assert_int_equal(notify_emit(&n, &e), 0);
    assert_int_equal(n.n, 0);
    assert_false(notify_wanted(&n, OPSEV_DISABLED, "partner"));
    notify_free(&n);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(types_parse_and_name),
        cmocka_unit_test(payload_is_json_with_figures),
        cmocka_unit_test(min_free_rule),
        cmocka_unit_test(flapping_breaker_is_summarised),
        cmocka_unit_test(failing_clock_for_auto_disable),
        cmocka_unit_test_setup_teardown(notify_queues_rows_for_the_ops_endpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(notify_rolls_back_with_its_round, setup, teardown),
        cmocka_unit_test(no_ops_endpoint_no_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
