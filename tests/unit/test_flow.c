/* test_flow.c - a message's way through the writer's rooms: claims
 * (dispatch.c), results (settle.c), the endpoint table (registry.c), the
 * jobs (maint.c) and admin requests (admin.c), driven through the
 * in-memory store with a fake clock: no SQLite, no sockets, no threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "breaker.h"
#include "config.h"
#include "dispatch.h"
#include "intake.h"
#include "maint.h"
#include "notify.h"
#include "outcome.h"
#include "registry.h"
#include "settle.h"
#include "store.h"
#include "store_mem.h"

#define T0 1800000000000LL
#define MONO0 1000000LL

struct fx {
    struct config c;
    struct mem_db *db;
    struct store *st;
    struct registry reg;
    struct cron cron;
    struct maint maint;
    int64_t now, mono;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    if (config_init(&f->c) < 0)
        return -1;
    f->c.dflt.failure_threshold = 3;
    f->c.dflt.cooldown_ms = 60000;
    f->c.dflt.max_cooldown_ms = 600000;
    f->c.dflt.max_in_flight = 4;
    f->c.dflt.max_attempts = 5;
    f->c.dflt.base_delay_ms = 1000;
    f->c.dflt.max_delay_ms = 8000;
    f->c.claim_ahead = 0;   /* the cases about claiming ahead turn it on */
    f->db = mem_db_new();
    f->st = mem_store_open(f->db, STORE_WRITER);
    f->now = T0;
    f->mono = MONO0;
    if (registry_init(&f->reg, &f->c) < 0)
        return -1;
    cron_init(&f->cron, f->mono);
    if (maint_register(&f->maint, &f->c, f->st, &f->reg, &f->cron, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    registry_free(&f->reg);
    store_close(f->st);
    mem_db_free(f->db);
    config_free(&f->c);
    free(f);
    return 0;
}

#define OK(call) assert_int_equal((call), 0)

/* An endpoint as the config file would declare it. */
static struct endpoint *add_endpoint(struct fx *f, const char *name, const char *extra_key, const char *extra_val)
{
    struct ep_def d;
    char err[256];
    struct endpoint *e;

    ep_def_init(&d);
    snprintf(d.name, sizeof d.name, "%s", name);
    OK(ep_def_set(&d, "url", "https://hooks.example.com/in", err, sizeof err));
    if (extra_key)
        OK(ep_def_set(&d, extra_key, extra_val, err, sizeof err));
    if (f->c.n_endpoints == 0)
        f->c.endpoints = NULL;
    f->c.endpoints = realloc(f->c.endpoints, (f->c.n_endpoints + 1) * sizeof *f->c.endpoints);
    OK(ep_def_copy(&f->c.endpoints[f->c.n_endpoints++], &d));
    OK(admin_sync_config(&f->reg, f->st, f->c.endpoints, f->c.n_endpoints, 0, f->now));
    ep_def_free(&d);
    e = registry_by_name(&f->reg, name);
    assert_non_null(e);
    return e;
}

static void enqueue(struct fx *f, struct endpoint *e, int n)
{
    static int seq;
    int i;

    OK(f->st->ops->begin(f->st, 1));
    for (i = 0; i < n; i++) {
        char eid[32];
        struct store_enqueue q = {e->id, eid, NULL, "{}", 2, (int)e->conf->eff.max_attempts, NULL, 0, 0, 0, 0, 0};
        snprintf(eid, sizeof eid, "evt_%d", ++seq);
        OK(f->st->ops->enqueue(f->st, &q, 1, f->now));
    }
    OK(f->st->ops->commit(f->st));
    e->next_due = f->now;
}

/* An endpoint whose adaptive limit has already grown to its cap (a test
 * about caps or fairness, not about the limiter). */
static void warm(struct endpoint *e)
{
    e->lim.limit = e->lim.cap;
    e->lim.slow_start = 0;
}

/* Three endpoints warmed up, n rows queued for each. */
static void fill3(struct fx *f, struct endpoint *a, struct endpoint *b, struct endpoint *c, int n)
{
    warm(a);
    warm(b);
    warm(c);
    enqueue(f, a, n);
    enqueue(f, b, n);
    enqueue(f, c, n);
}

/* One writer round that only claims; returns the jobs. */
static struct djob *claim(struct fx *f, int64_t budget)
{
    struct djob *jobs = NULL;

    registry_round_begin(&f->reg);
    OK(f->st->ops->begin(f->st, 1));
    OK(dispatch_claim(&f->reg, f->st, f->now, f->mono, budget, &jobs));
    OK(registry_save_health(&f->reg, f->st, f->now));
    OK(f->st->ops->commit(f->st));
    registry_round_commit(&f->reg);
    return jobs;
}

static int count(const struct djob *j, int64_t endpoint_id)
{
    int n = 0;

    for (; j; j = j->next)
        n += endpoint_id == 0 || j->ep->id == endpoint_id;
    return n;
}

/* Give every job the same result. */
static void result(struct djob *list, int status, enum errclass errc)
{
    for (; list; list = list->next) {
        list->attempted = 1;
        list->http_status = status;
        list->errc = errc;
        list->sample = status > 0;
        list->response_ms = 30;
        list->retry_after_ms = -1;
        snprintf(list->error, sizeof list->error, "%s", status >= 300 ? "nope" : "");
    }
}

/* One writer round as writer.c runs it: results, then the round's
 * operational events and history counts, in one transaction. fail:
 * make the commit fail and undo the round. Frees the jobs on success. */
static void settle_round(struct fx *f, struct djob *list, int fail)
{
    registry_round_begin(&f->reg);
    OK(f->st->ops->begin(f->st, 1));
    OK(settle_results(&f->reg, f->st, list, f->now));
    OK(registry_save_health(&f->reg, f->st, f->now));
    OK(registry_notify_flush(&f->reg, f->st, f->now));
    OK(registry_history_flush(&f->reg, f->st));
    if (fail) {
        mem_fail_at(f->db, "commit", STORE_E_FULL);
        assert_int_equal(f->st->ops->commit(f->st), -1);
        f->st->ops->rollback(f->st);
        registry_round_undo(&f->reg);
        return;
    }
    OK(f->st->ops->commit(f->st));
    registry_round_commit(&f->reg);
    while (list) {
        struct djob *n = list->next;
        djob_free(list);
        list = n;
    }
}

/* One writer round that only settles; frees the jobs. */
static void settle(struct fx *f, struct djob *list)
{
    settle_round(f, list, 0);
}

struct st_count {
    int n[MSG__COUNT];
};

static struct st_count statuses(struct fx *f)
{
    struct st_count c;
    struct store_stats s;
    struct store *r = mem_store_open(f->db, STORE_READER);
    int i;

    OK(r->ops->queue_stats(r, f->now, 1, &s));
    for (i = 0; i < MSG__COUNT; i++)
        c.n[i] = (int)s.n[i];
    store_close(r);
    return c;
}

/* A restart: a new endpoint table loaded from what was stored. */
static int load_ep(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    return registry_install(ctx, id, d, from_config) ? 0 : -1;
}

static int load_health(void *ctx, const struct store_health *h)
{
    registry_load_health(ctx, h);
    return 0;
}

static void restart(struct fx *f)
{
    int64_t n;

    registry_free(&f->reg);
    OK(registry_init(&f->reg, &f->c));
    OK(f->st->ops->begin(f->st, 1));
    OK(f->st->ops->recover(f->st, f->now, &n));
    OK(f->st->ops->endpoints_load(f->st, load_ep, &f->reg));
    OK(f->st->ops->health_load(f->st, load_health, &f->reg));
    OK(f->st->ops->commit(f->st));
}

/* ---- the cases ---- */

static void claims_are_capped_and_fair(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", NULL, NULL), *b = add_endpoint(f, "b", NULL, NULL),
                    *c = add_endpoint(f, "c", "max_in_flight", "1");
    struct djob *jobs;

    fill3(f, a, b, c, 10);
    jobs = claim(f, 100);
    /* each endpoint up to its cap: 4, 4, 1 */
    assert_int_equal(count(jobs, a->id), 4);
    assert_int_equal(count(jobs, b->id), 4);
    assert_int_equal(count(jobs, c->id), 1);
    assert_int_equal(f->reg.in_flight, 9);
    assert_int_equal(a->in_flight, 4);
    /* full: nothing more until results come back */
    assert_null(claim(f, 100));
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    assert_int_equal(f->reg.in_flight, 0);
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 9);
    /* a small budget goes round the endpoints, not always to the first */
    jobs = claim(f, 2);
    assert_int_equal(count(jobs, 0), 2);
    {
        struct djob *more = claim(f, 2);
        int firsts = count(jobs, a->id) + count(more, a->id);
        assert_true(firsts < 4);
        result(more, 200, ERRC_NONE);
        settle(f, more);
    }
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
}

