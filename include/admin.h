/* admin.h - the requests that change endpoints or redrive messages
 * (endpoint.put, endpoint.delete, requeue, purge, pause, resume), each in
 * its own transaction, and the config file's endpoints (start-up and
 * SIGHUP). Writer thread, between rounds. */
#ifndef HOOKD_ADMIN_H
#define HOOKD_ADMIN_H
#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "req.h"
#include "store.h"

/* Answer one admin request (the reply is built; the caller completes it).
 * -1 when the store failed (the reply says so; st->errc tells whether the
 * failure is fatal). */
int admin_handle(struct registry *r, struct store *st, struct req *q, int64_t now);

/* Make the config file's endpoints the stored ones: upsert each (an
 * explicit paused applies), delete the config-owned ones the file no
 * longer has (their rows become dead letters) -- on a store shared by
 * several nodes only when prune_shared ([postgres] prune_endpoints):
 * otherwise they are kept, as another node's. Its own transaction; the
 * registry follows once it committed. -1 with the store's error. */
int admin_sync_config(struct registry *r, struct store *st, const struct ep_def *defs, size_t n, int prune_shared,
                      int64_t now);

#endif
