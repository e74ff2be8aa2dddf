/* Unit tests for postback templates (tpl.c), the JSON value reader
 * (jpath.c), the request builder and excerpts (postback.c) and success
 * statuses (outcome.c). Expected strings are written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "endpoint.h"
#include "epdef.h"
#include "jpath.h"
#include "outcome.h"
#include "postback.h"
#include "tpl.h"

static const char *PAYLOAD =
    "{\"click_id\": \"ab c/\\u00e9?&=#\", \"payout\": 12.50, \"big\": 12345678901234567890, \"neg\": -0.0,"
    " \"status\": \"approved\", \"flag\": true, \"off\": false, \"nul\": null, \"emoji\": \"\\ud83d\\ude00\","
    " \"data\": {\"amount\": 1e3, \"name\": \"x\\\"y\", \"deep\": {\"k\": \"v\"}},"
    " \"items\": [{\"sku\": \"s1\"}, {\"sku\": \"s2\"}], \"esc\": \"a\\\\b\\n\", \"utf\": \"Zo\xc3\xab \xe6\x97\xa5\"}";

/* Expand template s (style st) against PAYLOAD; out gets the text or
 * "!<rc>" for a non-OK result. */
static char *expand(const char *s, enum tpl_style st, int encode, int missing_fail, const struct tpl_map *maps,
                    size_t nmaps)
{
    struct tpl t;
    struct tpl_vars v = {0};
    struct buf out = {0}, shown = {0};
    char err[200], why[200], *r;
    int rc;

    assert_int_equal(tpl_parse(&t, s, st, TPL_URL, err, sizeof err), 0);
    v.payload = PAYLOAD;
    v.payload_len = strlen(PAYLOAD);
    v.event_id = "evt_1";
    v.event_type = "conversion";
    v.endpoint = "aff";
    v.secret = "whsec_S3CRET";
    v.attempt = 3;
    v.timestamp = 1796000000;
    v.maps = maps;
    v.nmaps = nmaps;
    v.missing_fail = missing_fail;
    v.encode = encode;
    rc = tpl_expand(&t, &v, &out, &shown, why, sizeof why);
    if (rc != TPL_OK) {
        r = malloc(8);
        snprintf(r, 8, "!%d", rc);
    } else {
        r = strdup(out.p);
    }
    tpl_free(&t);
    buf_free(&out);
    buf_free(&shown);
    return r;
}

#define EXPECT(tmpl, st, want)                                          \
    do {                                                                \
        char *got_ = expand((tmpl), (st), 1, 0, NULL, 0);               \
        assert_string_equal(got_, (want));                              \
        free(got_);                                                     \
    } while (0)

static void test_styles_and_encoding(void **state)
{
    (void)state;
    EXPECT("https://t.example/pb?subid={click_id}&p={payout}", TPL_BRACES,
           "https://t.example/pb?subid=ab%20c%2F%C3%A9%3F%26%3D%23&p=12.50");
    EXPECT("https://t.example/pb?subid=#click_id#&p=#payout#", TPL_HASHES,
           "https://t.example/pb?subid=ab%20c%2F%C3%A9%3F%26%3D%23&p=12.50");
    EXPECT("https://t.example/pb/[status]?p=[payout]", TPL_BRACKETS, "https://t.example/pb/approved?p=12.50");
    /* another style's delimiters are literal text */
    EXPECT("https://t.example/pb?a={status}&b=[x]", TPL_BRACES, "https://t.example/pb?a=approved&b=[x]");
}

static void test_values(void **state)
{
    (void)state;
    /* numbers as written, booleans, null and missing as empty, nested, arrays */
    EXPECT("http://h/x?big={big}&neg={neg}&amt={data.amount}", TPL_BRACES,
           "http://h/x?big=12345678901234567890&neg=-0.0&amt=1e3");
    EXPECT("http://h/x?f={flag}&o={off}&n={nul}&m={missing}&mm={data.nope}", TPL_BRACES,
           "http://h/x?f=true&o=false&n=&m=&mm=");
    EXPECT("http://h/x?n={data.name}&k={data.deep.k}&s={items.1.sku}&i={items.2.sku}", TPL_BRACES,
           "http://h/x?n=x%22y&k=v&s=s2&i=");
    EXPECT("http://h/x?e={emoji}&u={utf}&b={esc}", TPL_BRACES,
           "http://h/x?e=%F0%9F%98%80&u=Zo%C3%AB%20%E6%97%A5&b=a%5Cb%0A");
    /* an object's text, as written */
    EXPECT("http://h/x?d={data.deep}", TPL_BRACES, "http://h/x?d=%7B%22k%22%3A%20%22v%22%7D");
}

