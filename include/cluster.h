/* cluster.h - this node among several hookd nodes sharing one database
 * (a store with node_beat and health_lock: PostgreSQL). The database is
 * the coordinator; this module only keeps the node's part of it:
 *
 *  - the heartbeat (a writer job every lease / 4): the node stays alive,
 *    dead nodes' rows go back to the queue, the live nodes are counted
 *    (each endpoint's limits become this node's share) and the lead of
 *    the once-per-cluster jobs is taken when free;
 *  - the round's lock: before a writer round judges any breaker, the
 *    health rows of the endpoints it may judge (those with results, and
 *    those a claim may need to admit through an open or failing
 *    breaker) are read under lock in one statement, in id order.
 *
 * Writer thread only. Without a shared store every function does nothing. */
#ifndef HOOKD_CLUSTER_H
#define HOOKD_CLUSTER_H
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cron.h"
#include "deliver.h"
#include "registry.h"
#include "store.h"

struct cluster {
    const struct config *c;
    struct store *st;
    struct registry *reg;
    struct cron *cron;
    int shared;
    int64_t node_id;
    int lead;
    int beat_failed;             /* the last heartbeat failed (logged once) */
    int64_t *ids;                /* the round's lock list */
    size_t cap;
};

/* Set up; shared stores get the heartbeat job and a first beat now.
 * 0 / -1 with err. */
int cluster_init(struct cluster *cl, const struct config *c, struct store *st, struct registry *reg,
                 struct cron *cron, char *err, size_t errlen);
void cluster_free(struct cluster *cl);
/* One heartbeat (the job; also at start). */
void cluster_beat(struct cluster *cl);
/* Inside the round's transaction, before anything is judged: lock and
 * read the health rows the round may judge. claiming: the round will
 * claim. 0 / -1 (the round fails). */
int cluster_lock_round(struct cluster *cl, const struct djob *results, int claiming, int64_t now);
/* Inside a transaction: lock and read these endpoints' health rows. */
int cluster_lock(struct cluster *cl, const int64_t *ids, size_t n);
/* The watcher's news: rows of endpoints ids (all: of any) may be due. */
void cluster_poke(struct cluster *cl, const int64_t *ids, size_t n, int all);
/* Endpoints changed on another node: the stored definitions (and paused
 * flags) replace this node's; one deleted there goes here too. */
void cluster_sync_endpoints(struct cluster *cl);
/* Another node may have changed every endpoint's breaker: read the
 * unsettled ones under lock at their next round (the poll fallback). */
void cluster_recheck(struct cluster *cl);

#endif
