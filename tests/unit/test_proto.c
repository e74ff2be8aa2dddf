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
#include "jscan.h"
#include "proto.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>

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

/* A line of n members "m0".."m{n-1}" (each once) after "op":"ping". */
static char *members_line(size_t n)
{
    struct buf b = {0};
    size_t i;

    buf_puts(&b, "{\"op\":\"ping\"");
    for (i = 0; i < n; i++) {
        buf_puts(&b, ",\"");
        buf_printf(&b, "m%zu", i);
        buf_puts(&b, "\":0");
    }
    buf_puts(&b, "}");
    return b.p;
}

static void test_member_cap_names_the_limit(void **st)
{
    struct proto_req r;
    struct proto_err err;
    char *line, want[64];

    (void)st;
    /* 64 members in all: the cap itself is fine (ping lists none, so the
     * first extra one is refused as unknown, not for the count) */
    line = members_line(PROTO_MAX_MEMBERS - 1);
    assert_int_equal(proto_parse(line, strlen(line), &lim, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "unknown field 'm0'"));
    free(line);
    /* 65: refused for the count, before names or values are looked at */
    line = members_line(PROTO_MAX_MEMBERS);
    assert_int_equal(proto_parse(line, strlen(line), &lim, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    snprintf(want, sizeof want, "limit of %d", PROTO_MAX_MEMBERS);
    assert_non_null(strstr(err.message, want));
    assert_non_null(strstr(err.message, "65 members"));
    free(line);
    /* 100,000 members (the 1 MiB line): the same answer */
    line = members_line(100000);
    assert_int_equal(proto_parse(line, strlen(line), &lim, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "100001 members"));
    free(line);
    /* members of the payload are not top-level members */
    {
        struct buf b = {0};
        size_t i;
        struct proto_limits big = {.max_payload = 1 << 20};
        buf_puts(&b, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":{");
        for (i = 0; i < 1000; i++)
            buf_printf(&b, "%s\"k%zu\":%zu", i ? "," : "", i, i);
        buf_puts(&b, "}}");
        assert_int_equal(proto_parse(b.p, b.len, &big, &r, &err), 0);
        assert_int_equal(r.op, OP_ENQUEUE);
        assert_int_equal(r.payload_len, b.len - strlen("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":") - 1);
        proto_req_free(&r);
        buf_free(&b);
    }
}

static void test_first_repeat_is_linear_and_exact(void **st)
{
    struct proto_name v[5000];
    char (*names)[16] = malloc(5000 * sizeof *names);
    size_t i;

    (void)st;
    assert_non_null(names);
    assert_int_equal(proto_first_repeat(v, 0), -1);
    for (i = 0; i < 5000; i++) {
        snprintf(names[i], sizeof names[i], "n%zu", i);
        v[i].p = names[i];
        v[i].len = strlen(names[i]);
    }
    /* all distinct, more than the small table holds */
    assert_int_equal(proto_first_repeat(v, 5000), -1);
    /* a repeat is found at its second occurrence */
    v[4000] = v[17];
    assert_int_equal(proto_first_repeat(v, 5000), 4000);
    /* the first repeat is the one reported */
    v[100] = v[3];
    assert_int_equal(proto_first_repeat(v, 5000), 100);
    /* a prefix or a longer name is not a repeat; the empty name is a name */
    {
        struct proto_name w[4] = {{"ab", 2}, {"abc", 3}, {"", 0}, {"a", 1}};
        assert_int_equal(proto_first_repeat(w, 4), -1);
        w[3] = w[2];
        assert_int_equal(proto_first_repeat(w, 4), 3);
    }
    /* names with the same hash bucket but different bytes, and bytes
     * past a NUL, are compared in full */
    {
        struct proto_name w[3] = {{"x\0a", 3}, {"x\0b", 3}, {"x\0a", 3}};
        assert_int_equal(proto_first_repeat(w, 3), 2);
    }
    free(names);
}

static void test_repeated_member_refused_in_proto(void **st)
{
    struct proto_req r;
    struct proto_err err;
    const char *l = "{\"op\":\"get\",\"id\":1,\"id\":2}";

    (void)st;
    assert_int_equal(proto_parse(l, strlen(l), &lim, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "'id' appears more than once"));
}

static void test_values_and_escapes_outside_payload_capped(void **st)
{
    struct buf b = {0};
    size_t i;
    struct proto_req r;
    struct proto_err err;
    struct proto_limits big = {.max_payload = 1 << 20};

    (void)st;
    /* a value with more values than the cap, outside the payload */
    buf_puts(&b, "{\"op\":\"ping\",\"x\":[");
    for (i = 0; i < PROTO_MAX_VALUES; i++)
        buf_puts(&b, i ? ",0" : "0");
    buf_puts(&b, "]}");
    assert_int_equal(proto_parse(b.p, b.len, &big, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "values outside the payload"));
    buf_free(&b);
    /* escapes likewise */
    buf_puts(&b, "{\"op\":\"enqueue\",\"endpoint\":\"");
    for (i = 0; i <= PROTO_MAX_ESCAPES; i++)
        buf_puts(&b, "\\u0061");
    buf_puts(&b, "\",\"payload\":{}}");
    assert_int_equal(proto_parse(b.p, b.len, &big, &r, &err), -1);
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "escapes outside the payload"));
    buf_free(&b);
    /* inside the payload neither counts */
    buf_puts(&b, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":[");
    for (i = 0; i < 3 * PROTO_MAX_VALUES; i++)
        buf_puts(&b, i ? ",\"\\u00e9\"" : "\"\\u00e9\"");
    buf_puts(&b, "]}");
    assert_int_equal(proto_parse(b.p, b.len, &big, &r, &err), 0);
    proto_req_free(&r);
    buf_free(&b);
}

/* The scan accepts no text cJSON refuses (the payload it passes is stored
 * and delivered as JSON), and finds the members cJSON finds. */
static void test_scan_is_no_looser_than_cjson(void **st)
{
    static const char *const texts[] = {
        "{}", "[]", "{\"a\":1}", " {\"a\" : [1, 2.5e3, -0, \"x\", true, false, null, {}] } ",
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":+1}", "{\"a\":1e}", "{\"a\":1e+}",
        "{\"a\":0x1}", "{\"a\":tru}", "{\"a\":nul}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\\ud83d\\ude00\"}",
        "{\"a\":\"tab\there\"}", "{\"a\":1,}", "{,}", "{\"a\"}", "{\"a\":}", "[1,]", "[,1]", "{\"a\":1 \"b\":2}",
        "{\"a\":[1 2]}", "{\"a\":1}x", "{\"a\":1} ", "\"s\"", "12", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\/\"}",
        "{\"a\":123456789012345678901234567890123456789012345678901234567890123}",
        "{\"a\":1234567890123456789012345678901234567890123456789012345678901234}",
        "{\"a\":{\"b\":{\"c\":[[[]]]}}}", "{\"a\":[}", "{\"a\":]}", "{\"a\":\"unterminated}", "",
    };
    size_t i;

    (void)st;
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct jscan_member m[8];
        struct jscan_result res;
        const char *end = NULL;
        size_t n = strlen(texts[i]);
        int rc = jscan(texts[i], n, "a", m, 8, &res);
        cJSON *j = cJSON_ParseWithLengthOpts(texts[i], n, &end, 0);
        int cjson_ok = j != NULL;
        if (j && end)
            while (end < texts[i] + n && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
                end++;
        if (j && end != texts[i] + n)
            cjson_ok = 0;
        if (rc == 0 && !cjson_ok)
            fail_msg("scan accepts what cJSON refuses: %s", texts[i]);
        if (rc == 0 && cJSON_IsObject(j)) {
            assert_int_equal(res.n_members, (size_t)cJSON_GetArraySize(j));
            assert_true(res.is_object);
        }
        cJSON_Delete(j);
    }
    /* the scan's verdicts on a few, exactly */
    {
        struct jscan_member m[4];
        struct jscan_result res;
        const char *t = "{\"x\":1,\"a\":{\"b\":[1,2]},\"y\":\"q\"}";
        assert_int_equal(jscan(t, strlen(t), "a", m, 4, &res), 0);
        assert_int_equal(res.n_members, 3);
        assert_int_equal(m[1].name_len, 1);
        assert_memory_equal(m[1].value, "{\"b\":[1,2]}", m[1].value_len);
        assert_ptr_equal(res.skipped, m[1].value);
        assert_int_equal(res.skipped_len, m[1].value_len);
        assert_int_equal(res.values, 3);   /* the object, 1 and "q" */
        assert_int_equal(jscan("{\"a\":1} x", 9, NULL, m, 4, &res), -2);
        assert_int_equal(jscan("{\"a\":\"\\u0000\"}", 14, NULL, m, 4, &res), 0);
        assert_true(res.nul_escape);
    }
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
        cmocka_unit_test(test_member_cap_names_the_limit),
        cmocka_unit_test(test_first_repeat_is_linear_and_exact),
        cmocka_unit_test(test_repeated_member_refused_in_proto),
        cmocka_unit_test(test_values_and_escapes_outside_payload_capped),
        cmocka_unit_test(test_scan_is_no_looser_than_cjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
