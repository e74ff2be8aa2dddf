/* intake.h - enqueue requests into queue rows: one endpoint or every
 * subscriber of the event type (fan-out), generated event ids, duplicate
 * answers; one store call for the whole group-commit batch. Writer
 * thread, inside a round. */
#ifndef HOOKD_INTAKE_H
#define HOOKD_INTAKE_H
#include <stdint.h>

#include "deliver.h"
#include "registry.h"
#include "req.h"
#include "store.h"

/* Insert the rows of every request in *batch (linked by next). Requests
 * that can be answered at once (unknown endpoint, no subscriber) move to
 * *answered; the others stay in *batch with their reply built, to be
 * completed after the commit. A row whose endpoint can take it now goes
 * in already claimed, and its delivery job is appended to *jobs (to hand
 * to the delivery threads after the commit): under a steady stream no
 * claim statement and no second round is needed. -1 with the store's
 * error: nothing was stored, every request is still in *batch, and *jobs
 * holds what was built (the caller frees it with the round undone). */
int intake_batch(struct registry *r, struct store *st, struct req **batch, struct req **answered,
                 struct djob **jobs, int64_t now, int64_t now_mono);

#endif
