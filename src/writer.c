/* writer.c - the one writing connection: group commit, results, claims,
 * endpoint registry, periodic maintenance. */
#include "writer.h"
#include "backoff.h"
#include "breaker.h"
#include "db.h"
#include "endpoint.h"
#include "log.h"
#include "queue.h"
#include "reader.h"
#include "cron.h"
#include "tbucket.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Runtime state of one endpoint; owned by the writer thread. */
struct ep_rt {
    struct ep_conf *conf;     /* NULL: free slot */
    int from_config;
    int paused;
    int in_flight;
    struct breaker br;
    struct breaker_cfg bcfg;
    struct tbucket tb;
    int64_t next_due;         /* earliest time an unclaimed row may be due */
    int64_t hold_until;       /* 429 Retry-After */
    int64_t p95, samples;
    int health_dirty;
};

struct writer {
    const struct config *c;
    sqlite3 *db;
    struct queue q;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* shared, under mu */
    struct req *inbox, **inbox_tail;
    size_t inbox_n;
    struct djob *results;
    struct ep_def *reload_defs;
    size_t reload_n;
    int reload_pending;
    struct writer_rollup *rollups;
    size_t rollups_n;
    int fatal;       /* an I/O error: the process is about to exit */
    int stopping;    /* stop claiming */
    int stop_seen;   /* the writer thread will claim no more */
    int finishing;   /* deliveries are all back: drain and exit */
    /* writer thread only */
    struct deliver *d;
    struct reader *rd;
    struct ep_rt *eps;
    size_t neps;
    size_t rr;
    int64_t in_flight;
    int64_t retry_results_at;
    struct cron sched;
    int64_t dead_at_last_summary;
};

static const char *const status_err = "storage error";

/* After a failed fsync the kernel may have dropped the dirty pages and a
 * retried fsync can report success for data that never reached the disk
 * (PostgreSQL's lesson). So an I/O error on a commit is not retried: the
 * batch is answered with storage_error, and the process exits with 75 so
 * systemd restarts it and SQLite recovers from what is really on disk.
 * A full disk (SQLITE_FULL) is different: nothing was half-written, so
 * hookd answers storage_full and keeps serving. */
