/* Request validation: every bad-input class gets the documented code;
 * payload bytes are taken verbatim from the request line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "msgsel.h"
#include "proto.h"

static const struct proto_limits lim = {.max_payload = 64};

static const char *parse_code(const char *line, size_t len)
{
    static struct proto_err err;
    struct proto_req r;

    if (proto_parse(line, len, &lim, &r, &err) == 0) {
        proto_req_free(&r);
        return "ok";
    }
    return err.code;
}

#define CODE(s) parse_code(s, strlen(s))

static void test_bad_inputs(void **st)
{
    (void)st;
    assert_string_equal(CODE("{"), PERR_BAD_JSON);
    assert_string_equal(CODE("nope"), PERR_BAD_JSON);
    assert_string_equal(CODE("{\"op\":\"ping\"} x"), PERR_BAD_JSON);
    assert_string_equal(parse_code("{\"op\":\"ping\"}\0", 14), PERR_BAD_JSON);
    assert_string_equal(CODE("{\"op\":\"ping\",\"x\":\"\xff\"}"), PERR_BAD_JSON);
    assert_string_equal(CODE("{\"op\":\"ping\",\"x\":\"\xed\xa0\x80\"}"), PERR_BAD_JSON);
    assert_string_equal(CODE("[1,2]"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":5}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"explode\"}"), PERR_UNKNOWN_OP);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"payload\":{}}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":5}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":\"s\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":7,\"payload\":{}}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"\",\"payload\":{}}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_id\":\"a b\",\"payload\":{}}"),
                        PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":{\"k\":"
                             "\"0123456789012345678901234567890123456789012345678901234567890123\"}}"),
                        PERR_PAYLOAD_TOO_LARGE);
    assert_string_equal(CODE("{\"op\":\"get\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":-1}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":1.5}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":\"1\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"requeue\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"requeue\",\"id\":1,\"endpoint\":\"a\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"pause\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"endpoint.put\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"dead_letters\",\"hours\":0}"), PERR_BAD_REQUEST);
    /* an escaped NUL would cut the id short and merge two events */
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_id\":\"e\\u0000x\",\"payload\":{}}"),
                        PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_id\":\"e\\\\u0000x\",\"payload\":{}}"), "ok");
    assert_string_equal(CODE("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":{\"k\":\"\\u0000\"}}"), "ok");
    /* unknown or repeated members, in every op */
    assert_string_equal(CODE("{\"op\":\"ping\",\"x\":1}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"stats\",\"verbose\":true}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":1,\"ID\":2}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":1,\"id\":2}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"op\",\"op\":\"ping\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"pause\",\"endpoint\":\"a\",\"name\":\"a\"}"), PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"endpoint.put\",\"name\":\"a\",\"url\":\"http://x/\",\"url\":\"http://y/\"}"),
                        PERR_BAD_REQUEST);
    assert_string_equal(CODE("{\"op\":\"requeue\",\"endpoint\":\"a\",\"since\":5}"), "ok");
    assert_string_equal(CODE("{\"op\":\"dead_letters\",\"hours\":2}"), "ok");
}

static void test_deep_nesting_is_an_error(void **st)
{
    size_t n = 20000, i;
    char *s = malloc(2 * n + 1);

    (void)st;
    for (i = 0; i < n; i++) {
        s[i] = '[';
        s[2 * n - 1 - i] = ']';
    }
    s[2 * n] = '\0';
    assert_string_equal(parse_code(s, 2 * n), PERR_BAD_JSON);
    free(s);
}

