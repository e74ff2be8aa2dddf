/* store_pg_endpoint.c - endpoints and their health on PostgreSQL (writer
 * connection, inside the caller's transaction; endpoints_load and
 * health_load also serve hookd export's reader). */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "breaker.h"
#include "endpoint.h"
#include "log.h"
#include "store_seal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A read without parameters, run once (start-up, export). */
static PGresult *query(struct pg_store *g, const char *sql, const char *what)
{
    PGresult *r = PQexec(g->conn, sql);

    if (r && PQresultStatus(r) == PGRES_TUPLES_OK)
        return r;
    pg_fail(g, r, what);
    PQclear(r);
    return NULL;
}

/* the secrets were in this result: wiped before libpq frees it */
static void wipe_result(PGresult *r)
{
    int i, rows = PQntuples(r);

    for (i = 0; i < rows; i++) {
        memset(PQgetvalue(r, i, 3), 0, (size_t)PQgetlength(r, i, 3));
        memset(PQgetvalue(r, i, 4), 0, (size_t)PQgetlength(r, i, 4));
    }
    PQclear(r);
}

/* One endpoint row stored plain by an older hookd, sealed. PostgreSQL
 * keeps the old row version until VACUUM (FULL) reclaims it. */
static int seal_plain_row(struct pg_store *g, const struct ep_def *d, int64_t id)
{
    char *sec = NULL, *hdr = NULL, idbuf[32];
    const char *vals[3];
    PGresult *r;
    int rc = -1;

    if (store_seal_def(&g->base, d, &sec, &hdr) < 0)
        return -1;
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)id);
    vals[0] = idbuf;
    vals[1] = sec;
    vals[2] = hdr;
    r = PQexecParams(g->conn, "UPDATE endpoints SET secrets = $2, headers = $3 WHERE id = $1", 3, NULL, vals, NULL,
                     NULL, 0);
    if (r && PQresultStatus(r) == PGRES_COMMAND_OK) {
        log_info("secrets_sealed", "endpoint=%s", d->name);
        rc = 0;
    } else {
        pg_fail(g, r, "sealing stored secrets");
    }
    PQclear(r);
    seal_free(sec);
    seal_free(hdr);
    return rc;
}

int pg_endpoints_load(struct store *s, int (*fn)(void *ctx, int64_t id, int from_config, const struct ep_def *d),
                      void *ctx)
{
    struct pg_store *g = (struct pg_store *)s;
    PGresult *r = query(g,
                        "SELECT id, name, url, secrets, headers, event_types, settings, source, paused "
                        "FROM endpoints ORDER BY id",
                        "load endpoints");
    int i, rows;

    if (!r)
        return -1;
    rows = PQntuples(r);
    for (i = 0; i < rows; i++) {
        struct ep_def d;
        const char *name = pg_str(r, i, 1);
        char *sec, *hdr;
        int stop, plain = 0, bad;
        if (store_open_cols(s, name, pg_str(r, i, 3), pg_str(r, i, 4), &sec, &hdr, &plain) < 0)
            goto fail;
        bad = ep_def_from_stored(&d, name, pg_str(r, i, 2), sec, hdr, pg_str(r, i, 5), pg_str(r, i, 6),
                                 (int)pg_i64(r, i, 8, 0)) < 0;
        seal_free(sec);
        seal_free(hdr);
        if (bad) {
            store_fail(s, STORE_E_OTHER, "endpoint %.64s: stored definition is invalid", name ? name : "?");
            goto fail;
        }
        /* an older hookd's plain row: sealed in place by the writer */
        if (plain && g->role == STORE_WRITER && seal_plain_row(g, &d, pg_i64(r, i, 0, 0)) < 0) {
            ep_def_free(&d);
            goto fail;
        }
        stop = fn(ctx, pg_i64(r, i, 0, 0), strcmp(pg_str(r, i, 7), "config") == 0, &d);
        ep_def_free(&d);
        if (stop) {
            store_fail(s, STORE_E_NOMEM, "load endpoints: out of memory");
            goto fail;
        }
    }
    wipe_result(r);
    return 0;
fail:
    wipe_result(r);
    return -1;
}

/* Health rows of a result (columns: endpoint_id, endpoint_url, the
 * health columns, and with locked the probe and paused flags) to fn. */
