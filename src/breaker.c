/* breaker.c - per-endpoint circuit breaker.
 *
 * The seed's breaker (worker.py) with its half_open fixed:
 *  - the seed let every queued row through once half_open and any success
 *    (even from a request sent long before the breaker opened) closed it;
 *    here half_open admits exactly one probe and only the probe's result
 *    closes or reopens the breaker;
 *  - everything else is kept: consecutive failures reaching the threshold
 *    open it at the base cooldown, a failed probe doubles the cooldown up to
 *    the maximum, a success while closed resets the failure count. */
#include "breaker.h"

#include <stddef.h>
#include <string.h>

/* While the probe is out, a denied caller asks again after this long (or the
 * cooldown, if shorter). The probe ends within one request timeout, after
 * which the endpoint is either closed (everything should flow again at once)
 * or open (callers then get the real end of the new cooldown). Waiting a
 * whole cooldown here would hold back a recovered endpoint for minutes;
 * re-checking every second costs one pure function call per waiting
 * delivery. */
#define BREAKER_PROBE_RECHECK_MS 1000

static const char R_THRESHOLD[] = "failure threshold reached";
static const char R_COOLDOWN[] = "cooldown elapsed";
static const char R_PROBE_OK[] = "probe succeeded";
static const char R_PROBE_FAIL[] = "probe failed";

static void no_transition(const struct breaker *b, struct breaker_transition *t)
{
    if (t) {
        t->from = b->state;
        t->to = b->state;
        t->reason = NULL;
    }
}

static void set_state(struct breaker *b, enum breaker_state to, const char *reason,
                      struct breaker_transition *t)
{
    if (t) {
        t->from = b->state;
        t->to = to;
        t->reason = reason;
    }
    b->state = to;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int64_t max_cooldown(const struct breaker_cfg *c)
{
    /* A maximum below the base would make a failed probe shorten the wait;
     * the base wins. */
    return c->max_cooldown_ms > c->cooldown_ms ? c->max_cooldown_ms : c->cooldown_ms;
}

void breaker_init(struct breaker *b, const struct breaker_cfg *c)
{
    memset(b, 0, sizeof *b);
    b->state = BREAKER_CLOSED;
    b->cooldown_ms = c->cooldown_ms;
}

uint32_t breaker_effective_threshold(const struct breaker_cfg *c, int64_t p95_ms,
                                     int64_t sample_count, int64_t slow_p95_ms,
                                     int64_t min_samples)
{
    /* 0 would open on no failures at all; treat it as 1. */
    uint32_t th = c->failure_threshold ? c->failure_threshold : 1;
    /* slow_p95_ms <= 0 means "no slowness rule" rather than "every endpoint
     * with any latency is slow". */
    if (slow_p95_ms > 0 && p95_ms > slow_p95_ms && sample_count >= min_samples) {
        th /= 2;
        if (th < 1)
            th = 1;
    }
    return th;
}

enum breaker_admit breaker_admit(struct breaker *b, int64_t now_ms,
                                 int64_t *retry_at, struct breaker_transition *t)
{
    no_transition(b, t);
    if (retry_at)
        *retry_at = now_ms;

    switch (b->state) {
    case BREAKER_CLOSED:
        return BREAKER_ADMIT;

    case BREAKER_OPEN: {
        int64_t until = sat_add(b->opened_at, b->cooldown_ms);
        if (now_ms < until) {
            if (retry_at)
                *retry_at = until;
            return BREAKER_DENY;
        }
        set_state(b, BREAKER_HALF_OPEN, R_COOLDOWN, t);
        b->probe_in_flight = 1;
        return BREAKER_ADMIT_PROBE;
    }

    case BREAKER_HALF_OPEN:
        /* Probe slot free: just entered, the last probe was abandoned, or
         * the state was loaded from storage without a live probe. */
        if (!b->probe_in_flight) {
            b->probe_in_flight = 1;
            return BREAKER_ADMIT_PROBE;
        }
        if (retry_at) {
            int64_t wait = b->cooldown_ms > 0 && b->cooldown_ms < BREAKER_PROBE_RECHECK_MS
                               ? b->cooldown_ms
                               : BREAKER_PROBE_RECHECK_MS;
            *retry_at = sat_add(now_ms, wait);
        }
        return BREAKER_DENY;
    }
    /* Corrupt state (bad value from storage): fail safe, admit nothing. */
    if (retry_at)
        *retry_at = sat_add(now_ms, BREAKER_PROBE_RECHECK_MS);
    return BREAKER_DENY;
}

static void open_breaker(struct breaker *b, int64_t now_ms, int64_t cooldown_ms,
                         const char *reason, struct breaker_transition *t)
{
    set_state(b, BREAKER_OPEN, reason, t);
    b->opened_at = now_ms;
    b->cooldown_ms = cooldown_ms;
    b->probe_in_flight = 0;
}

void breaker_record(struct breaker *b, const struct breaker_cfg *c, int success,
                    int was_probe, uint32_t threshold, int64_t now_ms,
                    struct breaker_transition *t)
{
    no_transition(b, t);
    if (success) {
        b->last_success_at = now_ms;
        b->failing_since = 0;
    } else {
        b->last_failure_at = now_ms;
        if (!b->failing_since)
            b->failing_since = now_ms;
    }