static void rate_windows_hold_back_claims(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", "rate", "2/s, 3/m");
    struct djob *jobs;

    enqueue(f, a, 10);
    /* each window's bucket holds one second of its rate, at least one
     * token: the minute's 3/m allows one now, then one per 20 s */
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    f->mono += 1000;
    f->now += 1000;
    assert_null(claim(f, 100));   /* the second's bucket has room, the minute's not */
    assert_int_equal(dispatch_next_wake(&f->reg, f->now, f->mono), f->now + 19000);
    f->mono += 19000;
    f->now += 19000;
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    assert_null(claim(f, 100));
    assert_true(dispatch_next_wake(&f->reg, f->now, f->mono) > f->now);
}

static void breaker_opens_at_threshold_then_one_probe(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", "max_in_flight", "1");
    struct djob *jobs;
    int i;

    enqueue(f, a, 10);
    for (i = 0; i < 3; i++) {
        jobs = claim(f, 100);
        assert_int_equal(count(jobs, 0), 1);
        result(jobs, 503, ERRC_NONE);
        settle(f, jobs);
        /* retry rows wait for their backoff; new ones are due */
    }
    assert_int_equal(a->br.state, BREAKER_OPEN);
    assert_int_equal(a->br.consecutive_failures, 3);
    assert_int_equal(a->conf->hold, 1);   /* jobs claimed ahead may not start */
    assert_null(claim(f, 100));   /* open: nothing goes */
    /* the state is stored: a restart keeps it */
    restart(f);
    a = registry_by_name(&f->reg, "a");
    assert_int_equal(a->br.state, BREAKER_OPEN);
    assert_null(claim(f, 100));
    /* after the cooldown exactly one probe */
    f->now += 60000;
    f->mono += 60000;
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    assert_true(jobs->probe);
    assert_int_equal(a->br.state, BREAKER_HALF_OPEN);
    assert_null(claim(f, 100));
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    assert_int_equal(a->br.state, BREAKER_CLOSED);
    assert_int_equal(a->conf->hold, 0);
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);   /* max_in_flight 1 */
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
}