static int health_rows(struct store *s, const PGresult *r, const PGresult *inflight, int locked,
                       int (*fn)(void *ctx, const struct store_health *h), void *ctx, const char *what)
{
    int i, k, rows = PQntuples(r);

    for (i = 0; i < rows; i++) {
        struct store_health h;
        memset(&h, 0, sizeof h);
        h.endpoint_id = pg_i64(r, i, 0, 0);
        h.endpoint_url = pg_str(r, i, 1);
        pg_health_cols(r, i, 2, &h);
        if (locked) {
            h.probe_out = (int)pg_i64(r, i, 2 + PG_HEALTH_NCOLS, 0);
            h.paused = (int)pg_i64(r, i, 3 + PG_HEALTH_NCOLS, 0);
            for (k = 0; inflight && k < PQntuples(inflight); k++)
                if (pg_i64(inflight, k, 0, 0) == h.endpoint_id)
                    h.in_flight = pg_i64(inflight, k, 1, 0);
        }
        if (fn(ctx, &h) != 0)
            return store_fail(s, STORE_E_NOMEM, "%s: out of memory", what);
    }
    return 0;
}

int pg_health_load(struct store *s, int (*fn)(void *ctx, const struct store_health *h), void *ctx)
{
    struct pg_store *g = (struct pg_store *)s;
    PGresult *r = query(g, pg_health_select(), "load health");
    int rc;

    if (!r)
        return -1;
    rc = health_rows(s, r, NULL, 0, fn, ctx, "load health");
    PQclear(r);
    return rc;
}

/* A statement whose result is not read. */
static int run(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, const char *what)
{
    PGresult *r = pg_exec(g, i, p, 0, what);

    PQclear(r);
    return r ? 0 : -1;
}

/* The other nodes hear of it at commit (store_pg_watch.c). */
void pg_notify_params(struct pg_params *p, const char *channel, int64_t id)
{
    pg_p_init(p);
    pg_p_text(p, channel);
    pg_p_i64(p, id);
}

int pg_notify(struct pg_store *g, const char *channel, int64_t id)
{
    struct pg_params p;

    pg_notify_params(&p, channel, id);
    return run(g, PG_NOTIFY, &p, "notify");
}

int pg_endpoint_put(struct store *s, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                    int *created)
{
    struct pg_store *g = (struct pg_store *)s;
    char *secrets = NULL, *headers = NULL;
    char *settings = ep_json_overrides(d);
    struct pg_params p;
    PGresult *r;
    int rc = -1;

    if (!settings) {
        store_fail(s, STORE_E_NOMEM, "endpoint put: out of memory");
        goto out;
    }
    if (store_seal_def(s, d, &secrets, &headers) < 0)
        goto out;
    pg_p_init(&p);
    pg_p_text(&p, d->name);
    if (!(r = pg_exec(g, PG_EP_FIND, &p, 0, "endpoint put")))
        goto out;
    if (created)
        *created = PQntuples(r) == 0;
    PQclear(r);
    pg_p_init(&p);
    pg_p_text(&p, d->name);
    pg_p_text(&p, d->url);
    pg_p_text(&p, secrets);
    pg_p_text(&p, headers);
    pg_p_text(&p, d->event_types);
    pg_p_text(&p, settings);
    pg_p_text(&p, from_config ? "config" : "api");
    pg_p_i64(&p, d->paused);
    pg_p_i64(&p, now);
    pg_p_i64(&p, d->paused_given);
    pg_p_text(&p, from_config ? "config" : "operator");
    if (!(r = pg_exec(g, PG_EP_PUT, &p, 0, "endpoint put")))
        goto out;
    if (PQntuples(r) != 1) {
        store_fail(s, STORE_E_OTHER, "endpoint put: no id returned");
        PQclear(r);
        goto out;
    }
    *id = pg_i64(r, 0, 0, 0);
    PQclear(r);
    pg_p_init(&p);
    pg_p_i64(&p, *id);
    pg_p_text(&p, d->url);
    if (run(g, PG_HEALTH_ENSURE, &p, "endpoint put") < 0 || pg_notify(g, "hookd_endpoints", *id) < 0)
        goto out;
    rc = 0;
out:
    seal_free(secrets);
    seal_free(headers);
    ep_json_release(NULL, NULL, settings);
    return rc;
}

int pg_endpoint_delete(struct store *s, int64_t id, int64_t now, int64_t *dead)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;

    pg_p_init(&p);
    pg_p_i64(&p, id);
    pg_p_i64(&p, now);
    if (!(r = pg_exec(g, PG_EP_DELETE, &p, 0, "endpoint delete")))
        return -1;
    *dead = pg_i64(r, 0, 0, 0);
    PQclear(r);
    return pg_notify(g, "hookd_endpoints", id);
}

int pg_latency_ring_size(struct store *s, int64_t slots)
{
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, slots);
    return run((struct pg_store *)s, PG_RING_TRIM, &p, "latency ring size");
}

int pg_endpoint_pause(struct store *s, int64_t id, int paused, const char *reason, int64_t now)
{
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, id);
    pg_p_i64(&p, paused);
    pg_p_i64(&p, now);
    pg_p_text(&p, paused ? reason : NULL);
    if (run((struct pg_store *)s, PG_EP_PAUSE, &p, "endpoint pause") < 0)
        return -1;
    return pg_notify((struct pg_store *)s, "hookd_endpoints", id);
}

