/* test_breaker.c - circuit breaker state machine against a fake clock. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "breaker.h"

#define SEC ((int64_t)1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define T0 ((int64_t)1700000000000) /* fake epoch ms */

static const struct breaker_cfg CFG = {
    .failure_threshold = 10,
    .cooldown_ms = 5 * MIN,
    .max_cooldown_ms = HOUR,
};

static void assert_no_change(const struct breaker_transition *t, enum breaker_state s)
{
    assert_int_equal(t->from, s);
    assert_int_equal(t->to, s);
    assert_null(t->reason);
}

static void assert_change(const struct breaker_transition *t, enum breaker_state from,
                          enum breaker_state to, const char *reason)
{
    assert_int_equal(t->from, from);
    assert_int_equal(t->to, to);
    assert_non_null(t->reason);
    assert_string_equal(t->reason, reason);
}

/* n failures (non-probe) at time now; returns the last transition. */
static struct breaker_transition fail_n(struct breaker *b, int n, uint32_t th, int64_t now)
{
    struct breaker_transition t = {BREAKER_OPEN, BREAKER_OPEN, "junk"};
    for (int i = 0; i < n; i++)
        breaker_record(b, &CFG, 0, 0, th, now, &t);
    return t;
}

/* Drive a fresh breaker to open at time `at`. */
static void open_at(struct breaker *b, int64_t at)
{
    breaker_init(b, &CFG);
    struct breaker_transition t = fail_n(b, 10, 10, at);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
}

static void test_init_closed_admits(void **state)
{
    (void)state;
    struct breaker b;
    memset(&b, 0xa5, sizeof b);
    breaker_init(&b, &CFG);
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(b.consecutive_failures, 0);
    assert_int_equal(b.opened_at, 0);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    assert_int_equal(b.probe_in_flight, 0);
    assert_int_equal(b.last_failure_at, 0);
    assert_int_equal(b.last_success_at, 0);

    struct breaker_transition t = {BREAKER_OPEN, BREAKER_HALF_OPEN, "junk"};
    int64_t retry = -1;
    assert_int_equal(breaker_admit(&b, T0, &retry, &t), BREAKER_ADMIT);
    assert_no_change(&t, BREAKER_CLOSED);
}

static void test_threshold_exactly_ten(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &CFG);
    for (int i = 1; i <= 9; i++) {
        breaker_record(&b, &CFG, 0, 0, 10, T0 + i, &t);
        assert_no_change(&t, BREAKER_CLOSED);
        assert_int_equal(b.consecutive_failures, (uint32_t)i);
        assert_int_equal(b.last_failure_at, T0 + i);
        assert_int_equal(breaker_admit(&b, T0 + i, NULL, &t), BREAKER_ADMIT);
    }
    breaker_record(&b, &CFG, 0, 0, 10, T0 + 10, &t);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.consecutive_failures, 10);
    assert_int_equal(b.opened_at, T0 + 10);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
}

static void test_success_resets_count(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &CFG);
    fail_n(&b, 9, 10, T0);
    breaker_record(&b, &CFG, 1, 0, 10, T0 + 1, &t);
    assert_no_change(&t, BREAKER_CLOSED);
    assert_int_equal(b.consecutive_failures, 0);
    assert_int_equal(b.last_success_at, T0 + 1);
    t = fail_n(&b, 9, 10, T0 + 2);
    assert_no_change(&t, BREAKER_CLOSED);
    t = fail_n(&b, 1, 10, T0 + 3);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
}

