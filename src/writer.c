/* writer.c - the writer thread: its inbox, the group-commit round and the
 * loop that decides when to run one. What a round does lives in the
 * rooms beside it: settle.c, intake.c, dispatch.c, admin.c, maint.c. */
#include "writer.h"
#include "admin.h"
#include "clockstep.h"
#include "cluster.h"
#include "counters.h"
#include "dispatch.h"
#include "epstats.h"
#include "intake.h"
#include "log.h"
#include "maint.h"
#include "outcome.h"
#include "registry.h"
#include "settle.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct writer {
    const struct config *c;
    struct store *st;
    struct registry reg;
    struct notify notify;
    struct maint maint;
    struct cluster cl;
    struct store_watch *watch;   /* other nodes' work (shared stores) */
    struct cron *cron;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* shared, under mu */
    struct req *inbox, **inbox_tail;
    struct djob *results;
    struct ep_def *reload_defs;
    size_t reload_n;
    int reload_pending;
    int reload_prune;        /* the reloaded file's [postgres] prune_endpoints */
    struct store_rollup *rollups;
    size_t rollups_n;
    struct opsev *events;   /* raised by the reader */
    size_t events_n, events_cap;
    /* from the watcher: rows of these endpoints may be due, or of any;
     * endpoints changed on another node */
    int64_t poke[32];
    size_t npoke;
    int poke_all, ep_sync;
    int stopping;    /* stop claiming */
    int stop_seen;   /* the writer thread will claim no more */
    int finishing;   /* deliveries are all back: drain and exit */
    /* writer thread only */
    int fatal;       /* an I/O error: the process is about to exit */
    struct deliver *d;
    writer_fatal_fn on_fatal;
    void *fatal_ctx;
    int64_t retry_results_at;
    int64_t finish_deadline;  /* shutdown: give up on unsaved results then (0: not yet) */
    int64_t fail_logged_at;   /* the last commit_failed line (mono ms; 0: the last round was good) */
    int64_t fail_quiet;       /* failed rounds not logged since */
    struct clockstep clk;     /* the wall clock's last look (writer_now) */
    int64_t step_unsaved;     /* a wall-clock step moved in memory, not yet in the database */
    int64_t step_retry_at;    /* mono ms: when to try saving it again after a failure */
};

/* The wall clock, as every stored time is; looked at beside elapsed
 * time, and a step (clockstep.h) moves at once every time the endpoints
 * wait on, before anything compares with the new clock. The stored ones
 * follow in save_step(), before the next claim. Writer thread only. */
static int64_t writer_now(struct writer *w)
{
    int64_t now = util_now_ms(), step = clockstep_observe(&w->clk, now, util_boot_ms());

    if (step) {
        registry_clock_step(&w->reg, step);
        w->step_unsaved += step;
        w->step_retry_at = 0;
    }
    return now;
}

/* After a failed fsync the kernel may have dropped the dirty pages and a
 * retried fsync can report success for data that never reached the disk
 * (PostgreSQL's lesson). So an I/O error on a commit is not retried: the
 * batch is answered with storage_error, and the process exits with 75 so
 * systemd restarts it and the database recovers from what is really on
 * disk. A full disk is different: nothing was half-written, so hookd
 * answers storage_full and keeps serving. */
static void check_fatal(struct writer *w, enum store_errc e)
{
    if (!store_error_fatal(e) || w->fatal)
        return;
    log_error("fatal_storage_error", "err=\"%s\" action=\"exit 75 after answering the batch; acknowledged data "
              "is safe, the database recovers at restart\"", w->st->errmsg);
    w->fatal = 1;
    if (w->on_fatal)
        w->on_fatal(w->fatal_ctx, 75);
}

static void free_jobs(struct djob *j)
{
    while (j) {
        struct djob *next = j->next;
        djob_free(j);
        j = next;
    }
}

/* The results stay in memory and are settled again shortly: their rows
 * are still in_flight in the database, nothing is lost. */
static void keep_results(struct writer *w, struct djob *results)
{
    struct djob **t = &results;

    if (!results)
        return;
    while (*t)
        t = &(*t)->next;
    pthread_mutex_lock(&w->mu);
    *t = w->results;
    w->results = results;
    pthread_mutex_unlock(&w->mu);
    w->retry_results_at = util_mono_ms() + 200;
}

static void round_failed(struct writer *w, struct req *batch, struct req *answered, struct djob *results,
                         struct djob *claimed)
{
    struct store *st = w->st;
    enum store_errc e = st->errc;
    struct req *q;

