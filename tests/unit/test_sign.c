/* Unit tests for sign.c (Standard Webhooks signatures).
 *
 * Expected values other than the spec's published example were computed
 * with Python 3's hmac/hashlib/base64 modules, independently of mbedTLS:
 *   k = base64.b64decode(secret[len("whsec_"):])
 *   "v1," + base64.b64encode(hmac.new(k, f"{msg_id}.{ts}.".encode() + body,
 *                                     hashlib.sha256).digest()).decode()
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sign.h"

/* Standard Webhooks specification example. */
#define SPEC_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SPEC_MSG_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SPEC_TS 1614265330
#define SPEC_BODY "{\"test\": 2432232314}"
#define SPEC_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

/* base64(bytes(range(32))) */
#define SEQ32_SECRET "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/* base64(b"\xff" * 64) */
#define FF64_SECRET "whsec_/////////////////////////////////////////////////////////////////////////////////////w=="
/* base64(bytes(range(128))): exactly SIGN_MAX_KEY, longer than the
 * SHA-256 block, so HMAC hashes the key first. */
#define SEQ128_SECRET "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8="
/* base64(bytes(range(129))): one byte too many. */
#define SEQ129_SECRET "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+A"

static void decode_ok(const char *secret, struct sign_key *k)
{
    char err[128] = "";
    int rc = sign_key_decode(secret, k, err, sizeof(err));
    if (rc != 0)
        fail_msg("decode failed: %s", err);
}

static void test_spec_example(void **state)
{
    (void)state;
    struct sign_key k;
    char out[128];
    decode_ok(SPEC_SECRET, &k);
    assert_int_equal(k.len, 24);
    int n = sign_header_value(&k, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                              strlen(SPEC_BODY), out, sizeof(out));
    assert_int_equal(n, SIGN_SIG_LEN);
    assert_string_equal(out, SPEC_SIG);
}

static void test_decode_bytes(void **state)
{
    (void)state;
    struct sign_key k;
    unsigned char want[32];
    for (int i = 0; i < 32; i++)
        want[i] = (unsigned char)i;
    decode_ok(SEQ32_SECRET, &k);
    assert_int_equal(k.len, 32);
    assert_memory_equal(k.key, want, 32);

    decode_ok(FF64_SECRET, &k);
    assert_int_equal(k.len, 64);
    for (int i = 0; i < 64; i++)
        assert_int_equal(k.key[i], 0xff);
}

static void test_second_vector(void **state)
{
    (void)state;
    struct sign_key k;
    char out[64];
    const char *body = "{\"event\":\"order.paid\",\"amount\":1999}";
    decode_ok(SEQ32_SECRET, &k);
    int n = sign_header_value(&k, 1, "msg_2", 1700000000, body, strlen(body),
                              out, sizeof(out));
    assert_int_equal(n, 47);
    assert_string_equal(out, "v1,El69i1lFmPiMjbm6GAuvOwmk951Px0RF5SYeGojzsnI=");
}

static void test_empty_body_and_binary_body(void **state)
{
    (void)state;
    struct sign_key k;
    char out[64];
    decode_ok(SEQ32_SECRET, &k);
    /* msg_id "m", ts 0, body b"" */
    assert_int_equal(sign_header_value(&k, 1, "m", 0, NULL, 0, out, sizeof(out)), 47);
    assert_string_equal(out, "v1,UjFbwlC3+25BndkRm6m1Tr6SkklaR1xWGw5XUeb14nQ=");
    assert_int_equal(sign_header_value(&k, 1, "m", 0, "", 0, out, sizeof(out)), 47);
    assert_string_equal(out, "v1,UjFbwlC3+25BndkRm6m1Tr6SkklaR1xWGw5XUeb14nQ=");
    /* msg_id "m", ts -1, body b"a\0b": the body is length-delimited. */
    assert_int_equal(sign_header_value(&k, 1, "m", -1, "a\0b", 3, out, sizeof(out)), 47);
    assert_string_equal(out, "v1,S+/tBpf2AE211JTdCIQIUsodr9YzB7KmlDy96ldhhZo=");
}

