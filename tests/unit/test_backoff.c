/* test_backoff.c - cap arithmetic, jitter mapping, generator quality. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "backoff.h"

#define SEC 1000
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

/* Independent reference: exact product in 128 bits (or a saturating loop
 * where that is unavailable), then min with max. */
static int64_t ref_cap(uint32_t n, int64_t base, int64_t max)
{
    if (base <= 0 || max <= 0)
        return 0;
    int64_t v = base;
    for (uint64_t i = 0; i < n; i++) {
        if (v >= max)
            return max;
        if (v > INT64_MAX / 2)
            return max;
        v *= 2;
    }
    return v < max ? v : max;
}

static void test_cap_seed_defaults(void **state)
{
    (void)state;
    /* The seed: base 30 s, max 3600 s. */
    assert_int_equal(backoff_cap_ms(0, 30 * SEC, HOUR), 30 * SEC);
    assert_int_equal(backoff_cap_ms(1, 30 * SEC, HOUR), 60 * SEC);
    assert_int_equal(backoff_cap_ms(2, 30 * SEC, HOUR), 120 * SEC);
    assert_int_equal(backoff_cap_ms(3, 30 * SEC, HOUR), 240 * SEC);
    assert_int_equal(backoff_cap_ms(6, 30 * SEC, HOUR), 1920 * SEC);
    /* 30 * 128 = 3840 s > 3600 s */
    assert_int_equal(backoff_cap_ms(7, 30 * SEC, HOUR), HOUR);
    assert_int_equal(backoff_cap_ms(8, 30 * SEC, HOUR), HOUR);
    assert_int_equal(backoff_cap_ms(100, 30 * SEC, HOUR), HOUR);
    assert_int_equal(backoff_cap_ms(UINT32_MAX, 30 * SEC, HOUR), HOUR);
}

static void test_cap_exact_boundary(void **state)
{
    (void)state;
    /* base * 2^n == max exactly stays max, one less bit stays exact. */
    assert_int_equal(backoff_cap_ms(5, 1000, 32000), 32000);
    assert_int_equal(backoff_cap_ms(5, 1000, 31999), 31999);
    assert_int_equal(backoff_cap_ms(4, 1000, 32000), 16000);
    assert_int_equal(backoff_cap_ms(0, 1000, 1000), 1000);
    assert_int_equal(backoff_cap_ms(0, 5000, 1000), 1000); /* base > max */
    assert_int_equal(backoff_cap_ms(3, 5000, 1000), 1000);
}

static void test_cap_overflow(void **state)
{
    (void)state;
    const int64_t half = INT64_MAX / 2;
    assert_int_equal(backoff_cap_ms(0, half, INT64_MAX), half);
    assert_int_equal(backoff_cap_ms(1, half, INT64_MAX), INT64_MAX - 1);
    assert_int_equal(backoff_cap_ms(2, half, INT64_MAX), INT64_MAX);
    assert_int_equal(backoff_cap_ms(UINT32_MAX, half, INT64_MAX), INT64_MAX);
    assert_int_equal(backoff_cap_ms(62, 1, INT64_MAX), (int64_t)1 << 62);
    assert_int_equal(backoff_cap_ms(63, 1, INT64_MAX), INT64_MAX);
    assert_int_equal(backoff_cap_ms(64, 1, INT64_MAX), INT64_MAX);
    assert_int_equal(backoff_cap_ms(65, 1, INT64_MAX), INT64_MAX);
    assert_int_equal(backoff_cap_ms(61, 3, INT64_MAX), (int64_t)3 << 61);
    assert_int_equal(backoff_cap_ms(62, 3, INT64_MAX), INT64_MAX);
    /* shift counts that would be UB or wrap if done naively */
    assert_int_equal(backoff_cap_ms(32, 30 * SEC, HOUR), HOUR);
    assert_int_equal(backoff_cap_ms(0x80000000u, 30 * SEC, HOUR), HOUR);
}

static void test_cap_matches_reference(void **state)
{
    (void)state;
    const int64_t bases[] = {1, 2, 3, 7, 1000, 30 * SEC, 123456789,
                             (int64_t)1 << 40, INT64_MAX / 3, INT64_MAX / 2,
                             INT64_MAX - 1, INT64_MAX};
    const int64_t maxes[] = {1, 999, HOUR, 24 * (int64_t)HOUR,
                             (int64_t)1 << 53, INT64_MAX / 2 + 1, INT64_MAX};
    const uint32_t ns[] = {63, 64, 127, 128, 1000, UINT32_MAX - 1, UINT32_MAX};
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
        for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++) {
            for (uint32_t n = 0; n < 70; n++)
                assert_int_equal(backoff_cap_ms(n, bases[b], maxes[m]),
                                 ref_cap(n, bases[b], maxes[m]));
            for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
                assert_int_equal(backoff_cap_ms(ns[k], bases[b], maxes[m]), maxes[m]);
        }
}

static void test_cap_nonpositive(void **state)
{
    (void)state;
    assert_int_equal(backoff_cap_ms(3, 0, HOUR), 0);
    assert_int_equal(backoff_cap_ms(3, -5, HOUR), 0);
    assert_int_equal(backoff_cap_ms(3, 30 * SEC, 0), 0);
    assert_int_equal(backoff_cap_ms(3, 30 * SEC, -1), 0);
    assert_int_equal(backoff_cap_ms(3, INT64_MIN, INT64_MIN), 0);
    assert_int_equal(backoff_delay_ms(3, 0, HOUR, UINT64_MAX), 0);
}

