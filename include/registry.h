/* registry.h - the live endpoint table: one struct per endpoint with its
 * delivery snapshot and everything the writer keeps about it (breaker,
 * rate limits, in-flight count, due time, latency figures). Lookups by id
 * and by name are hashed. Writer thread only.
 *
 * A writer round changes endpoints and the database together; when the
 * commit fails the database rolls back, and so must the endpoints: every
 * change inside a round starts with registry_touch(), which saves the
 * endpoint's state once per round, and registry_round_undo() puts back
 * what was saved. */
#ifndef HOOKD_REGISTRY_H
#define HOOKD_REGISTRY_H
#include <stddef.h>
#include <stdint.h>

#include "breaker.h"
#include "config.h"
#include "endpoint.h"
#include "limiter.h"
#include "log.h"
#include "notify.h"
#include "opsev.h"
#include "store.h"
#include "tbucket.h"

struct endpoint {
    struct ep_conf *conf;        /* delivery snapshot: immutable, shared with the
                                  * delivery threads, replaced on change */
    int64_t id;
    int from_config;
    int in_file;                 /* defined in this node's config file (shared
                                  * stores: a config endpoint may be another
                                  * node's) */
    int paused;
    int is_ops;                  /* the [ops] endpoint: no fan-out, no events about itself */
    int in_flight;               /* claimed and not settled, ahead ones included */
    int ahead;                   /* of those, claimed ahead and not yet known to
                                  * have started (dispatch.h) */
    struct limiter lim;          /* how many may be in flight now (<= max_in_flight) */
    struct breaker br;
    struct breaker_cfg bcfg;
    struct tlimit rate;
    int64_t next_due;            /* earliest time an unclaimed row may be due
                                  * (0: look now; INT64_MAX: nothing waits) */
    int64_t hold_until;          /* a 429's Retry-After holds the endpoint (0:
                                  * none; cleared by the first claim after it) */
    int64_t p95_ms, samples;     /* the last rollup */
    int64_t slow_since;          /* the slow scan lowered the failure threshold (0: no) */
    int64_t ring_next;           /* the next slot of its latency ring */
    int health_dirty;            /* breaker state to save this round */
    int64_t health_saved_at;     /* wall ms of the last save (routine ones wait a second) */
    /* the registry's own */
    struct endpoint *next_id, *next_name;   /* hash chains */
    size_t slot;                 /* index in the dense array */
    uint32_t touched;            /* the round its state was saved in */
    uint32_t locked;             /* shared: the round its health row was read under lock */
    int stale;                   /* shared: another node blocked it (breaker, pause):
                                  * read its health row under lock next round */
    int64_t cluster_in_flight;   /* shared: its rows in flight on every node, as
                                  * read under lock in round `locked` */
    struct opsev_flap flap;      /* breaker events' quiet period */
    int failing_logged;          /* its first failure since start or its last
                                  * success was logged (registry_log_failure) */
    struct {                     /* this [history] bucket's counts not yet stored */
        int64_t bucket;
        uint32_t ok, fail, opens;
    } hist;
};

struct registry_undo {
    struct endpoint *e;
    struct endpoint saved;
};

struct registry {
    const struct config *c;
    /* several nodes share the database (the store has health_lock): the
     * breaker state is the health row's, read under its lock before it
     * is judged or changed; limits are this node's share */
    int shared;
    int nodes;                   /* live nodes (>= 1): the share's divisor */
    struct endpoint **v;         /* dense, for round-robin claims */
    size_t n, cap;
    size_t rr;                   /* where the next claim round starts */
    struct endpoint **by_id, **by_name;
    size_t nbuckets;             /* a power of two */
    int64_t in_flight;           /* jobs out, of every endpoint (deleted ones too) */
    /* the round's undo log */
    uint32_t round;
    struct registry_undo *undo;
    size_t nundo, undocap;
    int64_t saved_in_flight;
    size_t saved_rr;
    int undo_lost;               /* out of memory while saving: undo is incomplete */
    /* endpoints whose breaker state waits to be saved (ids: one deleted
     * meanwhile simply no longer resolves) */
    int64_t *dirty;
    size_t ndirty, dirtycap;
    /* breaker transition lines: a budget, and what it held back by state */
    struct log_budget tlog;
    long held_to[3];             /* indexed by enum breaker_state */
    /* failure lines (an endpoint starting to fail, dead letters): the same */
    struct log_budget flog;
    long held_failing, held_dead;
    /* operational events (the writer's; NULL: none) */
    struct notify *notify;
    size_t flapping;             /* endpoints holding breaker events (a hint,
                                  * recounted by registry_ops_tick) */
    /* history counts of finished buckets, waiting for a transaction */
    struct store_history *hist_out;
    size_t nhist_out, hist_out_cap, saved_nhist_out;
};

int registry_init(struct registry *r, const struct config *c);
void registry_free(struct registry *r);

struct endpoint *registry_by_id(const struct registry *r, int64_t id);
struct endpoint *registry_by_name(const struct registry *r, const char *name);

/* Insert the endpoint, or give an existing one its new definition (its
 * breaker, counts and limits carry over; the rate limits restart only if
 * they changed). A new definition is a new snapshot: jobs of the old one
 * that have not started come back untried (ep_conf.halt); the same
 * definition again keeps the snapshot. NULL on bad secrets or out of
 * memory. Outside a round. */