    if (b->state == BREAKER_HALF_OPEN && was_probe && b->probe_in_flight) {
        if (success) {
            set_state(b, BREAKER_CLOSED, R_PROBE_OK, t);
            b->consecutive_failures = 0;
            b->cooldown_ms = c->cooldown_ms;
            b->probe_in_flight = 0;
        } else {
            if (b->consecutive_failures < UINT32_MAX)
                b->consecutive_failures++;
            int64_t cap = max_cooldown(c);
            int64_t next;
            if (b->cooldown_ms <= 0) /* never opened properly (bad storage) */
                next = c->cooldown_ms;
            else
                next = b->cooldown_ms > cap / 2 ? cap : b->cooldown_ms * 2;
            if (next < c->cooldown_ms)
                next = c->cooldown_ms;
            open_breaker(b, now_ms, next, R_PROBE_FAIL, t);
        }
        return;
    }

    if (b->state == BREAKER_CLOSED) {
        if (success) {
            b->consecutive_failures = 0;
            return;
        }
        if (b->consecutive_failures < UINT32_MAX)
            b->consecutive_failures++;
        if (b->consecutive_failures >= (threshold ? threshold : 1))
            /* A fresh opening forgets earlier doublings: the endpoint was
             * healthy in between. */
            open_breaker(b, now_ms, c->cooldown_ms, R_THRESHOLD, t);
        return;
    }

    /* Open, or half_open with a result that is not the probe's: a request
     * admitted while still closed that finished late. It says nothing about
     * the endpoint now, so it changes no state. A late failure still counts
     * (the counter keeps reporting how many failures were seen since the
     * last success); a late success does not reset the counter, since only
     * the probe may declare the endpoint healthy and closing resets it
     * anyway. */
    if (!success && b->consecutive_failures < UINT32_MAX)
        b->consecutive_failures++;
}

int breaker_failing_for(const struct breaker *b, int64_t after_ms, int64_t now_ms)
{
    return after_ms > 0 && b->failing_since > 0 && now_ms - b->failing_since >= after_ms;
}

void breaker_probe_abandoned(struct breaker *b)
{
    b->probe_in_flight = 0;
}

static const char *const state_names[] = {
    [BREAKER_CLOSED] = "closed",
    [BREAKER_OPEN] = "open",
    [BREAKER_HALF_OPEN] = "half_open",
};

const char *breaker_state_name(enum breaker_state s)
{
    if ((unsigned)s < sizeof state_names / sizeof *state_names)
        return state_names[s];
    return "unknown";
}

int breaker_state_parse(const char *s, enum breaker_state *out)
{
    if (!s)
        return -1;
    for (unsigned i = 0; i < sizeof state_names / sizeof *state_names; i++)
        if (strcmp(s, state_names[i]) == 0) {
            if (out)
                *out = (enum breaker_state)i;
            return 0;
        }
    return -1;
}
