/* limiter.c - adaptive concurrency per endpoint (AIMD, slow start, a
 * round trip time signal). */
#include "limiter.h"

/* The best round trip is forgotten after this long, so a route that got
 * slower for good becomes the new normal instead of a permanent alarm. */
#define RTT_MIN_TTL_MS 30000
/* Smoothing of the average round trip (one in eight, as TCP's SRTT). */
#define RTT_ALPHA 0.125
/* Latency counts as rising above twice the best plus this, so that
 * sub-millisecond jitter on loopback does not read as queueing. */
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
    l->limit = 1;
    l->slow_start = 1;
    l->rtt_min = l->rtt_avg = 0;
    l->rtt_min_at = l->cut_at = 0;
}

void limiter_set_cap(struct limiter *l, int cap)
{
    l->cap = cap < 1 ? 1 : cap;
    l->limit = clamp(l, l->limit);
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
static void cut(struct limiter *l, double factor, int64_t now)
{
    double rtt = l->rtt_avg > 1 ? l->rtt_avg : 1;

    l->slow_start = 0;
    if (l->cut_at && now - l->cut_at < (int64_t)rtt)
        return;
    l->cut_at = now;
    l->limit = clamp(l, l->limit * factor);
}

void limiter_record(struct limiter *l, enum limiter_signal s, int64_t rtt_ms, int in_flight, int64_t now)
{
    double rtt = rtt_ms < 0 ? 0 : (double)rtt_ms;

    if (s != LIMITER_OK) {
        cut(l, 0.5, now);
        return;
    }
    l->rtt_avg = l->rtt_avg > 0 ? l->rtt_avg + RTT_ALPHA * (rtt - l->rtt_avg) : rtt;
    if (l->rtt_min <= 0 || rtt <= l->rtt_min || now - l->rtt_min_at > RTT_MIN_TTL_MS) {
        l->rtt_min = rtt > 0 ? rtt : 0.001;
        l->rtt_min_at = now;
    }
    if (l->rtt_avg > 2 * l->rtt_min + RTT_SLACK_MS) {
        cut(l, 0.9, now);   /* queueing at the receiver: back off gently */
        return;
    }
    /* grow only a limit that is in use (in_flight counts this request):
     * an endpoint that sees two requests at a time gives no evidence it
     * could take thirty */
    if (in_flight < (int)l->limit)
        return;
    l->limit = clamp(l, l->limit + (l->slow_start ? 1 : 1 / l->limit));
}