static void test_builtins_and_secret_masked(void **state)
{
    struct tpl t;
    struct tpl_vars v = {0};
    struct buf out = {0}, shown = {0};
    char err[200], why[200];

    (void)state;
    EXPECT("http://h/x?e={event_id}&t={event_type}&ep={endpoint}&a={attempt}&ts={timestamp}", TPL_BRACES,
           "http://h/x?e=evt_1&t=conversion&ep=aff&a=3&ts=1796000000");
    assert_int_equal(tpl_parse(&t, "http://h/x?tok={secret}&c={click_id}", TPL_BRACES, TPL_URL, err, sizeof err), 0);
    v.payload = PAYLOAD;
    v.payload_len = strlen(PAYLOAD);
    v.secret = "whsec_S3CRET";
    v.encode = 1;
    assert_int_equal(tpl_expand(&t, &v, &out, &shown, why, sizeof why), TPL_OK);
    assert_string_equal(out.p, "http://h/x?tok=whsec_S3CRET&c=ab%20c%2F%C3%A9%3F%26%3D%23");
    assert_string_equal(shown.p, "http://h/x?tok=***&c=ab%20c%2F%C3%A9%3F%26%3D%23");
    /* no secret configured: the macro is missing */
    v.secret = NULL;
    v.missing_fail = 1;
    assert_int_equal(tpl_expand(&t, &v, &out, &shown, why, sizeof why), TPL_MISSING);
    assert_non_null(strstr(why, "'secret'"));
    tpl_free(&t);
    buf_free(&out);
    buf_free(&shown);
}

static void test_raw_missing_and_maps(void **state)
{
    struct tpl_map m[2];
    char err[200], *got;

    (void)state;
    EXPECT("http://h/x?p={payout|raw}&s={status|raw}", TPL_BRACES, "http://h/x?p=12.50&s=approved");
    got = expand("http://h/x?c={click_id|raw}", TPL_BRACES, 1, 0, NULL, 0);   /* a blank: refused */
    assert_string_equal(got, "!2");
    free(got);
    got = expand("http://h/x?c={nope}", TPL_BRACES, 1, 1, NULL, 0);
    assert_string_equal(got, "!1");
    free(got);
    got = expand("http://h/x?c={nul}", TPL_BRACES, 1, 1, NULL, 0);           /* null counts as missing */
    assert_string_equal(got, "!1");
    free(got);
    assert_int_equal(tpl_map_parse(&m[0], "status", "approved:1, rejected:2 ,pending:0", err, sizeof err), 0);
    assert_int_equal(m[0].n, 3);
    assert_int_equal(tpl_map_parse(&m[1], "data.name", "x\"y:quoted", err, sizeof err), 0);
    got = expand("http://h/x?s={status}&n={data.name}&p={payout}", TPL_BRACES, 1, 0, m, 2);
    assert_string_equal(got, "http://h/x?s=1&n=quoted&p=12.50");
    free(got);
    tpl_map_free(&m[0]);
    tpl_map_free(&m[1]);
    assert_int_equal(tpl_map_parse(&m[0], "status", "approved", err, sizeof err), -1);
    assert_non_null(strstr(err, "position 1"));
    assert_int_equal(tpl_map_parse(&m[0], "status", "a:1,, b:2", err, sizeof err), -1);
    assert_non_null(strstr(err, "position 5"));
    assert_int_equal(tpl_map_parse(&m[0], "bad..name", "a:1", err, sizeof err), -1);
}