/* The wall clock steps by ms (elapsed time does not move): what the
 * writer does when it sees it (writer.c save_step): the endpoints' times
 * at once, the stored ones in one transaction, then every endpoint asks
 * the store for its next due row. */
static void clock_step(struct fx *f, int64_t ms)
{
    int64_t rows;
    size_t i;

    f->now += ms;
    registry_clock_step(&f->reg, ms);
    OK(f->st->ops->begin(f->st, 0));
    OK(f->st->ops->clock_step(f->st, ms, 0, &rows));
    OK(f->st->ops->commit(f->st));
    for (i = 0; i < f->reg.n; i++)
        f->reg.v[i]->next_due = 0;
}

/* Back an hour with the breaker open and retries waiting: the cooldown
 * ends 60 s after the opening, as it would have; forward an hour with a
 * retry 5 s out: it waits its 5 s. */
static void clock_steps_keep_waits(void **state)
{
    struct fx *f = *state;
    const int64_t H = 3600000;
    struct endpoint *a = add_endpoint(f, "a", "max_in_flight", "1");
    struct djob *jobs;
    int i, delivered = 0;

    enqueue(f, a, 5);
    for (i = 0; i < 3; i++) {
        jobs = claim(f, 100);
        assert_int_equal(count(jobs, 0), 1);
        result(jobs, 503, ERRC_NONE);
        settle(f, jobs);
    }
    assert_int_equal(a->br.state, BREAKER_OPEN);
    clock_step(f, -H);
    assert_null(claim(f, 100));   /* still cooling down, not for an hour more */
    f->now += 59999;
    f->mono += 59999;
    assert_null(claim(f, 100));
    f->now += 1;
    f->mono += 1;
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    assert_true(jobs->probe);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    assert_int_equal(a->br.state, BREAKER_CLOSED);
    /* the three retries (due within 8 s of the failures) and the rest
     * go now: nothing waits for the hour the clock went back */
    for (i = 0; i < 10 && (jobs = claim(f, 100)); i++) {
        delivered += count(jobs, 0);
        result(jobs, 200, ERRC_NONE);
        settle(f, jobs);
    }
    assert_int_equal(delivered, 4);
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 5);
    /* a 503 asking for 5 s, then the clock an hour ahead */
    enqueue(f, a, 1);
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    result(jobs, 503, ERRC_NONE);
    jobs->retry_after_ms = 5000;
    settle(f, jobs);
    clock_step(f, H);
    assert_null(claim(f, 100));
    f->now += 4999;
    f->mono += 4999;
    assert_null(claim(f, 100));
    f->now += 1;
    f->mono += 1;
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
}

