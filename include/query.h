/* query.h - the answers to the read-only ops (get, stats, endpoint.list,
 * dead_letters, slow, metrics), built from a reader store. No thread of
 * its own: the reader calls it.
 *
 * One error convention: 0 when r->reply holds the answer (a not_found
 * included); -1 when the store failed or memory ran out, with st->errc
 * and st->errmsg saying so and the reply left to the caller. */
#ifndef HOOKD_QUERY_H
#define HOOKD_QUERY_H

#include "config.h"
#include "req.h"
#include "store.h"
#include "util.h"

int query_answer(struct store *st, const struct config *c, struct req *r);

/* The Prometheus text of every series (metrics.h), appended to out. */
int query_metrics_text(struct store *st, struct buf *out);

#endif