static int fatal_io(int rc)
{
    return (rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

/* ---- endpoint registry ---- */

static struct ep_rt *ep_by_name(struct writer *w, const char *name)
{
    size_t i;

    for (i = 0; i < w->neps; i++)
        if (w->eps[i].conf && strcmp(w->eps[i].conf->def.name, name) == 0)
            return &w->eps[i];
    return NULL;
}

static struct ep_rt *ep_by_id(struct writer *w, int64_t id)
{
    size_t i;

    for (i = 0; i < w->neps; i++)
        if (w->eps[i].conf && w->eps[i].conf->id == id)
            return &w->eps[i];
    return NULL;
}

static void ep_apply_conf(struct writer *w, struct ep_rt *e, struct ep_conf *conf, int from_config)
{
    struct ep_conf *old = e->conf;
    int fresh = old == NULL;

    e->conf = conf;
    e->from_config = from_config;
    e->bcfg.failure_threshold = (uint32_t)conf->eff.failure_threshold;
    e->bcfg.cooldown_ms = conf->eff.cooldown_ms;
    e->bcfg.max_cooldown_ms = conf->eff.max_cooldown_ms;
    if (fresh) {
        breaker_init(&e->br, &e->bcfg);
        e->paused = conf->def.paused;
        e->next_due = 0;
        e->hold_until = 0;
        e->in_flight = 0;
    }
    if (fresh || !old || old->eff.rate_per_sec != conf->eff.rate_per_sec ||
        old->eff.burst != conf->eff.burst)
        tbucket_init(&e->tb, conf->eff.rate_per_sec, (double)conf->eff.burst, util_mono_ms());
    e->next_due = 0;  /* re-examine the queue with the new settings */
    ep_conf_unref(old);
    (void)w;
}

/* Insert or replace the runtime entry for a stored endpoint. */
static int ep_install(struct writer *w, int64_t id, const struct ep_def *def, int from_config)
{
    struct ep_conf *conf = ep_conf_new(id, def, &w->c->dflt);
    struct ep_rt *e = ep_by_id(w, id), *n;
    size_t i;

    if (!conf)
        return -1;
    if (!e) {
        for (i = 0; i < w->neps; i++)
            if (!w->eps[i].conf)
                break;
        if (i == w->neps) {
            n = realloc(w->eps, (w->neps + 1) * sizeof *n);
            if (!n) {
                ep_conf_unref(conf);
                return -1;
            }
            w->eps = n;
            w->neps++;
        }
        e = &w->eps[i];
        memset(e, 0, sizeof *e);
    }
    ep_apply_conf(w, e, conf, from_config);
    return 0;
}

static void ep_remove(struct ep_rt *e)
{
    ep_conf_unref(e->conf);
    memset(e, 0, sizeof *e);
}

static void log_transition(const struct ep_rt *e, const struct breaker_transition *t)
{
    if (t->from == t->to)
        return;
    log_warn("breaker_transition", "endpoint=%s from=%s to=%s reason=\"%s\" failures=%u cooldown_ms=%lld",
             e->conf->def.name, breaker_state_name(t->from), breaker_state_name(t->to),
             t->reason ? t->reason : "", e->br.consecutive_failures, (long long)e->br.cooldown_ms);
}

static int save_health(struct writer *w, struct ep_rt *e)
{
    if (queue_health_save(&w->q, e->conf->id, e->conf->def.url, breaker_state_name(e->br.state),
                          e->br.consecutive_failures, e->bcfg.failure_threshold, e->br.last_failure_at,
                          e->br.last_success_at, e->br.opened_at, e->br.cooldown_ms) < 0)
        return -1;
    e->health_dirty = 0;
    return 0;
}

static int load_health(struct writer *w)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(w->db,
                           "SELECT endpoint_id, state, consecutive_failures, opened_at, cooldown_ms, "
                           "last_failure_at, last_success_at, p95_ms, sample_count FROM endpoint_health",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ep_rt *e = ep_by_id(w, sqlite3_column_int64(st, 0));
        enum breaker_state s;
        if (!e)
            continue;
        if (breaker_state_parse((const char *)sqlite3_column_text(st, 1), &s) == 0)
            e->br.state = s;
        e->br.consecutive_failures = (uint32_t)sqlite3_column_int64(st, 2);
        e->br.opened_at = sqlite3_column_int64(st, 3);
        e->br.cooldown_ms = sqlite3_column_int64(st, 4);
        e->br.last_failure_at = sqlite3_column_int64(st, 5);
        e->br.last_success_at = sqlite3_column_int64(st, 6);
        e->br.probe_in_flight = 0; /* a probe cut short by a restart proves nothing */
        e->p95 = sqlite3_column_int64(st, 7);
        e->samples = sqlite3_column_int64(st, 8);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Make the config file's endpoints the stored ones (inside a transaction):
 * upsert each, delete config-owned endpoints the file no longer has. */
static int sync_config_endpoints(struct writer *w, const struct ep_def *defs, size_t n, int64_t now)
{
    size_t i, j;

    for (i = 0; i < n; i++) {
        int64_t id;
        int created;
        if (endpoint_db_put(w->db, &defs[i], 1, now, &id, &created) < 0)
            return -1;
        if (ep_install(w, id, &defs[i], 1) < 0)
            return -1;
        if (created)
            log_info("endpoint_added", "endpoint=%s source=config", defs[i].name);
    }
    for (j = 0; j < w->neps; j++) {
        struct ep_rt *e = &w->eps[j];
        int keep = 0;
        int64_t dead = 0;
        if (!e->conf || !e->from_config)
            continue;
        for (i = 0; i < n; i++)
            if (strcmp(defs[i].name, e->conf->def.name) == 0)
                keep = 1;
        if (keep)
            continue;
        if (endpoint_db_delete(w->db, e->conf->id, now, &dead) < 0)
            return -1;
        log_warn("endpoint_removed", "endpoint=%s source=config dead_lettered=%lld", e->conf->def.name,
                 (long long)dead);
        ep_remove(e);
    }
    return 0;
}

/* ---- periodic jobs (run on the writer thread) ---- */

static void job_checkpoint(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    int log_pages = 0, ckpt = 0;
    int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &ckpt);

    (void)now;
    /* when readers let the whole log through, restart it so the -wal file
     * stops growing; TRUNCATE would wait on readers, PASSIVE never does */
    if (rc == SQLITE_OK && log_pages > 0 && ckpt == log_pages && log_pages > 4096)
        sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    else if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        log_warn("checkpoint_failed", "rc=%d", rc);
}

/* Delete at most chunk rows matching `where` (bounded so the writer never
 * stalls); returns the count, -1 on error. */
static int64_t delete_chunk(struct writer *w, const char *table, const char *where, int64_t cutoff)
{
    char sql[512];
    sqlite3_stmt *st = NULL;
    int64_t n = -1;

    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE id IN (SELECT id FROM %s WHERE %s LIMIT %lld)", table,
             table, where, (long long)w->c->cleanup_chunk);
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, cutoff);
    if (db_begin(w->db) == 0) {
        if (sqlite3_step(st) == SQLITE_DONE) {
            n = sqlite3_changes(w->db);
            if (db_commit(w->db) < 0)
                n = -1;
        }
        db_rollback(w->db);
    }
    sqlite3_finalize(st);
    return n;
}

static void job_cleanup(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    int64_t a, b, c;

    a = delete_chunk(w, "endpoint_latency", "measured_at < ?1", now - w->c->latency_window_ms);
    b = delete_chunk(w, "webhook_queue", "status = 'delivered' AND delivered_at < ?1", now - w->c->keep_delivered_ms);
    c = delete_chunk(w, "webhook_queue", "status = 'dead_letter' AND created_at < ?1", now - w->c->keep_dead_letter_ms);
    if (a > 0 || b > 0 || c > 0)
        log_debug("cleanup", "latency_rows=%lld delivered=%lld dead_letters=%lld", (long long)a, (long long)b,
                  (long long)c);
    /* a full chunk means more is waiting: come back soon, not in a period */
    if (a == w->c->cleanup_chunk || b == w->c->cleanup_chunk || c == w->c->cleanup_chunk)
        cron_soon(&w->sched, "cleanup", 50);
}