static void test_enqueue_fields_and_exact_payload(void **st)
{
    const char *line = "{\"op\":\"enqueue\",\"payload\" : {\"big\":12345678901234567890, \"u\":\"\\u00e9\"},"
                       "\"endpoint\":\"partner-1\",\"event_id\":\"evt_1\",\"event_type\":\"conversion\"}";
    struct proto_req r;
    struct proto_err err;

    (void)st;
    assert_int_equal(proto_parse(line, strlen(line), &(struct proto_limits){4096}, &r, &err), 0);
    assert_int_equal(r.op, OP_ENQUEUE);
    assert_string_equal(r.endpoint, "partner-1");
    assert_string_equal(r.event_id, "evt_1");
    assert_string_equal(r.event_type, "conversion");
    /* the exact bytes, not a re-serialisation: the big integer survives */
    assert_string_equal(r.payload, "{\"big\":12345678901234567890, \"u\":\"\\u00e9\"}");
    assert_int_equal(r.payload_len, strlen(r.payload));
    assert_int_equal(r.admin_only, 0);
    proto_req_free(&r);
}

static void test_fanout_and_admin_flags(void **st)
{
    const char *fan = "{\"op\":\"enqueue\",\"event_type\":\"sale\",\"payload\":[1,2]}";
    const char *put = "{\"op\":\"endpoint.put\",\"name\":\"x\",\"url\":\"https://e.example/h\"}";
    struct proto_req r;
    struct proto_err err;

    (void)st;
    assert_int_equal(proto_parse(fan, strlen(fan), &lim, &r, &err), 0);
    assert_null(r.endpoint);
    assert_null(r.event_id);
    assert_string_equal(r.payload, "[1,2]");
    proto_req_free(&r);
    assert_int_equal(proto_parse(put, strlen(put), &lim, &r, &err), 0);
    assert_int_equal(r.op, OP_ENDPOINT_PUT);
    assert_int_equal(r.admin_only, 1);
    assert_non_null(r.body);
    proto_req_free(&r);
}

/* The selector members: what each op takes, what it refuses, and a
 * condition on the payload makes the search an admin's. */
static void test_message_selectors(void **st)
{
    const char *q = "{\"op\":\"messages\",\"endpoint\":\"a\",\"status\":[\"delivered\",\"in_flight\"],"
                    "\"type\":\"order.*\",\"since\":5,\"until\":9,\"limit\":3,\"after\":77}";
    const char *w = "{\"op\":\"messages\",\"where\":[\"user.id=u=7\",\"amount=12.50\"]}";
    struct proto_req r;
    struct proto_err err;

    (void)st;
    assert_int_equal(proto_parse(q, strlen(q), &lim, &r, &err), 0);
    assert_int_equal(r.op, OP_MESSAGES);
    assert_int_equal(r.admin_only, 0);
    assert_string_equal(r.sel->endpoint, "a");
    assert_int_equal(r.sel->statuses, MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_IN_FLIGHT));
    assert_string_equal(r.sel->type, "order.*");
    assert_int_equal(r.sel->since, 5);
    assert_int_equal(r.sel->until, 9);
    assert_int_equal(r.sel->limit, 3);
    assert_int_equal(r.sel->after, 77);
    proto_req_free(&r);
    assert_int_equal(proto_parse(w, strlen(w), &lim, &r, &err), 0);
    assert_int_equal(r.admin_only, 1);
    assert_int_equal(r.sel->nwhere, 2);
    assert_string_equal(r.sel->where[0].path, "user.id");
    assert_string_equal(r.sel->where[0].value, "u=7");
    proto_req_free(&r);

    assert_string_equal(CODE("{\"op\":\"messages\",\"where\":[\"=x\"]}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"messages\",\"where\":[1]}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"messages\",\"where\":[\"a=1\",\"a=1\",\"a=1\",\"a=1\",\"a=1\","
                             "\"a=1\",\"a=1\",\"a=1\",\"a=1\"]}"),
                        "bad_request");
    assert_string_equal(CODE("{\"op\":\"messages\",\"status\":\"lost\"}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"messages\",\"limit\":10001}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"messages\",\"dry_run\":true}"), "bad_request");   /* not its member */
    assert_string_equal(CODE("{\"op\":\"get\",\"event_id\":\"e\",\"endpoint\":\"a\"}"), "ok");
    assert_string_equal(CODE("{\"op\":\"get\",\"id\":3,\"endpoint\":\"a\"}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"attempts\"}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"requeue\",\"event_id\":\"e\"}"), "ok");
    assert_string_equal(CODE("{\"op\":\"requeue\",\"id\":3,\"event_id\":\"e\"}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"requeue\",\"endpoint\":\"a\",\"dry_run\":1}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"purge\",\"type\":\"x.*\",\"dry_run\":true}"), "ok");
    assert_string_equal(CODE("{\"op\":\"erase\",\"endpoint\":\"a\"}"), "bad_request");
    assert_string_equal(CODE("{\"op\":\"erase\",\"endpoint\":\"a\",\"since\":0}"), "ok");
    assert_string_equal(CODE("{\"op\":\"erase\",\"id\":0}"), "bad_request");
}