static void test_delay_endpoints(void **state)
{
    (void)state;
    const int64_t caps_base[] = {1, 30 * SEC, INT64_MAX / 2};
    for (size_t i = 0; i < 3; i++)
        for (uint32_t n = 0; n < 80; n++) {
            int64_t cap = backoff_cap_ms(n, caps_base[i], INT64_MAX);
            assert_int_equal(backoff_delay_ms(n, caps_base[i], INT64_MAX, 0), 0);
            assert_int_equal(backoff_delay_ms(n, caps_base[i], INT64_MAX, UINT64_MAX), cap);
        }
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, HOUR, 0), 0);
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, HOUR, UINT64_MAX), 240 * SEC);
    assert_int_equal(backoff_delay_ms(UINT32_MAX, 30 * SEC, HOUR, UINT64_MAX), HOUR);
    assert_int_equal(backoff_delay_ms(UINT32_MAX, INT64_MAX / 2, INT64_MAX, UINT64_MAX),
                     INT64_MAX);
}

static void test_delay_known_values(void **state)
{
    (void)state;
    /* floor(rnd * (cap + 1) / 2^64), cap = 240000 */
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, HOUR, (uint64_t)1 << 63), 120000);
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, HOUR, (uint64_t)1 << 62), 60000);
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, HOUR, 3ull << 62), 180000);
    /* cap 0 (max 0): always 0 */
    assert_int_equal(backoff_delay_ms(3, 30 * SEC, 0, 12345), 0);
    /* cap 1: lower half of the rnd range -> 0, upper half -> 1 */
    assert_int_equal(backoff_delay_ms(0, 1, 1, ((uint64_t)1 << 63) - 1), 0);
    assert_int_equal(backoff_delay_ms(0, 1, 1, (uint64_t)1 << 63), 1);
    /* INT64_MAX cap: rnd 2^63 -> 2^62 * ... = floor(2^63 * 2^63 / 2^64) */
    assert_int_equal(backoff_delay_ms(70, 1, INT64_MAX, (uint64_t)1 << 63),
                     (int64_t)1 << 62);
}

static void test_delay_monotone_in_rnd(void **state)
{
    (void)state;
    uint64_t r = 1;
    int64_t prev = -1;
    /* sorted rnd values -> non-decreasing delays */
    for (int i = 0; i < 64; i++) {
        uint64_t v = (r << i) | ((r << i) - 1);
        int64_t d = backoff_delay_ms(5, 30 * SEC, HOUR, v);
        assert_true(d >= prev);
        assert_in_range(d, 0, 960 * SEC);
        prev = d;
    }
}

static void test_delay_in_range_many_attempts(void **state)
{
    (void)state;
    for (uint32_t n = 0; n < 200; n++) {
        int64_t cap = backoff_cap_ms(n, 30 * SEC, HOUR);
        for (int k = 0; k < 500; k++) {
            int64_t d = backoff_delay_ms(n, 30 * SEC, HOUR, backoff_rand64());
            assert_true(d >= 0);
            assert_true(d <= cap);
        }
    }
}

static void test_delay_spread(void **state)
{
    (void)state;
    /* attempt 3, base 30 s -> cap 240 s */
    const int64_t cap = 240 * SEC;
    const int N = 100000;
    int64_t lo = INT64_MAX, hi = -1;
    double sum = 0;
    int buckets[10] = {0};
    for (int i = 0; i < N; i++) {
        int64_t d = backoff_delay_ms(3, 30 * SEC, HOUR, backoff_rand64());
        assert_in_range(d, 0, cap);
        if (d < lo) lo = d;
        if (d > hi) hi = d;
        sum += (double)d;
        int b = (int)(d * 10 / (cap + 1));
        buckets[b]++;
    }
    double mean = sum / N;
    assert_true(lo < cap / 1000);             /* min near 0 */
    assert_true(hi > cap - cap / 1000);       /* max near cap */
    assert_true(mean > 0.98 * cap / 2.0);
    assert_true(mean < 1.02 * cap / 2.0);
    /* each decile expects 10000; sd ~95, allow 5 sd */
    for (int b = 0; b < 10; b++)
        assert_in_range(buckets[b], 9500, 10500);
}

static void test_rand64_bits_balanced(void **state)
{
    (void)state;
    const int N = 100000;
    int ones[64] = {0};
    uint64_t prev = backoff_rand64(), same = 0;
    for (int i = 0; i < N; i++) {
        uint64_t v = backoff_rand64();
        if (v == prev)
            same++;
        prev = v;
        for (int b = 0; b < 64; b++)
            ones[b] += (int)((v >> b) & 1);
    }
    assert_int_equal(same, 0);
    for (int b = 0; b < 64; b++)
        assert_in_range(ones[b], N / 2 - 1000, N / 2 + 1000);
}

static void *draw_thread(void *arg)
{
    uint64_t *out = arg;
    for (int i = 0; i < 4; i++)
        out[i] = backoff_rand64();
    return NULL;
}

static void test_rand64_threads_differ(void **state)
{
    (void)state;
    uint64_t a[4], b[4];
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, draw_thread, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, draw_thread, b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* Identical seeding across threads would make retries of many
     * deliveries collide; four equal 64-bit words by chance is impossible. */
    assert_memory_not_equal(a, b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_seed_defaults),
        cmocka_unit_test(test_cap_exact_boundary),
        cmocka_unit_test(test_cap_overflow),
        cmocka_unit_test(test_cap_matches_reference),
        cmocka_unit_test(test_cap_nonpositive),
        cmocka_unit_test(test_delay_endpoints),
        cmocka_unit_test(test_delay_known_values),
        cmocka_unit_test(test_delay_monotone_in_rnd),
        cmocka_unit_test(test_delay_in_range_many_attempts),
        cmocka_unit_test(test_delay_spread),
        cmocka_unit_test(test_rand64_bits_balanced),
        cmocka_unit_test(test_rand64_threads_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