static void test_max_key_len(void **state)
{
    (void)state;
    struct sign_key k;
    char out[64];
    decode_ok(SEQ128_SECRET, &k);
    assert_int_equal(k.len, SIGN_MAX_KEY);
    assert_int_equal(k.key[127], 127);
    assert_int_equal(sign_header_value(&k, 1, "msg_long", 1614265330, "hello", 5,
                                       out, sizeof(out)), 47);
    assert_string_equal(out, "v1,8dwKFVq3cLBZ31zwXhjrqeNBw/2svImQdA/dXh6tpl4=");
}

static void test_rotation(void **state)
{
    (void)state;
    struct sign_key keys[3];
    char out[256];
    decode_ok(SPEC_SECRET, &keys[0]);
    decode_ok(SEQ32_SECRET, &keys[1]);
    decode_ok(FF64_SECRET, &keys[2]);

    const char *want2 =
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "
        "v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI=";
    const char *want3 =
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= "
        "v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI= "
        "v1,fZzVah3ZS2EUoPgmc3YYVtCEN0N+r1230ukKyDe3eWE=";

    int n = sign_header_value(keys, 2, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                              strlen(SPEC_BODY), out, sizeof(out));
    assert_int_equal(n, 2 * 47 + 1);
    assert_string_equal(out, want2);

    n = sign_header_value(keys, 3, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                          strlen(SPEC_BODY), out, sizeof(out));
    assert_int_equal(n, 3 * 47 + 2);
    assert_int_equal((int)strlen(out), n);
    assert_string_equal(out, want3);

    /* Order follows the key array. */
    struct sign_key rev[2] = { keys[1], keys[0] };
    n = sign_header_value(rev, 2, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                          strlen(SPEC_BODY), out, sizeof(out));
    assert_int_equal(n, 95);
    assert_string_equal(out,
        "v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI= "
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

static void test_signed_content_matters(void **state)
{
    (void)state;
    struct sign_key k;
    char a[64], b[64];
    decode_ok(SPEC_SECRET, &k);
    assert_int_equal(sign_header_value(&k, 1, SPEC_MSG_ID, SPEC_TS + 1, SPEC_BODY,
                                       strlen(SPEC_BODY), a, sizeof(a)), 47);
    assert_string_not_equal(a, SPEC_SIG);
    assert_int_equal(sign_header_value(&k, 1, "msg_other", SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), b, sizeof(b)), 47);
    assert_string_not_equal(b, SPEC_SIG);
    assert_string_not_equal(a, b);
    /* Body truncated by one byte. */
    assert_int_equal(sign_header_value(&k, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY) - 1, a, sizeof(a)), 47);
    assert_string_not_equal(a, SPEC_SIG);
}

static void expect_decode_error(const char *secret, const char *want_substr)
{
    struct sign_key k;
    char err[128] = "";
    memset(&k, 0xAA, sizeof(k));
    assert_int_equal(sign_key_decode(secret, &k, err, sizeof(err)), -1);
    assert_int_equal(k.len, 0);
    assert_true(err[0] != '\0');
    if (!strstr(err, want_substr))
        fail_msg("error '%s' lacks '%s'", err, want_substr);
    /* The secret's payload must never leak into the message. */
    if (secret && strlen(secret) > 10)
        assert_null(strstr(err, secret + 6));
}

static void test_bad_prefix(void **state)
{
    (void)state;
    expect_decode_error("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_");
    expect_decode_error("WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_");
    expect_decode_error("whsec-MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_");
    expect_decode_error(" whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_");
    expect_decode_error("", "whsec_");
    expect_decode_error(NULL, "missing");
}