static void job_rollup(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    (void)now;
    if (w->rd)
        reader_request_rollup(w->rd, w->c->latency_window_ms);
}

static void job_slow_scan(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    size_t i;

    (void)now;
    for (i = 0; i < w->neps; i++) {
        struct ep_rt *e = &w->eps[i];
        if (!e->conf || e->samples < w->c->min_samples || e->p95 <= w->c->slow_p95_ms)
            continue;
        log_warn("endpoint_slow", "endpoint=%s p95_ms=%lld samples=%lld threshold_ms=%lld%s",
                 e->conf->def.name, (long long)e->p95, (long long)e->samples, (long long)w->c->slow_p95_ms,
                 e->p95 > w->c->critical_p95_ms ? " failure_threshold=halved" : "");
    }
}

static void job_summary(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    if (w->rd)
        reader_request_summary(w->rd, now);
}

static void job_metrics(void *ctx, int64_t now)
{
    struct writer *w = ctx;
    (void)now;
    if (w->rd && w->c->metrics_file && *w->c->metrics_file)
        reader_request_metrics_file(w->rd, w->c->metrics_file);
}

/* ---- results ---- */

static int apply_result(struct writer *w, struct djob *j, int64_t now)
{
    struct ep_rt *e = ep_by_id(w, j->ep->id);
    const struct ep_settings *s = &j->ep->eff;
    enum outcome oc;
    int attempts = j->attempt_count + 1;
    char err[256];

    if (e)
        e->in_flight--;
    w->in_flight--;
    if (!j->attempted) {
        if (e) {
            if (j->probe)
                breaker_probe_abandoned(&e->br);
            e->next_due = 0;
        }
        return queue_release(&w->q, j->id, now);
    }
    oc = outcome_classify(j->http_status, j->errc);
    if (queue_latency_add(&w->q, j->ep->id, j->id, j->response_ms, j->http_status, errclass_name(j->errc),
                          now) < 0)
        return -1;
    if (j->http_status)
        snprintf(err, sizeof err, "HTTP %d%s%s", j->http_status, j->error[0] ? ": " : "", j->error);
    else
        snprintf(err, sizeof err, "%s: %s", errclass_name(j->errc), j->error);

    switch (oc) {
    case OUTCOME_DELIVERED:
        if (queue_mark_delivered(&w->q, j->id, attempts, j->http_status, j->response_ms, now) < 0)
            return -1;
        break;
    case OUTCOME_RETRY:
        if (attempts >= j->max_attempts) {
            if (queue_mark_dead(&w->q, j->id, attempts, err, j->http_status, j->response_ms) < 0)
                return -1;
        } else {
            int64_t delay = backoff_delay_ms((uint32_t)attempts, s->base_delay_ms, s->max_delay_ms, backoff_rand64());
            int64_t next;
            if (j->retry_after_ms >= 0 && (j->http_status == 429 || j->http_status == 503)) {
                int64_t floor_ms = j->retry_after_ms < s->max_delay_ms ? j->retry_after_ms : s->max_delay_ms;
                if (delay < floor_ms)
                    delay = floor_ms;
                if (e && j->http_status == 429 && now + floor_ms > e->hold_until)
                    e->hold_until = now + floor_ms;
            }
            next = now + delay;
            if (queue_mark_failed(&w->q, j->id, attempts, next, err, j->http_status, j->response_ms) < 0)
                return -1;
            if (e && next < e->next_due)
                e->next_due = next;
        }
        break;
    case OUTCOME_DEAD:
    case OUTCOME_GONE:
        if (queue_mark_dead(&w->q, j->id, attempts, err, j->http_status, j->response_ms) < 0)
            return -1;
        if (oc == OUTCOME_GONE && e && !e->paused) {
            if (endpoint_db_set_paused(w->db, e->conf->id, 1, now) < 0)
                return -1;
            e->paused = 1;
            log_warn("endpoint_paused", "endpoint=%s reason=\"410 Gone\" message_id=%lld", e->conf->def.name,
                     (long long)j->id);
        }
        break;
    }
    if (e) {
        struct breaker_transition t;
        uint32_t thr = breaker_effective_threshold(&e->bcfg, e->p95, e->samples, w->c->critical_p95_ms,
                                                   w->c->min_samples);
        breaker_record(&e->br, &e->bcfg, oc == OUTCOME_DELIVERED, j->probe, thr, now, &t);
        log_transition(e, &t);
        e->health_dirty = 1;
        if (t.to == BREAKER_CLOSED && t.from != BREAKER_CLOSED)
            e->next_due = 0;
    }
    return 0;
}

/* ---- enqueue ---- */

static int enqueue_one(struct writer *w, struct ep_rt *e, struct req *r, const char *event_id, int64_t now,
                       int64_t *id, int *dup)
{
    if (queue_insert(&w->q, e->conf->id, event_id, r->p.event_type, r->p.payload, r->p.payload_len,
                     (int)e->conf->eff.max_attempts, now, id, dup) < 0)
        return -1;
    if (!*dup && e->next_due > now)
        e->next_due = now;
    return 0;
}

