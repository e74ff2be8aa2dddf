/* Unit tests for template functions (tplfn.c through tpl.c) and the
 * endpoint's token: digests checked against values computed by Python's
 * hashlib/hmac (written out here), masking, maps, parse errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "endpoint.h"
#include "epdef.h"
#include "postback.h"
#include "tpl.h"
#include "tplfn.h"

static const char *PAYLOAD = "{\"click_id\": \"c_42\", \"amount\": 12.50, \"status\": \"approved\", \"nul\": null}";

struct result {
    int rc;
    char out[512], shown[512], why[200];
};

static void run(const char *tmpl, enum tpl_style st, const char *token, int missing_fail, struct result *r)
{
    struct tpl t;
    struct tpl_vars v = {0};
    struct buf out = {0}, shown = {0};
    struct tpl_map m;
    char err[200];

    assert_int_equal(tpl_parse(&t, tmpl, st, TPL_URL, err, sizeof err), 0);
    assert_int_equal(tpl_map_parse(&m, "status", "approved:1, rejected:2", err, sizeof err), 0);
    v.payload = PAYLOAD;
    v.payload_len = strlen(PAYLOAD);
    v.event_id = "evt_1";
    v.event_type = "conversion";
    v.endpoint = "aff";
    v.secret = "whsec_S3CRET";
    v.token = token;
    v.attempt = 1;
    v.timestamp = 1796000000;
    v.maps = &m;
    v.nmaps = 1;
    v.missing_fail = missing_fail;
    v.encode = 1;
    r->why[0] = '\0';
    r->rc = tpl_expand(&t, &v, &out, &shown, r->why, sizeof r->why);
    snprintf(r->out, sizeof r->out, "%s", r->rc == TPL_OK ? out.p : "");
    snprintf(r->shown, sizeof r->shown, "%s", r->rc == TPL_OK ? shown.p : "");
    tpl_map_free(&m);
    tpl_free(&t);
    buf_free(&out);
    buf_free(&shown);
}

#define TOKEN "tok en!"

static void test_digests_match_python(void **state)
{
    struct result r;

    (void)state;
    /* hashlib.md5(b"c_42tok en!").hexdigest() */
    run("https://n.example/pb?c={click_id}&sig={md5:click_id,token}", TPL_BRACES, TOKEN, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out, "https://n.example/pb?c=c_42&sig=2ee510b0e0fbf19d4335dc515f734c18");
    /* the digest of the token is shown masked, as the token itself */
    assert_string_equal(r.shown, "https://n.example/pb?c=c_42&sig=***");
    /* numbers as the JSON wrote them: sha1(b"c_4212.50") */
    run("https://n.example/pb?h=#sha1:click_id,amount#", TPL_HASHES, NULL, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out, "https://n.example/pb?h=107e0dfe047908c14cfe1b45d06a0b3a41bb4495");
    /* no secret digested: shown as sent */
    assert_string_equal(r.shown, r.out);
    /* built-ins: sha256(b"c_42evt_1") */
    run("https://n.example/pb?h=[sha256:click_id,event_id]", TPL_BRACKETS, NULL, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out,
                        "https://n.example/pb?h=eedc861057a613dcb50d8a64a4c1830bd74deab4b674590477f7122dc2c1e654");
    /* hmac.new(b"tok en!", b"c_4212.50", sha1 / sha256) */
    run("https://n.example/pb?s={hmac_sha1:click_id,amount}", TPL_BRACES, TOKEN, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out, "https://n.example/pb?s=1bd1776a27f2a112e4686106c050650d39da2332");
    assert_string_equal(r.shown, "https://n.example/pb?s=***");
    run("https://n.example/pb?s=#hmac_sha256:click_id,amount#", TPL_HASHES, TOKEN, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out,
                        "https://n.example/pb?s=be27e0895b41781d3dfea6c773aa4c59474a75a78201f3ac63e2b70b22fbf51a");
}

