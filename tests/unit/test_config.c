/* The typed settings table: defaults, units, bounds, file:line errors,
 * endpoint sections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "endpoint.h"
#include "settings.h"
#include "util.h"

static char path[64];

static int load_text(struct config *c, const char *text, char *err, size_t errlen)
{
    FILE *f;
    int fd;

    strcpy(path, "/tmp/hookd-test-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    assert_int_equal(config_init(c), 0);
    fd = config_load(c, path, err, errlen);
    unlink(path);
    return fd;
}

static void test_defaults(void **st)
{
    struct config c;

    (void)st;
    assert_int_equal(config_init(&c), 0);
    assert_string_equal(c.db_path, "./var/hookd.db");
    assert_int_equal(c.synchronous, CFG_SYNC_FULL);
    assert_int_equal(c.max_payload, 256 * 1024);
    assert_int_equal(c.dflt.max_in_flight, 64);
    assert_int_equal(c.dflt.timeout_ms, 15000);
    assert_int_equal(c.dflt.connect_timeout_ms, 5000);
    assert_int_equal(c.dflt.base_delay_ms, 30000);
    assert_int_equal(c.dflt.max_delay_ms, 3600000);
    assert_int_equal(c.dflt.max_attempts, 5);
    assert_int_equal(c.dflt.failure_threshold, 10);
    assert_int_equal(c.dflt.cooldown_ms, 300000);
    assert_int_equal(c.latency_window_ms, 86400000);
    assert_int_equal(c.keep_delivered_ms, 7 * 86400000LL);
    config_free(&c);
}

static void test_units_and_values(void **st)
{
    struct config c;
    char err[512];

    (void)st;
    assert_int_equal(load_text(&c,
                               "[storage]\nsynchronous = normal\n"
                               "[delivery]\ntimeout = 500ms\nbase_delay = 2s\nmax_delay = 5m\nrate = 600/m\n"
                               "[server]\nmax_payload = 64KiB\n",
                               err, sizeof err),
                     0);
    assert_int_equal(c.synchronous, CFG_SYNC_NORMAL);
    assert_int_equal(c.dflt.timeout_ms, 500);
    assert_int_equal(c.dflt.base_delay_ms, 2000);
    assert_int_equal(c.dflt.max_delay_ms, 300000);
    assert_int_equal(c.dflt.rate.n, 1);
    assert_true(c.dflt.rate.r[0].count == 600 && c.dflt.rate.r[0].per_ms == 60000);
    assert_int_equal(c.max_payload, 65536);
    config_free(&c);
}

static void expect_error(const char *text, const char *needle1, const char *needle2)
{
    struct config c;
    char err[512];

    assert_int_equal(load_text(&c, text, err, sizeof err), -1);
    if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("error '%s' lacks '%s' / '%s'", err, needle1, needle2 ? needle2 : "");
    config_free(&c);
}

static void test_errors_name_file_line_key_value(void **st)
{
    (void)st;
    expect_error("[storage]\n\nfoo = 1\n", ":3:", "foo");
    expect_error("[nosuch]\nx = 1\n", "unknown section", "x");
    expect_error("[delivery]\ntimeout = fast\n", ":2:", "'fast'");
    expect_error("[delivery]\nmax_attempts = 0\n", "out of range", "max_attempts");
    expect_error("[delivery]\nmax_attempts = 5x\n", "not a valid integer", NULL);
    expect_error("[storage]\nsynchronous = maybe\n", "synchronous", "off, normal, full, extra");
    expect_error("[delivery]\nbase_delay = 2h\nmax_delay = 1h\n", "base_delay exceeds max_delay", NULL);
    expect_error("[delivery]\nallow_networks = 10.0.0.0/99\n", "allow_networks", NULL);
    expect_error("this is not ini\n", "syntax error", NULL);
    expect_error("[endpoint.a]\nurl = ftp://x.example/\n", "[endpoint.a]", "http");
    expect_error("[endpoint.a]\nsecret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", "has no url", NULL);
    expect_error("[endpoint.bad name]\nurl = https://x.example/\n", "endpoint name", NULL);
    expect_error("[endpoint.a]\nurl = https://x.example/\nheader = NoColon\n", "header", NULL);
    expect_error("[endpoint.a]\nurl = https://x.example/\nbogus = 1\n", "unknown key", "bogus");
}

static void test_secret_never_in_error(void **st)
{
    struct config c;
    char err[512];

    (void)st;
    assert_int_equal(load_text(&c, "[endpoint.a]\nurl = https://x.example/\nsecret = whsec_TOPSECRET!!\n", err,
                               sizeof err),
                     -1);
    assert_null(strstr(err, "TOPSECRET"));
    assert_non_null(strstr(err, "secret"));
    config_free(&c);
    /* an indented line continues the key above it, whatever it says: a
     * bad header continuation is reported without its text (found by
     * fuzz_config) */
    assert_int_equal(load_text(&c, "[endpoint.a]\nurl = https://x.example/\nheader = X-A: 1\n"
                                   "  secret = ((TOPSECRET((X:\n", err, sizeof err),
                     -1);
    assert_null(strstr(err, "TOPSECRET"));
    assert_non_null(strstr(err, ":4:"));
    config_free(&c);
    /* under a global key it would have become that key's value, printed
     * by check-config (found by fuzz_config): refused, text hidden */
    assert_int_equal(load_text(&c, "[storage]\npath = ./x.db\n  secret = whsec_TOPSECRET\n", err, sizeof err), -1);
    assert_null(strstr(err, "TOPSECRET"));
    assert_non_null(strstr(err, ":3:"));
    config_free(&c);
    /* an indented key of its own is still a key */
    assert_int_equal(load_text(&c, "[storage]\n  path = ./y.db\n", err, sizeof err), 0);
    assert_string_equal(c.db_path, "./y.db");
    config_free(&c);
}

