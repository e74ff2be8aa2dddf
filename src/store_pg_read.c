/* store_pg_read.c - the reader's queries on PostgreSQL. Nothing here
 * reads hookd_queue.payload (only its length) but export, which exists
 * to copy it, and a search asked for it (a payload condition, admin
 * only); nothing reads the values of endpoints.secrets / headers. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"

#include <stdlib.h>
#include <string.h>

#define HOUR_MS (3600 * 1000LL)

int pg_queue_stats(struct store *s, int64_t now, int with_delivered, struct store_stats *out)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;

    memset(out, 0, sizeof *out);
    pg_p_init(&p);
    pg_p_i64(&p, now - HOUR_MS);
    pg_p_i64(&p, with_delivered != 0);
    pg_p_i64(&p, now);
    if (!(r = pg_exec(g, PG_STATS, &p, 0, "stats")))
        return -1;
    out->n[MSG_PENDING] = pg_i64(r, 0, 0, 0);
    out->n[MSG_FAILED] = pg_i64(r, 0, 1, 0);
    out->n[MSG_IN_FLIGHT] = pg_i64(r, 0, 2, 0);
    out->n[MSG_DEAD_LETTER] = pg_i64(r, 0, 3, 0);
    out->n[MSG_DELIVERED] = pg_i64(r, 0, 4, 0);
    out->delivered_last_hour = pg_i64(r, 0, 5, 0);
    out->has_avg = !pg_isnull(r, 0, 6);
    out->avg_delivery_ms = pg_f64(r, 0, 6);
    out->failed_last_hour = pg_i64(r, 0, 7, 0);
    out->has_oldest = !pg_isnull(r, 0, 8);
    out->oldest_pending = pg_i64(r, 0, 8, 0);
    out->scheduled = pg_i64(r, 0, 9, 0);
    out->n[MSG_PENDING] -= out->scheduled;
    PQclear(r);
    return 0;
}

static void msg_cols(const PGresult *r, int i, struct store_message *m)
{
    enum msg_status ms = MSG_PENDING;

    memset(m, 0, sizeof *m);
    m->id = pg_i64(r, i, 0, 0);
    m->endpoint = pg_str(r, i, 1);
    m->endpoint_id = pg_i64(r, i, 2, 0);
    m->event_id = pg_str(r, i, 3);
    m->event_type = pg_str(r, i, 4);
    msg_status_parse(pg_str(r, i, 5), &ms);
    m->status = ms;
    m->attempt_count = (int)pg_i64(r, i, 6, 0);
    m->max_attempts = (int)pg_i64(r, i, 7, 0);
    m->created_at = pg_i64(r, i, 8, 0);
    m->next_attempt_at = pg_i64(r, i, 9, 0);
    m->claimed_at = pg_i64(r, i, 10, 0);
    m->delivered_at = pg_i64(r, i, 11, 0);
    m->last_error = pg_str(r, i, 12);
    m->last_status_code = (int)pg_i64(r, i, 13, 0);
    m->last_response_ms = pg_i64(r, i, 14, -1);
    m->payload_bytes = pg_i64(r, i, 15, 0);
    m->last_error_class = pg_str(r, i, 16);
    m->erased_at = pg_i64(r, i, 17, 0);
}

int pg_message_get(struct store *s, int64_t id, int (*fn)(void *ctx, const struct store_message *m), void *ctx,
                   int *found)
{
    struct pg_store *g = (struct pg_store *)s;
    struct store_message m;
    struct pg_params p;
    PGresult *r;
    int stop;

    *found = 0;
    pg_p_init(&p);
    pg_p_i64(&p, id);
    if (!(r = pg_exec(g, PG_GET, &p, 0, "get")))
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return 0;
    }
    *found = 1;
    msg_cols(r, 0, &m);
    stop = fn(ctx, &m);
    PQclear(r);
    return stop ? store_fail(s, STORE_E_NOMEM, "get: out of memory") : 0;
}

/* Each read below is a row converter run by pg_each, with the caller's
 * callback and context. */

struct attempt_cb {
    int (*fn)(void *ctx, const struct store_attempt *a);
    void *ctx;
};

