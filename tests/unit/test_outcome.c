/* Unit tests for outcome.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "outcome.h"

/* Expected outcome per status, spelled out range by range from the
 * delivery contract rather than derived from the implementation. */
struct range { int lo, hi; enum outcome o; };
static const struct range status_table[] = {
    { 100, 199, OUTCOME_DEAD },
    { 200, 299, OUTCOME_DELIVERED },
    { 300, 399, OUTCOME_DEAD },
    { 400, 407, OUTCOME_DEAD },
    { 408, 408, OUTCOME_RETRY },
    { 409, 409, OUTCOME_DEAD },
    { 410, 410, OUTCOME_GONE },
    { 411, 424, OUTCOME_DEAD },
    { 425, 425, OUTCOME_RETRY },
    { 426, 428, OUTCOME_DEAD },
    { 429, 429, OUTCOME_RETRY },
    { 430, 499, OUTCOME_DEAD },
    { 500, 599, OUTCOME_RETRY },
};

static void test_every_status(void **state)
{
    (void)state;
    int covered = 0;
    for (int s = 100; s <= 599; s++) {
        const struct range *r = NULL;
        for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
            if (s >= status_table[i].lo && s <= status_table[i].hi)
                r = &status_table[i];
        assert_non_null(r);
        covered++;
        /* The transport class must not matter once a status arrived. */
        enum errclass classes[] = { ERRC_NONE, ERRC_IO, ERRC_BLOCKED, ERRC_TIMEOUT };
        for (size_t c = 0; c < 4; c++) {
            enum outcome got = outcome_classify(s, classes[c]);
            if (got != r->o)
                fail_msg("status %d errc %d: got %s want %s", s, (int)classes[c],
                         outcome_name(got), outcome_name(r->o));
        }
    }
    assert_int_equal(covered, 500);
}