/* The default cap is 32, yet a dead endpoint gets its requests one at a
 * time: exactly failure_threshold of them before the breaker opens; a
 * healthy one's limit doubles with each round of successes. */
static void adaptive_limit_starts_small(void **state)
{
    struct fx *f = *state;
    struct endpoint *dead = add_endpoint(f, "dead", "max_in_flight", "32"),
                    *fast = add_endpoint(f, "fast", "max_in_flight", "32");
    struct djob *jobs;
    int sent = 0, round, want = 1;

    enqueue(f, dead, 40);
    enqueue(f, fast, 100);
    for (round = 0; round < 10; round++) {
        jobs = claim(f, 1000);
        assert_true(count(jobs, dead->id) <= 1);
        sent += count(jobs, dead->id);
        if (round < 5)
            assert_int_equal(count(jobs, fast->id), want);   /* 1, 2, 4, 8, 16 */
        want *= 2;
        for (struct djob *j = jobs; j; j = j->next) {
            j->attempted = 1;
            j->retry_after_ms = -1;
            j->response_ms = 1;
            j->sample = j->ep->id == fast->id;
            j->http_status = j->ep->id == fast->id ? 200 : 0;
            j->errc = j->ep->id == fast->id ? ERRC_NONE : ERRC_CONNECT;
        }
        settle(f, jobs);
    }
    assert_int_equal(dead->br.state, BREAKER_OPEN);
    assert_int_equal(sent, 3);   /* failure_threshold in this fixture */
    assert_int_equal(limiter_current(&fast->lim), 32);
}

static void slow_scan_lowers_threshold_and_keeps_it(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", "failure_threshold", "10");

    assert_int_equal(endpoint_threshold(a), 10);
    a->p95_ms = f->c.critical_p95_ms + 1;
    a->samples = f->c.min_samples;
    maint_slow_scan(&f->maint, f->now);
    assert_int_equal(a->slow_since, f->now);
    assert_int_equal(endpoint_threshold(a), 5);
    restart(f);
    a = registry_by_name(&f->reg, "a");
    assert_int_equal(a->slow_since, T0);
    assert_int_equal(endpoint_threshold(a), 5);
    /* p95 back under the critical line: the threshold is restored */
    a->p95_ms = f->c.critical_p95_ms;
    maint_slow_scan(&f->maint, f->now + 1);
    assert_int_equal(endpoint_threshold(a), 10);
    restart(f);
    assert_int_equal(endpoint_threshold(registry_by_name(&f->reg, "a")), 10);
}

static void a_crash_returns_claims_to_the_queue(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", NULL, NULL);
    struct djob *jobs, *again;

    warm(a);
    enqueue(f, a, 3);
    jobs = claim(f, 100);
    assert_int_equal(statuses(f).n[MSG_IN_FLIGHT], 3);
    restart(f);   /* the jobs never came back */
    warm(registry_by_name(&f->reg, "a"));
    assert_int_equal(statuses(f).n[MSG_PENDING], 3);
    again = claim(f, 100);
    assert_int_equal(count(again, 0), 3);
    result(again, 200, ERRC_NONE);
    settle(f, again);
    /* the old jobs' results, if they still came, change nothing */
    result(jobs, 500, ERRC_NONE);
    f->reg.in_flight += 3;   /* they were counted out before the restart */
    settle(f, jobs);
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 3);
}

static void retention_expires_by_clock_in_chunks(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", NULL, NULL);
    struct djob *jobs;

    f->c.cleanup_chunk = 2;
    warm(a);
    enqueue(f, a, 3);
    jobs = claim(f, 100);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    assert_int_equal(maint_expire(&f->maint, f->now + f->c.latency_window_ms), 0);   /* nothing old enough */
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 3);
    f->now += f->c.keep_delivered_ms + 1;
    assert_int_equal(maint_expire(&f->maint, f->now), 1);   /* a full chunk: more waits */
    assert_int_equal(maint_expire(&f->maint, f->now), 0);
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 0);
}

static struct req *admin_req(enum proto_op op, const char *endpoint)
{
    struct req *q = calloc(1, sizeof *q);

    q->p.op = op;
    q->p.endpoint = strdup(endpoint);
    return q;
}

static void free_req(struct req *q)
{
    proto_req_free(&q->p);
    buf_free(&q->reply);
    free(q);
}

