/* test_cli.c - command lines to request lines, payload checks, --since. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli.h"
#include "cli_args.h"

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})
#define NARGS(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define BUILD_OK(want, ...) build_ok(want, NARGS(__VA_ARGS__), ARGV(__VA_ARGS__))
#define BUILD_FAILS(needle, ...) build_fails(needle, NARGS(__VA_ARGS__), ARGV(__VA_ARGS__))

static void build_ok(const char *want, int argc, char **argv)
{
    struct buf out = {0};
    char err[256] = "";

    if (cli_build_request(argc, argv, &out, err, sizeof err) != 0)
        fail_msg("%s: unexpected error: %s", argv[0], err);
    assert_string_equal(out.p, want);
    buf_free(&out);
}

static void build_fails(const char *needle, int argc, char **argv)
{
    struct buf out = {0};
    char err[256] = "";

    assert_int_equal(cli_build_request(argc, argv, &out, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("%s: error '%s' does not mention '%s'", argv[0], err, needle);
    buf_free(&out);
}

static void test_simple_ops(void **state)
{
    (void)state;
    BUILD_OK("{\"op\":\"ping\"}", "ping");
    BUILD_OK("{\"op\":\"stats\"}", "stats", "--json", "-s", "/x.sock", "--timeout", "5s");
    BUILD_OK("{\"op\":\"endpoint.list\"}", "endpoints", "-c", "/etc/x.ini");
    BUILD_OK("{\"op\":\"metrics\"}", "metrics", "--socket=/y");
    BUILD_OK("{\"op\":\"get\",\"id\":42}", "get", "42");
    BUILD_OK("{\"op\":\"pause\",\"endpoint\":\"a\"}", "pause", "a");
    BUILD_OK("{\"op\":\"resume\",\"endpoint\":\"a\"}", "resume", "a");
    BUILD_OK("{\"op\":\"endpoint.delete\",\"name\":\"a\"}", "endpoint-delete", "a");
    BUILD_OK("{\"op\":\"dead_letters\"}", "dead-letters");
    BUILD_OK("{\"op\":\"dead_letters\",\"hours\":48}", "dead-letters", "--hours", "48");
    BUILD_OK("{\"op\":\"slow\",\"p95_ms\":1500}", "slow", "--p95-ms=1500");
    BUILD_OK("{\"op\":\"purge\"}", "purge");
    BUILD_OK("{\"op\":\"purge\",\"endpoint\":\"a\",\"since\":1700000000000}", "purge", "-e", "a",
             "--since", "1700000000000");
    BUILD_OK("{\"op\":\"requeue\",\"id\":7}", "requeue", "7");
    BUILD_OK("{\"op\":\"requeue\",\"endpoint\":\"a\",\"since\":5}", "requeue", "--endpoint", "a",
             "--since", "5");
    BUILD_OK("{\"op\":\"requeue\",\"endpoint\":\"a\"}", "requeue", "--endpoint", "a");
    BUILD_OK("{\"op\":\"get\",\"event_id\":\"e1\",\"endpoint\":\"a\"}", "get", "--event-id", "e1", "-e", "a");
    BUILD_OK("{\"op\":\"attempts\",\"event_id\":\"e1\"}", "attempts", "--event-id", "e1");
    BUILD_OK("{\"op\":\"messages\",\"event_id\":\"e\",\"type\":\"o.*\",\"error_class\":\"dns\",\"limit\":5,"
             "\"after\":9,\"until\":20,\"where\":[\"a.b=c=d\",\"n=1\"],\"status\":[\"delivered\",\"failed\"],"
             "\"endpoint\":\"x\",\"since\":10}",
             "messages", "--event-id", "e", "--type", "o.*", "--error-class", "dns", "--limit", "5", "--after", "9",
             "--until", "20", "--where", "a.b=c=d", "--where", "n=1", "--status", "delivered,failed", "-e", "x",
             "--since", "10", "--ndjson");
    BUILD_OK("{\"op\":\"requeue\",\"event_id\":\"e\",\"dry_run\":true,\"statuses\":[\"delivered\"]}", "requeue",
             "--event-id", "e", "--dry-run", "--status", "delivered");
    BUILD_OK("{\"op\":\"purge\",\"type\":\"t.*\",\"limit\":3}", "purge", "--type", "t.*", "--limit", "3");
    BUILD_OK("{\"op\":\"erase\",\"id\":4}", "erase", "4");
    BUILD_OK("{\"op\":\"erase\",\"dry_run\":true,\"where\":[\"p=1\"],\"endpoint\":\"a\",\"since\":7}", "erase",
             "--since", "7", "--where", "p=1", "--endpoint", "a", "--dry-run");
}

static void test_send(void **state)
{
    (void)state;
    /* the payload goes through byte for byte: no double rounding */
    BUILD_OK("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_id\":\"evt_1\","
             "\"payload\":{\"n\":12345678901234567890,\"s\":\"\\u00e9\"}}",
             "send", "--endpoint", "a", "--event-id", "evt_1", "--data",
             "{\"n\":12345678901234567890,\"s\":\"\\u00e9\"}");
    BUILD_OK("{\"op\":\"enqueue\",\"event_type\":\"order.created\",\"payload\":[1,2]}", "send",
             "--type", "order.created", "-d", "  [1,2]\n");
    BUILD_OK("{\"op\":\"enqueue\",\"endpoint\":\"a\",\"event_type\":\"t\",\"payload\":{ \"a\": 1  }}",
             "send", "-e", "a", "-t", "t", "--data={\n\"a\": 1\r\n}");
}

