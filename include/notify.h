/* notify.h - queueing hookd's operational events (opsev.h) for the
 * [ops] endpoint: rows of its own queue, stored in the same transaction
 * as the change they report, signed and retried like any delivery.
 * Writer thread only.
 *
 * An event raised inside a writer round belongs to that round: if the
 * round rolls back, so does the event (the change it reports was undone
 * too, and happens again when the work is retried). Events raised outside
 * a round (an admin request, the reader's alerts) wait until a
 * transaction stores them. Events the operator did not choose, events
 * about the ops endpoint itself and everything while no ops endpoint is
 * configured go nowhere: each has its own log line already. */
#ifndef HOOKD_NOTIFY_H
#define HOOKD_NOTIFY_H
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "opsev.h"
#include "store.h"

struct notify_item;

struct notify {
    const char *endpoint;     /* the [ops] endpoint's name ("" none) */
    unsigned mask;            /* the chosen types */
    int64_t quiet_ms;
    struct notify_item *head, **tail;
    size_t n;
    int in_round;
    int warned_missing;
};

void notify_init(struct notify *n, const struct config *c);
void notify_free(struct notify *n);

/* Is this event one to queue? (Not chosen, about the ops endpoint, or no
 * ops endpoint: no.) */
int notify_wanted(const struct notify *n, enum opsev_type t, const char *endpoint);
/* Queue a copy of ev if it is wanted. -1 out of memory (the event is
 * dropped; the log line that goes with every event still says it). */
int notify_emit(struct notify *n, const struct opsev *ev);

void notify_round_begin(struct notify *n);
/* Store what waits as rows of endpoint ops_id (ops_id 0: the ops
 * endpoint does not exist; they are dropped with one warning). Inside
 * the caller's transaction; *stored says how many rows it wrote. */
int notify_flush(struct notify *n, struct store *st, int64_t ops_id, int max_attempts, int64_t now, size_t *stored);
/* The transaction committed: the stored events are done. */
void notify_committed(struct notify *n);
/* It rolled back: the round's own events go; the others wait again. */
void notify_undo(struct notify *n);

#endif