struct endpoint *registry_install(struct registry *r, int64_t id, const struct ep_def *def, int from_config);
/* Forget an endpoint; transfers already running finish with their
 * snapshot, jobs not yet started come back untried (ep_conf.halt).
 * Outside a round. */
void registry_remove(struct registry *r, struct endpoint *e);
/* Publish to the delivery threads whether e's jobs claimed ahead may
 * start (ep_conf.hold): not while it is paused, its breaker is not
 * closed or a 429 holds it; and whether any job not yet started may
 * (ep_conf.halt): not while it is paused. Done for every endpoint a
 * round touched, at its commit. */
void registry_sync_hold(struct endpoint *e);
/* Stored breaker state and latency figures (at start). */
void registry_load_health(struct registry *r, const struct store_health *h);
/* Shared: the health row read under lock in this round (store
 * health_lock): the cluster's breaker state, the ring's next slot, the
 * paused flag. The endpoint may be judged and saved this round. */
void registry_sync_health(struct registry *r, const struct store_health *h);

/* Requests to e that may be running now: in_flight less the jobs claimed
 * ahead, which wait for one of these to end (dispatch.h). What the
 * adaptive limit counts and bounds. */
static inline int registry_requests(const struct endpoint *e)
{
    return e->in_flight - e->ahead;
}

/* Shared: may this round judge or save e's breaker? (Always when not
 * shared.) */
static inline int registry_health_ok(const struct registry *r, const struct endpoint *e)
{
    return !r->shared || e->locked == r->round;
}
/* Shared, closed but failing: how many more requests the cluster may
 * send before the failures could reach the threshold (the failures
 * counted plus every node's requests in flight); INT64_MAX when not
 * shared or not failing. Read under lock this round. */
int64_t registry_failing_room(const struct registry *r, const struct endpoint *e);
/* Shared: n live nodes; each endpoint's in-flight cap and rate limits
 * become this node's share (cap / n rounded up; rates and bursts / n). */
void registry_set_nodes(struct registry *r, int n);

void registry_round_begin(struct registry *r);
void registry_touch(struct registry *r, struct endpoint *e);
void registry_round_undo(struct registry *r);
/* The round committed: what it saved is saved. */
void registry_round_commit(struct registry *r);
/* The endpoint's breaker state changed: save it with this round. */
void registry_mark_health(struct registry *r, struct endpoint *e);
/* Save the breaker state of the endpoints marked since the last commit
 * (shared: those read under lock this round; the others' marks go). */
int registry_save_health(struct registry *r, struct store *st, int64_t now);
/* routine health saves (no breaker change) at most this often per endpoint */
#define HEALTH_SAVE_EVERY_MS 1000

/* The failure threshold now: halved (at least 1) while the slow scan has
 * the endpoint marked slow, as the seed lowers it. */
uint32_t endpoint_threshold(const struct endpoint *e);
void endpoint_health_row(const struct endpoint *e, struct store_health *out);
/* One line per breaker transition, up to REGISTRY_TRANSITION_LINES per
 * 10 s; beyond that they are counted, and registry_log_flush() logs one
 * breaker_transitions line with the counts (10,000 endpoints failing at
 * once would otherwise write tens of thousands of lines). now: wall ms. */
#define REGISTRY_TRANSITION_LINES 20
void registry_log_transition(struct registry *r, struct endpoint *e, const struct breaker_transition *t,
                             int64_t now);
void registry_log_flush(struct registry *r, int64_t now);
/* What makes a failing endpoint visible at the default level: its first
 * failed attempt since start or since its last success
 * (event=endpoint_failing), every dead letter (event=dead_letter), and
 * its first success after a logged failure (event=endpoint_delivering),
 * under a budget like the transitions'. detail: hookd's or libcurl's own
 * text of a transport error (escaped here); never a response body. */
void registry_log_failure(struct registry *r, struct endpoint *e, int64_t message_id, int attempts, int dead,
                          int status, const char *error_class, const char *detail, int64_t now);
void registry_log_success(struct registry *r, struct endpoint *e, int64_t now);

/* One attempt's result (ok: delivered) for the endpoint's history
 * bucket; a new bucket hands the old one's counts to hist_out. */
void registry_history_note(struct registry *r, struct endpoint *e, int ok, int64_t now);
/* Every endpoint's counts so far into hist_out (the periodic flush and
 * a clean stop), then hist_out into the store (inside a transaction). */
void registry_history_collect(struct registry *r);
int registry_history_flush(struct registry *r, struct store *st);

/* Queue an operational event (if r has a notify and it is wanted). */
void registry_notify(struct registry *r, const struct opsev *ev);
/* Summaries of breaker events held in a quiet period that is over. */
void registry_ops_tick(struct registry *r, int64_t now);
/* Store the waiting operational events as rows of the ops endpoint, in
 * the caller's transaction, and wake that endpoint. */
int registry_notify_flush(struct registry *r, struct store *st, int64_t now);

/* The wall clock stepped by step_ms (clockstep.h): every time the
 * endpoints wait on or measure from (due times, 429 holds, breaker
 * openings and failure runs, limiter and event windows) moves with it,
 * so no wait grows or shrinks by the step. Outside a round; the stored
 * times move with store clock_step. */
void registry_clock_step(struct registry *r, int64_t step_ms);

#endif