static int attempt_row(void *c, const PGresult *r, int i)
{
    struct attempt_cb *cb = c;
    struct store_attempt a;

    a.at = pg_i64(r, i, 0, 0);
    a.response_ms = pg_i64(r, i, 1, -1);
    a.status_code = (int)pg_i64(r, i, 2, 0);
    a.error_class = pg_str(r, i, 3);
    a.detail = pg_str(r, i, 4);
    a.method = pg_str(r, i, 5);
    a.url = pg_str(r, i, 6);
    a.response = pg_str(r, i, 7);
    a.generation = (int)pg_i64(r, i, 8, 0);
    a.attempt = (int)pg_i64(r, i, 9, 0);
    return cb->fn(cb->ctx, &a);
}

int pg_message_attempts(struct store *s, const struct store_message *m, int limit,
                        int (*fn)(void *ctx, const struct store_attempt *a), void *ctx)
{
    struct attempt_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, m->id);
    pg_p_i64(&p, limit);
    return pg_each((struct pg_store *)s, PG_GET_ATTEMPTS, &p, 0, "get attempts", attempt_row, &cb);
}

struct endpoint_cb {
    int (*fn)(void *ctx, const struct store_endpoint_info *e);
    void *ctx;
};

static int endpoint_row(void *c, const PGresult *r, int i)
{
    struct endpoint_cb *cb = c;
    struct store_endpoint_info e;
    int k, q0 = 9 + PG_HEALTH_NCOLS;

    memset(&e, 0, sizeof e);
    e.id = pg_i64(r, i, 0, 0);
    e.name = pg_str(r, i, 1);
    e.url = pg_str(r, i, 2);
    e.from_config = strcmp(pg_str(r, i, 3), "config") == 0;
    e.paused = (int)pg_i64(r, i, 4, 0);
    e.event_types = pg_str(r, i, 5);
    e.nsecrets = (int)pg_i64(r, i, 6, 0);
    e.header_names = pg_str(r, i, 7);
    e.settings = pg_str(r, i, 8);
    e.h.endpoint_id = e.id;
    e.h.endpoint_url = e.url;
    pg_health_cols(r, i, 9, &e.h);
    for (k = 0; k < MSG__COUNT; k++)
        e.queue[k] = pg_i64(r, i, q0 + k, 0);
    e.pause_reason = pg_str(r, i, q0 + MSG__COUNT);
    e.oldest_waiting = pg_i64(r, i, q0 + MSG__COUNT + 1, 0);
    return cb->fn(cb->ctx, &e);
}

int pg_endpoint_list(struct store *s, int with_queue, int (*fn)(void *ctx, const struct store_endpoint_info *e),
                     void *ctx)
{
    struct endpoint_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, with_queue != 0);
    return pg_each((struct pg_store *)s, PG_EP_LIST, &p, 0, "endpoint list", endpoint_row, &cb);
}

/* slow_endpoints: the endpoint's id, name, url, then its health */
static int slow_row(void *c, const PGresult *r, int i)
{
    struct endpoint_cb *cb = c;
    struct store_endpoint_info e;

    memset(&e, 0, sizeof e);
    e.id = e.h.endpoint_id = pg_i64(r, i, 0, 0);
    e.name = pg_str(r, i, 1);
    e.url = e.h.endpoint_url = pg_str(r, i, 2);
    pg_health_cols(r, i, 3, &e.h);
    return cb->fn(cb->ctx, &e);
}

int pg_slow_endpoints(struct store *s, int64_t p95_ms, int64_t min_samples,
                      int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx)
{
    struct endpoint_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, p95_ms);
    pg_p_i64(&p, min_samples);
    return pg_each((struct pg_store *)s, PG_SLOW, &p, 0, "slow", slow_row, &cb);
}

struct dead_cb {
    int (*fn)(void *ctx, const struct store_dead_group *g);
    void *ctx;
};

static int dead_row(void *c, const PGresult *r, int i)
{
    struct dead_cb *cb = c;
    struct store_dead_group d;

    d.endpoint_id = pg_i64(r, i, 0, 0);
    d.endpoint = pg_str(r, i, 1);
    d.dead_count = pg_i64(r, i, 2, 0);
    d.primary_error_class = pg_str(r, i, 3);
    d.example_error = pg_str(r, i, 4);
    d.primary_status_code = (int)pg_i64(r, i, 5, 0);
    d.first_dead = pg_i64(r, i, 6, 0);
    d.last_dead = pg_i64(r, i, 7, 0);
    d.avg_attempts = pg_i64(r, i, 8, 0);
    return cb->fn(cb->ctx, &d);
}

