/* limiter.c - adaptive concurrency per endpoint (AIMD, slow start, a
 * round trip time signal). */
#include "limiter.h"

/* Queueing at the receiver shows as the short-term average round trip
 * pulling away from the long-term one (Netflix's Gradient2 idea); a
 * route that is merely jittery keeps both together, and one that got
 * slower for good becomes the new normal as the long average follows. */
#define RTT_SHORT_ALPHA (1.0 / 8)
#define RTT_LONG_ALPHA (1.0 / 128)
/* ... beyond twice the long average plus this, so that sub-millisecond
 * jitter on loopback does not read as queueing. */
#define RTT_SLACK_MS 5.0

static double clamp(const struct limiter *l, double v)
{
    if (v < 1)
        return 1;
    if (v > l->cap)
        return l->cap;
    return v;
}

void limiter_init(struct limiter *l, int cap)
{
    l->cap = cap < 1 ? 1 : cap;
    l->fixed = 0;
    l->limit = 1;
    l->slow_start = 1;
    l->rtt_short = l->rtt_long = 0;
    l->cut_rtt = 0;
    l->cut_at = 0;
}

void limiter_set_cap(struct limiter *l, int cap, int fixed)
{
    l->cap = cap < 1 ? 1 : cap;
    l->fixed = fixed;
    l->limit = fixed ? l->cap : clamp(l, l->limit);
}

void limiter_restore(struct limiter *l, int limit)
{
    if (l->fixed || limit < 1)
        return;
    l->limit = clamp(l, limit);
    l->slow_start = l->limit <= 1;
}

int limiter_current(const struct limiter *l)
{
    return (int)l->limit;
}

int limiter_room(const struct limiter *l, int in_flight)
{
    int room = (int)l->limit - in_flight;

    return room > 0 ? room : 0;
}

/* Decrease by factor, at most once per round trip: the requests already
 * out when trouble started all report it, and one cut is the answer to
 * all of them. */
static int cut_due(const struct limiter *l, int64_t now)
{
    double rtt = l->rtt_short > 1 ? l->rtt_short : 1;

    return !l->cut_at || now - l->cut_at >= (int64_t)rtt;
}

static void cut(struct limiter *l, double factor, int64_t now)
{
    l->slow_start = 0;
    if (!cut_due(l, now))
        return;
    l->cut_at = now;
    l->limit = clamp(l, l->limit * factor);
}

void limiter_record(struct limiter *l, enum limiter_signal s, int64_t rtt_ms, int in_flight, int64_t now)
{
    double rtt = rtt_ms < 0 ? 0 : (double)rtt_ms;

    if (l->fixed)
        return;
    if (s != LIMITER_OK) {
        cut(l, 0.5, now);
        return;
    }
    if (l->rtt_long <= 0) {
        l->rtt_short = l->rtt_long = rtt;
    } else {
        l->rtt_short += RTT_SHORT_ALPHA * (rtt - l->rtt_short);
        l->rtt_long += RTT_LONG_ALPHA * (rtt - l->rtt_long);
    }
    if (l->rtt_short > 2 * l->rtt_long + RTT_SLACK_MS) {
        if (!cut_due(l, now))
            return;
        if (l->cut_rtt > 0 && l->rtt_short >= l->cut_rtt) {
            /* the last cut, a round trip ago, did not bring the latency
             * down: not a queue we make (the partner got slower, or
             * others load it), so it is the route's new normal */
            l->rtt_long = l->rtt_short;
            l->cut_rtt = 0;
        } else {
            cut(l, 0.9, now);   /* queueing at the receiver: back off gently */
            l->cut_rtt = l->rtt_short;
            return;
        }
    } else {
        l->cut_rtt = 0;
    }
    /* grow only a limit that is in use, at least half of it (in_flight
     * counts this request and the others that came back with it): an
     * endpoint that sees two requests at a time gives no evidence it could
     * take thirty. Half, not all: results come back in batches, and the
     * limit has already grown by the earlier ones of the batch. */
    if (2 * in_flight < (int)l->limit)
        return;
    l->limit = clamp(l, l->limit + (l->slow_start ? 1 : 1 / l->limit));
}
