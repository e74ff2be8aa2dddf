/* settle.h - applying delivery results: what one attempt means for its
 * row (delivered, retry at, dead letter, back to the queue), for the
 * endpoint's breaker and limits, and for the latency record; written
 * through the store inside the writer's transaction.
 *
 * settle_decide is the pure part (no I/O, a fake clock and a given random
 * number): the unit tests drive it directly. */
#ifndef HOOKD_SETTLE_H
#define HOOKD_SETTLE_H
#include <stdint.h>

#include "deliver.h"
#include "registry.h"
#include "store.h"

#define SETTLE_CLASS_MAX 32
#define SETTLE_ERROR_MAX 256

/* One result turned into a row change (strings in the struct itself). */
struct settle_row {
    struct store_settle s;
    int outcome;                 /* enum outcome after max_attempts; -1 untried */
    int64_t hold_until;          /* a 429 holds the endpoint until then (0: no) */
    char error_class[SETTLE_CLASS_MAX];
    char error[SETTLE_ERROR_MAX];
};

/* The row change for job j under the endpoint's settings, now (wall ms),
 * rnd the 64 random bits of the backoff jitter. Pure. */
void settle_decide(const struct djob *j, const struct ep_settings *s, int64_t now, uint64_t rnd,
                   struct settle_row *out);

/* Apply a list of finished jobs: rows through the store (one call), the
 * registry's endpoints (in-flight counts, breakers, due times, 410 pause).
 * Every job's outcome field is set. Inside a writer round; -1 with the
 * store's error. The jobs stay the caller's. */
int settle_results(struct registry *r, struct store *st, struct djob *list, int64_t now);

#endif