/* 1: answered with an error (not part of the batch), 0: inserted, -1: db failure */
static int apply_enqueue(struct writer *w, struct req *r, int64_t now)
{
    char gen[64];
    const char *event_id = r->p.event_id;
    int64_t id;
    int dup;
    size_t i, hits = 0;

    if (!event_id) {
        util_random_id("evt_", gen, sizeof gen);
        event_id = gen;
    }
    r->reply.len = 0;
    if (r->p.endpoint) {
        struct ep_rt *e = ep_by_name(w, r->p.endpoint);
        if (!e) {
            req_error(r, PERR_UNKNOWN_ENDPOINT, "no endpoint named '%s'", r->p.endpoint);
            return 1;
        }
        if (enqueue_one(w, e, r, event_id, now, &id, &dup) < 0)
            return -1;
        if (buf_printf(&r->reply, "{\"ok\":true,\"id\":%lld,\"event_id\":", (long long)id) < 0 ||
            buf_json_str(&r->reply, event_id) < 0 ||
            buf_printf(&r->reply, ",\"duplicate\":%s}\n", dup ? "true" : "false") < 0)
            goto oom;
        return 0;
    }
    if (buf_puts(&r->reply, "{\"ok\":true,\"event_id\":") < 0 || buf_json_str(&r->reply, event_id) < 0 ||
        buf_puts(&r->reply, ",\"deliveries\":[") < 0)
        goto oom;
    for (i = 0; i < w->neps; i++) {
        struct ep_rt *e = &w->eps[i];
        if (!e->conf || !ep_def_wants(&e->conf->def, r->p.event_type))
            continue;
        if (enqueue_one(w, e, r, event_id, now, &id, &dup) < 0)
            return -1;
        if (buf_printf(&r->reply, "%s{\"endpoint\":", hits ? "," : "") < 0 ||
            buf_json_str(&r->reply, e->conf->def.name) < 0 ||
            buf_printf(&r->reply, ",\"id\":%lld,\"duplicate\":%s}", (long long)id, dup ? "true" : "false") < 0)
            goto oom;
        hits++;
    }
    if (!hits) {
        req_error(r, PERR_NO_SUBSCRIBERS, "no endpoint subscribes to event type '%s'", r->p.event_type);
        return 1;
    }
    if (buf_puts(&r->reply, "]}\n") < 0)
        goto oom;
    return 0;
oom:
    req_error(r, PERR_INTERNAL, "out of memory");
    return 1;
}

/* ---- claims ---- */

struct claim_ctx {
    struct writer *w;
    struct ep_rt *e;
    int probe;
    int64_t now;
    struct djob **tail;
};

static int claim_row(void *arg, const struct queue_row *row)
{
    struct claim_ctx *x = arg;
    struct djob *j = calloc(1, sizeof *j);

    if (!j)
        return -1;
    j->id = row->id;
    j->ep = ep_conf_ref(x->e->conf);
    j->event_id = strdup(row->event_id);
    j->payload = malloc(row->payload_len + 1);
    if (!j->event_id || !j->payload) {
        djob_free(j);
        return -1;
    }
    memcpy(j->payload, row->payload, row->payload_len);
    j->payload[row->payload_len] = '\0';
    j->payload_len = row->payload_len;
    j->attempt_count = row->attempt_count;
    j->max_attempts = row->max_attempts;
    j->probe = x->probe;
    x->probe = 0;
    j->retry_after_ms = -1;
    j->claimed_mono_us = util_mono_us();
    *x->tail = j;
    x->tail = &j->next;
    return 0;
}

static int claim_all(struct writer *w, int64_t now, struct djob **out)
{
    struct claim_ctx x = {w, NULL, 0, now, out};
    int64_t budget = w->c->claim_batch, mono = util_mono_ms();
    size_t k;

    for (k = 0; k < w->neps && budget > 0; k++) {
        struct ep_rt *e = &w->eps[(w->rr + k) % w->neps];
        struct breaker_transition t;
        int64_t retry_at, cap, limit, tokens = 0;
        enum breaker_admit adm;
        int n;

        if (!e->conf || e->paused || e->next_due > now || e->hold_until > now)
            continue;
        cap = e->conf->eff.max_in_flight - e->in_flight;
        if (cap <= 0)
            continue;
        limit = cap < budget ? cap : budget;
        adm = breaker_admit(&e->br, now, &retry_at, &t);
        if (t.from != t.to) {
            log_transition(e, &t);
            e->health_dirty = 1;
        }
        if (adm == BREAKER_DENY)
            continue;
        if (adm == BREAKER_ADMIT_PROBE)
            limit = 1;
        if (e->tb.rate_per_ms > 0) {
            while (tokens < limit && tbucket_take(&e->tb, mono))
                tokens++;
            limit = tokens;
        }
        if (limit == 0) {
            if (adm == BREAKER_ADMIT_PROBE)
                breaker_probe_abandoned(&e->br);
            continue;
        }
        x.e = e;
        x.probe = adm == BREAKER_ADMIT_PROBE;
        n = queue_claim(&w->q, e->conf->id, now, (int)limit, claim_row, &x);
        if (n < 0)
            return -1;
        if (e->tb.rate_per_ms > 0 && n < limit)
            e->tb.tokens += (double)(limit - n);  /* give back what was not used */
        if (x.probe)  /* nothing was due after all */
            breaker_probe_abandoned(&e->br);
        e->in_flight += n;
        w->in_flight += n;
        budget -= n;
        if (n < limit && queue_next_due(&w->q, e->conf->id, &e->next_due) < 0)
            return -1;
    }
    w->rr++;
    return 0;
}

