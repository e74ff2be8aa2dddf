/* tbucket.h - token bucket rate limiter (pure, takes now_ms). */
#ifndef HOOKD_TBUCKET_H
#define HOOKD_TBUCKET_H
#include <stdint.h>

struct tbucket {
    double rate_per_ms;  /* 0: unlimited */
    double burst;        /* capacity, >= 1 when limited */
    double tokens;
    int64_t last_ms;
};

/* rate_per_sec 0 means unlimited; burst 0 means max(1, rate_per_sec). Starts full. */
void tbucket_init(struct tbucket *tb, double rate_per_sec, double burst, int64_t now_ms);

/* Take one token: 1 if taken, 0 if empty. */
int tbucket_take(struct tbucket *tb, int64_t now_ms);

/* Earliest time (>= now) at which one token is available. */
int64_t tbucket_ready_at(struct tbucket *tb, int64_t now_ms);

#endif