static void test_malformed_templates(void **state)
{
    static const struct {
        const char *s;
        enum tpl_style st;
        const char *why;
    } bad[] = {
        {"http://{host}/x", TPL_BRACES, "position 8"},
        {"http://h:{port}/x", TPL_BRACES, "position 10"},
        {"{scheme}://h/x", TPL_BRACES, "position 1"},
        {"http://#h#/x", TPL_HASHES, "position 8"},
        {"http://[h]/x", TPL_BRACKETS, "position 8"},
        {"http://user{u}@h/x", TPL_BRACES, "position 12"},
        {"http://h/x?a={b", TPL_BRACES, "unterminated macro at position 14"},
        {"http://h/x?a=#b", TPL_HASHES, "unterminated"},
        {"http://h/x?a={}", TPL_BRACES, "invalid macro name at position 15"},
        {"http://h/x?a={a b}", TPL_BRACES, "invalid macro name"},
        {"http://h/x?a={a..b}", TPL_BRACES, "invalid macro name"},
        {"http://h/x?a={.a}", TPL_BRACES, "invalid macro name"},
        {"http://h/x?a={a|upper}", TPL_BRACES, "unknown modifier at position 17"},
        {"http://h/x?a=}", TPL_BRACES, "position 14"},
        {"http://h/x?a=]", TPL_BRACKETS, "position 14"},
    };
    struct tpl t;
    char err[200];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (tpl_parse(&t, bad[i].s, bad[i].st, TPL_URL, err, sizeof err) == 0)
            fail_msg("accepted %s", bad[i].s);
        if (!strstr(err, bad[i].why))
            fail_msg("%s: error '%s' lacks '%s'", bad[i].s, err, bad[i].why);
    }
    /* an IPv6 literal is not a bracket macro; an ordering key has no host */
    assert_int_equal(tpl_parse(&t, "http://[::1]:8080/x?a=[b]", TPL_BRACKETS, TPL_URL, err, sizeof err), 0);
    assert_int_equal(t.nmacros, 1);
    tpl_free(&t);
    assert_int_equal(tpl_parse(&t, "{a}-{b.c}", TPL_BRACES, TPL_TEXT, err, sizeof err), 0);
    assert_int_equal(t.nmacros, 2);
    tpl_free(&t);
    {
        char big[TPL_MAX + 2];
        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        assert_int_equal(tpl_parse(&t, big, TPL_BRACES, TPL_TEXT, err, sizeof err), -1);
    }
}

static void test_form_body(void **state)
{
    struct tpl_vars v = {0};
    struct tpl_map m;
    struct buf out = {0};
    char err[200], why[200];
    const char *p = "{\"a b\": \"x&y=z\", \"n\": 1.50, \"t\": true, \"z\": null, \"o\": {\"k\":[1]}, \"s\": \"approved\"}";

    (void)state;
    assert_int_equal(tpl_map_parse(&m, "s", "approved:1", err, sizeof err), 0);
    v.payload = p;
    v.payload_len = strlen(p);
    v.maps = &m;
    v.nmaps = 1;
    assert_int_equal(tpl_form(&v, &out, why, sizeof why), TPL_OK);
    assert_string_equal(out.p, "a%20b=x%26y%3Dz&n=1.50&t=true&z=&o=%7B%22k%22%3A%5B1%5D%7D&s=1");
    buf_reset(&out);
    v.payload = "[1,2]";
    v.payload_len = 5;
    assert_int_equal(tpl_form(&v, &out, why, sizeof why), TPL_BAD_VALUE);
    tpl_map_free(&m);
    buf_free(&out);
}

static void test_jpath_robust(void **state)
{
    static const char *const junk[] = {"", "{", "{\"a\"", "{\"a\":", "{\"a\":\"x", "{\"a\":tru}", "[", "\"\\u12",
                                       "{\"a\":[1,2", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\u0000\"}", "nul",
                                       "{\"a\":1 \"b\":2}"};
    struct jp_val v;
    struct buf b = {0};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        int r = jpath_get(junk[i], strlen(junk[i]), "a", 1, &v);
        if (r == 0) {
            buf_reset(&b);
            (void)jpath_text(&v, &b);
        }
    }
    /* a lone surrogate and an escaped NUL cannot become text */
    assert_int_equal(jpath_get(junk[9], strlen(junk[9]), "a", 1, &v), 0);
    assert_int_equal(jpath_text(&v, &b), -1);
    assert_int_equal(jpath_get(junk[10], strlen(junk[10]), "a", 1, &v), 0);
    assert_int_equal(jpath_text(&v, &b), -1);
    /* escaped keys match their text */
    assert_int_equal(jpath_get("{\"\\u0061\":7}", strlen("{\"\\u0061\":7}"), "a", 1, &v), 0);
    assert_int_equal(v.type, JP_NUMBER);
    buf_free(&b);
}

