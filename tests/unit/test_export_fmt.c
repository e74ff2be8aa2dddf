/* test_export_fmt.c - the NDJSON lines of hookd export / import: every
 * kind written and read back unchanged (a payload byte for byte, secrets,
 * headers and settings of an endpoint), and refused lines said plainly
 * without echoing a secret or a payload. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "breaker.h"
#include "endpoint.h"
#include "export_fmt.h"

#define T0 ((int64_t)1800000000000)
#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/* the one line in b, newline dropped, parsed */
static int parse_buf(struct buf *b, struct xf_item *it, char *err, size_t errlen)
{
    assert_false(b->failed);
    assert_true(b->len > 0 && b->p[b->len - 1] == '\n');
    assert_null(memchr(b->p, '\n', b->len - 1));   /* one line */
    b->p[--b->len] = '\0';
    return xf_parse(b->p, it, err, errlen);
}

static void endpoint_round_trip(void **state)
{
    struct ep_def d;
    struct xf_item it;
    struct buf b = {0};
    char err[256];

    (void)state;
    ep_def_init(&d);
    strcpy(d.name, "tracker-1");
    assert_int_equal(ep_def_set(&d, "url", "https://t.example/pb?subid={click_id}&payout={payout}", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "secret", SECRET, err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "header", "X-Token: hush", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "event_types", "conversion,refund", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "max_attempts", "7", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "rate", "100/m", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "method", "GET", err, sizeof err), 0);
    d.paused = 1;
    assert_int_equal(xf_endpoint(&d, 1, &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_int_equal(it.kind, XF_ENDPOINT);
    assert_int_equal(it.from_config, 1);
    assert_string_equal(it.def.name, "tracker-1");
    assert_string_equal(it.def.url, d.url);
    assert_int_equal(it.def.nsecrets, 1);
    assert_string_equal(it.def.secrets[0], SECRET);
    assert_int_equal(it.def.nheaders, 1);
    assert_string_equal(it.def.headers[0], "X-Token: hush");
    assert_string_equal(it.def.event_types, "conversion,refund");
    assert_int_equal(it.def.paused, 1);
    assert_int_equal(it.def.s.max_attempts, 7);
    assert_int_equal(it.def.rq.method, d.rq.method);
    /* the stored form is what both sides compare */
    {
        char *x = ep_json_overrides(&d), *y = ep_json_overrides(&it.def);
        assert_string_equal(x, y);
        free(x);
        free(y);
    }
    xf_item_free(&it);
    ep_def_free(&d);
    buf_free(&b);
}

static void message_payload_byte_for_byte(void **state)
{
    /* key order, spaces, escapes kept as text, UTF-8, a byte that is not
     * UTF-8 at all, control characters */
    static const char payload[] = "{\"z\":1,  \"a\":\"caf\\u00e9 \xc3\xa9 \\\"q\\\" \\n\",\"bad\":\"\xff\xfe\",\"t\":\"\t\x01\"}";
    struct store_row r = {0}, *p;
    struct xf_item it;
    struct buf b = {0};
    char err[256];

    (void)state;
    r.event_id = "evt_1";
    r.event_type = "conversion";
    r.payload = payload;
    r.payload_len = sizeof payload - 1;
    r.status = MSG_FAILED;
    r.attempt_count = 2;
    r.max_attempts = 5;
    r.created_at = T0;
    r.next_attempt_at = T0 + 60000;
    r.last_error = "HTTP 503: busy";
    r.last_error_class = "http_503";
    r.last_status_code = 503;
    r.last_response_ms = 0;   /* a real 0 ms, not "none" */
    r.ordering_key = "user-7";
    assert_int_equal(xf_message("tracker-1", &r, &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_int_equal(it.kind, XF_MESSAGE);
    p = &it.row;
    assert_string_equal(it.endpoint, "tracker-1");
    assert_int_equal(p->endpoint_id, 0);
    assert_string_equal(p->event_id, "evt_1");
    assert_string_equal(p->event_type, "conversion");
    assert_int_equal(p->payload_len, sizeof payload - 1);
    assert_memory_equal(p->payload, payload, sizeof payload - 1);
    assert_int_equal(p->status, MSG_FAILED);
    assert_int_equal(p->attempt_count, 2);
    assert_int_equal(p->max_attempts, 5);
    assert_int_equal(p->created_at, T0);
    assert_int_equal(p->next_attempt_at, T0 + 60000);
    assert_string_equal(p->last_error, "HTTP 503: busy");
    assert_string_equal(p->last_error_class, "http_503");
    assert_int_equal(p->last_status_code, 503);
    assert_int_equal(p->last_response_ms, 0);
    assert_string_equal(p->ordering_key, "user-7");
    xf_item_free(&it);

    /* nothing recorded yet: nulls come back as nothing */
    memset(&r, 0, sizeof r);
    r.event_id = "evt_2";
    r.payload = "{}";
    r.payload_len = 2;
    r.status = MSG_DEAD_LETTER;
    r.max_attempts = 1;
    r.last_response_ms = -1;
    buf_reset(&b);
    assert_int_equal(xf_message("a", &r, &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_null(it.row.event_type);
    assert_null(it.row.last_error);
    assert_null(it.row.ordering_key);
    assert_int_equal(it.row.last_status_code, 0);
    assert_int_equal(it.row.last_response_ms, -1);
    assert_int_equal(it.row.status, MSG_DEAD_LETTER);
    xf_item_free(&it);
    buf_free(&b);
}

static void header_health_end(void **state)
{
    struct store_health h = {0};
    struct xf_item it;
    struct buf b = {0};
    char err[256];

    (void)state;
    assert_int_equal(xf_header(T0, "9.9", &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_int_equal(it.kind, XF_HEADER);
    assert_int_equal(it.version, XF_VERSION);
    xf_item_free(&it);

    h.state = BREAKER_OPEN;
    h.consecutive_failures = 12;
    h.failure_threshold = 5;
    h.last_failure_at = T0 + 5;
    h.opened_at = T0 + 5;
    h.cooldown_ms = 300000;
    h.failing_since = T0 - 1000;
    buf_reset(&b);
    assert_int_equal(xf_health("a", &h, &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_int_equal(it.kind, XF_HEALTH);
    assert_string_equal(it.endpoint, "a");
    assert_int_equal(it.h.state, BREAKER_OPEN);
    assert_int_equal(it.h.consecutive_failures, 12);
    assert_int_equal(it.h.failure_threshold, 5);
    assert_int_equal(it.h.last_failure_at, T0 + 5);
    assert_int_equal(it.h.last_success_at, 0);
    assert_int_equal(it.h.opened_at, T0 + 5);
    assert_int_equal(it.h.cooldown_ms, 300000);
    assert_int_equal(it.h.slow_since, 0);
    assert_int_equal(it.h.failing_since, T0 - 1000);
    xf_item_free(&it);

    buf_reset(&b);
    assert_int_equal(xf_end(3, 40000, &b), 0);
    assert_int_equal(parse_buf(&b, &it, err, sizeof err), 0);
    assert_int_equal(it.kind, XF_END);
    assert_int_equal(it.n_endpoints, 3);
    assert_int_equal(it.n_messages, 40000);
    xf_item_free(&it);
    buf_free(&b);
}

static void refused_lines(void **state)
{
    static const struct {
        const char *line, *says;
        enum xf_kind kind;
    } bad[] = {
        {"not json", "not a JSON object", XF_UNKNOWN},
        {"[1,2]", "not a JSON object", XF_UNKNOWN},
        {"{\"kind\":\"nope\"}", "unknown kind", XF_UNKNOWN},
        {"{\"kind\":\"hookd-export\",\"version\":2}", "version 2", XF_HEADER},
        {"{\"kind\":\"message\",\"endpoint\":\"a\",\"event_id\":\"e\",\"payload\":\"{\\\"p\\\":\\\"PAYLOADBYTES\\\"}\","
         "\"status\":\"in_flight\",\"attempt_count\":0,\"max_attempts\":5,\"created_at\":1,\"next_attempt_at\":1}",
         "\"status\" must be", XF_MESSAGE},
        {"{\"kind\":\"message\",\"endpoint\":\"a\",\"event_id\":\"e\",\"status\":\"pending\"}", "\"payload\"",
         XF_MESSAGE},
        {"{\"kind\":\"message\",\"endpoint\":\"a\",\"event_id\":\"e\",\"payload\":\"{}\",\"status\":\"pending\","
         "\"attempt_count\":1.5,\"max_attempts\":5,\"created_at\":1,\"next_attempt_at\":1}",
         "\"attempt_count\" must be a whole number", XF_MESSAGE},
        {"{\"kind\":\"endpoint\",\"name\":\"bad name!\",\"url\":\"https://x.example/\",\"secrets\":[],"
         "\"headers\":[],\"settings\":{},\"paused\":false,\"from_config\":false}",
         "not a valid endpoint name", XF_ENDPOINT},
        {"{\"kind\":\"endpoint\",\"name\":\"a\",\"url\":\"https://x.example/\",\"secrets\":[\"whsec_!!notbase64SECRETX\"],"
         "\"headers\":[],\"settings\":{},\"paused\":false,\"from_config\":false}",
         "definition is invalid", XF_ENDPOINT},
        {"{\"kind\":\"health\",\"endpoint\":\"a\",\"state\":\"ajar\"}", "closed, open or half_open", XF_HEALTH},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct xf_item it;
        char err[256] = "";
        assert_int_equal(xf_parse(bad[i].line, &it, err, sizeof err), -1);
        assert_int_equal(it.kind, bad[i].kind);
        if (!strstr(err, bad[i].says))
            fail_msg("line %zu: \"%s\" does not say \"%s\"", i, err, bad[i].says);
        assert_null(strstr(err, "PAYLOADBYTES"));
        assert_null(strstr(err, "SECRETX"));
        xf_item_free(&it);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(endpoint_round_trip),
        cmocka_unit_test(message_payload_byte_for_byte),
        cmocka_unit_test(header_health_end),
        cmocka_unit_test(refused_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