static void test_glob_and_match(void **st)
{
    struct msgsel s;
    struct store_message m;
    char path[] = "a.b", val[] = "x\"y", num[] = "n", one[] = "1.50";
    const char *pl = "{\"a\":{\"b\":\"x\\\"y\"},\"n\":1.50}";

    (void)st;
    assert_true(msgsel_glob("order.*", "order.paid"));
    assert_true(msgsel_glob("*", ""));
    assert_true(msgsel_glob("o?der.*d", "order.paid"));
    assert_false(msgsel_glob("order.*", "orders"));
    assert_false(msgsel_glob("*.x", "a.xy"));
    assert_true(msgsel_glob("**a*b", "zzaqqb"));
    memset(&s, 0, sizeof s);
    memset(&m, 0, sizeof m);
    m.created_at = 10;
    s.where[0].path = path;
    s.where[0].value = val;
    s.where[1].path = num;
    s.where[1].value = one;
    s.nwhere = 2;
    assert_true(msgsel_match(&s, &m, pl, strlen(pl)));
    assert_false(msgsel_match(&s, &m, NULL, 0));
    one[3] = '\0';   /* "1.5": numbers compare as written */
    assert_false(msgsel_match(&s, &m, pl, strlen(pl)));
    s.nwhere = 0;
    s.until = 10;
    assert_false(msgsel_match(&s, &m, NULL, 0));
    s.until = 11;
    s.since = 10;
    assert_true(msgsel_match(&s, &m, NULL, 0));
}

static void test_find_member(void **st)
{
    const char *j = "{\"a\":\"x\\\"}\",\"payload\":{\"p\":[1,{\"q\":\"}\"}]},\"z\":1}";
    const char *v;
    size_t n;

    (void)st;
    assert_int_equal(proto_find_member(j, strlen(j), "payload", &v, &n), 0);
    assert_int_equal(n, strlen("{\"p\":[1,{\"q\":\"}\"}]}"));
    assert_memory_equal(v, "{\"p\":[1,{\"q\":\"}\"}]}", n);
    assert_int_equal(proto_find_member(j, strlen(j), "z", &v, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(proto_find_member(j, strlen(j), "missing", &v, &n), -1);
}

static void test_error_reply_is_one_json_line(void **st)
{
    struct buf b = {0};

    (void)st;
    assert_int_equal(proto_reply_error(&b, PERR_BAD_JSON, "quote \" and\nnewline"), 0);
    assert_string_equal(b.p, "{\"ok\":false,\"error\":{\"code\":\"bad_json\",\"message\":\"quote \\\" and\\nnewline\"}}\n");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_deep_nesting_is_an_error),
        cmocka_unit_test(test_enqueue_fields_and_exact_payload),
        cmocka_unit_test(test_fanout_and_admin_flags),
        cmocka_unit_test(test_message_selectors),
        cmocka_unit_test(test_glob_and_match),
        cmocka_unit_test(test_find_member),
        cmocka_unit_test(test_error_reply_is_one_json_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
