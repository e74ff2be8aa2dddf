/* maint.h - the writer's periodic jobs, registered into the job table:
 * WAL checkpoint, retention (old rows with their attempt logs, in bounded
 * chunks; the latency ring needs none), the slow-endpoint scan; and
 * storing the percentile rollups the reader computes. Writer thread, between rounds, each in its own
 * transaction. */
#ifndef HOOKD_MAINT_H
#define HOOKD_MAINT_H
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "config.h"
#include "cron.h"
#include "registry.h"
#include "store.h"

struct maint {
    const struct config *c;
    struct store *st;
    struct registry *reg;
    struct cron *cron;
    struct cluster *cl;
    enum store_errc failed;      /* the last job's store failure (STORE_OK: none) */
};

/* Add the jobs to the table (runner CRON_WRITER). */
int maint_register(struct maint *m, const struct config *c, struct store *st, struct registry *reg, struct cron *cron,
                   struct cluster *cl);
/* Store the reader's rollup and give the endpoints their new p95. */
void maint_apply_rollup(struct maint *m, const struct store_rollup *v, size_t n);
/* One retention pass at now: at most cleanup_chunk rows of each kind
 * (delivered, dead letters).
 * Returns 1 when a kind had more waiting, 0 when done, -1 on failure. */
int maint_expire(struct maint *m, int64_t now);
/* The log's checkpoint when the store says it is due: after a round,
 * never inside its commit. */
void maint_checkpoint_due(struct maint *m);
/* The slow scan at now (also what the job runs). */
void maint_slow_scan(struct maint *m, int64_t now);

#endif
