/* test_clockstep.c - wall-clock steps against a fake clock: noticed in
 * both directions past the threshold, slewing ignored, and the waits
 * that follow a shift (a breaker's cooldown, a retry's due time) keep
 * their length. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "breaker.h"
#include "clockstep.h"

#define T0 ((int64_t)1700000000000)   /* wall */
#define B0 ((int64_t)5000)            /* boot time */
#define HOUR ((int64_t)3600000)

/* a fake pair of clocks: elapsed time moves both, a step only the wall */
struct fake {
    int64_t wall, boot;
};

static void pass(struct fake *f, int64_t ms)
{
    f->wall += ms;
    f->boot += ms;
}

static void test_first_look_is_no_step(void **state)
{
    (void)state;
    struct clockstep c;
    clockstep_init(&c);
    assert_int_equal(clockstep_observe(&c, T0, B0), 0);
    /* whatever the first reading, there is nothing to compare it with */
    clockstep_init(&c);
    assert_int_equal(clockstep_observe(&c, T0 - 10 * HOUR, 1), 0);
}

static void test_steady_clocks(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    for (int i = 0; i < 10000; i++) {
        pass(&f, i % 1500);   /* looks 0 to 1.5 s apart */
        assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
    }
    /* a long pause between looks (the writer busy for ten minutes) is
     * no step when both clocks moved alike */
    pass(&f, 10 * 60000);
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
}

static void test_backward_and_forward(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    pass(&f, 200);
    f.wall -= HOUR;
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), -HOUR);
    /* reported once: the next look compares with the stepped clock */
    pass(&f, 300);
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
    f.wall += HOUR;
    pass(&f, 700);
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), HOUR);
    pass(&f, 1);
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
}

static void test_threshold(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    f.wall += CLOCKSTEP_THRESHOLD_MS;         /* exactly the threshold: not yet */
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
    f.wall -= CLOCKSTEP_THRESHOLD_MS;
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
    f.wall += CLOCKSTEP_THRESHOLD_MS + 1;
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), CLOCKSTEP_THRESHOLD_MS + 1);
    f.wall -= CLOCKSTEP_THRESHOLD_MS + 1;
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), -(CLOCKSTEP_THRESHOLD_MS + 1));
}

static void test_slew_is_not_a_step(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    /* NTP's fastest slew, 500 ppm, over a day of looks a second apart:
     * 43 s of drift in all, never a step */
    for (int i = 0; i < 86400; i++) {
        f.boot += 1000;
        f.wall += 1000 + (i % 2);   /* 0.5 ms a second on average */
        assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
    }
    assert_true(f.wall - T0 - (f.boot - B0) >= 43000);
}

static void test_suspend_is_not_a_step(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    /* a suspended machine: CLOCK_BOOTTIME counts the sleep, so an hour
     * asleep is time that passed, not a step (CLOCK_MONOTONIC would
     * call it one and push every retry an hour later) */
    pass(&f, HOUR);
    assert_int_equal(clockstep_observe(&c, f.wall, f.boot), 0);
}

static void test_shift(void **state)
{
    (void)state;
    assert_int_equal(clockstep_shift(0, -HOUR), 0);                 /* none stays none */
    assert_int_equal(clockstep_shift(INT64_MAX, -HOUR), INT64_MAX); /* never stays never */
    assert_int_equal(clockstep_shift(T0, -HOUR), T0 - HOUR);
    assert_int_equal(clockstep_shift(T0, HOUR), T0 + HOUR);
    assert_int_equal(clockstep_shift(INT64_MAX - 5, 10), INT64_MAX);
    assert_int_equal(clockstep_shift(INT64_MIN + 5, -10), INT64_MIN);
}

/* A breaker with a 2 s cooldown opened just before the clock went back
 * an hour: with opened_at shifted by the step it half-opens 2 s after it
 * opened, by the new clock, not an hour and 2 s later. */
static void test_breaker_cooldown_survives_backward_step(void **state)
{
    (void)state;
    struct breaker_cfg cfg = {1, 2000, 60000};
    struct breaker b;
    struct breaker_transition t;
    struct clockstep c;
    struct fake f = {T0, B0};
    int64_t retry_at, step;

    breaker_init(&b, &cfg);
    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    breaker_record(&b, &cfg, 0, 0, 1, f.wall, &t);
    assert_int_equal(b.state, BREAKER_OPEN);
    pass(&f, 500);
    f.wall -= HOUR;
    step = clockstep_observe(&c, f.wall, f.boot);
    assert_int_equal(step, -HOUR);
    /* unshifted, the breaker would deny for the hour */
    assert_int_equal(breaker_admit(&b, f.wall + 2000, &retry_at, NULL), BREAKER_DENY);
    b.opened_at = clockstep_shift(b.opened_at, step);
    assert_int_equal(breaker_admit(&b, f.wall, &retry_at, NULL), BREAKER_DENY);
    assert_int_equal(retry_at, f.wall + 1500);
    pass(&f, 1500);
    assert_int_equal(breaker_admit(&b, f.wall, &retry_at, &t), BREAKER_ADMIT_PROBE);
    assert_int_equal(t.to, BREAKER_HALF_OPEN);
}

/* A retry due 60 s out when the clock jumps an hour ahead is still due
 * 60 s after it was scheduled, by the new clock. */
static void test_retry_survives_forward_step(void **state)
{
    (void)state;
    struct clockstep c;
    struct fake f = {T0, B0};
    int64_t due, step;

    clockstep_init(&c);
    clockstep_observe(&c, f.wall, f.boot);
    due = f.wall + 60000;
    pass(&f, 1000);
    f.wall += HOUR;
    step = clockstep_observe(&c, f.wall, f.boot);
    assert_int_equal(step, HOUR);
    assert_true(due <= f.wall);                 /* unshifted: due at once */
    due = clockstep_shift(due, step);
    assert_int_equal(due - f.wall, 59000);      /* shifted: 59 s to go */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_look_is_no_step),
        cmocka_unit_test(test_steady_clocks),
        cmocka_unit_test(test_backward_and_forward),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_slew_is_not_a_step),
        cmocka_unit_test(test_suspend_is_not_a_step),
        cmocka_unit_test(test_shift),
        cmocka_unit_test(test_breaker_cooldown_survives_backward_step),
        cmocka_unit_test(test_retry_survives_forward_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
