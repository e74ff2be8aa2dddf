/* test_limiter.c - adaptive concurrency against a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "limiter.h"

#define T0 1000000LL

/* One round trip of a saturated pipeline: as many requests as the limit
 * allows are out, each freed slot is refilled at once (as the dispatcher
 * does), and all answer after rtt with signal s. Returns the new now. */
static int64_t round_trip(struct limiter *l, enum limiter_signal s, int64_t rtt, int64_t now)
{
    int out = limiter_room(l, 0), i;

    for (i = 0; i < out; i++)
        limiter_record(l, s, rtt, limiter_current(l), now + rtt);
    return now + rtt;
}

static void fast_endpoint_reaches_its_cap_in_a_few_round_trips(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int rounds = 0;

    (void)state;
    limiter_init(&l, 32);
    assert_int_equal(limiter_current(&l), 1);
    while (limiter_current(&l) < 32) {
        now = round_trip(&l, LIMITER_OK, 1, now);
        rounds++;
        assert_true(rounds <= 6);   /* 1, 2, 4, 8, 16, 32 */
    }
    now = round_trip(&l, LIMITER_OK, 1, now);
    assert_int_equal(limiter_current(&l), 32);   /* the cap holds */
    assert_int_equal(limiter_room(&l, 30), 2);
    assert_int_equal(limiter_room(&l, 40), 0);
}

static void dead_endpoint_gets_one_at_a_time(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int i;

    (void)state;
    limiter_init(&l, 32);
    for (i = 0; i < 20; i++) {
        assert_int_equal(limiter_room(&l, 0), 1);
        limiter_record(&l, LIMITER_FAILURE, 0, 1, now);
        now += 3;
    }
    assert_int_equal(limiter_current(&l), 1);
}

static void a_burst_of_429s_halves_once_per_round_trip(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int i;

    (void)state;
    limiter_init(&l, 64);
    while (limiter_current(&l) < 64)
        now = round_trip(&l, LIMITER_OK, 10, now);
    /* all 64 answer 429 within the same round trip */
    for (i = 0; i < 64; i++)
        limiter_record(&l, LIMITER_OVERLOAD, 10, 64 - i, now + 10 + i / 16);
    assert_int_equal(limiter_current(&l), 32);
    /* the next round trip's 429s cut again */
    now += 25;
    limiter_record(&l, LIMITER_OVERLOAD, 10, 32, now);
    assert_int_equal(limiter_current(&l), 16);
    /* after trouble: growth is by about one per round trip, no more doubling */
    now = round_trip(&l, LIMITER_OK, 10, now + 20);
    now = round_trip(&l, LIMITER_OK, 10, now);
    assert_true(limiter_current(&l) == 17 || limiter_current(&l) == 18);
}

static void rising_latency_backs_off_gently(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int before, i;

    (void)state;
    limiter_init(&l, 32);
    while (limiter_current(&l) < 32)
        now = round_trip(&l, LIMITER_OK, 20, now);
    before = limiter_current(&l);
    /* the receiver starts queueing: 20 ms becomes 200 ms; a tenth less
     * per round trip, not a halving */
    for (i = 0; i < 3; i++)
        now = round_trip(&l, LIMITER_OK, 200, now);
    assert_true(limiter_current(&l) < before);
    assert_true(limiter_current(&l) >= before * 6 / 10);
    /* and the slow route, once it is the only one seen for a while, is
     * the new normal: the limit grows again */
    for (i = 0; i < 200; i++)
        now = round_trip(&l, LIMITER_OK, 200, now);
    assert_int_equal(limiter_current(&l), 32);
}

/* The partner's latency steps from 1 ms to 43 ms for good (a slower
 * route, Nagle on its side): whatever the limit, every answer takes 43 ms.
 * One cut is tried; it does not help, so 43 ms becomes the normal and the
 * limit grows back instead of sinking to 1. */
