/* Unit tests for seal.c (endpoint secrets at rest).
 *
 * The known answers were computed with Python's cryptography package,
 * independently of mbedTLS:
 *   key = bytes(range(32)); nonce = bytes(range(100, 112))
 *   kid = hashlib.sha256(key).digest()[:4]
 *   ct = AESGCM(key).encrypt(nonce, plain, b"hookd endpoint secret v1")
 *   "enc1:" + base64.b64encode(kid + nonce + ct).decode()
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "seal.h"

#define KEY_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SEALED_SECRET "enc1:Yw3NKWRlZmdoaWprbG1ubz9zrQMathv4dTNmmuIiIaQzsFJ94TmjNp+Y4Bih6sp62IgMoR9lQA7sBWb/nn3EqiOTuhmqQg=="
#define SEALED_EMPTY "enc1:Yw3NKWRlZmdoaWprbG1ub4jO1vGW3eXtwTPAydshknk="

static const unsigned char NONCE[SEAL_NONCE_LEN] = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111};

static void key_of(struct seal_key *k, const char *hex)
{
    char err[128] = "";

    if (seal_key_from_text(k, (const unsigned char *)hex, strlen(hex), err, sizeof err) != 0)
        fail_msg("key: %s", err);
}

static void test_key_text(void **state)
{
    struct seal_key k, raw;
    unsigned char bytes[32];
    char err[128];
    int i;

    (void)state;
    key_of(&k, KEY_HEX "\n");
    assert_true(k.set);
    for (i = 0; i < 32; i++)
        bytes[i] = (unsigned char)i;
    assert_memory_equal(k.k, bytes, 32);
    /* 32 raw bytes are the same key */
    assert_int_equal(seal_key_from_text(&raw, bytes, 32, err, sizeof err), 0);
    assert_memory_equal(raw.id, k.id, SEAL_ID_LEN);
    /* blanks between digits are fine */
    key_of(&raw, "00010203 04050607 08090a0b 0c0d0e0f\n101112131415161718191a1b1c1d1e1f");
    assert_memory_equal(raw.k, k.k, 32);
    /* too short, too long, odd, not hex */
    assert_int_equal(seal_key_from_text(&raw, (const unsigned char *)"0011", 4, err, sizeof err), -1);
    assert_false(raw.set);
    assert_int_equal(seal_key_from_text(&raw, (const unsigned char *)KEY_HEX "00", 66, err, sizeof err), -1);
    assert_int_equal(seal_key_from_text(&raw, (const unsigned char *)KEY_HEX "0", 65, err, sizeof err), -1);
    assert_int_equal(seal_key_from_text(&raw, (const unsigned char *)"zz" KEY_HEX, 66, err, sizeof err), -1);
    assert_non_null(strstr(err, "64 hex digits"));
}

static void test_known_answer(void **state)
{
    struct seal_key k;
    char *s;

    (void)state;
    key_of(&k, KEY_HEX);
    s = seal_value_nonce(&k, SECRET, NONCE);
    assert_non_null(s);
    assert_string_equal(s, SEALED_SECRET);
    seal_free(s);
    s = seal_value_nonce(&k, "", NONCE);
    assert_string_equal(s, SEALED_EMPTY);
    seal_free(s);
}

static void test_open(void **state)
{
    struct seal_key k;
    char *out, err[256];

    (void)state;
    key_of(&k, KEY_HEX);
    assert_int_equal(seal_open(&k, SEALED_SECRET, &out, err, sizeof err), 0);
    assert_string_equal(out, SECRET);
    seal_free(out);
    assert_int_equal(seal_open(&k, SEALED_EMPTY, &out, err, sizeof err), 0);
    assert_string_equal(out, "");
    seal_free(out);
}

static void test_round_trip_random_nonce(void **state)
{
    struct seal_key k;
    char *a, *b, *out, err[256];

    (void)state;
    key_of(&k, KEY_HEX);
    a = seal_value(&k, SECRET);
    b = seal_value(&k, SECRET);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(seal_is_sealed(a));
    assert_null(strstr(a, "MfKQ9r8"));
    assert_string_not_equal(a, b);   /* fresh nonce each time */
    assert_int_equal(seal_open(&k, b, &out, err, sizeof err), 0);
    assert_string_equal(out, SECRET);
    seal_free(out);
    seal_free(a);
    seal_free(b);
}

