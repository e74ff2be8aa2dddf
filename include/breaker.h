/* breaker.h - per-endpoint circuit breaker state machine (pure, fake-clock
 * friendly: every function takes now_ms). Persistence is the caller's. */
#ifndef HOOKD_BREAKER_H
#define HOOKD_BREAKER_H
#include <stdint.h>

enum breaker_state { BREAKER_CLOSED = 0, BREAKER_OPEN, BREAKER_HALF_OPEN };

struct breaker_cfg {
    uint32_t failure_threshold;  /* default 10 */
    int64_t cooldown_ms;         /* default 5 min: first cooldown after closed->open */
    int64_t max_cooldown_ms;     /* default 1 h: cap of the doubling */
};

struct breaker {
    enum breaker_state state;
    uint32_t consecutive_failures;
    int64_t opened_at;           /* epoch ms, 0 when never opened */
    int64_t cooldown_ms;         /* current cooldown */
    int64_t last_failure_at;
    int64_t last_success_at;
    int64_t failing_since;       /* first failure of the current run (0: the last
                                  * attempt succeeded, or none yet) */
    int probe_in_flight;         /* half_open: 1 while the single probe is out */
};

enum breaker_admit {
    BREAKER_ADMIT = 0,      /* closed: send */
    BREAKER_ADMIT_PROBE,    /* half_open: this one is the probe */
    BREAKER_DENY            /* open, or half_open with its probe out */
};

struct breaker_transition {
    enum breaker_state from, to;   /* from == to: no transition */
    const char *reason;            /* static string, e.g. "cooldown elapsed" */
};

void breaker_init(struct breaker *b, const struct breaker_cfg *c);

/* Effective threshold: halved (at least 1) while p95 > slow_p95_ms
 * with sample_count >= min_samples (a very slow endpoint trips sooner). */
uint32_t breaker_effective_threshold(const struct breaker_cfg *c, int64_t p95_ms,
                                     int64_t sample_count, int64_t slow_p95_ms,
                                     int64_t min_samples);

/* May one delivery go now? open + cooldown elapsed -> half_open (reported
 * in *t). When denied, *retry_at is when asking again makes sense (end of
 * cooldown; for a half_open with probe out, now + cooldown). */
enum breaker_admit breaker_admit(struct breaker *b, int64_t now_ms,
                                 int64_t *retry_at, struct breaker_transition *t);

/* Record an attempt's result. was_probe: it was admitted as the probe.
 * threshold: the effective failure threshold. Transition in *t. */
void breaker_record(struct breaker *b, const struct breaker_cfg *c, int success,
                    int was_probe, uint32_t threshold, int64_t now_ms,
                    struct breaker_transition *t);

/* Has the endpoint failed without a success for at least after_ms?
 * (after_ms <= 0: never.) Auto-disable asks it after each failure. */
int breaker_failing_for(const struct breaker *b, int64_t after_ms, int64_t now_ms);

/* A probe that never produced a result (shutdown, crash recovery) frees the
 * probe slot without counting as success or failure. */
void breaker_probe_abandoned(struct breaker *b);

const char *breaker_state_name(enum breaker_state s);        /* "closed" ... */
int breaker_state_parse(const char *s, enum breaker_state *out); /* 0 / -1 */

#endif