static void test_success_statuses(void **state)
{
    struct outcome_ok ok;
    char err[200];

    (void)state;
    assert_int_equal(outcome_ok_parse("200-299", &ok, err, sizeof err), 0);
    assert_true(outcome_ok_has(&ok, 200) && outcome_ok_has(&ok, 299) && !outcome_ok_has(&ok, 302));
    assert_int_equal(outcome_ok_parse("200, 204,302", &ok, err, sizeof err), 0);
    assert_true(outcome_ok_has(&ok, 302) && !outcome_ok_has(&ok, 201));
    assert_int_equal(outcome_classify_ok(302, ERRC_NONE, &ok), OUTCOME_DELIVERED);
    assert_int_equal(outcome_classify_ok(201, ERRC_NONE, &ok), OUTCOME_DEAD);   /* answered, not listed */
    assert_int_equal(outcome_classify_ok(503, ERRC_NONE, &ok), OUTCOME_RETRY);
    assert_int_equal(outcome_classify_ok(410, ERRC_NONE, &ok), OUTCOME_GONE);
    assert_int_equal(outcome_classify_ok(200, ERRC_BODY_MISMATCH, &ok), OUTCOME_RETRY);
    assert_int_equal(outcome_classify_ok(200, ERRC_BODY_MISMATCH, NULL), OUTCOME_RETRY);
    assert_int_equal(outcome_classify_ok(0, ERRC_TEMPLATE_MISSING, NULL), OUTCOME_DEAD);
    assert_int_equal(outcome_classify_ok(0, ERRC_TEMPLATE, NULL), OUTCOME_DEAD);
    assert_int_equal(outcome_ok_parse("200,abc", &ok, err, sizeof err), -1);
    assert_non_null(strstr(err, "position 5"));
    assert_int_equal(outcome_ok_parse("299-200", &ok, err, sizeof err), -1);
    assert_int_equal(outcome_ok_parse("99", &ok, err, sizeof err), -1);
    assert_int_equal(outcome_ok_parse("", &ok, err, sizeof err), -1);
    assert_int_equal(outcome_ok_parse("200 300", &ok, err, sizeof err), -1);
    {
        char cls[32];
        outcome_error_class(200, ERRC_BODY_MISMATCH, cls, sizeof cls);
        assert_string_equal(cls, "body_mismatch");
        outcome_error_class(0, ERRC_TEMPLATE_MISSING, cls, sizeof cls);
        assert_string_equal(cls, "template_missing");
    }
}

static void test_excerpt_and_body_check(void **state)
{
    char big[1100], *e;

    (void)state;
    e = postback_excerpt("ok\r\n\x01\x7f\\", 7);
    assert_string_equal(e, "ok\\r\\n\\x01\\x7f\\\\");
    free(e);
    e = postback_excerpt("\xff\xfe", 2);   /* not UTF-8: bytes shown */
    assert_string_equal(e, "\\xff\\xfe");
    free(e);
    assert_null(postback_excerpt("", 0));
    /* cut at 1 KiB without splitting a character */
    memset(big, 'a', sizeof big);
    memcpy(big + 1022, "\xe6\x97\xa5", 3);
    e = postback_excerpt(big, sizeof big);
    assert_int_equal(strlen(e), 1022);
    free(e);
    assert_true(postback_body_ok("success=true", "x success=true;", 15));
    assert_false(postback_body_ok("success=true", "success=tru", 11));
    assert_false(postback_body_ok("x", NULL, 0));
}