static void test_bad_base64(void **state)
{
    (void)state;
    expect_decode_error("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!", "base64");
    expect_decode_error("whsec_MfKQ9r8GKYqr TwjUPD8ILPZIo2LaLaSw", "base64");
    expect_decode_error("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", "base64");
    expect_decode_error("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "base64"); /* 31 chars */
    expect_decode_error("whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLaSw", "base64"); /* url-safe alphabet */
    /* mbedTLS alone would accept these unpadded forms and decode too few
     * bytes (python's b64decode rejects them: "Incorrect padding"). */
    expect_decode_error("whsec_AAA", "base64");
    expect_decode_error("whsec_AAAAA", "base64");
    expect_decode_error("whsec_AA=A", "base64");
    expect_decode_error("whsec_====", "base64");
}

static void test_empty_and_too_long_key(void **state)
{
    (void)state;
    expect_decode_error("whsec_", "empty");
    expect_decode_error(SEQ129_SECRET, "128");
}

static void test_small_output_buffer(void **state)
{
    (void)state;
    struct sign_key keys[2];
    char out[96];
    decode_ok(SPEC_SECRET, &keys[0]);
    decode_ok(SEQ32_SECRET, &keys[1]);

    /* One key needs 47 chars + NUL. */
    memset(out, 'x', sizeof(out));
    assert_int_equal(sign_header_value(keys, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, 47), -1);
    assert_int_equal(out[0], '\0');
    assert_int_equal(sign_header_value(keys, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, 48), 47);
    assert_string_equal(out, SPEC_SIG);

    /* Two keys need 47 + 1 + 47 + 1 = 96. */
    assert_int_equal(sign_header_value(keys, 2, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, 95), -1);
    assert_int_equal(sign_header_value(keys, 2, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, 96), 95);
    assert_int_equal(sign_header_value(keys, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, 0), -1);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct sign_key k;
    char out[64];
    decode_ok(SPEC_SECRET, &k);
    assert_int_equal(sign_header_value(&k, 0, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, sizeof(out)), -1);
    assert_int_equal(sign_header_value(NULL, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, sizeof(out)), -1);
    assert_int_equal(sign_header_value(&k, 1, NULL, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, sizeof(out)), -1);
    assert_int_equal(sign_header_value(&k, 1, SPEC_MSG_ID, SPEC_TS, NULL, 5,
                                       out, sizeof(out)), -1);
    struct sign_key empty = { .len = 0 };
    assert_int_equal(sign_header_value(&empty, 1, SPEC_MSG_ID, SPEC_TS, SPEC_BODY,
                                       strlen(SPEC_BODY), out, sizeof(out)), -1);
    /* Error reporting tolerates a NULL / zero-size error buffer. */
    assert_int_equal(sign_key_decode("nope", &k, NULL, 0), -1);
}

/* The hub scheme against GitHub's documented example (secret "It's a
 * Secret to Everybody", body "Hello, World!") and, rotating, a second key
 * (Python: hmac.new(b"k2", body, hashlib.sha256).hexdigest()). */
static void test_hub_scheme(void **state)
{
    struct sign_key k[2];
    char out[2 * (SIGN_HUB_LEN + 1)];
    const char *body = "Hello, World!";

    (void)state;
    memset(k, 0, sizeof k);
    memcpy(k[0].key, "It's a Secret to Everybody", 26);
    k[0].len = 26;
    memcpy(k[1].key, "k2", 2);
    k[1].len = 2;
    assert_int_equal(sign_hub_value(k, 1, body, strlen(body), out, sizeof out), SIGN_HUB_LEN);
    assert_string_equal(out, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
    assert_int_equal(sign_hub_value(k, 2, body, strlen(body), out, sizeof out), 2 * SIGN_HUB_LEN + 1);
    assert_string_equal(out, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17,"
                             "sha256=0b2eb14fd559e3f1c69b2bdfd9a507ff66470c27aaecefeb45570e0ff4e30e7e");
    /* an empty body (a GET) is signed too */
    assert_int_equal(sign_hub_value(&k[1], 1, NULL, 0, out, sizeof out), SIGN_HUB_LEN);
    assert_string_equal(out, "sha256=158d080636db28c36adb2abc69943ab091eb5a24e1426a6120daf9709d8ad17d");
    /* too small, no key: nothing written */
    assert_int_equal(sign_hub_value(k, 2, body, strlen(body), out, SIGN_HUB_LEN + 1), -1);
    assert_string_equal(out, "");
    assert_int_equal(sign_hub_value(k, 0, body, strlen(body), out, sizeof out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_example),
        cmocka_unit_test(test_decode_bytes),
        cmocka_unit_test(test_second_vector),
        cmocka_unit_test(test_empty_body_and_binary_body),
        cmocka_unit_test(test_max_key_len),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_signed_content_matters),
        cmocka_unit_test(test_bad_prefix),
        cmocka_unit_test(test_bad_base64),
        cmocka_unit_test(test_empty_and_too_long_key),
        cmocka_unit_test(test_small_output_buffer),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_hub_scheme),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
