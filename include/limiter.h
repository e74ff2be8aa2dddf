/* limiter.h - adaptive concurrency per endpoint: how many requests may be
 * in flight to it right now, between 1 and its max_in_flight. Pure (the
 * caller passes the clock and the round trip times).
 *
 * AIMD with slow start, as TCP does it and as concurrency limiters
 * (Netflix's concurrency-limits, Envoy's adaptive concurrency) do for
 * services: a fresh endpoint starts at 1; every success while the limit
 * is in use adds one (the limit doubles each round trip) until the first
 * sign of trouble, after which it grows by one per round trip. A timeout,
 * 429 or 503 halves it, and so does any failure that leaves no answer (a
 * refused or reset connection, a 5xx), at most once per round trip; a
 * short-term round trip average pulling above twice the long-term one
 * (queueing at the receiver) cuts it by a tenth, unless the previous such
 * cut did not lower the latency: then the higher latency is the route's
 * new normal (a slower partner, not a queue of ours). So a dead endpoint sees one request at a time (exactly
 * failure_threshold of them before its breaker opens), a struggling one
 * is not hit by a burst, and a fast one reaches its cap within a few
 * round trips. */
#ifndef HOOKD_LIMITER_H
#define HOOKD_LIMITER_H
#include <stdint.h>

enum limiter_signal {
    LIMITER_OK = 0,      /* answered, and not with a sign of overload */
    LIMITER_OVERLOAD,    /* 429, 503, a timeout: the endpoint asks for less */
    LIMITER_FAILURE      /* no usable answer (refused, reset, TLS, DNS, other 5xx) */
};

struct limiter {
    double limit;        /* >= 1 */
    int cap;             /* max_in_flight */
    int fixed;           /* the limit is the cap, whatever happens */
    int slow_start;
    double rtt_short;    /* ms, fast-moving average; 0: no sample yet */
    double rtt_long;     /* ms, slow-moving average: the route's normal */
    int64_t cut_at;      /* the last decrease: one per round trip */
    double cut_rtt;      /* rtt_short at the last latency cut (0: none): if
                          * a round trip later it is no lower, the cut did
                          * not help and the latency is the route's own */
};

void limiter_init(struct limiter *l, int cap);
/* A new cap (max_in_flight changed); the limit never exceeds it. fixed:
 * no adapting, the limit is the cap (an operator's choice per endpoint). */
void limiter_set_cap(struct limiter *l, int cap, int fixed);
/* The limit saved before a restart (endpoint_health.concurrency_limit;
 * <= 0: none saved), within the cap. It is where the endpoint was, not a
 * fresh guess: it grows from there by one per round trip, as after a cut
 * (a saved 1 knows nothing and starts over in slow start). No effect on
 * a fixed limit. */
void limiter_restore(struct limiter *l, int limit);
/* How many more requests may go with in_flight already out (>= 0). */
int limiter_room(const struct limiter *l, int in_flight);
/* The current limit as a whole number (for endpoints and the metrics). */
int limiter_current(const struct limiter *l);
/* One result: its signal, its round trip (ms) and how many requests were
 * in flight when it came back (itself included). */
void limiter_record(struct limiter *l, enum limiter_signal s, int64_t rtt_ms, int in_flight, int64_t now_ms);

#endif