static void test_open_denies_until_cooldown(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    open_at(&b, T0);
    const int64_t probe_at = T0 + 5 * MIN;

    for (int64_t now = T0; now < probe_at; now += 7 * SEC) {
        assert_int_equal(breaker_admit(&b, now, &retry, &t), BREAKER_DENY);
        assert_int_equal(retry, probe_at);
        assert_no_change(&t, BREAKER_OPEN);
    }
    assert_int_equal(breaker_admit(&b, probe_at - 1, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, probe_at);
    /* a clock that went backwards does not shorten the wait */
    assert_int_equal(breaker_admit(&b, T0 - HOUR, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, probe_at);
    assert_int_equal(b.state, BREAKER_OPEN);

    assert_int_equal(breaker_admit(&b, probe_at, &retry, &t), BREAKER_ADMIT_PROBE);
    assert_change(&t, BREAKER_OPEN, BREAKER_HALF_OPEN, "cooldown elapsed");
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(b.probe_in_flight, 1);
}

static void test_open_late_admit_still_probes(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    open_at(&b, T0);
    /* nobody asked for a day: still exactly one probe */
    assert_int_equal(breaker_admit(&b, T0 + 24 * HOUR, NULL, &t), BREAKER_ADMIT_PROBE);
    assert_change(&t, BREAKER_OPEN, BREAKER_HALF_OPEN, "cooldown elapsed");
    assert_int_equal(breaker_admit(&b, T0 + 24 * HOUR, NULL, &t), BREAKER_DENY);
}

static void test_half_open_single_probe(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    open_at(&b, T0);
    int64_t now = T0 + 5 * MIN;
    assert_int_equal(breaker_admit(&b, now, &retry, &t), BREAKER_ADMIT_PROBE);

    int probes = 1;
    for (int i = 0; i < 1000; i++) {
        now += 37; /* within and far beyond a request timeout */
        enum breaker_admit a = breaker_admit(&b, now, &retry, &t);
        if (a == BREAKER_ADMIT_PROBE || a == BREAKER_ADMIT)
            probes++;
        assert_int_equal(a, BREAKER_DENY);
        assert_no_change(&t, BREAKER_HALF_OPEN);
        assert_int_equal(retry, now + 1000);
    }
    assert_int_equal(probes, 1);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(b.probe_in_flight, 1);
}

static void test_half_open_recheck_short_cooldown(void **state)
{
    (void)state;
    /* recheck is min(cooldown, 1 s) */
    const struct breaker_cfg c = {.failure_threshold = 1, .cooldown_ms = 200,
                                  .max_cooldown_ms = 200};
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    breaker_init(&b, &c);
    breaker_record(&b, &c, 0, 0, 1, T0, &t);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
    assert_int_equal(breaker_admit(&b, T0 + 199, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, T0 + 200);
    assert_int_equal(breaker_admit(&b, T0 + 200, &retry, &t), BREAKER_ADMIT_PROBE);
    assert_int_equal(breaker_admit(&b, T0 + 250, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, T0 + 450);
}

static void test_probe_success_closes(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    open_at(&b, T0);
    assert_int_equal(breaker_admit(&b, T0 + 5 * MIN, NULL, &t), BREAKER_ADMIT_PROBE);
    breaker_record(&b, &CFG, 1, 1, 10, T0 + 5 * MIN + 300, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_CLOSED, "probe succeeded");
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(b.consecutive_failures, 0);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    assert_int_equal(b.probe_in_flight, 0);
    assert_int_equal(b.last_success_at, T0 + 5 * MIN + 300);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(breaker_admit(&b, T0 + 5 * MIN + 301, NULL, &t), BREAKER_ADMIT);
        assert_no_change(&t, BREAKER_CLOSED);
    }
}

static void test_probe_failure_reopens(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    open_at(&b, T0);
    const int64_t p = T0 + 5 * MIN;
    assert_int_equal(breaker_admit(&b, p, NULL, &t), BREAKER_ADMIT_PROBE);
    breaker_record(&b, &CFG, 0, 1, 10, p + 15 * SEC, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(b.opened_at, p + 15 * SEC);
    assert_int_equal(b.cooldown_ms, 10 * MIN);
    assert_int_equal(b.probe_in_flight, 0);
    assert_int_equal(b.consecutive_failures, 11);
    assert_int_equal(breaker_admit(&b, p + 16 * SEC, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, p + 15 * SEC + 10 * MIN);
}

static void test_cooldown_doubling_and_reset(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    open_at(&b, T0);
    const int64_t expect[] = {5 * MIN, 10 * MIN, 20 * MIN, 40 * MIN, 60 * MIN,
                              60 * MIN, 60 * MIN};
    int64_t now = T0;
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        assert_int_equal(b.cooldown_ms, expect[i]);
        assert_int_equal(b.opened_at, now);
        /* one ms early: denied until exactly opened_at + cooldown */
        assert_int_equal(breaker_admit(&b, now + expect[i] - 1, &retry, &t), BREAKER_DENY);
        assert_int_equal(retry, now + expect[i]);
        now += expect[i];
        assert_int_equal(breaker_admit(&b, now, &retry, &t), BREAKER_ADMIT_PROBE);
        assert_change(&t, BREAKER_OPEN, BREAKER_HALF_OPEN, "cooldown elapsed");
        now += 2 * SEC;
        breaker_record(&b, &CFG, 0, 1, 10, now, &t);
        assert_change(&t, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
    }
    assert_int_equal(b.cooldown_ms, 60 * MIN);

    /* recover, then a fresh trip starts again at 5 min */
    now += 60 * MIN;
    assert_int_equal(breaker_admit(&b, now, NULL, &t), BREAKER_ADMIT_PROBE);
    breaker_record(&b, &CFG, 1, 1, 10, now, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_CLOSED, "probe succeeded");
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    now += SEC;
    t = fail_n(&b, 10, 10, now);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    assert_int_equal(breaker_admit(&b, now, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, now + 5 * MIN);
}

static void test_fresh_open_ignores_stored_cooldown(void **state)
{
    (void)state;
    /* Closed with a long cooldown left over (e.g. loaded from storage): a new
     * closed->open still uses the base cooldown. */
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &CFG);
    b.cooldown_ms = 40 * MIN;
    t = fail_n(&b, 10, 10, T0);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
    assert_int_equal(b.cooldown_ms, 5 * MIN);
}

static void test_stragglers_in_half_open(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    open_at(&b, T0);
    const int64_t p = T0 + 5 * MIN;
    assert_int_equal(breaker_admit(&b, p, NULL, &t), BREAKER_ADMIT_PROBE);
    uint32_t fails = b.consecutive_failures;

    /* late success of a request admitted while closed: no close */
    breaker_record(&b, &CFG, 1, 0, 10, p + 1, &t);
    assert_no_change(&t, BREAKER_HALF_OPEN);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(b.probe_in_flight, 1);
    assert_int_equal(b.consecutive_failures, fails);
    assert_int_equal(b.last_success_at, p + 1);
    assert_int_equal(breaker_admit(&b, p + 2, NULL, &t), BREAKER_DENY);

    /* late failure: counted, but no reopen and no doubling */
    breaker_record(&b, &CFG, 0, 0, 10, p + 3, &t);
    assert_no_change(&t, BREAKER_HALF_OPEN);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(b.consecutive_failures, fails + 1);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    assert_int_equal(b.opened_at, T0);
    assert_int_equal(b.last_failure_at, p + 3);
    assert_int_equal(breaker_admit(&b, p + 4, NULL, &t), BREAKER_DENY);

    /* the probe itself still decides */
    breaker_record(&b, &CFG, 1, 1, 10, p + 5, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_CLOSED, "probe succeeded");
    assert_int_equal(b.consecutive_failures, 0);
}

static void test_stragglers_in_open(void **state)
{
    (void)state;
    /* The seed's record_success closed an open breaker on any success. */
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    open_at(&b, T0);
    breaker_record(&b, &CFG, 1, 0, 10, T0 + 100, &t);
    assert_no_change(&t, BREAKER_OPEN);
    assert_int_equal(b.state, BREAKER_OPEN);
    breaker_record(&b, &CFG, 0, 0, 10, T0 + 200, &t);
    assert_no_change(&t, BREAKER_OPEN);
    assert_int_equal(b.opened_at, T0);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    assert_int_equal(b.consecutive_failures, 11);
    /* a bogus "probe" result while open changes nothing either */
    breaker_record(&b, &CFG, 1, 1, 10, T0 + 300, &t);
    assert_no_change(&t, BREAKER_OPEN);
    assert_int_equal(breaker_admit(&b, T0 + 400, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, T0 + 5 * MIN);
}

static void test_probe_abandoned(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    open_at(&b, T0);
    const int64_t p = T0 + 5 * MIN;
    assert_int_equal(breaker_admit(&b, p, NULL, &t), BREAKER_ADMIT_PROBE);
    assert_int_equal(breaker_admit(&b, p + 1, NULL, &t), BREAKER_DENY);
    breaker_probe_abandoned(&b);
    assert_int_equal(b.state, BREAKER_HALF_OPEN);
    assert_int_equal(b.probe_in_flight, 0);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
    /* the slot is free again: exactly one new probe, no transition reported */
    assert_int_equal(breaker_admit(&b, p + 2, NULL, &t), BREAKER_ADMIT_PROBE);
    assert_no_change(&t, BREAKER_HALF_OPEN);
    assert_int_equal(breaker_admit(&b, p + 3, NULL, &t), BREAKER_DENY);
    breaker_record(&b, &CFG, 0, 1, 10, p + 4, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
    assert_int_equal(b.cooldown_ms, 10 * MIN);
}

static void test_probe_result_without_probe_slot(void **state)
{
    (void)state;
    /* A result flagged as probe after the probe was abandoned must not
     * decide anything: it cannot be told apart from a stale request. */
    struct breaker b;
    struct breaker_transition t;
    open_at(&b, T0);
    assert_int_equal(breaker_admit(&b, T0 + 5 * MIN, NULL, &t), BREAKER_ADMIT_PROBE);
    breaker_probe_abandoned(&b);
    breaker_record(&b, &CFG, 1, 1, 10, T0 + 5 * MIN + 1, &t);
    assert_no_change(&t, BREAKER_HALF_OPEN);
    breaker_record(&b, &CFG, 0, 1, 10, T0 + 5 * MIN + 2, &t);
    assert_no_change(&t, BREAKER_HALF_OPEN);
    assert_int_equal(b.cooldown_ms, 5 * MIN);
}

static void test_probe_abandoned_when_closed_is_noop(void **state)
{
    (void)state;
    struct breaker b;
    breaker_init(&b, &CFG);
    breaker_probe_abandoned(&b);
    assert_int_equal(b.state, BREAKER_CLOSED);
    assert_int_equal(breaker_admit(&b, T0, NULL, NULL), BREAKER_ADMIT);
}

static void test_effective_threshold(void **state)
{
    (void)state;
    /* configured 10; slow = p95 > 2000 ms with >= 20 samples */
    assert_int_equal(breaker_effective_threshold(&CFG, 500, 100, 2000, 20), 10);
    assert_int_equal(breaker_effective_threshold(&CFG, 2000, 100, 2000, 20), 10);
    assert_int_equal(breaker_effective_threshold(&CFG, 2001, 100, 2000, 20), 5);
    assert_int_equal(breaker_effective_threshold(&CFG, 9000, 20, 2000, 20), 5);
    assert_int_equal(breaker_effective_threshold(&CFG, 9000, 19, 2000, 20), 10);
    assert_int_equal(breaker_effective_threshold(&CFG, 9000, 0, 2000, 20), 10);
    /* slowness rule off */
    assert_int_equal(breaker_effective_threshold(&CFG, 9000, 100, 0, 20), 10);

    struct breaker_cfg c = CFG;
    c.failure_threshold = 11;
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), 5);
    c.failure_threshold = 3;
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), 1);
    c.failure_threshold = 2;
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), 1);
    c.failure_threshold = 1;
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), 1);
    assert_int_equal(breaker_effective_threshold(&c, 10, 100, 2000, 20), 1);
    c.failure_threshold = 0;
    assert_int_equal(breaker_effective_threshold(&c, 10, 100, 2000, 20), 1);
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), 1);
    c.failure_threshold = UINT32_MAX;
    assert_int_equal(breaker_effective_threshold(&c, 9000, 100, 2000, 20), UINT32_MAX / 2);
}