/* When must the writer look at the queue again (wall ms)? */
static int64_t next_wake(struct writer *w, int64_t now)
{
    int64_t wake = INT64_MAX, mono = util_mono_ms();
    size_t i;

    if (w->stopping)
        return INT64_MAX;
    for (i = 0; i < w->neps; i++) {
        struct ep_rt *e = &w->eps[i];
        int64_t t;
        if (!e->conf || e->paused || e->next_due == INT64_MAX)
            continue;
        if (e->in_flight >= e->conf->eff.max_in_flight)
            continue;  /* a result will wake us */
        t = e->next_due;
        if (e->hold_until > t)
            t = e->hold_until;
        if (e->br.state == BREAKER_OPEN && e->br.opened_at + e->br.cooldown_ms > t)
            t = e->br.opened_at + e->br.cooldown_ms;
        if (e->br.state == BREAKER_HALF_OPEN && e->br.probe_in_flight)
            continue;
        if (e->tb.rate_per_ms > 0 && e->tb.tokens < 1.0) {
            int64_t ready = now + (tbucket_ready_at(&e->tb, mono) - mono);
            if (ready > t)
                t = ready;
        }
        if (t < wake)
            wake = t;
    }
    return wake;
}

/* ---- admin requests (each in its own transaction) ---- */

static int admin_txn_begin(struct writer *w, struct req *r)
{
    if (db_begin(w->db) < 0) {
        req_error(r, db_error_code(sqlite3_extended_errcode(w->db)), "%s: %s", status_err, sqlite3_errmsg(w->db));
        return -1;
    }
    return 0;
}

static int admin_txn_commit(struct writer *w, struct req *r)
{
    if (db_commit(w->db) < 0) {
        int rc = sqlite3_extended_errcode(w->db);
        db_rollback(w->db);
        req_error(r, db_error_code(rc), "%s: commit failed", status_err);
        if (fatal_io(rc)) {
            log_error("fatal_storage_error", "rc=%d err=\"%s\" action=\"exit 75\"", rc, sqlite3_errstr(rc));
            w->fatal = 1;
            server_fatal(75);
        }
        return -1;
    }
    return 0;
}

static void admin_fail(struct writer *w, struct req *r)
{
    int rc = sqlite3_extended_errcode(w->db);
    db_rollback(w->db);
    req_error(r, db_error_code(rc), "%s: %s", status_err, sqlite3_errstr(rc));
}

