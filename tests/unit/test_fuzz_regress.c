/* Regression tests for what the fuzzers (tests/fuzz/) found. Each case is
 * the crash input, minimised, with the property it broke. Inputs also in
 * tests/fuzz/crashes/<target>/ (make fuzz-regress replays them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "export_fmt.h"
#include "proto.h"
#include "util.h"

static const struct proto_limits lim = {.max_payload = 1024};

/* proto-nul-escape: "evt\u0000x" and "evt\u0000y" were one event id */
static void test_nul_escape_in_event_id_refused(void **st)
{
    static const char line[] = "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_id\":\"evt\\u0000y\",\"payload\":{}}";
    struct proto_req r;
    struct proto_err err;
    (void)st;
    if (proto_parse(line, strlen(line), &lim, &r, &err) == 0) {
        proto_req_free(&r);
        fail_msg("accepted an event_id with an escaped NUL");
    }
}

/* proto-payload-key: validation and storage must look at the same member */
static void check_payload_is_validated_one(const char *line)
{
    struct proto_req r;
    struct proto_err err;
    if (proto_parse(line, strlen(line), &lim, &r, &err) != 0)
        return;  /* refusing is fine */
    {
        cJSON *mine = cJSON_ParseWithLength(r.payload, r.payload_len);
        cJSON *whole = cJSON_Parse(line);
        int same = mine && whole && cJSON_Compare(mine, cJSON_GetObjectItemCaseSensitive(whole, "payload"), 1);
        int shape = mine && (cJSON_IsObject(mine) || cJSON_IsArray(mine));
        char stored[64];
        snprintf(stored, sizeof stored, "%s", r.payload);
        cJSON_Delete(mine);
        cJSON_Delete(whole);
        proto_req_free(&r);
        if (!shape)
            fail_msg("stored payload %s is not an object or array", stored);
        if (!same)
            fail_msg("stored payload %s is not the payload that was validated", stored);
    }
}

static void test_escaped_payload_key_string(void **st)
{
    (void)st;
    check_payload_is_validated_one("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"pay\\u006coad\":{},\"payload\":\"str\"}");
}

static void test_escaped_payload_key_other_value(void **st)
{
    (void)st;
    check_payload_is_validated_one("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"pay\\u006coad\":{\"x\":1},\"payload\":[2]}");
}

/* proto-op-utf8: the unknown-op message must not cut a character */
static void test_unknown_op_message_is_utf8(void **st)
{
    char line[256];
    struct proto_req r;
    struct proto_err err;
    struct buf out = {0};
    size_t n;
    (void)st;
    n = (size_t)snprintf(line, sizeof line, "{\"op\":\"a");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "\xc3\xa9");
    snprintf(line + n, sizeof line - n, "\"}");
    assert_int_equal(proto_parse(line, strlen(line), &lim, &r, &err), -1);
    assert_string_equal(err.code, PERR_UNKNOWN_OP);
    assert_int_equal(proto_reply_error(&out, err.code, err.message), 0);
    if (!util_utf8_valid(out.p, out.len))
        fail_msg("error reply is not valid UTF-8: %s", out.p);
    buf_free(&out);
}

/* proto-unknown-member: members the op does not know were ignored, so a
 * "\u0000" in one passed, and a misspelt event_id silently lost dedup */
static void expect_refused(const char *line, const char *needle)
{
    struct proto_req r;
    struct proto_err err;
    if (proto_parse(line, strlen(line), &lim, &r, &err) == 0) {
        proto_req_free(&r);
        fail_msg("accepted %s", line);
    }
    assert_string_equal(err.code, PERR_BAD_REQUEST);
    if (!strstr(err.message, needle))
        fail_msg("message '%s' does not name '%s'", err.message, needle);
}

static void test_unknown_member_refused(void **st)
{
    (void)st;
    expect_refused("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"eveop_id\":\"evt_1\",\"en(\":\"a\",\"event_id\":"
                   "\"evt_1\",\"event_tyte\":\"x\\u0000y\",\"payload\":{\"k\":1}}", "eveop_id");
    expect_refused("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"evnt_id\":\"x1\",\"payload\":{}}", "evnt_id");
    /* an empty member name looped forever in the field lookup */
    expect_refused("{\"op\":\"enqueue\",\"\":\"a\",\"event_id\":\"e\",\"payload\":{}}", "''");
}

/* proto-duplicate-member: the second "endpoint" (with a NUL) was ignored */
static void test_duplicate_member_refused(void **st)
{
    (void)st;
    expect_refused("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"endpoint\":\"b\\u0000c\",\"payload\":{}}", "endpoint");
    expect_refused("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":{},\"payload\":[1]}", "payload");
}

