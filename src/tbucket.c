/* tbucket.c - token bucket rate limiter. */
#include "tbucket.h"

#include <math.h>

/* Refill arithmetic accumulates rounding error in the last bits (0.01 per ms
 * is not exact in binary); without slack a token that is due after exactly
 * 100 ms could show up as 0.99999999999 and slip by a millisecond. */
#define TB_EPS 1e-9

void tbucket_init(struct tbucket *tb, double rate_per_sec, double burst, int64_t now_ms)
{
    tb->last_ms = now_ms;
    /* !(x > 0) also catches NaN; an infinite rate is no limit either. */
    if (!(rate_per_sec > 0) || isinf(rate_per_sec)) {
        tb->rate_per_ms = 0;
        tb->burst = 0;
        tb->tokens = 0;
        return;
    }
    tb->rate_per_ms = rate_per_sec / 1000.0;
    if (!(burst > 0)) /* 0 (default), negative or NaN */
        burst = rate_per_sec > 1 ? rate_per_sec : 1;
    if (burst < 1) /* a bucket that can never hold one token never sends */
        burst = 1;
    tb->burst = burst;
    tb->tokens = burst;
}

static void refill(struct tbucket *tb, int64_t now_ms)
{
    if (now_ms <= tb->last_ms) {
        /* Clock went backwards: add nothing, but rebase so the bucket does
         * not stall until the clock catches up with the old reading (which
         * could be hours for a stepped wall clock). The price is at most one
         * burst of extra tokens for the re-lived interval. */
        tb->last_ms = now_ms;
        return;
    }
    /* exact in unsigned arithmetic for any now > last */
    uint64_t dt = (uint64_t)now_ms - (uint64_t)tb->last_ms;
    double add = (double)dt * tb->rate_per_ms;
    double t = tb->tokens + add;
    /* Refill beyond capacity is lost, as in the continuous model; with
     * burst 1 and a period that is not a whole number of ms this rounds
     * each gap up to the next ms (3/s gives one token per 334 ms). */
    tb->tokens = t < tb->burst ? t : tb->burst;
    tb->last_ms = now_ms;
}

int tbucket_take(struct tbucket *tb, int64_t now_ms)
{
    if (tb->rate_per_ms <= 0)
        return 1;
    refill(tb, now_ms);
    if (tb->tokens < 1.0 - TB_EPS)
        return 0;
    tb->tokens -= 1.0;
    if (tb->tokens < 0) /* the epsilon above may dip a hair below zero */
        tb->tokens = 0;
    return 1;
}

int64_t tbucket_ready_at(struct tbucket *tb, int64_t now_ms)
{
    if (tb->rate_per_ms <= 0)
        return now_ms;
    refill(tb, now_ms);
    if (tb->tokens >= 1.0 - TB_EPS)
        return now_ms;
    double wait = ceil((1.0 - tb->tokens) / tb->rate_per_ms - TB_EPS);
    if (wait < 1)
        wait = 1;
    /* A vanishing rate would overflow: "never" is INT64_MAX. */
    if (now_ms >= 0 ? wait >= (double)(INT64_MAX - now_ms) : wait >= 9.2e18)
        return INT64_MAX;
    return now_ms + (int64_t)wait;
}

void tlimit_init(struct tlimit *tl, const double *count, const int64_t *per_ms, int n, double burst, int64_t now_ms)
{
    int i;

    tl->n = 0;
    for (i = 0; i < n && i < TLIMIT_MAX; i++) {
        if (!(count[i] > 0) || per_ms[i] <= 0)
            continue;
        tbucket_init(&tl->b[tl->n++], count[i] * 1000.0 / (double)per_ms[i], burst, now_ms);
    }
}

int tlimit_take(struct tlimit *tl, int64_t now_ms)
{
    int i;

    for (i = 0; i < tl->n; i++)
        if (tbucket_ready_at(&tl->b[i], now_ms) > now_ms)
            return 0;
    for (i = 0; i < tl->n; i++)
        tbucket_take(&tl->b[i], now_ms);
    return 1;
}

void tlimit_refund(struct tlimit *tl, int k)
{
    int i;

    for (i = 0; i < tl->n && k > 0; i++) {
        double t = tl->b[i].tokens + (double)k;
        tl->b[i].tokens = t < tl->b[i].burst ? t : tl->b[i].burst;
    }
}

int64_t tlimit_ready_at(struct tlimit *tl, int64_t now_ms)
{
    int64_t at = now_ms, t;
    int i;

    for (i = 0; i < tl->n; i++)
        if ((t = tbucket_ready_at(&tl->b[i], now_ms)) > at)
            at = t;
    return at;
}