static void delete_with_deliveries_in_flight(void **state)
{
    struct fx *f = *state;
    struct endpoint *a;
    struct djob *jobs;
    struct req *q;
    struct ep_def d;
    char err[128];
    int64_t id;
    int created;

    /* an endpoint made over the socket (a config one cannot be deleted) */
    ep_def_init(&d);
    snprintf(d.name, sizeof d.name, "api");
    OK(ep_def_set(&d, "url", "https://hooks.example.com/in", err, sizeof err));
    OK(ep_def_set(&d, "max_in_flight", "20", err, sizeof err));
    OK(f->st->ops->begin(f->st, 1));
    OK(f->st->ops->endpoint_put(f->st, &d, 0, f->now, &id, &created));
    OK(f->st->ops->commit(f->st));
    assert_non_null(a = registry_install(&f->reg, id, &d, 0));
    ep_def_free(&d);
    warm(a);
    enqueue(f, a, 25);
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 20);
    q = admin_req(OP_ENDPOINT_DELETE, "api");
    OK(admin_handle(&f->reg, f->st, q, f->now));
    assert_non_null(strstr(q->reply.p, "\"dead_lettered\":25"));
    free_req(q);
    assert_null(registry_by_name(&f->reg, "api"));
    /* the receiver answers after the delete */
    result(jobs, 503, ERRC_NONE);
    settle(f, jobs);
    assert_int_equal(f->reg.in_flight, 0);
    assert_int_equal(statuses(f).n[MSG_DEAD_LETTER], 25);
    assert_int_equal(statuses(f).n[MSG_FAILED], 0);
    assert_int_equal(statuses(f).n[MSG_PENDING], 0);
}

static void failed_commit_undoes_the_round(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", NULL, NULL);
    struct djob *jobs = NULL;
    struct breaker before;
    int64_t in_flight;

    warm(a);
    enqueue(f, a, 3);
    jobs = claim(f, 100);
    result(jobs, 503, ERRC_NONE);
    before = a->br;
    in_flight = f->reg.in_flight;
    mem_fail_at(f->db, "commit", STORE_E_FULL);
    registry_round_begin(&f->reg);
    OK(f->st->ops->begin(f->st, 1));
    OK(settle_results(&f->reg, f->st, jobs, f->now));
    OK(registry_save_health(&f->reg, f->st, f->now));
    assert_int_equal(f->st->ops->commit(f->st), -1);
    assert_int_equal(f->st->errc, STORE_E_FULL);
    f->st->ops->rollback(f->st);
    registry_round_undo(&f->reg);
    /* as if the round never ran: the results are settled again later */
    assert_int_equal(f->reg.in_flight, in_flight);
    assert_int_equal(a->in_flight, 3);
    assert_int_equal(a->br.consecutive_failures, before.consecutive_failures);
    assert_int_equal(statuses(f).n[MSG_IN_FLIGHT], 3);
    settle(f, jobs);
    assert_int_equal(a->br.consecutive_failures, 3);
    assert_int_equal(statuses(f).n[MSG_FAILED], 3);
}

struct ops_rows {
    char types[8][48];
    int n;
};

static int take_ops(void *ctx, const struct store_claimed *row)
{
    struct ops_rows *x = ctx;

    if (x->n < 8)
        snprintf(x->types[x->n], sizeof x->types[0], "%s", row->event_type ? row->event_type : "");
    x->n++;
    return 0;
}

static struct ops_rows ops_rows(struct fx *f, int64_t id)
{
    struct ops_rows x = {0};
    int n = 0;

    OK(f->st->ops->begin(f->st, 1));
    OK(f->st->ops->claim(f->st, id, f->now + 1, 100, 0, take_ops, &x, &n));
    f->st->ops->rollback(f->st);
    return x;
}

static int keep_hist(void *ctx, const struct store_history *h)
{
    *(struct store_history *)ctx = *h;
    return 0;
}

/* A breaker that opens queues its event and counts in its history bucket
 * in the round's transaction; a failed commit takes both back, and the
 * retried round stores them once. Failing for disable_after disables the
 * endpoint with its reason and event. */