/* proto-op-nul: "endpoint.list\u0000" was cut by cJSON into a known op;
 * likewise a URL in endpoint.put would lose its tail */
static void test_nul_escape_anywhere_but_payload_refused(void **st)
{
    (void)st;
    expect_refused("{\"op\":\"endpoint.list\\u0000\"}", "u0000");
    expect_refused("{\"op\":\"endpoint.put\",\"name\":\"a\",\"url\":\"http://a.example/\\u0000x\"}", "u0000");
}

static int load_text(const char *text, char *err, size_t errlen)
{
    char path[] = "/tmp/hookd-fuzz-regress-XXXXXX";
    int fd = mkstemp(path), rc;
    struct config c;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    config_init(&c);
    err[0] = '\0';
    rc = config_load(&c, path, err, errlen);
    config_free(&c);
    unlink(path);
    return rc;
}

#define SEC "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/* config-continuation-secret: an indented secret line after url */
static void test_indented_secret_not_in_error(void **st)
{
    char err[512];
    (void)st;
    if (load_text("[endpoint.partner]\n  url = https://hooks.example.com/in\n  secret = " SEC "\n", err,
                  sizeof err) != 0 && strstr(err, "MfKQ9r8GKYqrTwjUPD8"))
        fail_msg("the error shows the secret: %s", err);
}

/* config-long-line: libinih cuts lines at 199 bytes; the tail of a long
 * secret line became a key and was printed */
static void test_long_secret_line_tail_not_in_error(void **st)
{
    char err[512];
    (void)st;
    if (load_text("[endpoint.p]\nurl = https://hooks.example.com/in\nsecret = " SEC
                  " whsec_YSBzZWNvbmQsIHJvdGF0ZWQgc2lnbmluZyBrZXkhISE= "
                  "whsec_TUFSS0VSX1NFQ1JFVF85YzFlIGtleSBieXRlcyEhISE=                        "
                  "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=\n", err, sizeof err) != 0 &&
        strstr(err, "QUFBQUFBQUFBQUFB"))
        fail_msg("the error shows part of a secret: %s", err);
}

/* config-long-line: a URL line over inih's 199 bytes must load, or be
 * refused as too long; never cut with its tail read as another key */
static void test_long_url_in_file_loads(void **st)
{
    char text[1024], err[512];
    int n;
    (void)st;
    n = snprintf(text, sizeof text, "[endpoint.p]\nurl = https://hooks.example.com/");
    for (int i = 0; i < 300; i++)
        text[n++] = 'p';
    snprintf(text + n, sizeof text - (size_t)n, "?token=abc\n");
    if (load_text(text, err, sizeof err) != 0 && !strstr(err, "longer than"))
        fail_msg("a 340-byte URL line is neither loaded nor refused as too long: %s", err);
}

/* export-huge-number: a count beyond int64 was cast before its range was
 * checked (undefined behaviour); refused now, and so are NaN-like and
 * negative ones */
static void test_export_number_out_of_range_refused(void **st)
{
    static const char *const lines[] = {
        "{\"kind\":\"health\",\"endpoint\":\"b\",\"state\":\"closed\",\"consecutive_failures\":1,"
        "\"failure_threshold\":10,\"last_failure_at\":179620706547407065474}",
        "{\"kind\":\"end\",\"endpoints\":-1e300,\"messages\":0}",
        "{\"kind\":\"end\",\"endpoints\":1e309,\"messages\":0}",
    };
    size_t i;
    (void)st;
    for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        struct xf_item it;
        char err[256];
        if (xf_parse(lines[i], &it, err, sizeof err) == 0)
            fail_msg("accepted an out-of-range number: %s", lines[i]);
        xf_item_free(&it);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul_escape_in_event_id_refused),
        cmocka_unit_test(test_escaped_payload_key_string),
        cmocka_unit_test(test_escaped_payload_key_other_value),
        cmocka_unit_test(test_unknown_op_message_is_utf8),
        cmocka_unit_test(test_unknown_member_refused),
        cmocka_unit_test(test_duplicate_member_refused),
        cmocka_unit_test(test_nul_escape_anywhere_but_payload_refused),
        cmocka_unit_test(test_indented_secret_not_in_error),
        cmocka_unit_test(test_long_secret_line_tail_not_in_error),
        cmocka_unit_test(test_long_url_in_file_loads),
        cmocka_unit_test(test_export_number_out_of_range_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