int pg_dead_letters(struct store *s, int64_t since, int limit,
                    int (*fn)(void *ctx, const struct store_dead_group *g), void *ctx)
{
    struct dead_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_time(&p, since);
    pg_p_i64(&p, limit);
    return pg_each((struct pg_store *)s, PG_DEAD_LETTERS, &p, 0, "dead letters", dead_row, &cb);
}

int pg_latency_window(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                      size_t *cap, size_t *n)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;
    int i, rows;

    *n = 0;
    pg_p_init(&p);
    pg_p_i64(&p, endpoint_id);
    pg_p_time(&p, since);
    pg_p_time(&p, until);
    /* binary: up to [latency] samples integers, no text to parse */
    if (!(r = pg_exec(g, PG_LATENCY, &p, 1, "latency window")))
        return -1;
    rows = PQntuples(r);
    if ((size_t)rows > *cap) {
        int64_t *nb = realloc(*buf, (size_t)rows * sizeof *nb);
        if (!nb) {
            PQclear(r);
            return store_fail(s, STORE_E_NOMEM, "latency window: out of memory");
        }
        *buf = nb;
        *cap = (size_t)rows;
    }
    for (i = 0; i < rows; i++)
        (*buf)[(*n)++] = pg_i64(r, i, 0, 0);
    PQclear(r);
    return 0;
}

struct history_cb {
    int (*fn)(void *ctx, const struct store_history *h);
    void *ctx;
};

static int history_row(void *c, const PGresult *r, int i)
{
    struct history_cb *cb = c;
    struct store_history h;

    h.endpoint_id = pg_i64(r, i, 0, 0);
    h.bucket_at = pg_i64(r, i, 1, 0);
    h.delivered = pg_i64(r, i, 2, 0);
    h.failed = pg_i64(r, i, 3, 0);
    h.breaker_opens = pg_i64(r, i, 4, 0);
    h.has_latency = !pg_isnull(r, i, 6);
    h.p50_ms = pg_i64(r, i, 5, 0);
    h.p95_ms = pg_i64(r, i, 6, 0);
    h.p99_ms = pg_i64(r, i, 7, 0);
    h.sample_count = pg_i64(r, i, 8, 0);
    return cb->fn(cb->ctx, &h);
}

int pg_history(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx)
{
    struct history_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_time(&p, since);
    return pg_each((struct pg_store *)s, PG_HISTORY, &p, 0, "history", history_row, &cb);
}

struct class_cb {
    int (*fn)(void *ctx, const char *error_class, int64_t n);
    void *ctx;
};

static int class_row(void *c, const PGresult *r, int i)
{
    struct class_cb *cb = c;

    return cb->fn(cb->ctx, pg_str(r, i, 0), pg_i64(r, i, 1, 0));
}

int pg_dead_classes(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                    void *ctx)
{
    struct class_cb cb = {fn, ctx};
    struct pg_params p;

    pg_p_init(&p);
    pg_p_time(&p, since);
    return pg_each((struct pg_store *)s, PG_DEAD_CLASSES, &p, 0, "dead letter classes", class_row, &cb);
}

/* The rows one at a time (libpq's single-row mode): a queue of any size
 * is exported without holding it in memory. */
int pg_export_rows(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *row), void *ctx)
{
    struct pg_store *g = (struct pg_store *)s;
    PGresult *r;
    int rc = 0, stopped = 0;
    char name[16];

    snprintf(name, sizeof name, "h%d", (int)PG_EXPORT);
    if (!PQsendQueryPrepared(g->conn, name, 0, NULL, NULL, NULL, 1) || !PQsetSingleRowMode(g->conn))
        return pg_fail(g, NULL, "export");
    while ((r = PQgetResult(g->conn)) != NULL) {
        ExecStatusType t = PQresultStatus(r);
        if (t == PGRES_SINGLE_TUPLE && !stopped && rc == 0) {
            struct store_row w;
            memset(&w, 0, sizeof w);
            w.endpoint_id = pg_i64(r, 0, 0, 0);
            w.event_id = pg_str(r, 0, 1);
            w.event_type = pg_str(r, 0, 2);
            w.payload = PQgetvalue(r, 0, 3);
            w.payload_len = (size_t)PQgetlength(r, 0, 3);
            if (msg_status_parse(pg_str(r, 0, 4), &w.status) < 0)
                w.status = MSG_PENDING;   /* the CHECK constraint allows nothing else */
            w.attempt_count = (int)pg_i64(r, 0, 5, 0);
            w.max_attempts = (int)pg_i64(r, 0, 6, 0);
            w.created_at = pg_i64(r, 0, 7, 0);
            w.next_attempt_at = pg_i64(r, 0, 8, 0);
            w.last_error = pg_str(r, 0, 9);
            w.last_error_class = pg_str(r, 0, 10);
            w.last_status_code = (int)pg_i64(r, 0, 11, 0);
            w.last_response_ms = pg_i64(r, 0, 12, -1);
            w.ordering_key = pg_str(r, 0, 13);
            w.deliver_at = pg_i64(r, 0, 14, 0);
            if (w.status == MSG_IN_FLIGHT) {
                w.status = w.attempt_count > 0 ? MSG_FAILED : MSG_PENDING;
                w.next_attempt_at = now;
            }
            if (fn(ctx, &w) != 0)
                stopped = 1;   /* the rest of the result is read and dropped */
        } else if (t != PGRES_SINGLE_TUPLE && t != PGRES_TUPLES_OK && rc == 0) {
            rc = pg_fail(g, r, "export");
        }
        PQclear(r);
    }
    if (rc == 0 && stopped)
        rc = store_fail(s, STORE_E_NOMEM, "export: out of memory");
    return rc;
}