    st->ops->rollback(st);
    registry_round_undo(&w->reg);
    /* results are retried every 200 ms: while the database is away (a
     * PostgreSQL restart) the first failure and then one line per 10 s
     * say so; the first good round says it is over */
    if (w->fail_logged_at == 0 || util_mono_ms() - w->fail_logged_at >= 10000) {
        log_error("commit_failed", "err=\"%s\" enqueues=%s results_kept=%s repeated=%lld", st->errmsg,
                  batch ? "rejected" : "none", results ? "yes" : "none", (long long)w->fail_quiet);
        w->fail_logged_at = util_mono_ms();
        w->fail_quiet = 0;
    } else {
        w->fail_quiet++;
    }
    for (q = batch; q; q = q->next)
        req_error(q, store_error_code(e), "storage error: %s; not stored, retry later", st->errmsg);
    req_complete_list(batch);
    req_complete_list(answered);
    keep_results(w, results);
    free_jobs(claimed);
    check_fatal(w, e);
}

/* The stored waits follow a step, in one transaction. Every endpoint
 * then asks the database for its next due row. Shared store with other
 * live nodes: only the rows this node's clock scheduled (store.h). */
static void save_step(struct writer *w)
{
    struct store *st = w->st;
    int mine_only = w->reg.shared && w->reg.nodes > 1;
    int64_t rows = 0;
    size_t i;

    if (!st->ops->clock_step) {
        w->step_unsaved = 0;
        return;
    }
    if (st->ops->begin(st, 0) < 0 || st->ops->clock_step(st, w->step_unsaved, mine_only, &rows) < 0 ||
        st->ops->commit(st) < 0) {
        if (!w->step_retry_at)
            log_error("clock_step_not_saved", "step_ms=%lld err=\"%s\" note=\"retried every second; until then "
                      "stored due times are off by the step\"", (long long)w->step_unsaved, st->errmsg);
        st->ops->rollback(st);
        w->step_retry_at = util_mono_ms() + 1000;
        check_fatal(w, st->errc);
        return;
    }
    log_warn("clock_step", "step_ms=%lld rows_moved=%lld scope=%s note=\"the wall clock stepped: due times, "
             "breaker cooldowns and holds moved with it\"", (long long)w->step_unsaved, (long long)rows,
             mine_only ? "this_node" : "all");
    for (i = 0; i < w->reg.n; i++)
        w->reg.v[i]->next_due = 0;
    w->step_unsaved = 0;
    w->step_retry_at = 0;
}

static void writer_round(struct writer *w, struct req *reqs, struct djob *results, int claiming, int64_t now)
{
    struct req *batch = NULL, **btail = &batch, *answered = NULL, *q, *next;
    struct djob *claimed = NULL, *j;
    struct store *st = w->st;

    /* admin requests first, each in its own transaction */
    for (q = reqs; q; q = next) {
        next = q->next;
        q->next = NULL;
        if (q->p.op == OP_ENQUEUE) {
            *btail = q;
            btail = &q->next;
        } else {
            int rc = admin_handle(&w->reg, st, q, now);
            req_complete(q);
            if (rc < 0)
                check_fatal(w, st->errc);
        }
    }
    if (w->fatal) {
        for (q = batch; q; q = q->next)
            req_error(q, PERR_STORAGE_ERROR, "storage error; not stored");
        req_complete_list(batch);
        keep_results(w, results);
        return;
    }
    if (!batch && !results && !claiming)
        return;
    registry_round_begin(&w->reg);
    if (st->ops->begin(st, batch != NULL) < 0 || cluster_lock_round(&w->cl, results, claiming, now) < 0 ||
        settle_results(&w->reg, st, results, now) < 0 ||
        (batch && intake_batch(&w->reg, st, &batch, &answered, &claimed, now, util_mono_ms()) < 0) ||
        (claiming && dispatch_claim(&w->reg, st, now, util_mono_ms(), w->c->claim_batch, &claimed) < 0) ||
        registry_save_health(&w->reg, st, now) < 0 || registry_notify_flush(&w->reg, st, now) < 0 ||
        registry_history_flush(&w->reg, st) < 0 ||
        st->ops->commit(st) < 0) {
        round_failed(w, batch, answered, results, claimed);
        return;
    }
    registry_round_commit(&w->reg);
    if (w->fail_logged_at) {   /* the first good round after failing ones */
        log_info("storage_recovered", "failed_rounds_not_logged=%lld", (long long)w->fail_quiet);
        w->fail_logged_at = 0;
        w->fail_quiet = 0;
    }
    req_complete_list(batch);
    req_complete_list(answered);
    for (j = results; j; j = j->next) {
        if (j->attempted) {
            counters_outcome(j->outcome, j->response_ms);
            epstats_note(j->ep->id, j->outcome == OUTCOME_DELIVERED, now);
        }
        if (j->handed)
            counters_ahead(1);
        if (j->ahead && !j->took_slot)
            counters_ahead(0);
    }
    free_jobs(results);
    if (claimed)
        deliver_submit(w->d, claimed);
}