static void test_values_as_expanded(void **state)
{
    struct result r;

    (void)state;
    /* maps apply before digesting: md5(b"1c_42") */
    run("https://n.example/pb?h={md5:status,click_id}", TPL_BRACES, NULL, 0, &r);
    assert_string_equal(r.out, "https://n.example/pb?h=2c8aae9b198322ed03392c8339eefb42");
    /* a missing or null value is empty: md5(b"") */
    run("https://n.example/pb?h={md5:nope,nul}", TPL_BRACES, NULL, 0, &r);
    assert_string_equal(r.out, "https://n.example/pb?h=d41d8cd98f00b204e9800998ecf8427e");
    /* ... or fails the message with on_missing = fail, naming the field */
    run("https://n.example/pb?h={md5:click_id,nope}", TPL_BRACES, NULL, 1, &r);
    assert_int_equal(r.rc, TPL_MISSING);
    assert_non_null(strstr(r.why, "'nope'"));
    /* an hmac without a token is refused, never keyed by nothing */
    run("https://n.example/pb?h={hmac_sha256:click_id}", TPL_BRACES, NULL, 0, &r);
    assert_int_equal(r.rc, TPL_BAD_VALUE);
}

static void test_token_macro(void **state)
{
    struct result r;

    (void)state;
    run("https://n.example/pb?c={click_id}&t={token}", TPL_BRACES, TOKEN, 0, &r);
    assert_int_equal(r.rc, TPL_OK);
    assert_string_equal(r.out, "https://n.example/pb?c=c_42&t=tok%20en%21");
    assert_string_equal(r.shown, "https://n.example/pb?c=c_42&t=***");
    assert_null(strstr(r.shown, "tok"));
    /* without an endpoint token, {token} stays the payload field it was */
    run("https://n.example/pb?t={token}&c={click_id}", TPL_BRACES, NULL, 0, &r);
    assert_string_equal(r.out, "https://n.example/pb?t=&c=c_42");
}

static void test_parse_errors(void **state)
{
    static const struct {
        const char *tmpl;
        const char *want;
    } bad[] = {
        {"https://n.example/?s={sha512:a}", "unknown function at position 23"},
        {"https://n.example/?s={md5:}", "without arguments at position 27"},
        {"https://n.example/?s={md5:a,}", "argument at position 29"},
        {"https://n.example/?s={md5:a,,b}", "argument at position 29"},
        {"https://n.example/?s={md5:a|raw}", "invalid argument name"},
        {"https://n.example/?s={md5:a b}", "invalid argument name"},
        {"https://n.example/?s={md5:a,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}", "too many arguments"},
        {"https://n.example/?s={:a}", "unknown function"},
    };
    struct tpl t;
    char err[200];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tpl_parse(&t, bad[i].tmpl, TPL_BRACES, TPL_URL, err, sizeof err), -1);
        if (!strstr(err, bad[i].want))
            fail_msg("%s: got '%s', want '%s'", bad[i].tmpl, err, bad[i].want);
    }
    assert_int_equal(tpl_parse(&t, "https://n.example/?s={hmac_sha1:a}&m={md5:a}", TPL_BRACES, TPL_URL, err,
                               sizeof err), 0);
    assert_int_equal(t.nmacros, 2);
    assert_true(tpl_keyed(&t));
    tpl_free(&t);
    assert_int_equal(tpl_parse(&t, "https://n.example/?m={md5:a,token}", TPL_BRACES, TPL_URL, err, sizeof err), 0);
    assert_false(tpl_keyed(&t));
    tpl_free(&t);
}

