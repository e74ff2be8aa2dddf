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

/* Several windows on one endpoint ("100/m, 1000/h"): a request goes only
 * when every bucket has a token, and then takes one from each. */
#define TLIMIT_MAX 4
struct tlimit {
    int n;                           /* 0: unlimited */
    struct tbucket b[TLIMIT_MAX];
};

/* count per per_ms[i] for i < n (n <= TLIMIT_MAX; more are ignored);
 * burst as for tbucket_init, for every window. */
void tlimit_init(struct tlimit *tl, const double *count, const int64_t *per_ms, int n, double burst, int64_t now_ms);
int tlimit_take(struct tlimit *tl, int64_t now_ms);
/* Put back k tokens taken but not used (never above a bucket's size). */
void tlimit_refund(struct tlimit *tl, int k);
/* Earliest time (>= now) at which every bucket has a token. */
int64_t tlimit_ready_at(struct tlimit *tl, int64_t now_ms);

#endif