static void handle_admin(struct writer *w, struct req *r, int64_t now)
{
    struct ep_rt *e = NULL;
    int64_t n = 0;
    size_t i;

    r->reply.len = 0;
    if (r->p.endpoint && r->p.op != OP_ENDPOINT_PUT) {
        e = ep_by_name(w, r->p.endpoint);
        if (!e) {
            req_error(r, PERR_UNKNOWN_ENDPOINT, "no endpoint named '%s'", r->p.endpoint);
            return;
        }
    }
    switch (r->p.op) {
    case OP_ENDPOINT_PUT: {
        struct ep_def d;
        char why[256];
        int64_t id;
        int created;
        e = ep_by_name(w, r->p.endpoint);
        if (e && e->from_config) {
            req_error(r, PERR_CONFLICT, "endpoint '%s' is defined in the config file; edit it there", r->p.endpoint);
            return;
        }
        if (endpoint_def_from_json(r->p.body, &d, why, sizeof why) < 0) {
            req_error(r, PERR_BAD_REQUEST, "%s", why);
            return;
        }
        if (admin_txn_begin(w, r) < 0) {
            ep_def_free(&d);
            return;
        }
        if (endpoint_db_put(w->db, &d, 0, now, &id, &created) < 0) {
            admin_fail(w, r);
            ep_def_free(&d);
            return;
        }
        if (admin_txn_commit(w, r) < 0) {
            ep_def_free(&d);
            return;
        }
        if (ep_install(w, id, &d, 0) < 0)
            log_error("endpoint_install", "endpoint=%s err=\"out of memory\"", d.name);
        log_info(created ? "endpoint_added" : "endpoint_updated", "endpoint=%s source=api", d.name);
        buf_printf(&r->reply, "{\"ok\":true,\"endpoint\":{\"id\":%lld,\"name\":", (long long)id);
        buf_json_str(&r->reply, d.name);
        buf_printf(&r->reply, "},\"created\":%s}\n", created ? "true" : "false");
        ep_def_free(&d);
        return;
    }
    case OP_ENDPOINT_DELETE:
        if (e->from_config) {
            req_error(r, PERR_CONFLICT, "endpoint '%s' is defined in the config file; remove it there", r->p.endpoint);
            return;
        }
        if (admin_txn_begin(w, r) < 0)
            return;
        if (endpoint_db_delete(w->db, e->conf->id, now, &n) < 0) {
            admin_fail(w, r);
            return;
        }
        if (admin_txn_commit(w, r) < 0)
            return;
        log_info("endpoint_deleted", "endpoint=%s dead_lettered=%lld", e->conf->def.name, (long long)n);
        /* deliveries still in flight for it come back to an unknown endpoint */
        w->in_flight -= 0;
        ep_remove(e);
        buf_printf(&r->reply, "{\"ok\":true,\"dead_lettered\":%lld}\n", (long long)n);
        return;
    case OP_REQUEUE:
    case OP_PURGE: {
        int rc;
        if (admin_txn_begin(w, r) < 0)
            return;
        if (r->p.op == OP_PURGE)
            rc = queue_purge(&w->q, e ? e->conf->id : 0, r->p.since_ms, &n);
        else if (r->p.id)
            rc = queue_requeue_id(&w->q, r->p.id, now, &n);
        else
            rc = queue_requeue_endpoint(&w->q, e->conf->id, r->p.since_ms, now, &n);
        if (rc < 0) {
            admin_fail(w, r);
            return;
        }
        if (admin_txn_commit(w, r) < 0)
            return;
        if (r->p.op == OP_REQUEUE) {
            for (i = 0; i < w->neps; i++)
                if (w->eps[i].conf && (!e || e == &w->eps[i]))
                    w->eps[i].next_due = 0;
            if (r->p.id && n == 0) {
                req_error(r, PERR_NOT_FOUND, "message %lld does not exist or is pending or in flight",
                          (long long)r->p.id);
                return;
            }
            log_info("requeued", "count=%lld%s%s", (long long)n, e ? " endpoint=" : "", e ? e->conf->def.name : "");
            buf_printf(&r->reply, "{\"ok\":true,\"requeued\":%lld}\n", (long long)n);
        } else {
            log_info("purged", "count=%lld%s%s", (long long)n, e ? " endpoint=" : "", e ? e->conf->def.name : "");
            buf_printf(&r->reply, "{\"ok\":true,\"purged\":%lld}\n", (long long)n);
        }
        return;
    }
    case OP_PAUSE:
    case OP_RESUME: {
        int paused = r->p.op == OP_PAUSE;
        if (admin_txn_begin(w, r) < 0)
            return;
        if (endpoint_db_set_paused(w->db, e->conf->id, paused, now) < 0) {
            admin_fail(w, r);
            return;
        }
        if (admin_txn_commit(w, r) < 0)
            return;
        if (e->paused != paused)
            log_info(paused ? "endpoint_paused" : "endpoint_resumed", "endpoint=%s reason=operator",
                     e->conf->def.name);
        e->paused = paused;
        e->next_due = 0;
        buf_puts(&r->reply, "{\"ok\":true,\"endpoint\":");
        buf_json_str(&r->reply, e->conf->def.name);
        buf_printf(&r->reply, ",\"paused\":%s}\n", paused ? "true" : "false");
        return;
    }
    default:
        req_error(r, PERR_INTERNAL, "op not handled by the writer");
        return;
    }
}

/* ---- the round ---- */

static void complete_list(struct req *list)
{
    while (list) {
        struct req *next = list->next;
        server_complete(list);
        list = next;
    }
}

static void free_jobs(struct djob *j)
{
    while (j) {
        struct djob *next = j->next;
        djob_free(j);
        j = next;
    }
}

static void writer_round(struct writer *w, struct req *reqs, struct djob *results, int claiming)
{
    struct req *batch = NULL, **btail = &batch, *done = NULL, **dtail = &done, *r, *next;
    struct djob *claimed = NULL, *j;
    struct ep_rt *snap = NULL;
    int64_t now = util_now_ms(), in_flight_snap = w->in_flight;
    size_t i;
    int rc;

    /* admin requests first, each in its own transaction */
    for (r = reqs; r; r = next) {
        next = r->next;
        r->next = NULL;
        if (r->p.op == OP_ENQUEUE) {
            *btail = r;
            btail = &r->next;
        } else {
            handle_admin(w, r, now);
            server_complete(r);
        }
    }
    if (!batch && !results && !claiming)
        return;
    if (w->neps && !(snap = malloc(w->neps * sizeof *snap)))
        goto fail_nosnap;
    if (w->neps)
        memcpy(snap, w->eps, w->neps * sizeof *snap);
    if (db_begin(w->db) < 0)
        goto fail;
    for (j = results; j; j = j->next)
        if (apply_result(w, j, now) < 0)
            goto fail;
    for (r = batch, batch = NULL, btail = &batch; r; r = next) {
        next = r->next;
        r->next = NULL;
        rc = apply_enqueue(w, r, now);
        if (rc < 0) {
            /* keep the request in the batch so it gets the batch's error */
            *btail = r;
            btail = &r->next;
            for (r = next; r; r = next) {
                next = r->next;
                r->next = NULL;
                *btail = r;
                btail = &r->next;
            }
            goto fail;
        }
        if (rc > 0) {
            *dtail = r;
            dtail = &r->next;
        } else {
            *btail = r;
            btail = &r->next;
        }
    }
    if (claiming && claim_all(w, now, &claimed) < 0)
        goto fail;
    for (i = 0; i < w->neps; i++)
        if (w->eps[i].conf && w->eps[i].health_dirty && save_health(w, &w->eps[i]) < 0)
            goto fail;
    if (db_commit(w->db) < 0)
        goto fail;
    free(snap);
    complete_list(batch);
    complete_list(done);
    for (j = results; j; j = j->next) {
        enum outcome oc;
        if (!j->attempted)
            continue;
        oc = outcome_classify(j->http_status, j->errc);
        if (oc == OUTCOME_RETRY && j->attempt_count + 1 >= j->max_attempts)
            oc = OUTCOME_DEAD;
        reader_count_outcome(oc, j->response_ms);
    }
    free_jobs(results);
    if (claimed)
        deliver_submit(w->d, claimed);
    return;

fail:
    rc = w->q.last_rc ? w->q.last_rc : sqlite3_extended_errcode(w->db);
    db_rollback(w->db);
    if (snap)
        memcpy(w->eps, snap, w->neps * sizeof *snap);
    w->in_flight = in_flight_snap;
    free(snap);
    goto fail_common;
fail_nosnap:
    rc = SQLITE_NOMEM;
fail_common:
    log_error("commit_failed", "rc=%d err=\"%s\" enqueues=%s results_kept=%s", rc, sqlite3_errstr(rc),
              batch ? "rejected" : "none", results ? "yes" : "none");
    for (r = batch; r; r = r->next)
        req_error(r, db_error_code(rc), "%s: %s; not stored, retry later", status_err, sqlite3_errstr(rc));
    complete_list(batch);
    complete_list(done);
    /* the rows are still in_flight in the database: keep the results and
     * try again shortly; nothing is lost */
    if (results) {
        struct djob **t = &results;
        while (*t)
            t = &(*t)->next;
        pthread_mutex_lock(&w->mu);
        *t = w->results;
        w->results = results;
        pthread_mutex_unlock(&w->mu);
        w->retry_results_at = util_mono_ms() + 200;
    }
    free_jobs(claimed);
    w->q.last_rc = 0;
    if (fatal_io(rc)) {
        log_error("fatal_storage_error", "rc=%d err=\"%s\" action=\"exit 75 after answering the batch; "
                  "acknowledged data is safe, SQLite recovers at restart\"", rc, sqlite3_errstr(rc));
        w->fatal = 1;
        server_fatal(75);
    }
}