static void test_slow_endpoint_trips_sooner(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &CFG);
    uint32_t th = breaker_effective_threshold(&CFG, 12000, 50, 5000, 20);
    assert_int_equal(th, 5);
    t = fail_n(&b, 4, th, T0);
    assert_no_change(&t, BREAKER_CLOSED);
    t = fail_n(&b, 1, th, T0 + 1);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
    assert_int_equal(b.cooldown_ms, 5 * MIN);

    /* already past the lowered threshold when the endpoint turns slow:
     * the next failure opens */
    breaker_init(&b, &CFG);
    t = fail_n(&b, 7, 10, T0);
    assert_no_change(&t, BREAKER_CLOSED);
    t = fail_n(&b, 1, th, T0 + 1);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
}

static void test_threshold_zero_means_one(void **state)
{
    (void)state;
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &CFG);
    t = fail_n(&b, 1, 0, T0);
    assert_change(&t, BREAKER_CLOSED, BREAKER_OPEN, "failure threshold reached");
}

static void test_null_out_params(void **state)
{
    (void)state;
    struct breaker b;
    breaker_init(&b, &CFG);
    for (int i = 0; i < 10; i++)
        breaker_record(&b, &CFG, 0, 0, 10, T0, NULL);
    assert_int_equal(b.state, BREAKER_OPEN);
    assert_int_equal(breaker_admit(&b, T0, NULL, NULL), BREAKER_DENY);
    assert_int_equal(breaker_admit(&b, T0 + 5 * MIN, NULL, NULL), BREAKER_ADMIT_PROBE);
    assert_int_equal(breaker_admit(&b, T0 + 5 * MIN, NULL, NULL), BREAKER_DENY);
    breaker_record(&b, &CFG, 1, 1, 10, T0 + 5 * MIN, NULL);
    assert_int_equal(b.state, BREAKER_CLOSED);
}