/* Sleep until there is something to do: requests, results, a reload, a
 * rollup, a due row, a job. Returns with mu held. */
static void wait_for_work(struct writer *w)
{
    for (;;) {
        int64_t now = writer_now(w), mono = util_mono_ms(), wake, until;
        struct timespec ts;
        int results_ready = w->results && mono >= w->retry_results_at;
        int step_ready = w->step_unsaved && mono >= w->step_retry_at;

        if (w->inbox || results_ready || step_ready || w->reload_pending || w->rollups || w->events_n ||
            w->finishing || (w->stopping && !w->stop_seen) ||
            (!w->stopping && (w->npoke || w->poke_all || w->ep_sync)))
            return;
        wake = w->stopping ? INT64_MAX : dispatch_next_wake(&w->reg, now, mono);
        until = cron_next(w->cron, CRON_WRITER);
        if (w->results && w->retry_results_at < until)
            until = w->retry_results_at;
        if (w->step_unsaved && w->step_retry_at < until)
            until = w->step_retry_at;
        if (wake <= now || until <= mono)
            return;
        if (wake != INT64_MAX && mono + (wake - now) < until)
            until = mono + (wake - now);
        if (until > mono + 1000)
            until = mono + 1000;
        ts.tv_sec = (time_t)(until / 1000);
        ts.tv_nsec = (long)(until % 1000) * 1000000L;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
}

/* Routine health fields (the ring's next slot, last_success_at, the
 * adaptive limit) are saved at most once a second while running: at a
 * clean stop every endpoint's row is brought up to date. */
static void save_all_health(struct writer *w)
{
    struct store *st = w->st;
    size_t i;

    writer_now(w);
    if (w->step_unsaved)   /* a step seen at the last look: stored before the stop */
        save_step(w);
    registry_round_begin(&w->reg);
    /* shared: every round saved what it changed, under lock */
    for (i = 0; i < w->reg.n && !w->reg.shared; i++)
        registry_mark_health(&w->reg, w->reg.v[i]);
    registry_history_collect(&w->reg);
    if (st->ops->begin(st, 1) < 0 || registry_save_health(&w->reg, st, writer_now(w)) < 0 ||
        registry_history_flush(&w->reg, st) < 0 || st->ops->commit(st) < 0) {
        log_warn("health_not_saved", "err=\"%s\" note=\"breaker states were saved as they changed\"",
                 st->errmsg);
        st->ops->rollback(st);
        registry_round_undo(&w->reg);
        return;
    }
    registry_round_commit(&w->reg);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;

    for (;;) {
        struct req *reqs = NULL, **tail = &reqs;
        struct djob *results = NULL;
        struct ep_def *defs = NULL;
        struct store_rollup *rollups = NULL;
        size_t ndefs = 0, nroll = 0, taken = 0, i, npoke;
        int64_t poke[32], now;
        int reload = 0, prune = 0, claiming, finishing, poke_all, ep_sync;

        pthread_mutex_lock(&w->mu);
        wait_for_work(w);
        /* group commit: take up to batch_max requests, all results */
        while (w->inbox && taken < (size_t)w->c->batch_max) {
            struct req *r = w->inbox;
            w->inbox = r->next;
            r->next = NULL;
            *tail = r;
            tail = &r->next;
            taken++;
        }
        if (!w->inbox)
            w->inbox_tail = &w->inbox;
        if (util_mono_ms() >= w->retry_results_at) {
            results = w->results;
            w->results = NULL;
        }
        if (w->reload_pending) {
            defs = w->reload_defs;
            ndefs = w->reload_n;
            prune = w->reload_prune;
            reload = 1;
            w->reload_defs = NULL;
            w->reload_n = 0;
            w->reload_pending = 0;
        }
        rollups = w->rollups;
        nroll = w->rollups_n;
        w->rollups = NULL;
        w->rollups_n = 0;
        for (i = 0; i < w->events_n; i++)
            notify_emit(&w->notify, &w->events[i]);
        w->events_n = 0;
        claiming = !w->stopping;
        finishing = w->finishing;
        npoke = w->npoke;
        memcpy(poke, w->poke, npoke * sizeof poke[0]);
        poke_all = w->poke_all;
        ep_sync = w->ep_sync;
        w->npoke = 0;
        w->poke_all = w->ep_sync = 0;
        if (w->stopping && !w->stop_seen) {
            w->stop_seen = 1;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mu);

        now = writer_now(w);
        if (w->step_unsaved && util_mono_ms() >= w->step_retry_at)
            save_step(w);
        if (reload) {
            if (admin_sync_config(&w->reg, w->st, defs, ndefs, prune, now) == 0)
                log_info("reloaded", "endpoints=%zu", ndefs);
            else
                log_error("reload_failed", "err=\"%s\"", w->st->errmsg);
            for (i = 0; i < ndefs; i++)
                ep_def_free(&defs[i]);
            free(defs);
        }
        if (ep_sync)
            cluster_sync_endpoints(&w->cl);
        if (poke_all || npoke)
            cluster_poke(&w->cl, poke, npoke, poke_all);
        if (nroll)
            maint_apply_rollup(&w->maint, rollups, nroll);
        free(rollups);
        registry_ops_tick(&w->reg, now);
        writer_round(w, reqs, results, claiming, now);
        if (!w->fatal) {
            maint_checkpoint_due(&w->maint);
            if (claiming) {
                now = writer_now(w);
                cron_run(w->cron, CRON_WRITER, util_mono_ms(), now);
                registry_log_flush(&w->reg, now);
            }
            check_fatal(w, w->maint.failed);
            w->maint.failed = STORE_OK;
        }
        if (w->fatal)
            break;  /* nothing more touches the database; the process exits */
        if (finishing) {
            pthread_mutex_lock(&w->mu);
            int empty = !w->inbox && !w->results;
            pthread_mutex_unlock(&w->mu);
            if (empty && w->reg.in_flight <= 0) {
                save_all_health(w);
                break;
            }
            /* the database is away and results cannot be recorded: after
             * the grace period they are given up, their rows stay in
             * flight and go back to the queue at the next start (at
             * least once), rather than never exiting */
            if (!w->finish_deadline) {
                w->finish_deadline = util_mono_ms() + w->c->shutdown_grace_ms;
            } else if (util_mono_ms() >= w->finish_deadline) {
                log_error("results_not_saved", "err=\"%s\" action=\"their messages go back to the queue at the "
                          "next start (delivered again)\"", w->st->errmsg);
                break;
            }
        }
    }
    return NULL;
}

/* ---- other nodes ---- */

/* What the watcher heard (its thread): the writer looks at the next round. */
static void on_watch(void *ctx, enum store_watch_kind kind, int64_t id)
{
    struct writer *w = ctx;

    pthread_mutex_lock(&w->mu);
    if (kind == STORE_WATCH_ENDPOINTS)
        w->ep_sync = 1;
    else if (id == 0 || w->npoke == sizeof w->poke / sizeof w->poke[0])
        w->poke_all = 1;
    else
        w->poke[w->npoke++] = id;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* ---- start-up ---- */

static int load_endpoint(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    struct writer *w = ctx;

    if (!registry_install(&w->reg, id, d, from_config)) {
        store_fail(w->st, STORE_E_OTHER, "endpoint %s: stored definition unusable (bad secret or out of memory)",
                   d->name);
        return -1;
    }
    return 0;
}

static int load_health(void *ctx, const struct store_health *h)
{
    registry_load_health(ctx, h);
    return 0;
}

int writer_create(struct writer **out, const struct config *c, struct store *st, struct cron *cron, char *err,
                  size_t errlen)
{
    struct writer *w = calloc(1, sizeof *w);
    pthread_condattr_t ca;
    int64_t recovered = 0, now = util_now_ms();

    if (!w) {
        snprintf(err, errlen, "out of memory");
        store_close(st);
        return -1;
    }
    w->c = c;
    w->st = st;
    w->cron = cron;
    w->inbox_tail = &w->inbox;
    clockstep_init(&w->clk);
    clockstep_observe(&w->clk, now, util_boot_ms());
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (registry_init(&w->reg, c) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    notify_init(&w->notify, c);
    w->reg.notify = &w->notify;
    if (st->ops->begin(st, 1) < 0 || st->ops->recover(st, now, &recovered) < 0 ||
        st->ops->latency_ring_size(st, c->latency_samples) < 0 ||
        st->ops->endpoints_load(st, load_endpoint, w) < 0 || st->ops->health_load(st, load_health, &w->reg) < 0 ||
        st->ops->commit(st) < 0) {
        snprintf(err, errlen, "database: %s", st->errmsg);
        st->ops->rollback(st);
        goto fail;
    }
    if (admin_sync_config(&w->reg, st, c->endpoints, c->n_endpoints, (int)c->pg_prune_endpoints, now) < 0) {
        snprintf(err, errlen, "database: %s", st->errmsg);
        goto fail;
    }
    if (recovered)
        log_warn("recovered_in_flight", "count=%lld note=\"returned to the queue; receivers may see these "
                 "webhook-ids twice\"", (long long)recovered);
    if (cluster_init(&w->cl, c, st, &w->reg, cron, err, errlen) < 0)
        goto fail;
    cluster_beat(&w->cl);
    if (maint_register(&w->maint, c, st, &w->reg, cron, &w->cl) < 0) {
        snprintf(err, errlen, "too many periodic jobs");
        goto fail;
    }
    *out = w;
    return 0;
fail:
    writer_free(w);
    return -1;
}

int writer_start(struct writer *w, struct deliver *d, writer_fatal_fn fatal, void *fatal_ctx)
{
    char err[256];

    w->d = d;
    w->on_fatal = fatal;
    w->fatal_ctx = fatal_ctx;
    if (store_watch_start(w->c, on_watch, w, &w->watch, err, sizeof err) < 0) {
        log_error("start_failed", "err=\"%s\"", err);
        return -1;
    }
    if (pthread_create(&w->th, NULL, writer_main, w) != 0) {
        store_watch_stop(w->watch);
        w->watch = NULL;
        return -1;
    }
    pthread_setname_np(w->th, "hookd-writer");
    w->started = 1;
    return 0;
}

void writer_submit(struct writer *w, struct req *r)
{
    r->next = NULL;
    pthread_mutex_lock(&w->mu);
    *w->inbox_tail = r;
    w->inbox_tail = &r->next;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_results(void *arg, struct djob *list)
{
    struct writer *w = arg;
    struct djob *t = list;

    if (!list)
        return;
    while (t->next)
        t = t->next;
    pthread_mutex_lock(&w->mu);
    t->next = w->results;
    w->results = list;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_reload(struct writer *w, struct config *c)
{
    pthread_mutex_lock(&w->mu);
    if (w->reload_pending) {
        size_t i;
        for (i = 0; i < w->reload_n; i++)
            ep_def_free(&w->reload_defs[i]);
        free(w->reload_defs);
    }
    w->reload_defs = c->endpoints;
    w->reload_n = c->n_endpoints;
    w->reload_prune = (int)c->pg_prune_endpoints;   /* it decides what the reload removes */
    w->reload_pending = 1;
    c->endpoints = NULL;
    c->n_endpoints = 0;
    c->endpoints_cap = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_rollup(void *arg, struct store_rollup *v, size_t n)
{
    struct writer *w = arg;

    pthread_mutex_lock(&w->mu);
    free(w->rollups);   /* an older one not yet applied is superseded */
    w->rollups = v;
    w->rollups_n = n;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_event(void *arg, const struct opsev *ev)
{
    struct writer *w = arg;

    pthread_mutex_lock(&w->mu);
    if (w->events_n == w->events_cap) {
        size_t nc = w->events_cap ? w->events_cap * 2 : 8;
        struct opsev *nv = nc <= 1024 ? realloc(w->events, nc * sizeof *nv) : NULL;
        if (!nv) {
            pthread_mutex_unlock(&w->mu);
            log_warn("ops_event_dropped", "type=%s err=\"too many waiting\"", opsev_type_name(ev->type));
            return;
        }
        w->events = nv;
        w->events_cap = nc;
    }
    w->events[w->events_n++] = *ev;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_stop(struct writer *w, struct deliver *d)
{
    if (!w->started)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    /* the round in progress may still hand jobs to the pool: wait until
     * the writer has seen the flag before the pool stops */
    while (!w->stop_seen)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    deliver_stop(d, w->c->shutdown_grace_ms);
    pthread_mutex_lock(&w->mu);
    w->finishing = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    w->started = 0;
    store_watch_stop(w->watch);
    w->watch = NULL;
}

void writer_free(struct writer *w)
{
    size_t i;

    if (!w)
        return;
    store_watch_stop(w->watch);
    store_close(w->st);
    cluster_free(&w->cl);
    registry_free(&w->reg);
    notify_free(&w->notify);
    free(w->events);
    free(w->rollups);
    for (i = 0; i < w->reload_n; i++)
        ep_def_free(&w->reload_defs[i]);
    free(w->reload_defs);
    free_jobs(w->results);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