static void apply_rollups(struct writer *w, struct writer_rollup *v, size_t n)
{
    sqlite3_stmt *st = NULL;
    size_t i;

    if (!n)
        return;
    if (sqlite3_prepare_v2(w->db,
                           "UPDATE endpoint_health SET p50_ms = ?2, p95_ms = ?3, p99_ms = ?4, "
                           "sample_count = ?5, rolled_up_at = ?6 WHERE endpoint_id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    if (db_begin(w->db) < 0)
        goto out;
    for (i = 0; i < n; i++) {
        struct ep_rt *e = ep_by_id(w, v[i].endpoint_id);
        if (!e)
            continue;
        if (v[i].samples > 0)
            sqlite3_bind_int64(st, 2, v[i].p50), sqlite3_bind_int64(st, 3, v[i].p95),
                sqlite3_bind_int64(st, 4, v[i].p99);
        else
            sqlite3_bind_null(st, 2), sqlite3_bind_null(st, 3), sqlite3_bind_null(st, 4);
        sqlite3_bind_int64(st, 1, v[i].endpoint_id);
        sqlite3_bind_int64(st, 5, v[i].samples);
        sqlite3_bind_int64(st, 6, util_now_ms());
        if (sqlite3_step(st) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(st);
        e->p95 = v[i].p95;
        e->samples = v[i].samples;
    }
    if (db_commit(w->db) == 0)
        goto out;
fail:
    db_rollback(w->db);
out:
    sqlite3_finalize(st);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;

    for (;;) {
        struct req *reqs = NULL, **tail = &reqs;
        struct djob *results = NULL;
        struct ep_def *defs = NULL;
        struct writer_rollup *rollups = NULL;
        size_t ndefs = 0, nroll = 0, taken = 0;
        int reload = 0, claiming, finishing;
        int64_t now, wake, mono_wake;

        pthread_mutex_lock(&w->mu);
        for (;;) {
            now = util_now_ms();
            int results_ready = w->results && util_mono_ms() >= w->retry_results_at;
            if (w->inbox || results_ready || w->reload_pending || w->rollups || w->finishing ||
                (w->stopping && !w->stop_seen))
                break;
            wake = next_wake(w, now);
            mono_wake = cron_next(&w->sched);
            if (w->results && w->retry_results_at < mono_wake)
                mono_wake = w->retry_results_at;
            if (wake <= now || mono_wake <= util_mono_ms())
                break;
            {
                int64_t wait_ms = wake == INT64_MAX ? 1000 : wake - now;
                int64_t until = util_mono_ms() + wait_ms;
                struct timespec ts;
                if (mono_wake < until)
                    until = mono_wake;
                ts.tv_sec = (time_t)(until / 1000);
                ts.tv_nsec = (long)(until % 1000) * 1000000L;
                pthread_cond_timedwait(&w->cv, &w->mu, &ts);
            }
        }
        /* group commit: take up to batch_max requests, all results */
        while (w->inbox && taken < (size_t)w->c->batch_max) {
            struct req *r = w->inbox;
            w->inbox = r->next;
            r->next = NULL;
            *tail = r;
            tail = &r->next;
            taken++;
            w->inbox_n--;
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
            reload = 1;
            w->reload_defs = NULL;
            w->reload_n = 0;
            w->reload_pending = 0;
        }
        rollups = w->rollups;
        nroll = w->rollups_n;
        w->rollups = NULL;
        w->rollups_n = 0;
        claiming = !w->stopping;
        finishing = w->finishing;
        if (w->stopping && !w->stop_seen) {
            w->stop_seen = 1;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mu);

        if (reload) {
            size_t i;
            if (db_begin(w->db) == 0 && sync_config_endpoints(w, defs, ndefs, util_now_ms()) == 0 &&
                db_commit(w->db) == 0)
                log_info("reloaded", "endpoints=%zu", ndefs);
            else {
                db_rollback(w->db);
                log_error("reload_failed", "err=\"%s\"", sqlite3_errmsg(w->db));
            }
            for (i = 0; i < ndefs; i++)
                ep_def_free(&defs[i]);
            free(defs);
        }
        if (nroll) {
            apply_rollups(w, rollups, nroll);
            free(rollups);
        }
        writer_round(w, reqs, results, claiming);
        if (w->fatal)
            break;  /* nothing more touches the database; the process exits */
        if (claiming)
            cron_run(&w->sched, util_mono_ms(), util_now_ms());
        if (finishing) {
            pthread_mutex_lock(&w->mu);
            int empty = !w->inbox && !w->results;
            pthread_mutex_unlock(&w->mu);
            if (empty && w->in_flight <= 0)
                break;
        }
    }
    return NULL;
}

/* ---- public ---- */

int writer_create(struct writer **out, const struct config *c, sqlite3 *db, char *err, size_t errlen)
{
    struct writer *w = calloc(1, sizeof *w);
    struct ep_stored *stored = NULL;
    pthread_condattr_t ca;
    size_t n = 0, i;
    int64_t recovered = 0, now = util_now_ms();

    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->c = c;
    w->db = db;
    w->inbox_tail = &w->inbox;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (queue_open(&w->q, db) < 0) {
        snprintf(err, errlen, "cannot prepare statements: %s", sqlite3_errmsg(db));
        goto fail;
    }
    if (db_begin(db) < 0 || queue_recover(db, now, &recovered) < 0)
        goto dbfail;
    if (endpoint_db_load(db, &stored, &n) < 0)
        goto dbfail;
    for (i = 0; i < n; i++)
        if (ep_install(w, stored[i].id, &stored[i].def, stored[i].from_config) < 0) {
            snprintf(err, errlen, "endpoint %s: stored definition unusable", stored[i].def.name);
            db_rollback(db);
            goto fail;
        }
    endpoint_stored_free(stored, n);
    stored = NULL;
    if (sync_config_endpoints(w, c->endpoints, c->n_endpoints, now) < 0 || load_health(w) < 0)
        goto dbfail;
    if (db_commit(db) < 0)
        goto dbfail;
    /* a large -wal left by a crash or another tool would otherwise be
     * checkpointed by the first commit, while clients wait for acks */
    if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        log_warn("checkpoint_failed", "when=start err=\"%s\"", sqlite3_errmsg(db));
    if (recovered)
        log_warn("recovered_in_flight", "count=%lld note=\"returned to the queue; receivers may see these "
                 "webhook-ids twice\"", (long long)recovered);
    cron_init(&w->sched, util_mono_ms());
    cron_add(&w->sched, "checkpoint", c->checkpoint_interval_ms, job_checkpoint, w);
    cron_add(&w->sched, "cleanup", c->cleanup_interval_ms, job_cleanup, w);
    cron_add(&w->sched, "rollup", c->rollup_interval_ms, job_rollup, w);
    cron_add(&w->sched, "slow_scan", c->slow_scan_interval_ms, job_slow_scan, w);
    cron_add(&w->sched, "health_summary", c->summary_interval_ms, job_summary, w);
    cron_add(&w->sched, "metrics_file", c->metrics_interval_ms, job_metrics, w);
    *out = w;
    return 0;
dbfail:
    snprintf(err, errlen, "database: %s", sqlite3_errmsg(db));
    db_rollback(db);
fail:
    endpoint_stored_free(stored, n);
    queue_close(&w->q);
    for (i = 0; i < w->neps; i++)
        ep_conf_unref(w->eps[i].conf);
    free(w->eps);
    free(w);
    return -1;
}

int writer_start(struct writer *w, struct deliver *d, struct reader *r)
{
    w->d = d;
    w->rd = r;
    if (pthread_create(&w->th, NULL, writer_main, w) != 0)
        return -1;
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
    w->inbox_n++;
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
    w->reload_pending = 1;
    c->endpoints = NULL;
    c->n_endpoints = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void writer_rollup_done(struct writer *w, struct writer_rollup *v, size_t n)
{
    pthread_mutex_lock(&w->mu);
    free(w->rollups);
    w->rollups = v;
    w->rollups_n = n;
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
}

void writer_free(struct writer *w)
{
    size_t i;

    if (!w)
        return;
    queue_close(&w->q);
    sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    db_close(w->db);
    for (i = 0; i < w->neps; i++)
        ep_conf_unref(w->eps[i].conf);
    free(w->eps);
    free(w->rollups);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