static void test_max_below_base(void **state)
{
    (void)state;
    /* misconfigured max < base: a failed probe never shortens the wait */
    const struct breaker_cfg c = {.failure_threshold = 1, .cooldown_ms = 10 * MIN,
                                  .max_cooldown_ms = MIN};
    struct breaker b;
    struct breaker_transition t;
    breaker_init(&b, &c);
    breaker_record(&b, &c, 0, 0, 1, T0, &t);
    assert_int_equal(breaker_admit(&b, T0 + 10 * MIN, NULL, &t), BREAKER_ADMIT_PROBE);
    breaker_record(&b, &c, 0, 1, 1, T0 + 10 * MIN, &t);
    assert_change(&t, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
    assert_int_equal(b.cooldown_ms, 10 * MIN);
}

static void test_huge_cooldown_no_overflow(void **state)
{
    (void)state;
    const struct breaker_cfg c = {.failure_threshold = 1, .cooldown_ms = INT64_MAX / 2 + 7,
                                  .max_cooldown_ms = INT64_MAX};
    struct breaker b;
    struct breaker_transition t;
    int64_t retry = 0;
    breaker_init(&b, &c);
    const int64_t late = INT64_MAX - 1000;
    breaker_record(&b, &c, 0, 0, 1, late, &t);
    assert_int_equal(breaker_admit(&b, late + 1, &retry, &t), BREAKER_DENY);
    assert_int_equal(retry, INT64_MAX); /* saturates instead of wrapping */
    b.state = BREAKER_HALF_OPEN;
    b.probe_in_flight = 1;
    breaker_record(&b, &c, 0, 1, 1, T0 + 2, &t);
    assert_int_equal(b.cooldown_ms, INT64_MAX);
}

static void test_state_names(void **state)
{
    (void)state;
    const enum breaker_state all[] = {BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN};
    assert_string_equal(breaker_state_name(BREAKER_CLOSED), "closed");
    assert_string_equal(breaker_state_name(BREAKER_OPEN), "open");
    assert_string_equal(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
    for (size_t i = 0; i < 3; i++) {
        enum breaker_state s = (enum breaker_state)99;
        assert_int_equal(breaker_state_parse(breaker_state_name(all[i]), &s), 0);
        assert_int_equal(s, all[i]);
    }
    const char *bad[] = {"", "Closed", "OPEN", "half-open", "halfopen", "open ",
                         " open", "closedx", "unknown"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        enum breaker_state s = BREAKER_HALF_OPEN;
        assert_int_equal(breaker_state_parse(bad[i], &s), -1);
        assert_int_equal(s, BREAKER_HALF_OPEN); /* untouched on error */
    }
    enum breaker_state s = BREAKER_OPEN;
    assert_int_equal(breaker_state_parse(NULL, &s), -1);
    assert_string_equal(breaker_state_name((enum breaker_state)7), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_closed_admits),
        cmocka_unit_test(test_threshold_exactly_ten),
        cmocka_unit_test(test_success_resets_count),
        cmocka_unit_test(test_open_denies_until_cooldown),
        cmocka_unit_test(test_open_late_admit_still_probes),
        cmocka_unit_test(test_half_open_single_probe),
        cmocka_unit_test(test_half_open_recheck_short_cooldown),
        cmocka_unit_test(test_probe_success_closes),
        cmocka_unit_test(test_probe_failure_reopens),
        cmocka_unit_test(test_cooldown_doubling_and_reset),
        cmocka_unit_test(test_fresh_open_ignores_stored_cooldown),
        cmocka_unit_test(test_stragglers_in_half_open),
        cmocka_unit_test(test_stragglers_in_open),
        cmocka_unit_test(test_probe_abandoned),
        cmocka_unit_test(test_probe_result_without_probe_slot),
        cmocka_unit_test(test_probe_abandoned_when_closed_is_noop),
        cmocka_unit_test(test_effective_threshold),
        cmocka_unit_test(test_slow_endpoint_trips_sooner),
        cmocka_unit_test(test_threshold_zero_means_one),
        cmocka_unit_test(test_null_out_params),
        cmocka_unit_test(test_max_below_base),
        cmocka_unit_test(test_huge_cooldown_no_overflow),
        cmocka_unit_test(test_state_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