static void test_endpoint_token(void **state)
{
    struct ep_def d;
    char err[200];
    struct ep_conf *e;
    struct postback_msg m = {0};
    struct postback_req rq = {0};
    enum errclass c;
    char *json;
    struct ep_def back;
    struct ep_settings dflt;

    (void)state;
    memset(&dflt, 0, sizeof dflt);
    ep_def_init(&d);
    util_strlcpy(d.name, "aff", sizeof d.name);
    assert_int_equal(ep_def_set(&d, "url", "https://n.example/pb?c={click_id}&sig={hmac_sha256:click_id,amount}",
                                err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "method", "GET", err, sizeof err), 0);
    /* keyed without a token: refused naming the key to set */
    assert_int_equal(ep_def_validate(&d, err, sizeof err), -1);
    assert_non_null(strstr(err, "token"));
    assert_int_equal(ep_def_set(&d, "token", "bad\ttoken", err, sizeof err), -1);
    assert_null(strstr(err, "bad"));
    assert_int_equal(ep_def_set(&d, "token", TOKEN, err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), 0);

    /* the stored form keeps it among the secrets, and reads it back */
    json = ep_json_secrets(&d);
    assert_non_null(json);
    assert_string_equal(json, "[\"token:" TOKEN "\"]");
    assert_int_equal(ep_def_from_stored(&back, "aff", d.url, json, "[]", NULL, "{\"method\":\"GET\"}", 0), 0);
    assert_string_equal(back.token, TOKEN);
    assert_int_equal(back.nsecrets, 0);
    ep_def_free(&back);
    ep_json_release(json, NULL, NULL);

    e = ep_conf_new(1, &d, &dflt);
    assert_non_null(e);
    m.event_id = "evt_1";
    m.payload = PAYLOAD;
    m.payload_len = strlen(PAYLOAD);
    m.attempt = 1;
    assert_int_equal(postback_build(e, &m, &rq, &c, err, sizeof err), 0);
    assert_string_equal(rq.send_url, "https://n.example/pb?c=c_42&sig="
                                     "be27e0895b41781d3dfea6c773aa4c59474a75a78201f3ac63e2b70b22fbf51a");
    assert_string_equal(rq.shown.p, "https://n.example/pb?c=c_42&sig=***");
    postback_req_free(&rq);
    ep_conf_unref(e);
    ep_def_free(&d);
}

/* The URL curl reports (dot segments removed) is masked like the shown
 * one: the token and the digests of it under names urlmask does not know. */
static void test_effective_url_masked(void **state)
{
    struct ep_def d, other;
    char err[200], *shown;
    struct ep_conf *e;
    struct postback_msg m = {0};
    struct postback_req rq = {0};
    enum errclass c;
    struct ep_settings dflt;

    (void)state;
    memset(&dflt, 0, sizeof dflt);
    ep_def_init(&d);
    util_strlcpy(d.name, "aff", sizeof d.name);
    assert_int_equal(ep_def_set(&d, "url", "https://n.example/pb?c={click_id}&v={token}&h={md5:click_id,token}"
                                "&k={hmac_sha1:click_id}", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "method", "GET", err, sizeof err), 0);
    assert_int_equal(ep_def_set(&d, "token", TOKEN, err, sizeof err), 0);
    assert_int_equal(ep_def_validate(&d, err, sizeof err), 0);
    /* a new token is a new definition: jobs claimed under the old one
     * go back (ep_def_same) */
    assert_int_equal(ep_def_copy(&other, &d), 0);
    assert_true(ep_def_same(&d, &other));
    assert_int_equal(ep_def_set(&other, "token", "another", err, sizeof err), 0);
    assert_false(ep_def_same(&d, &other));
    ep_def_free(&other);
    e = ep_conf_new(1, &d, &dflt);
    assert_non_null(e);
    m.event_id = "evt_1";
    m.payload = PAYLOAD;
    m.payload_len = strlen(PAYLOAD);
    m.attempt = 1;
    assert_int_equal(postback_build(e, &m, &rq, &c, err, sizeof err), 0);
    assert_non_null(strstr(rq.send_url, "v=tok%20en%21&h=2ee510b0e0fbf19d4335dc515f734c18&k="));
    assert_string_equal(rq.shown.p, "https://n.example/pb?c=c_42&v=***&h=***&k=***");
    /* as if curl had requested the URL sent for another one */
    shown = postback_effective_shown(e, &rq.hidden, "https://n.example/x/../pb", rq.send_url);
    assert_non_null(shown);
    assert_string_equal(shown, "https://n.example/pb?c=c_42&v=***&h=***&k=***");
    free(shown);
    postback_req_free(&rq);
    ep_conf_unref(e);
    ep_def_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digests_match_python),
        cmocka_unit_test(test_values_as_expanded),
        cmocka_unit_test(test_token_macro),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_endpoint_token),
        cmocka_unit_test(test_effective_url_masked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
