/* dispatch.h - choosing what to deliver next. Claims due rows round-robin
 * across endpoints, each within its in-flight cap, its breaker (one probe
 * when half open) and its rate limits, and knows when the queue must be
 * looked at again. Writer thread, inside a round.
 *
 * Jobs claimed ahead (claim_ahead): with a backlog, a healthy endpoint
 * also gets up to one job beside each of its requests, marked djob.ahead.
 * A delivery thread parks it behind the endpoint's transfers and starts
 * it in the place of one that succeeded, so a freed slot does not wait
 * for the next round; otherwise it comes back untried. The writer counts
 * requests as in_flight - ahead: a job stops counting as ahead when its
 * predecessor comes back handed (it started) or it comes back itself
 * without took_slot (it never started). */
#ifndef HOOKD_DISPATCH_H
#define HOOKD_DISPATCH_H
#include <stdint.h>

#include "deliver.h"
#include "registry.h"
#include "store.h"

/* Claim up to budget rows (wall clock now, monotonic now_mono for the rate
 * limits); the jobs are appended to *out (ownership: the caller's, for
 * deliver_submit). -1 with the store's error; jobs already built stay in
 * *out for the caller to free. */
int dispatch_claim(struct registry *r, struct store *st, int64_t now, int64_t now_mono, int64_t budget,
                   struct djob **out);

/* May one more request go to e now, in enqueue order (nothing of e's is
 * waiting and due)? Then it is counted in flight (e and the registry) and
 * its rate-limit token taken: 1. Otherwise 0, nothing changed. The
 * breaker must be closed: a half-open probe is the dispatcher's choice. */
int dispatch_admit_one(struct registry *r, struct endpoint *e, int64_t now, int64_t now_mono);
/* Undo dispatch_admit_one (the row turned out a duplicate). */
void dispatch_unadmit_one(struct registry *r, struct endpoint *e);
/* A delivery job for a row just claimed (copies what it needs). NULL when
 * out of memory. */
struct djob *dispatch_job(struct endpoint *e, const struct store_claimed *row, int probe);

/* When must the queue be looked at again (wall ms; INT64_MAX: only when
 * something happens)? */
int64_t dispatch_next_wake(const struct registry *r, int64_t now, int64_t now_mono);

#endif