/* Searches are rare and run on the writer's connection too (requeue,
 * purge, erase by filter): not kept prepared. Newest first along the
 * primary key from `before` down, or one event id's rows from the dedup
 * key's index, or dead letters from theirs. The payload comes as text:
 * it was valid UTF-8 JSON when enqueued (an erased one is empty). */
int pg_message_scan(struct store *s, const struct store_scan *sc,
                    int (*fn)(void *ctx, const struct store_message *m, const char *payload, size_t len),
                    void *ctx)
{
#define PG_SEARCH(where)                                                                                   \
    "SELECT " PG_MSG_COLS ", CASE WHEN $4::int = 1 THEN convert_from(q.payload, 'UTF8') END "            \
    "FROM hookd_queue q LEFT JOIN endpoints e ON e.id = q.endpoint_id WHERE " where " AND q.id < $2 "    \
    "AND q.id >= $6 ORDER BY q.id DESC LIMIT $3"
    struct pg_store *g = (struct pg_store *)s;
    const char *sql = sc->event_id ? PG_SEARCH("q.event_id = $1 AND $5::text IS NULL")
                      : sc->dead_letters && sc->endpoint
                          ? PG_SEARCH("$1::text IS NULL AND q.status = 'dead_letter' AND "
                                      "q.endpoint_id = (SELECT x.id FROM endpoints x WHERE x.name = $5)")
                      : sc->dead_letters ? PG_SEARCH("$1::text IS NULL AND $5::text IS NULL AND q.status = 'dead_letter'")
                      /* a span of ids read whole: "+ 0" keeps the planner
                       * off the dedup key (endpoint first: every row of a
                       * large endpoint, then a sort) */
                      : sc->endpoint ? PG_SEARCH("$1::text IS NULL AND "
                                                 "q.endpoint_id + 0 = (SELECT x.id FROM endpoints x WHERE x.name = $5)")
                                     : PG_SEARCH("$1::text IS NULL AND $5::text IS NULL");
#undef PG_SEARCH
    struct pg_params p;
    PGresult *r;
    int i, rows, stop = 0;

    pg_p_init(&p);
    pg_p_text(&p, sc->event_id);
    pg_p_i64(&p, sc->before > 0 ? sc->before : INT64_MAX);   /* a plain bound: an index seek */
    pg_p_i64(&p, sc->limit);
    pg_p_i64(&p, sc->with_payload != 0);
    pg_p_text(&p, !sc->event_id ? sc->endpoint : NULL);
    pg_p_i64(&p, sc->floor);
    if (pg_ensure_conn(g) < 0)
        return -1;
    r = PQexecParams(g->conn, sql, p.n, NULL, p.v, p.len, p.fmt, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(g, r, "search");
        PQclear(r);
        return -1;
    }
    rows = PQntuples(r);
    for (i = 0; i < rows && !stop; i++) {
        struct store_message m;
        msg_cols(r, i, &m);
        stop = fn(ctx, &m, sc->with_payload ? PQgetvalue(r, i, PG_MSG_NCOLS) : NULL,
                  sc->with_payload ? (size_t)PQgetlength(r, i, PG_MSG_NCOLS) : 0);
    }
    PQclear(r);
    return stop < 0 ? store_fail(s, STORE_E_NOMEM, "search: out of memory") : 0;
}