static void test_status_spot_checks(void **state)
{
    (void)state;
    assert_int_equal(outcome_classify(200, ERRC_NONE), OUTCOME_DELIVERED);
    assert_int_equal(outcome_classify(204, ERRC_NONE), OUTCOME_DELIVERED);
    assert_int_equal(outcome_classify(299, ERRC_NONE), OUTCOME_DELIVERED);
    assert_int_equal(outcome_classify(199, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(300, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(301, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(400, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(401, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(404, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(408, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(410, ERRC_NONE), OUTCOME_GONE);
    assert_int_equal(outcome_classify(425, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(429, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(499, ERRC_NONE), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(500, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(503, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(599, ERRC_NONE), OUTCOME_RETRY);
}

static void test_malformed_status(void **state)
{
    (void)state;
    /* Not a valid HTTP status: treated like a malformed reply (io). */
    assert_int_equal(outcome_classify(600, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(999, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(99, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(1, ERRC_NONE), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(-1, ERRC_NONE), OUTCOME_RETRY);
}

static void test_no_response(void **state)
{
    (void)state;
    assert_int_equal(outcome_classify(0, ERRC_DNS), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_CONNECT), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_TLS), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_TIMEOUT), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_IO), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_INTERNAL), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_BLOCKED), OUTCOME_DEAD);
    assert_int_equal(outcome_classify(0, ERRC_NONE), OUTCOME_RETRY);
    /* client certificate and pin failures: retried like other TLS ones */
    assert_int_equal(outcome_classify(0, ERRC_TLS_CLIENT_AUTH), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, ERRC_TLS_PIN), OUTCOME_RETRY);
    /* nginx's 400 for a missing client certificate means the same */
    assert_int_equal(outcome_classify_ok(400, ERRC_TLS_CLIENT_AUTH, NULL), OUTCOME_RETRY);
    assert_int_equal(outcome_classify_ok(400, ERRC_NONE, NULL), OUTCOME_DEAD);
}

/* CURLcode numbers are written as literals (from curl.h's comments, which
 * are part of curl's stable ABI) so the test does not share the
 * implementation's symbolic names. */
static void test_curl_codes(void **state)
{
    (void)state;
    static const struct { int code; enum errclass want; } t[] = {
        { 0,  ERRC_NONE },      /* OK */
        { 5,  ERRC_PROXY },     /* COULDNT_RESOLVE_PROXY */
        { 6,  ERRC_DNS },       /* COULDNT_RESOLVE_HOST */
        { 7,  ERRC_CONNECT },   /* COULDNT_CONNECT */
        { 28, ERRC_TIMEOUT },   /* OPERATION_TIMEDOUT */
        { 35, ERRC_TLS },       /* SSL_CONNECT_ERROR */
        { 58, ERRC_TLS_CLIENT_AUTH }, /* SSL_CERTPROBLEM: our certificate or key */
        { 59, ERRC_TLS },       /* SSL_CIPHER */
        { 60, ERRC_TLS },       /* PEER_FAILED_VERIFICATION == SSL_CACERT */
        { 64, ERRC_TLS },       /* USE_SSL_FAILED */
        { 77, ERRC_TLS },       /* SSL_CACERT_BADFILE */
        { 80, ERRC_TLS },       /* SSL_SHUTDOWN_FAILED */
        { 83, ERRC_TLS },       /* SSL_ISSUER_ERROR */
        { 90, ERRC_TLS_PIN },   /* SSL_PINNEDPUBKEYNOTMATCH */
        { 91, ERRC_TLS },       /* SSL_INVALIDCERTSTATUS */
        { 98, ERRC_TLS_CLIENT_AUTH }, /* SSL_CLIENTCERT: the receiver wants one */
        { 8,  ERRC_IO },        /* WEIRD_SERVER_REPLY */
        { 16, ERRC_IO },        /* HTTP2 */
        { 18, ERRC_IO },        /* PARTIAL_FILE */
        { 52, ERRC_IO },        /* GOT_NOTHING */
        { 55, ERRC_IO },        /* SEND_ERROR */
        { 56, ERRC_IO },        /* RECV_ERROR */
        { 92, ERRC_IO },        /* HTTP2_STREAM */
        { 95, ERRC_IO },        /* HTTP3 */
        { 27, ERRC_IO },        /* OUT_OF_MEMORY: a huge response header line */
        { 43, ERRC_INTERNAL },  /* BAD_FUNCTION_ARGUMENT */
        { 2,  ERRC_INTERNAL },  /* FAILED_INIT */
        { 48, ERRC_INTERNAL },  /* UNKNOWN_OPTION */
        { 1,  ERRC_INTERNAL },  /* UNSUPPORTED_PROTOCOL */
        { 3,  ERRC_INTERNAL },  /* URL_MALFORMAT */
        { 42, ERRC_IO },        /* ABORTED_BY_CALLBACK: default */
        { 47, ERRC_IO },        /* TOO_MANY_REDIRECTS: default */
        { 22, ERRC_IO },        /* HTTP_RETURNED_ERROR: default */
        { 99, ERRC_IO },        /* UNRECOVERABLE_POLL: default */
        { 12345, ERRC_IO },     /* unknown */
        { -1, ERRC_IO },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        enum errclass got = outcome_errclass_from_curl(t[i].code);
        if (got != t[i].want)
            fail_msg("curl code %d: got '%s' want '%s'", t[i].code,
                     errclass_name(got), errclass_name(t[i].want));
    }
}

static void test_curl_then_classify(void **state)
{
    (void)state;
    /* The path the delivery code takes when no response arrived. */
    assert_int_equal(outcome_classify(0, outcome_errclass_from_curl(6)), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, outcome_errclass_from_curl(28)), OUTCOME_RETRY);
    assert_int_equal(outcome_classify(0, outcome_errclass_from_curl(60)), OUTCOME_RETRY);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(outcome_name(OUTCOME_DELIVERED), "delivered");
    assert_string_equal(outcome_name(OUTCOME_RETRY), "retry");
    assert_string_equal(outcome_name(OUTCOME_DEAD), "dead_letter");
    assert_string_equal(outcome_name(OUTCOME_GONE), "gone");
    assert_string_equal(errclass_name(ERRC_NONE), "");
    assert_string_equal(errclass_name(ERRC_DNS), "dns");
    assert_string_equal(errclass_name(ERRC_CONNECT), "connect_failed");
    assert_string_equal(errclass_name(ERRC_TLS), "tls");
    assert_string_equal(errclass_name(ERRC_TIMEOUT), "timeout");
    assert_string_equal(errclass_name(ERRC_IO), "io");
    assert_string_equal(errclass_name(ERRC_BLOCKED), "ssrf_blocked");
    assert_string_equal(errclass_name(ERRC_INTERNAL), "internal");
    assert_string_equal(errclass_name(ERRC_PROXY), "proxy");
    assert_int_equal(outcome_classify(0, ERRC_PROXY), OUTCOME_RETRY);
    {
        /* the dead-letter analysis groups by these: stable, body-free */
        char c[32];
        outcome_error_class(503, ERRC_NONE, c, sizeof c);
        assert_string_equal(c, "http_503");
        outcome_error_class(0, ERRC_TIMEOUT, c, sizeof c);
        assert_string_equal(c, "timeout");
        outcome_error_class(0, ERRC_BLOCKED, c, sizeof c);
        assert_string_equal(c, "ssrf_blocked");
        outcome_error_class(0, ERRC_NONE, c, sizeof c);
        assert_string_equal(c, "no_response");
        outcome_error_class(0, ERRC_TLS_PIN, c, sizeof c);
        assert_string_equal(c, "tls_pin");
        outcome_error_class(0, ERRC_TLS_CLIENT_AUTH, c, sizeof c);
        assert_string_equal(c, "tls_client_auth");
        outcome_error_class(400, ERRC_TLS_CLIENT_AUTH, c, sizeof c);
        assert_string_equal(c, "tls_client_auth");
    }
    /* Enum values the header fixes (stored in the database). */
    assert_int_equal(OUTCOME_DELIVERED, 0);
    assert_int_equal(ERRC_NONE, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status),
        cmocka_unit_test(test_status_spot_checks),
        cmocka_unit_test(test_malformed_status),
        cmocka_unit_test(test_no_response),
        cmocka_unit_test(test_curl_codes),
        cmocka_unit_test(test_curl_then_classify),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