/* The endpoint definition keys and the request postback_build makes. */
static void test_endpoint_request(void **state)
{
    struct ep_def d;
    struct ep_settings dflt;
    struct ep_conf *c;
    struct postback_req rq;
    struct postback_msg m = {"evt_9", "sale", "{\"c\":\"x y\",\"s\":\"approved\"}", 26, 2, 1796000000};
    enum errclass ec = ERRC_NONE;
    char err[200], why[200];

    (void)state;
    memset(&rq, 0, sizeof rq);
    ep_def_init(&d);
    memset(&dflt, 0, sizeof dflt);
    strcpy(d.name, "aff");
    assert_int_equal(ep_def_set(&d, "url", "https://t.example/pb?c=#c#&s=#s#&tok=#secret#&key=lit", err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), -1);   /* '#' is a fragment for braces */
    assert_int_equal(ep_def_set(&d, "macro_style", "hashes", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "method", "GET", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "map.s", "approved:1", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "method", "get", err, sizeof err), -1);
    assert_non_null(strstr(err, "POST, GET, PUT"));
    assert_int_equal(ep_def_set(&d, "macro_style", "percent", err, sizeof err), -1);
    assert_int_equal(ep_def_set(&d, "on_missing", "skip", err, sizeof err), -1);
    assert_int_equal(ep_def_set(&d, "success_status", "2xx", err, sizeof err), -1);
    assert_int_equal(ep_def_set(&d, "success_body", "", err, sizeof err), -1);
    c = ep_conf_new(1, &d, &dflt);
    assert_non_null(c);
    assert_false(c->plain);
    assert_int_equal(c->body, EP_BODY_NONE);
    assert_int_equal(postback_build(c, &m, &rq, &ec, why, sizeof why), 0);
    assert_string_equal(rq.url.p,
                        "https://t.example/pb?c=x%20y&s=1&tok=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw&key=lit");
    assert_string_equal(rq.shown.p, "https://t.example/pb?c=x%20y&s=1&tok=***&key=***");
    assert_ptr_equal(rq.send_url, rq.url.p);
    assert_string_equal(rq.send_body, "");   /* a GET sends no body */
    assert_int_equal(rq.send_len, 0);
    ep_conf_unref(c);
    /* a raw value that would add a fragment is refused by the raw rule
     * and, where the endpoint allows URL syntax in it, by the URL check */
    assert_int_equal(ep_def_set(&d, "url", "https://t.example/pb?c=#c|raw#", err, sizeof err), 0);
    c = ep_conf_new(1, &d, &dflt);
    m.payload = "{\"c\":\"a#b\"}";
    m.payload_len = strlen(m.payload);
    assert_int_equal(postback_build(c, &m, &rq, &ec, why, sizeof why), -1);
    assert_int_equal(ec, ERRC_TEMPLATE_UNSAFE);
    assert_non_null(strstr(why, "raw_allow = c"));
    ep_conf_unref(c);
    assert_int_equal(ep_def_set(&d, "raw_allow", "c", err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), 0);
    c = ep_conf_new(1, &d, &dflt);
    assert_int_equal(postback_build(c, &m, &rq, &ec, why, sizeof why), -1);
    assert_int_equal(ec, ERRC_TEMPLATE);
    m.payload = "{\"c\":\"a/b&d=1\"}";
    m.payload_len = strlen(m.payload);
    assert_int_equal(postback_build(c, &m, &rq, &ec, why, sizeof why), 0);
    assert_string_equal(rq.url.p, "https://t.example/pb?c=a/b&d=1");
    ep_conf_unref(c);
    /* a plain webhook stays on the fast path */
    ep_def_free(&d);
    strcpy(d.name, "hook");
    assert_int_equal(ep_def_set(&d, "url", "https://t.example/hook?token=abc", err, sizeof err), 0);
    c = ep_conf_new(2, &d, &dflt);
    assert_true(c->plain);
    assert_string_equal(c->shown_url, "https://t.example/hook?token=***");
    ep_conf_unref(c);
    ep_def_free(&d);
    postback_req_free(&rq);
}

