/* intake.h - enqueue requests into queue rows: one endpoint or every
 * subscriber of the event type (fan-out), generated event ids, duplicate
 * answers; one store call for the whole group-commit batch. Writer
 * thread, inside a round. */
#ifndef HOOKD_INTAKE_H
#define HOOKD_INTAKE_H
#include <stdint.h>

#include "registry.h"
#include "req.h"
#include "store.h"

/* Insert the rows of every request in *batch (linked by next). Requests
 * that can be answered at once (unknown endpoint, no subscriber) move to
 * *answered; the others stay in *batch with their reply built, to be
 * completed after the commit. -1 with the store's error: nothing was
 * stored and every request is still in *batch. */
int intake_batch(struct registry *r, struct store *st, struct req **batch, struct req **answered, int64_t now);

#endif