static void events_and_history_follow_the_round(void **state)
{
    struct fx *f = *state;
    struct endpoint *ops, *a;
    struct notify n;
    struct djob *jobs;
    struct ops_rows x;
    struct store_history h = {0};
    struct store *r;

    free(f->c.ops_endpoint);
    f->c.ops_endpoint = strdup("alerts");
    f->c.history_bucket_ms = 60000;
    notify_init(&n, &f->c);
    f->reg.notify = &n;
    ops = add_endpoint(f, "alerts", NULL, NULL);
    a = add_endpoint(f, "a", "disable_after", "100s");
    assert_true(ops->is_ops && !a->is_ops);
    warm(a);
    enqueue(f, a, 3);
    jobs = claim(f, 100);
    result(jobs, 503, ERRC_NONE);
    settle_round(f, jobs, 1);
    assert_int_equal(a->br.state, BREAKER_CLOSED);   /* undone */
    assert_int_equal(n.n, 0);
    assert_int_equal(a->hist.fail, 0);
    assert_int_equal(ops_rows(f, ops->id).n, 0);
    settle_round(f, jobs, 0);
    assert_int_equal(a->br.state, BREAKER_OPEN);
    x = ops_rows(f, ops->id);
    assert_int_equal(x.n, 1);
    assert_string_equal(x.types[0], "endpoint.breaker_opened");
    assert_int_equal(a->hist.fail, 3);
    assert_int_equal(a->hist.opens, 1);
    /* the next bucket: the old one's counts are stored once */
    f->now += 60000;
    registry_round_begin(&f->reg);
    registry_history_collect(&f->reg);
    OK(f->st->ops->begin(f->st, 1));
    OK(registry_history_flush(&f->reg, f->st));
    OK(f->st->ops->commit(f->st));
    registry_round_commit(&f->reg);
    r = mem_store_open(f->db, STORE_READER);
    OK(r->ops->history(r, 0, keep_hist, &h));
    store_close(r);
    assert_true(h.endpoint_id == a->id && h.bucket_at == T0 - T0 % 60000);
    assert_true(h.failed == 3 && h.delivered == 0 && h.breaker_opens == 1);
    /* past the cooldown the probe fails, 100 s after the first failure:
     * disabled, with its reason and event */
    f->now += 60000;
    f->mono += 120000;
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, a->id), 1);
    result(jobs, 503, ERRC_NONE);
    settle_round(f, jobs, 0);
    assert_true(a->paused);
    x = ops_rows(f, ops->id);   /* the first event went out with that claim */
    assert_int_equal(x.n, 1);
    assert_string_equal(x.types[0], "endpoint.disabled");
    f->reg.notify = NULL;
    notify_free(&n);
}

static struct req *enqueue_req(const char *endpoint, const char *event_id)
{
    struct req *q = calloc(1, sizeof *q);

    q->p.op = OP_ENQUEUE;
    q->p.endpoint = strdup(endpoint);
    q->p.event_id = strdup(event_id);
    q->p.payload = strdup("{\"k\":1}");
    q->p.payload_len = 7;
    return q;
}

/* Rows for an endpoint with room go in claimed, their jobs built from
 * the request (no claim statement); the rest wait in order; a duplicate
 * gives its place back. */
static void intake_claims_what_can_go_now(void **state)
{
    struct fx *f = *state;
    struct endpoint *a = add_endpoint(f, "a", "max_in_flight", "2");
    struct req *batch = NULL, **tail = &batch, *answered = NULL, *q;
    struct djob *jobs = NULL;
    const char *ids[] = {"e1", "e2", "e3", "e1"};
    int i;

    warm(a);
    a->next_due = INT64_MAX;   /* the dispatcher looked: nothing waits */
    for (i = 0; i < 4; i++) {
        *tail = enqueue_req("a", ids[i]);
        tail = &(*tail)->next;
    }
    registry_round_begin(&f->reg);
    OK(f->st->ops->begin(f->st, 1));
    OK(intake_batch(&f->reg, f->st, &batch, &answered, &jobs, f->now, f->mono));
    OK(f->st->ops->commit(f->st));
    registry_round_commit(&f->reg);
    assert_null(answered);
    assert_int_equal(count(jobs, 0), 2);   /* e1, e2: the cap */
    assert_string_equal(jobs->event_id, "e1");
    assert_int_equal(jobs->payload_len, 7);
    assert_int_equal(a->in_flight, 2);
    assert_int_equal(f->reg.in_flight, 2);
    assert_int_equal(statuses(f).n[MSG_IN_FLIGHT], 2);
    assert_int_equal(statuses(f).n[MSG_PENDING], 1);   /* e3 waits for the dispatcher */
    assert_true(a->next_due <= f->now);
    for (q = batch; q; q = q->next)
        assert_non_null(strstr(q->reply.p, "\"ok\":true"));
    assert_non_null(strstr(batch->next->next->next->reply.p, "\"duplicate\":true"));
    while ((q = batch)) {
        batch = q->next;
        proto_req_free(&q->p);
        buf_free(&q->reply);
        free(q);
    }
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    jobs = claim(f, 100);
    assert_int_equal(count(jobs, 0), 1);
    assert_string_equal(jobs->event_id, "e3");
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
}