static void test_open_refuses(void **state)
{
    struct seal_key k, other;
    char bad[sizeof SEALED_SECRET], *out = (char *)1, err[256];
    size_t mid = strlen(SEALED_SECRET) - 30;

    (void)state;
    key_of(&k, KEY_HEX);
    key_of(&other, "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    /* another key: told apart by its id */
    assert_int_equal(seal_open(&other, SEALED_SECRET, &out, err, sizeof err), -1);
    assert_null(out);
    assert_non_null(strstr(err, "another key"));
    /* one changed character of the ciphertext or tag */
    memcpy(bad, SEALED_SECRET, sizeof bad);
    bad[mid] = bad[mid] == 'A' ? 'B' : 'A';
    assert_int_equal(seal_open(&k, bad, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "authentication"));
    /* truncated, not base64, not sealed, no key */
    assert_int_equal(seal_open(&k, "enc1:Yw3NKWRl", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "malformed"));
    assert_int_equal(seal_open(&k, "enc1:!!!!", &out, err, sizeof err), -1);
    assert_int_equal(seal_open(&k, SECRET, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a sealed"));
    seal_key_wipe(&k);
    assert_int_equal(seal_open(&k, SEALED_SECRET, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "no key"));
    /* no error message quotes the secret */
    assert_null(strstr(err, "whsec_"));
}

static void test_json_secrets(void **state)
{
    struct seal_key k;
    char *sealed, *again, *plain, err[256];
    int seen = -1;

    (void)state;
    key_of(&k, KEY_HEX);
    assert_int_equal(seal_json(&k, "[\"" SECRET "\",\"whsec_b2xk\"]", 0, &sealed, err, sizeof err), 0);
    assert_null(strstr(sealed, "whsec_"));
    assert_int_equal(strncmp(sealed, "[\"enc1:", 7), 0);
    /* already sealed elements are kept as they are */
    assert_int_equal(seal_json(&k, sealed, 0, &again, err, sizeof err), 0);
    assert_string_equal(again, sealed);
    assert_int_equal(seal_json_open(&k, sealed, 0, &plain, &seen, err, sizeof err), 0);
    assert_string_equal(plain, "[\"" SECRET "\",\"whsec_b2xk\"]");
    assert_int_equal(seen, 0);
    seal_free(plain);
    /* a plain element (older version) is read as it is, and reported */
    assert_int_equal(seal_json_open(&k, "[\"whsec_b2xk\"]", 0, &plain, &seen, err, sizeof err), 0);
    assert_string_equal(plain, "[\"whsec_b2xk\"]");
    assert_int_equal(seen, 1);
    seal_free(plain);
    assert_int_equal(seal_json_open(&k, "[]", 0, &plain, &seen, err, sizeof err), 0);
    assert_string_equal(plain, "[]");
    seal_free(plain);
    /* not an array of strings */
    assert_int_equal(seal_json_open(&k, "{}", 0, &plain, &seen, err, sizeof err), -1);
    assert_int_equal(seal_json_open(&k, "[1]", 0, &plain, &seen, err, sizeof err), -1);
    assert_int_equal(seal_json(&k, "nope", 0, &plain, err, sizeof err), -1);
    seal_free(sealed);
    seal_free(again);
    /* no key: sealing fails instead of storing plain text */
    seal_key_wipe(&k);
    assert_int_equal(seal_json(&k, "[\"whsec_b2xk\"]", 0, &plain, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot seal"));
}

static void test_json_headers(void **state)
{
    struct seal_key k;
    char *sealed, *plain, err[256];
    const char *in = "[\"Authorization: Bearer tok3n\",\"X-Empty:\",\"NoColon\"]";

    (void)state;
    key_of(&k, KEY_HEX);
    assert_int_equal(seal_json(&k, in, 1, &sealed, err, sizeof err), 0);
    /* the names stay readable (the listing queries cut them at ':') */
    assert_int_equal(strncmp(sealed, "[\"Authorization:enc1:", 21), 0);
    assert_null(strstr(sealed, "tok3n"));
    assert_non_null(strstr(sealed, "\"X-Empty:enc1:"));
    assert_non_null(strstr(sealed, "\"NoColon\""));
    assert_int_equal(seal_json_open(&k, sealed, 1, &plain, NULL, err, sizeof err), 0);
    assert_string_equal(plain, in);
    seal_free(plain);
    seal_free(sealed);
}

static void test_key_path(void **state)
{
    char p[256];

    (void)state;
    seal_key_path("", "/var/lib/hookd/hookd.db", p, sizeof p);
    assert_string_equal(p, "/var/lib/hookd/secret.key");
    seal_key_path(NULL, "hookd.db", p, sizeof p);
    assert_string_equal(p, "secret.key");
    seal_key_path("/etc/hookd/k", "/var/lib/hookd/hookd.db", p, sizeof p);
    assert_string_equal(p, "/etc/hookd/k");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_text),
        cmocka_unit_test(test_known_answer),
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_round_trip_random_nonce),
        cmocka_unit_test(test_open_refuses),
        cmocka_unit_test(test_json_secrets),
        cmocka_unit_test(test_json_headers),
        cmocka_unit_test(test_key_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
