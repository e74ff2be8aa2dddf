/* writer.h - the writer thread: the only user of the writer store. Each
 * round is one transaction: it settles delivery results (settle.c), stores
 * the enqueues of a group-commit batch (intake.c) and claims due rows
 * (dispatch.c), then commits, answers the batch and hands the claims to
 * the delivery threads. Admin requests (admin.c) and the periodic jobs
 * (maint.c) run between rounds, each in its own transaction. The live
 * endpoint table (registry.c) is the writer's alone.
 *
 * Flow: socket (server) -> writer -> dispatcher -> delivery threads ->
 * writer. Nothing here calls back into the server or the reader: requests
 * go back through their reply port (req.h), a fatal storage error through
 * the callback given to writer_start, and the reader's rollups arrive
 * through writer_rollup. */
#ifndef HOOKD_WRITER_H
#define HOOKD_WRITER_H
#include <stddef.h>

#include "config.h"
#include "cron.h"
#include "deliver.h"
#include "opsev.h"
#include "req.h"
#include "store.h"

struct writer;

/* An I/O error on a commit: the process must exit with status once the
 * replies already made are written (any thread may call it). */
typedef void (*writer_fatal_fn)(void *ctx, int status);

/* Takes ownership of st (a writer store). Recovers in_flight rows, loads
 * the endpoints and their breaker state, syncs the config's [endpoint.*]
 * sections, registers the writer's jobs in cron. */
int writer_create(struct writer **out, const struct config *c, struct store *st, struct cron *cron, char *err,
                  size_t errlen);
/* Start the thread; claims go to d. */
int writer_start(struct writer *w, struct deliver *d, writer_fatal_fn fatal, void *fatal_ctx);
/* Any thread. */
void writer_submit(struct writer *w, struct req *r);
void writer_results(void *w, struct djob *list);   /* deliver_done_fn */
/* Replace the config-file endpoints (SIGHUP). Takes ownership of c's
 * endpoint definitions (c->endpoints is emptied). */
void writer_reload(struct writer *w, struct config *c);
/* A rollup computed by the reader (reader_rollup_fn): ownership of v moves
 * to the writer. */
void writer_rollup(void *w, struct store_rollup *v, size_t n);
/* An operational event raised by the reader (reader_event_fn): copied. */
void writer_event(void *w, const struct opsev *ev);
/* Stop claiming, wait for deliveries (up to the grace period), commit
 * everything, return unattempted rows to the queue; joins the thread. */
void writer_stop(struct writer *w, struct deliver *d);
void writer_free(struct writer *w);

#endif
