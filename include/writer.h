/* writer.h - the writer thread: the only connection that writes or
 * checkpoints. It group-commits enqueues, applies delivery results, owns
 * the endpoint registry (breakers, rate limits, in-flight counts), claims
 * due rows fairly across endpoints and runs the periodic jobs. */
#ifndef HOOKD_WRITER_H
#define HOOKD_WRITER_H
#include <sqlite3.h>

#include "config.h"
#include "deliver.h"
#include "req.h"

struct writer;
struct reader;

/* Takes ownership of db. Loads endpoints from the database, syncs the
 * config's [endpoint.*] sections into it and recovers in_flight rows. */
int writer_create(struct writer **out, const struct config *c, sqlite3 *db, char *err, size_t errlen);
/* Start the thread; deliveries go to d. */
int writer_start(struct writer *w, struct deliver *d, struct reader *r);
/* Any thread. */
void writer_submit(struct writer *w, struct req *r);
void writer_results(void *w, struct djob *list);   /* deliver_done_fn */
/* Replace the config-file endpoints (SIGHUP). Takes ownership of c's
 * endpoint definitions (c->endpoints is emptied). */
void writer_reload(struct writer *w, struct config *c);
/* Results of a percentile rollup computed by the reader. */
struct writer_rollup {
    int64_t endpoint_id;
    int64_t p50, p95, p99, samples;
};
void writer_rollup_done(struct writer *w, struct writer_rollup *v, size_t n);
/* Stop claiming, wait for deliveries (up to the grace period), commit
 * everything, return unattempted rows to the queue; joins the thread. */
void writer_stop(struct writer *w, struct deliver *d);
void writer_free(struct writer *w);

#endif