/* ---- settle_decide, pure ---- */

static void decide(const struct djob *j, struct settle_row *row)
{
    struct ep_settings s;

    memset(&s, 0, sizeof s);
    s.base_delay_ms = 1000;
    s.max_delay_ms = 8000;
    settle_decide(j, &s, T0, UINT64_MAX, row);
}

static void decisions_follow_the_outcome_table(void **state)
{
    struct ep_conf ep = {.id = 7};
    struct djob j;
    struct settle_row r;

    (void)state;
    memset(&j, 0, sizeof j);
    j.id = 1;
    j.ep = &ep;
    j.attempted = 1;
    j.max_attempts = 3;
    j.retry_after_ms = -1;
    j.http_status = 204;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_DELIVERED);
    assert_null(r.s.error_class);
    j.http_status = 503;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_RETRY);
    assert_string_equal(r.s.error_class, "http_503");
    assert_true(r.s.next_attempt_at > T0 && r.s.next_attempt_at <= T0 + 2000);   /* base * 2^1 */
    /* Retry-After is a floor, capped at max_delay; a 429 holds the endpoint */
    j.http_status = 429;
    j.retry_after_ms = 60000;
    decide(&j, &r);
    assert_true(r.s.next_attempt_at >= T0 + 8000);
    assert_int_equal(r.hold_until, T0 + 8000);
    j.retry_after_ms = -1;
    j.attempt_count = 2;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_DEAD);   /* the last attempt */
    assert_int_equal(r.outcome, OUTCOME_DEAD);
    j.attempt_count = 0;
    j.http_status = 410;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_DEAD);
    assert_int_equal(r.outcome, OUTCOME_GONE);
    j.http_status = 0;
    j.errc = ERRC_BLOCKED;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_DEAD);
    assert_string_equal(r.s.error_class, "ssrf_blocked");
    assert_false(r.s.sample);
    j.attempted = 0;
    decide(&j, &r);
    assert_int_equal(r.s.verdict, SETTLE_RELEASE);
    assert_int_equal(r.outcome, -1);
}

/* The jobs of a list that match: claimed ahead or not (ahead 0/1), of
 * one endpoint (ep, 0: any); they leave the list in their order. */
static struct djob *take(struct djob **list, int ahead, int64_t ep)
{
    struct djob *out = NULL, **t = &out, **p = list;

    while (*p) {
        struct djob *j = *p;
        if (j->ahead == ahead && (ep == 0 || j->ep->id == ep)) {
            *p = j->next;
            j->next = NULL;
            *t = j;
            t = &j->next;
        } else {
            p = &j->next;
        }
    }
    return out;
}

/* Cut the first n jobs off *list. */
static struct djob *first(struct djob **list, int n)
{
    struct djob *out = *list, **p = list;

    while (n-- > 0)
        p = &(*p)->next;
    *list = *p;
    *p = NULL;
    return out;
}

static struct djob *cat(struct djob *a, struct djob *b)
{
    struct djob **p = &a;

    while (*p)
        p = &(*p)->next;
    *p = b;
    return a;
}

/* Claiming ahead: beside each request to a healthy endpoint with a
 * backlog one job more, which a delivery thread starts only in the place
 * of a request that succeeded (the predecessor comes back handed) and
 * otherwise gives back untried. The writer's count of requests never
 * passes the limit; a failure stops the claims ahead and counts once. */