static void a_latency_step_that_cuts_do_not_fix_is_the_new_normal(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int i, before, low = 1000;

    (void)state;
    limiter_init(&l, 32);
    while (limiter_current(&l) < 8)
        now = round_trip(&l, LIMITER_OK, 1, now);
    before = limiter_current(&l);
    for (i = 0; i < 40; i++) {
        now = round_trip(&l, LIMITER_OK, 43, now);
        if (limiter_current(&l) < low)
            low = limiter_current(&l);
    }
    assert_true(low >= before * 8 / 10);
    assert_true(limiter_current(&l) >= before);
}

/* A jittery but steady route (0 to 100 ms at random) is not queueing:
 * the limit still reaches its cap. */
static void jitter_is_not_congestion(void **state)
{
    struct limiter l;
    int64_t now = T0;
    unsigned seed = 7;
    int i;

    (void)state;
    limiter_init(&l, 32);
    for (i = 0; i < 5000 && limiter_current(&l) < 32; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t rtt = (seed >> 16) % 5 == 4 ? 100 : (int64_t)((seed >> 16) % 4) * 7;
        limiter_record(&l, LIMITER_OK, rtt, limiter_current(&l), now);
        now += rtt + 1;
    }
    assert_int_equal(limiter_current(&l), 32);
}

static void an_idle_limit_does_not_grow(void **state)
{
    struct limiter l;
    int64_t now = T0;
    int i;

    (void)state;
    limiter_init(&l, 32);
    /* one request at a time, forever: no evidence for thirty */
    for (i = 0; i < 1000; i++) {
        limiter_record(&l, LIMITER_OK, 2, 1, now);
        now += 2;
    }
    assert_true(limiter_current(&l) <= 2 + 1);
}

static void cap_changes_clamp_the_limit(void **state)
{
    struct limiter l;
    int64_t now = T0;

    (void)state;
    limiter_init(&l, 32);
    while (limiter_current(&l) < 32)
        now = round_trip(&l, LIMITER_OK, 1, now);
    limiter_set_cap(&l, 4, 0);
    assert_int_equal(limiter_current(&l), 4);
    limiter_set_cap(&l, 0, 0);
    assert_int_equal(limiter_current(&l), 1);
    /* fixed: the cap from the start, and nothing moves it */
    limiter_set_cap(&l, 16, 1);
    assert_int_equal(limiter_current(&l), 16);
    limiter_record(&l, LIMITER_OVERLOAD, 5, 16, now + 100);
    assert_int_equal(limiter_current(&l), 16);
}

static void a_saved_limit_is_restored_within_the_cap(void **state)
{
    struct limiter l;
    int64_t now = T0;

    (void)state;
    limiter_init(&l, 64);
    limiter_restore(&l, 34);
    assert_int_equal(limiter_current(&l), 34);
    /* from there one more per round trip, not twice as many */
    now = round_trip(&l, LIMITER_OK, 10, now);
    assert_in_range(limiter_current(&l), 34, 35);
    /* nothing saved, or a fixed limit: as it was */
    limiter_init(&l, 64);
    limiter_restore(&l, 0);
    assert_int_equal(limiter_current(&l), 1);
    limiter_set_cap(&l, 16, 1);
    limiter_restore(&l, 3);
    assert_int_equal(limiter_current(&l), 16);
    /* above a cap lowered since: the cap */
    limiter_init(&l, 8);
    limiter_restore(&l, 34);
    assert_int_equal(limiter_current(&l), 8);
    /* a saved 1 starts over in slow start: doubling per round trip */
    limiter_init(&l, 64);
    limiter_restore(&l, 1);
    now = round_trip(&l, LIMITER_OK, 10, now);
    now = round_trip(&l, LIMITER_OK, 10, now);
    assert_int_equal(limiter_current(&l), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_endpoint_reaches_its_cap_in_a_few_round_trips),
        cmocka_unit_test(dead_endpoint_gets_one_at_a_time),
        cmocka_unit_test(a_burst_of_429s_halves_once_per_round_trip),
        cmocka_unit_test(rising_latency_backs_off_gently),
        cmocka_unit_test(a_latency_step_that_cuts_do_not_fix_is_the_new_normal),
        cmocka_unit_test(jitter_is_not_congestion),
        cmocka_unit_test(an_idle_limit_does_not_grow),
        cmocka_unit_test(cap_changes_clamp_the_limit),
        cmocka_unit_test(a_saved_limit_is_restored_within_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