static void health_params(struct pg_params *p, const struct store_health *v, int64_t node_id)
{
    pg_p_init(p);
    pg_p_i64(p, v->endpoint_id);
    /* "" is a URL here, not a missing one: the column is NOT NULL */
    if (v->endpoint_url && *v->endpoint_url)
        pg_p_text(p, v->endpoint_url);
    else
        pg_p_bytes(p, "", 0);
    pg_p_text(p, breaker_state_name((enum breaker_state)v->state));
    pg_p_i64(p, v->consecutive_failures);
    pg_p_i64(p, v->failure_threshold);
    pg_p_pos(p, v->last_failure_at);
    pg_p_pos(p, v->last_success_at);
    pg_p_pos(p, v->opened_at);
    pg_p_i64(p, v->cooldown_ms);
    pg_p_pos(p, v->slow_since);
    pg_p_i64(p, v->ring_next);
    pg_p_pos(p, v->concurrency_limit);
    pg_p_pos(p, v->failing_since);
    /* the probe out is this node's (a node saves only rows it locked) */
    pg_p_pos(p, v->probe_out ? node_id : 0);
}

int pg_health_save(struct store *s, const struct store_health *v, size_t n)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_pipe pp;
    struct pg_params p;
    size_t i;

    if (pg_pipe_begin(&pp, g, "health save", NULL, NULL) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        health_params(&p, &v[i], g->node_id);
        if (pg_pipe_add(&pp, PG_HEALTH_SAVE, &p) < 0)
            break;
    }
    return pg_pipe_end(&pp);
}

static void rollup_params(struct pg_params *p, const void *vv, size_t i)
{
    const struct store_rollup *v = (const struct store_rollup *)vv + i;

    pg_p_init(p);
    pg_p_i64(p, v->endpoint_id);
    pg_p_latency(p, v->has_latency, v->p50_ms, v->p95_ms, v->p99_ms);
    pg_p_i64(p, v->sample_count);
    pg_p_i64(p, v->at);
}

int pg_rollup_save(struct store *s, const struct store_rollup *v, size_t n)
{
    return pg_pipe_rows((struct pg_store *)s, PG_ROLLUP_SAVE, "rollup save", n, rollup_params, v);
}

static void history_add_params(struct pg_params *p, const void *vv, size_t i)
{
    const struct store_history *v = (const struct store_history *)vv + i;

    pg_p_init(p);
    pg_p_i64(p, v->endpoint_id);
    pg_p_i64(p, v->bucket_at);
    pg_p_i64(p, v->delivered);
    pg_p_i64(p, v->failed);
    pg_p_i64(p, v->breaker_opens);
}

int pg_history_add(struct store *s, const struct store_history *v, size_t n)
{
    return pg_pipe_rows((struct pg_store *)s, PG_HISTORY_ADD, "history add", n, history_add_params, v);
}

static void history_latency_params(struct pg_params *p, const void *vv, size_t i)
{
    const struct store_history *v = (const struct store_history *)vv + i;

    pg_p_init(p);
    pg_p_i64(p, v->endpoint_id);
    pg_p_i64(p, v->bucket_at);
    pg_p_latency(p, v->has_latency, v->p50_ms, v->p95_ms, v->p99_ms);
    pg_p_i64(p, v->sample_count);
}

int pg_history_latency(struct store *s, const struct store_history *v, size_t n)
{
    return pg_pipe_rows((struct pg_store *)s, PG_HISTORY_LATENCY, "history latency", n, history_latency_params, v);
}

int pg_health_lock(struct store *s, const int64_t *ids, size_t n, int (*fn)(void *ctx, const struct store_health *h),
                   void *ctx)
{
    struct pg_store *g = (struct pg_store *)s;
    struct buf a = {0};
    struct pg_params p;
    PGresult *r, *f;
    size_t i;
    int k;

    if (n == 0)
        return 0;
    buf_puts(&a, "{");
    for (i = 0; i < n; i++)
        buf_printf(&a, "%s%lld", i ? "," : "", (long long)ids[i]);
    buf_puts(&a, "}");
    if (a.failed) {
        buf_free(&a);
        return store_fail(s, STORE_E_NOMEM, "health lock: out of memory");
    }
    pg_p_init(&p);
    pg_p_text(&p, a.p);
    r = pg_exec(g, PG_HEALTH_LOCK, &p, 0, "health lock");
    f = r ? pg_exec(g, PG_IN_FLIGHT, &p, 0, "health lock") : NULL;
    buf_free(&a);
    if (!f) {
        PQclear(r);
        return -1;
    }
    k = health_rows(s, r, f, 1, fn, ctx, "health lock");
    PQclear(r);
    PQclear(f);
    return k;
}
