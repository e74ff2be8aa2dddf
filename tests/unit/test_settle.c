/* test_settle.c - settle_decide: what one attempt's result makes of its
 * row. The retry times are checked at the two ends of the jitter (rnd 0
 * and UINT64_MAX), where full jitter is exactly 0 and exactly the cap. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "settle.h"

#define NOW 1700000000000LL
#define TOP UINT64_MAX

static struct ep_conf ep;
static struct ep_settings set;

static struct djob job(int attempt_count, int max_attempts, int status, enum errclass errc)
{
    struct djob j;
    memset(&j, 0, sizeof j);
    memset(&ep, 0, sizeof ep);
    ep.id = 7;
    ep.shown_url = (char *)"http://example.test/hook";
    j.id = 42;
    j.ep = &ep;
    j.attempt_count = attempt_count;
    j.max_attempts = max_attempts;
    j.attempted = 1;
    j.http_status = status;
    j.errc = errc;
    j.retry_after_ms = -1;
    return j;
}

static void settings(int64_t base, int64_t max)
{
    memset(&set, 0, sizeof set);
    set.base_delay_ms = base;
    set.max_delay_ms = max;
}

static int64_t retry_in(struct djob *j, uint64_t rnd)
{
    struct settle_row r;
    settle_decide(j, &set, NOW, rnd, &r);
    assert_int_equal(r.s.verdict, SETTLE_RETRY);
    assert_int_equal(r.s.attempts, j->attempt_count + 1);
    return r.s.next_attempt_at - NOW;
}

/* the cap doubles with every attempt made: base * 2^attempts */
static void test_backoff_grows_with_attempts(void **state)
{
    (void)state;
    settings(100, 1000000);
    for (int n = 0; n < 8; n++) {
        struct djob j = job(n, 50, 500, ERRC_NONE);
        assert_int_equal(retry_in(&j, TOP), 100LL << (n + 1));
        assert_int_equal(retry_in(&j, 0), 0);
    }
}

/* and stops at max_delay, however many attempts */
static void test_backoff_capped_at_max_delay(void **state)
{
    (void)state;
    settings(100, 5000);
    for (int n = 6; n < 40; n++) {
        struct djob j = job(n, 100, 0, ERRC_CONNECT);
        assert_int_equal(retry_in(&j, TOP), 5000);
    }
}

/* Retry-After is a floor, itself capped at max_delay; a 429 holds the
 * endpoint that long */
static void test_retry_after_floor_capped(void **state)
{
    struct settle_row r;
    (void)state;
    settings(100, 5000);
    struct djob j = job(0, 10, 503, ERRC_NONE);
    j.retry_after_ms = 3000;
    assert_int_equal(retry_in(&j, 0), 3000);
    j.retry_after_ms = 3600 * 1000;
    assert_int_equal(retry_in(&j, 0), 5000);
    j.http_status = 429;
    settle_decide(&j, &set, NOW, 0, &r);
    assert_int_equal(r.hold_until, NOW + 5000);
}

/* the last allowed attempt fails: a dead letter, no retry */
static void test_dead_after_max_attempts(void **state)
{
    struct settle_row r;
    (void)state;
    settings(100, 5000);
    struct djob j = job(4, 5, 500, ERRC_NONE);
    settle_decide(&j, &set, NOW, TOP, &r);
    assert_int_equal(r.s.verdict, SETTLE_DEAD);
    assert_int_equal(r.s.attempts, 5);
    j = job(3, 5, 500, ERRC_NONE);
    settle_decide(&j, &set, NOW, TOP, &r);
    assert_int_equal(r.s.verdict, SETTLE_RETRY);
}

/* given back untried (shutdown): due now, the attempt not counted */
static void test_untried_released(void **state)
{
    struct settle_row r;
    (void)state;
    settings(100, 5000);
    struct djob j = job(2, 5, 0, ERRC_NONE);
    j.attempted = 0;
    settle_decide(&j, &set, NOW, TOP, &r);
    assert_int_equal(r.s.verdict, SETTLE_RELEASE);
    assert_int_equal(r.s.attempts, 2);
    assert_int_equal(r.s.next_attempt_at, NOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_grows_with_attempts),
        cmocka_unit_test(test_backoff_capped_at_max_delay),
        cmocka_unit_test(test_retry_after_floor_capped),
        cmocka_unit_test(test_dead_after_max_attempts),
        cmocka_unit_test(test_untried_released),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