/* check-config prints [postgres] conninfo with every password form
 * masked: key=value (quoted too), a URI's user:password@ and its query
 * parameter, and a key that only starts with "password" (found by
 * fuzz_config). */
static void test_conninfo_password_masked(void **st)
{
    static const char *const forms[] = {
        "host=/run/pg user=h password=S3cretPw1 dbname=h",
        "host=/run/pg password = 'S3cret Pw1' dbname=h",
        "postgresql://h:S3cretPw1@db/h",
        "postgresql://h@db/h?sslmode=prefer&password=S3cretPw1",
        "host=db passwordXX=S3cretPw1",
    };
    struct config c;
    char text[256], err[256], *dump;
    size_t i, len;
    FILE *f;

    (void)st;
    for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(text, sizeof text, "[storage]\nbackend = postgres\n[postgres]\nconninfo = %s\n", forms[i]);
        assert_int_equal(load_text(&c, text, err, sizeof err), 0);
        f = open_memstream(&dump, &len);
        config_dump(&c, f);
        fclose(f);
        if (strstr(dump, "S3cret"))
            fail_msg("form %zu printed its password", i);
        assert_non_null(strstr(dump, "***"));
        free(dump);
        config_free(&c);
    }
    /* postgres needs a conninfo */
    assert_int_equal(load_text(&c, "[storage]\nbackend = postgres\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "conninfo"));
    config_free(&c);
}

/* A node's name: the host name when not given; letters, digits, '.',
 * '_' and '-' only (it goes into log lines and the nodes table); the
 * lease at least 2 s. */
static void test_node_name_and_lease(void **st)
{
    struct config c;
    char err[256], host[256];

    (void)st;
    assert_int_equal(gethostname(host, sizeof host), 0);
    assert_int_equal(load_text(&c, "[postgres]\nlease = 10s\n", err, sizeof err), 0);
    assert_true(strncmp(c.pg_node_name, host, 63) == 0);
    assert_int_equal(c.pg_lease_ms, 10000);
    assert_int_equal(c.pg_poll_ms, 2000);
    config_free(&c);
    assert_int_equal(load_text(&c, "[postgres]\nnode_name = edge-1.fra_2\n", err, sizeof err), 0);
    assert_string_equal(c.pg_node_name, "edge-1.fra_2");
    config_free(&c);
    assert_int_equal(load_text(&c, "[postgres]\nnode_name = a b\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "node_name"));
    config_free(&c);
    assert_int_equal(load_text(&c, "[postgres]\nlease = 500ms\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "lease"));
    config_free(&c);
}

static void test_endpoints(void **st)
{
    struct config c;
    char err[512];
    struct ep_settings eff;

    (void)st;
    assert_int_equal(load_text(&c,
                               "[delivery]\nmax_attempts = 7\n"
                               "[endpoint.partner-1]\nurl = https://hooks.example.com/in\n"
                               "secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_AAAAAAAAAAAAAAAAAAAAAAAA\n"
                               "event_types = conversion , payment\nheader = X-Partner: acme\n"
                               "header = X-Other: 1\ntimeout = 2s\nrate = 5/s\n"
                               "[endpoint.b]\nurl = http://b.example:8080/x\nevent_types = *\n",
                               err, sizeof err),
                     0);
    assert_int_equal(c.n_endpoints, 2);
    assert_string_equal(c.endpoints[0].name, "partner-1");
    assert_int_equal(c.endpoints[0].nsecrets, 2);
    assert_int_equal(c.endpoints[0].nheaders, 2);
    assert_string_equal(c.endpoints[0].event_types, "conversion,payment");
    assert_true(ep_def_wants(&c.endpoints[0], "payment"));
    assert_false(ep_def_wants(&c.endpoints[0], "pay"));
    assert_true(ep_def_wants(&c.endpoints[1], "anything"));
    eff = ep_settings_effective(&c.endpoints[0].s, &c.dflt);
    assert_int_equal(eff.timeout_ms, 2000);
    assert_int_equal(eff.max_attempts, 7);   /* inherited */
    assert_int_equal(eff.max_in_flight, 64);
    config_free(&c);
}

/* The seed's example receiver allows 100 requests a minute and 1,000 an
 * hour: both windows on one endpoint. */
static void test_rate_windows(void **st)
{
    struct ep_def d;
    char err[256], buf[256];
    struct ep_settings eff, dflt;

    (void)st;
    ep_def_init(&d);
    assert_int_equal(ep_def_set(&d, "rate", "100/min, 1000/h", err, sizeof err), 0);
    assert_int_equal(d.s.rate.n, 2);
    assert_true(d.s.rate.r[0].count == 100 && d.s.rate.r[0].per_ms == 60000);
    assert_true(d.s.rate.r[1].count == 1000 && d.s.rate.r[1].per_ms == 3600000);
    /* inherited unless set; "0" is an explicit "unlimited" */
    ep_def_init(&d);
    dflt = d.s;
    dflt.rate.n = 1;
    dflt.rate.r[0].count = 5;
    dflt.rate.r[0].per_ms = 1000;
    eff = ep_settings_effective(&d.s, &dflt);
    assert_int_equal(eff.rate.n, 1);
    assert_int_equal(ep_def_set(&d, "rate", "0", err, sizeof err), 0);
    eff = ep_settings_effective(&d.s, &dflt);
    assert_int_equal(eff.rate.n, 0);
    /* what is stored (settings JSON) reads back the same */
    assert_int_equal(ep_def_set(&d, "rate", "2.5/s,30/m ,7/d", err, sizeof err), 0);
    {
        struct ep_def back;
        char *json = ep_json_settings(&d.s);
        assert_non_null(json);
        assert_non_null(strstr(json, "\"2.5/s, 30/m, 7/d\""));
        assert_int_equal(ep_def_from_stored(&back, "x", "https://a.example/", "[]", "[]", NULL, json, 0), 0);
        assert_int_equal(back.s.rate.n, 3);
        assert_true(back.s.rate.r[2].count == 7 && back.s.rate.r[2].per_ms == 86400000);
        ep_def_free(&back);
        free(json);
    }
    {
        static const char *const bad[] = {"10/x", "-1/s", "0, 5/s", "1/s 2/s", "a/s", "1/s,1/s,1/s,1/s,1/s"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            err[0] = '\0';
            if (ep_def_set(&d, "rate", bad[i], err, sizeof err) == 0)
                fail_msg("rate '%s' accepted", bad[i]);
            snprintf(buf, sizeof buf, "%s", err);
            assert_non_null(strstr(buf, "rate"));
        }
    }
    ep_def_free(&d);
}

/* The same definition again keeps an endpoint's snapshot (registry.c):
 * every key that changes deliveries must make them differ, paused not. */
static void test_def_same(void **st)
{
    static const char *const change[][2] = {
        {"url", "http://127.0.0.1:9/other"}, {"secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
        {"header", "X-Other: 1"}, {"event_types", "lead"}, {"max_attempts", "9"}, {"timeout", "3s"},
        {"rate", "5/s"}, {"method", "GET"}, {"ordering_key", "{k}"}, {"success_status", "201"},
    };
    struct ep_def a, b;
    char err[200];
    size_t i;

    (void)st;
    for (i = 0; i < sizeof change / sizeof change[0]; i++) {
        ep_def_init(&a);
        util_strlcpy(a.name, "a", sizeof a.name);
        assert_int_equal(ep_def_set(&a, "url", "http://127.0.0.1:9/hook", err, sizeof err), 0);
        assert_int_equal(ep_def_copy(&b, &a), 0);
        assert_true(ep_def_same(&a, &b));
        assert_int_equal(ep_def_set(&b, "paused", "yes", err, sizeof err), 0);
        assert_true(ep_def_same(&a, &b));
        assert_int_equal(ep_def_set(&b, change[i][0], change[i][1], err, sizeof err), 0);
        if (ep_def_same(&a, &b))
            fail_msg("%s = %s: still the same", change[i][0], change[i][1]);
        ep_def_free(&a);
        ep_def_free(&b);
    }
}

static void test_durations_sizes(void **st)
{
    int64_t v;

    (void)st;
    assert_int_equal(util_parse_duration_ms("250ms", &v), 0);
    assert_int_equal(v, 250);
    assert_int_equal(util_parse_duration_ms("1.5s", &v), 0);
    assert_int_equal(v, 1500);
    assert_int_equal(util_parse_duration_ms("30", &v), 0);
    assert_int_equal(v, 30000);
    assert_int_equal(util_parse_duration_ms("2d", &v), 0);
    assert_int_equal(v, 172800000);
    assert_int_equal(util_parse_duration_ms("-1s", &v), -1);
    assert_int_equal(util_parse_duration_ms("5 parsecs", &v), -1);
    assert_int_equal(util_parse_size("1MiB", &v), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(util_parse_size("1q", &v), -1);
}

/* Postback templates pass inih's 199-byte lines: indented lines continue
 * a value; errors point at the line the value starts on. */
static void test_postback_keys_and_continuations(void **st)
{
    struct config c;
    char err[512];
    const struct ep_def *e;

    (void)st;
    assert_int_equal(load_text(&c,
                               "[storage]\npath = /tmp/x.db\n"
                               "[endpoint.aff]\n"
                               "url = https://t.example/postback?subid=#click_id#&status=#status#\n"
                               "    &payout=#payout#&token=#secret#\n"
                               "macro_style = hashes\n"
                               "method = GET\n"
                               "map.status = approved:1,\n"
                               "  rejected:2\n"
                               "success_body = success=true\n"
                               "ordering_key = #transaction_id#\n",
                               err, sizeof err),
                     0);
    e = &c.endpoints[0];
    assert_string_equal(e->url, "https://t.example/postback?subid=#click_id#&status=#status#"
                                "&payout=#payout#&token=#secret#");
    assert_int_equal(e->rq.method, EP_GET);
    assert_int_equal(e->rq.nmaps, 1);
    assert_string_equal(e->rq.map_spec[0], "approved:1,rejected:2");
    assert_string_equal(e->rq.ordering_key, "#transaction_id#");
    config_free(&c);

    /* a macro in the host, reported at the url's first line */
    assert_int_equal(load_text(&c,
                               "[storage]\npath = /tmp/x.db\n[endpoint.aff]\n"
                               "url = https://{host}.example\n  /pb?x={a}\n",
                               err, sizeof err),
                     -1);
    assert_non_null(strstr(err, ":4: [endpoint.aff]: url: macro in the scheme, host or port at position 9"));
    config_free(&c);
    assert_int_equal(load_text(&c,
                               "[storage]\npath = /tmp/x.db\n[endpoint.aff]\nurl = https://t.example/\n"
                               "method = POST\nordering_key = fixed\n",
                               err, sizeof err),
                     -1);
    assert_non_null(strstr(err, ":6: [endpoint.aff]: ordering_key: holds no macro"));
    config_free(&c);
    /* two url lines in a row are not a continuation: the second wins */
    assert_int_equal(load_text(&c,
                               "[storage]\npath = /tmp/x.db\n[endpoint.aff]\nurl = https://a.example/\n"
                               "url = https://b.example/\n",
                               err, sizeof err),
                     0);
    assert_string_equal(c.endpoints[0].url, "https://b.example/");
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_units_and_values),
        cmocka_unit_test(test_errors_name_file_line_key_value),
        cmocka_unit_test(test_secret_never_in_error),
        cmocka_unit_test(test_conninfo_password_masked),
        cmocka_unit_test(test_node_name_and_lease),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_postback_keys_and_continuations),
        cmocka_unit_test(test_rate_windows),
        cmocka_unit_test(test_durations_sizes),
        cmocka_unit_test(test_def_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