/* {x|raw}: URL syntax and dot segments only where raw_allow names x. */
static void test_raw_syntax(void **state)
{
    static const struct {
        const char *json;   /* the value of x, as JSON */
        int unsafe;
    } vals[] = {
        {"\"a/b\"", 1},   {"\"a\\\\b\"", 1}, {"\"a?b\"", 1}, {"\"a#b\"", 1},  {"\"1&token=abc\"", 1},
        {"\"a=b\"", 1},   {"\"a%2Fb\"", 1},  {"\"..\"", 1},   {"\"a..b\"", 1}, {"\"../../admin/delete\"", 1},
        {"\"a.b\"", 0},   {"\"1.5\"", 0},    {"\"A-1~b_c\"", 0}, {"12.5", 0},    {"\"caf\u00e9\"", 0},
        {"\".\"", 0},
    };
    static const char *const allow[] = {NULL, "y", "x", "y, x"};
    char payload[128], err[200], why[200];
    struct tpl t, tt;
    size_t i, a;

    (void)state;
    assert_int_equal(tpl_parse(&t, "http://h/p/{x|raw}?y={y|raw}&z={z}", TPL_BRACES, TPL_URL, err, sizeof err), 0);
    assert_int_equal(tpl_parse(&tt, "k-{x|raw}", TPL_BRACES, TPL_TEXT, err, sizeof err), 0);
    for (i = 0; i < sizeof vals / sizeof vals[0]; i++)
        for (a = 0; a < sizeof allow / sizeof allow[0]; a++) {
            struct tpl_vars v = {0};
            struct buf out = {0};
            int rc, allowed = allow[a] && strstr(allow[a], "x");
            snprintf(payload, sizeof payload, "{\"x\": %s, \"y\": \"1\"}", vals[i].json);
            v.payload = payload;
            v.payload_len = strlen(payload);
            v.encode = 1;
            v.raw_allow = allow[a];
            why[0] = '\0';
            rc = tpl_expand(&t, &v, &out, NULL, why, sizeof why);
            if (vals[i].unsafe && !allowed) {
                if (rc != TPL_UNSAFE)
                    fail_msg("%s with raw_allow %s: %d", vals[i].json, allow[a] ? allow[a] : "-", rc);
                assert_non_null(strstr(why, "'x|raw'"));
                assert_non_null(strstr(why, "raw_allow = x"));
            } else {
                assert_int_equal(rc, TPL_OK);
                assert_memory_equal(out.p, "http://h/p/", 11);
            }
            buf_free(&out);
            /* not in a URL (an ordering key): no rule of URLs applies */
            v.encode = 0;
            v.raw_allow = NULL;
            assert_int_equal(tpl_expand(&tt, &v, &out, NULL, why, sizeof why), TPL_OK);
            buf_free(&out);
        }
    assert_int_equal(tpl_raw_allow_check(&t, "x, y", err, sizeof err), 0);
    assert_int_equal(tpl_raw_allow_check(&t, NULL, err, sizeof err), 0);
    assert_int_equal(tpl_raw_allow_check(&t, "x,z", err, sizeof err), -1);   /* {z} is encoded */
    assert_non_null(strstr(err, "'z'"));
    assert_int_equal(tpl_raw_allow_check(&t, "X", err, sizeof err), -1);
    assert_int_equal(tpl_raw_allow_check(&t, "q", err, sizeof err), -1);
    tpl_free(&t);
    tpl_free(&tt);
    /* the class: never sent, never retried */
    assert_string_equal(errclass_name(ERRC_TEMPLATE_UNSAFE), "template_unsafe");
    assert_int_equal(outcome_classify_ok(0, ERRC_TEMPLATE_UNSAFE, NULL), OUTCOME_DEAD);
}

static void test_raw_allow_key(void **state)
{
    struct ep_def d;
    char err[200];

    (void)state;
    ep_def_init(&d);
    strcpy(d.name, "aff");
    assert_int_equal(ep_def_set(&d, "url", "https://t.example/pb/{path|raw}?c={c}", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "raw_allow", "c", err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "raw_allow"));
    assert_int_equal(ep_def_set(&d, "raw_allow", "path", err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), 0);
    ep_def_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_styles_and_encoding),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_builtins_and_secret_masked),
        cmocka_unit_test(test_raw_missing_and_maps),
        cmocka_unit_test(test_malformed_templates),
        cmocka_unit_test(test_form_body),
        cmocka_unit_test(test_jpath_robust),
        cmocka_unit_test(test_success_statuses),
        cmocka_unit_test(test_excerpt_and_body_check),
        cmocka_unit_test(test_endpoint_request),
        cmocka_unit_test(test_raw_syntax),
        cmocka_unit_test(test_raw_allow_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
