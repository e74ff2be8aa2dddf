/* backoff.h - capped exponential backoff with full jitter (pure, no I/O). */
#ifndef HOOKD_BACKOFF_H
#define HOOKD_BACKOFF_H
#include <stdint.h>

/* min(base_ms * 2^attempt_count, max_ms), without overflow for any input. */
int64_t backoff_cap_ms(uint32_t attempt_count, int64_t base_ms, int64_t max_ms);

/* Full jitter: uniform in [0, cap] from the 64 random bits in rnd.
 * attempt_count is the count *after* the failed attempt (the seed's
 * calculate_next_attempt(new_attempt_count)). */
int64_t backoff_delay_ms(uint32_t attempt_count, int64_t base_ms,
                         int64_t max_ms, uint64_t rnd);

/* 64 random bits from a per-thread generator seeded from getrandom(). */
uint64_t backoff_rand64(void);

#endif