static void test_send_errors(void **state)
{
    (void)state;
    BUILD_FAILS("--endpoint", "send", "--data", "{}");
    BUILD_FAILS("not valid JSON", "send", "-e", "a", "--data", "{\"a\":}");
    BUILD_FAILS("object or array", "send", "-e", "a", "--data", "42");
    BUILD_FAILS("after the JSON", "send", "-e", "a", "--data", "{} {}");
    BUILD_FAILS("not both", "send", "-e", "a", "--data", "{}", "--file", "/dev/null");
    BUILD_FAILS("needs a value", "send", "-e", "a", "--data");
    BUILD_FAILS("unknown option", "send", "-e", "a", "--hours", "2", "--data", "{}");
}

static void test_endpoint_put(void **state)
{
    (void)state;
    BUILD_OK("{\"op\":\"endpoint.put\",\"name\":\"x\",\"url\":\"https://h/p\","
             "\"secret\":[\"whsec_a\",\"whsec_b\"],\"event_types\":\"a,b\","
             "\"header\":[\"X-A: 1\"],\"timeout\":\"5s\",\"rate\":\"10\"}",
             "endpoint-put", "x", "--url", "https://h/p", "--secret", "whsec_a", "--secret",
             "whsec_b", "--event-types", "a,b", "--header", "X-A: 1", "--set", "timeout=5s", "--set",
             "rate=10");
    BUILD_OK("{\"op\":\"endpoint.put\",\"name\":\"x\",\"url\":\"u\"}", "endpoint-put", "x", "--url",
             "u");
    BUILD_FAILS("--url", "endpoint-put", "x");
    BUILD_FAILS("key=value", "endpoint-put", "x", "--url", "u", "--set", "timeout");
    BUILD_FAILS("reserved", "endpoint-put", "x", "--url", "u", "--set", "op=ping");
    BUILD_FAILS("missing argument", "endpoint-put", "--url", "u");
}

static void test_arg_errors(void **state)
{
    (void)state;
    BUILD_FAILS("not a client command", "serve");
    BUILD_FAILS("not a client command", "frobnicate");
    BUILD_FAILS("--help", "ping", "--help");
    BUILD_FAILS("--event-id", "get");
    BUILD_FAILS("goes with --event-id", "get", "3", "--endpoint", "a");
    BUILD_FAILS("FIELD=VALUE", "messages", "--where", "novalue");
    BUILD_FAILS("--limit", "messages", "--limit", "0");
    BUILD_FAILS("--until", "messages", "--until", "soon");
    BUILD_FAILS("--since TIME", "erase");
    BUILD_FAILS("no other filter", "erase", "4", "--endpoint", "a");
    BUILD_FAILS("unknown option", "get", "3", "--dry-run");
    BUILD_FAILS("integer", "get", "0");
    BUILD_FAILS("integer", "get", "12abc");
    BUILD_FAILS("unexpected argument", "get", "1", "2");
    BUILD_FAILS("unexpected argument", "ping", "extra");
    BUILD_FAILS("takes no value", "ping", "--json=yes");
    BUILD_FAILS("one of them", "requeue");
    BUILD_FAILS("one of them", "requeue", "1", "--endpoint", "a");
    BUILD_FAILS("only applies", "requeue", "1", "--since", "2h");
    BUILD_FAILS("--since", "purge", "--since", "yesterday");
    BUILD_FAILS("--hours", "dead-letters", "--hours", "0");
    /* "--" ends options, so a name may start with a dash */
    BUILD_OK("{\"op\":\"pause\",\"endpoint\":\"-odd\"}", "pause", "--", "-odd");
}

static void test_payload_normalise(void **state)
{
    struct buf b = {0};
    char err[200];
    static const char in[] = "\n { \"a\" : \"q\\\"\\n\" ,\n\t\"b\":[ ] }\n";

    (void)state;
    assert_int_equal(cli_payload_normalise(in, strlen(in), &b, err, sizeof err), 0);
    assert_string_equal(b.p, "{ \"a\" : \"q\\\"\\n\" , \t\"b\":[ ] }");
    buf_free(&b);

    assert_int_equal(cli_payload_normalise("{\"a\":\"x\ny\"}", 11, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "control character"));
    assert_int_equal(b.len, 0);
    assert_int_equal(cli_payload_normalise("{}\0{}", 5, &b, err, sizeof err), -1);
    assert_int_equal(cli_payload_normalise("{\"a\":\"\xff\"}", 8, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "UTF-8"));
    assert_int_equal(cli_payload_normalise("   ", 3, &b, err, sizeof err), -1);
    assert_int_equal(cli_payload_normalise("null", 4, &b, err, sizeof err), -1);
    buf_free(&b);
}

static void test_parse_since(void **state)
{
    int64_t v = -1;
    const int64_t now = 1700000000000;

    (void)state;
    assert_int_equal(cli_parse_since("1690000000000", now, &v), 0);
    assert_int_equal(v, 1690000000000);
    assert_int_equal(cli_parse_since("2h", now, &v), 0);
    assert_int_equal(v, now - 7200000);
    assert_int_equal(cli_parse_since("500ms", now, &v), 0);
    assert_int_equal(v, now - 500);
    assert_int_equal(cli_parse_since("100000d", now, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(cli_parse_since("-5", now, &v), -1);
    assert_int_equal(cli_parse_since("soon", now, &v), -1);
    assert_int_equal(cli_parse_since("", now, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_ops),    cmocka_unit_test(test_send),
        cmocka_unit_test(test_send_errors),   cmocka_unit_test(test_endpoint_put),
        cmocka_unit_test(test_arg_errors),    cmocka_unit_test(test_payload_normalise),
        cmocka_unit_test(test_parse_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