static void jobs_claimed_ahead_follow_successes(void **state)
{
    struct fx *f = *state;
    struct endpoint *a, *r, *o;
    struct djob *jobs, *req, *ah, *more, *back, *x;

    f->c.claim_ahead = 1;
    a = add_endpoint(f, "a", NULL, NULL);
    r = add_endpoint(f, "r", "rate", "100/s");
    o = add_endpoint(f, "o", "ordering_key", "{payload.user}");
    fill3(f, a, r, o, 30);
    jobs = claim(f, 1000);
    req = take(&jobs, 0, a->id);
    ah = take(&jobs, 1, a->id);
    assert_int_equal(count(req, 0), 4);
    assert_int_equal(count(ah, 0), 4);
    assert_int_equal(a->in_flight, 8);
    assert_int_equal(a->ahead, 4);
    /* a rate limit or an ordering key: no claims ahead */
    assert_null(take(&jobs, 1, 0));
    assert_int_equal(r->ahead + o->ahead, 0);
    for (x = jobs; x; x = x->next)   /* out of the way: given back */
        x->attempted = 0;
    settle(f, jobs);
    r->paused = o->paused = 1;
    assert_null(claim(f, 1000));   /* 4 requests and one job beside each */
    /* two requests succeed, two jobs ahead start in their places */
    back = first(&req, 2);
    result(back, 200, ERRC_NONE);
    back->handed = back->next->handed = 1;
    ah->took_slot = ah->next->took_slot = 1;
    settle(f, back);
    assert_int_equal(a->in_flight, 6);
    assert_int_equal(a->ahead, 2);
    /* still 4 requests: only two more go, both ahead */
    more = claim(f, 1000);
    assert_int_equal(count(more, 0), 2);
    assert_true(more->ahead && more->next->ahead);
    assert_int_equal(a->ahead, 4);
    /* a request fails: its thread gives back the two waiting behind it */
    back = first(&req, 1);
    result(back, 503, ERRC_NONE);
    x = ah->next->next;
    ah->next->next = NULL;
    back->next = x;   /* the third and fourth of the first ones ahead */
    settle(f, back);
    assert_int_equal(a->in_flight, 5);
    assert_int_equal(a->ahead, 2);
    assert_int_equal(a->br.consecutive_failures, 1);
    assert_null(claim(f, 1000));   /* failing: nothing ahead, and the limit was cut */
    /* the rest: the last request and the two started ahead succeed; the
     * two claimed last find no place and come back untried */
    result(req, 200, ERRC_NONE);
    result(ah, 200, ERRC_NONE);
    settle(f, cat(cat(req, ah), more));
    assert_int_equal(a->in_flight, 0);
    assert_int_equal(a->ahead, 0);
    assert_int_equal(f->reg.in_flight, 0);
    assert_int_equal(statuses(f).n[MSG_DELIVERED], 5);
    assert_int_equal(statuses(f).n[MSG_FAILED], 1);
    /* claim_ahead = no: requests only */
    f->c.claim_ahead = 0;
    a->br.consecutive_failures = 0;
    warm(a);
    jobs = claim(f, 1000);
    assert_int_equal(count(jobs, a->id), 4);
    assert_int_equal(a->ahead, 0);
    result(jobs, 200, ERRC_NONE);
    settle(f, jobs);
    /* a 429 holds the endpoint: jobs claimed ahead may not start until
     * the first claim after the hold */
    jobs = claim(f, 1000);
    x = jobs->next;
    jobs->next = NULL;
    result(jobs, 429, ERRC_NONE);
    jobs->retry_after_ms = 5000;
    for (struct djob *y = x; y; y = y->next)
        y->attempted = 0;
    settle(f, cat(jobs, x));
    assert_true(a->hold_until > f->now);
    assert_int_equal(a->conf->hold, 1);
    assert_null(claim(f, 1000));
    assert_int_equal(a->conf->hold, 1);
    f->now += 60000;   /* past the hold and the row's backoff */
    f->mono += 60000;
    jobs = claim(f, 1000);
    assert_non_null(jobs);
    assert_int_equal(a->hold_until, 0);
    assert_int_equal(a->conf->hold, 0);
    for (x = jobs; x; x = x->next)
        x->attempted = 0;
    settle(f, jobs);
    /* claims ahead stop at half of max_in_flight_total */
    warm(a);   /* the 429 halved the limit and counted a failure */
    a->br.consecutive_failures = 0;
    f->c.claim_ahead = 1;
    f->c.max_in_flight_total = 10;
    jobs = claim(f, 1000);
    assert_int_equal(count(jobs, a->id), 4 + 1);
    assert_int_equal(a->ahead, 1);
    for (x = jobs; x; x = x->next)
        x->attempted = 0;
    settle(f, jobs);
    assert_int_equal(a->ahead, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(claims_are_capped_and_fair, setup, teardown),
        cmocka_unit_test_setup_teardown(rate_windows_hold_back_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(breaker_opens_at_threshold_then_one_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(clock_steps_keep_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(adaptive_limit_starts_small, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_scan_lowers_threshold_and_keeps_it, setup, teardown),
        cmocka_unit_test_setup_teardown(a_crash_returns_claims_to_the_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_expires_by_clock_in_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(delete_with_deliveries_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_commit_undoes_the_round, setup, teardown),
        cmocka_unit_test_setup_teardown(events_and_history_follow_the_round, setup, teardown),
        cmocka_unit_test_setup_teardown(intake_claims_what_can_go_now, setup, teardown),
        cmocka_unit_test_setup_teardown(jobs_claimed_ahead_follow_successes, setup, teardown),
        cmocka_unit_test(decisions_follow_the_outcome_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
