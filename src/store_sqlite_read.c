/* store_sqlite_read.c - the reader's queries on SQLite (read-only
 * connection). Nothing here reads webhook_queue.payload (only its length)
 * but export and a search asked for it (a payload condition, admin only),
 * nor the values of endpoints.secrets / endpoints.headers. */
#include "store_sqlite.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define HOUR_MS (3600 * 1000LL)

int sq_snapshot_begin(struct store *s)
{
    struct sq_store *q = (struct sq_store *)s;
    int rc = sqlite3_step(sq_stmt(q, SQ_BEGIN));

    sqlite3_reset(q->st[SQ_BEGIN]);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "snapshot");
}

void sq_snapshot_end(struct store *s)
{
    struct sq_store *q = (struct sq_store *)s;

    /* a read transaction: nothing to lose, but it must end so the writer
     * can checkpoint past our snapshot */
    if (sqlite3_step(sq_stmt(q, SQ_COMMIT)) != SQLITE_DONE && !sqlite3_get_autocommit(q->db))
        sqlite3_exec(q->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_reset(q->st[SQ_COMMIT]);
}

/* One integer from a statement (no row, or NULL: *has = 0, *out = 0). */
static int scalar(struct sq_store *q, sqlite3_stmt *st, int64_t *out, int *has, const char *what)
{
    int rc = sqlite3_step(st);

    *out = 0;
    if (has)
        *has = 0;
    if (rc == SQLITE_ROW) {
        if (has)
            *has = sqlite3_column_type(st, 0) != SQLITE_NULL;
        *out = sqlite3_column_int64(st, 0);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, what);
}

int sq_queue_stats(struct store *s, int64_t now, int with_delivered, struct store_stats *out)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st;
    int rc;

    memset(out, 0, sizeof *out);
    if (scalar(q, sq_stmt(q, SQ_CNT_PENDING), &out->n[MSG_PENDING], NULL, "stats") < 0 ||
        scalar(q, sq_stmt(q, SQ_CNT_FAILED), &out->n[MSG_FAILED], NULL, "stats") < 0 ||
        scalar(q, sq_stmt(q, SQ_CNT_IN_FLIGHT), &out->n[MSG_IN_FLIGHT], NULL, "stats") < 0 ||
        scalar(q, sq_stmt(q, SQ_CNT_DEAD), &out->n[MSG_DEAD_LETTER], NULL, "stats") < 0 ||
        (with_delivered && scalar(q, sq_stmt(q, SQ_CNT_DELIVERED), &out->n[MSG_DELIVERED], NULL, "stats") < 0))
        return -1;
    st = sq_stmt(q, SQ_DELIVERED_SINCE);
    sqlite3_bind_int64(st, 1, now - HOUR_MS);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->delivered_last_hour = sqlite3_column_int64(st, 0);
        out->has_avg = sqlite3_column_type(st, 1) != SQLITE_NULL;
        out->avg_delivery_ms = sqlite3_column_double(st, 1);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sq_fail(q, rc, "stats");
    st = sq_stmt(q, SQ_FAILED_SINCE);
    sqlite3_bind_int64(st, 1, now - HOUR_MS);
    if (scalar(q, st, &out->failed_last_hour, NULL, "stats") < 0)
        return -1;
    st = sq_stmt(q, SQ_CNT_SCHEDULED);
    sqlite3_bind_int64(st, 1, now);
    if (scalar(q, st, &out->scheduled, NULL, "stats") < 0)
        return -1;
    out->n[MSG_PENDING] -= out->scheduled;
    st = sq_stmt(q, SQ_OLDEST_PENDING);
    sqlite3_bind_int64(st, 1, now);
    return scalar(q, st, &out->oldest_pending, &out->has_oldest, "stats");
}

static const char *col_text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

int sq_message_get(struct store *s, int64_t id, int (*fn)(void *ctx, const struct store_message *m), void *ctx,
                   int *found)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_GET);
    struct store_message m;
    int rc, stop;

    *found = 0;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "get");
    }
    *found = 1;
    sq_msg_cols(st, &m);
    stop = fn(ctx, &m);
    sqlite3_reset(st);
    return stop ? store_fail(s, STORE_E_NOMEM, "get: out of memory") : 0;
}

void sq_msg_cols(sqlite3_stmt *st, struct store_message *m)
{
    enum msg_status ms = MSG_PENDING;

    memset(m, 0, sizeof *m);
    m->id = sqlite3_column_int64(st, 0);
    m->endpoint = col_text(st, 1);
    m->endpoint_id = sqlite3_column_int64(st, 2);
    m->event_id = col_text(st, 3);
    m->event_type = col_text(st, 4);
    msg_status_parse(col_text(st, 5), &ms);
    m->status = ms;
    m->attempt_count = sqlite3_column_int(st, 6);
    m->max_attempts = sqlite3_column_int(st, 7);
    m->created_at = sqlite3_column_int64(st, 8);
    m->next_attempt_at = sqlite3_column_int64(st, 9);
    m->claimed_at = sq_col_or(st, 10, 0);
    m->delivered_at = sq_col_or(st, 11, 0);
    m->last_error = col_text(st, 12);
    m->last_status_code = (int)sq_col_or(st, 13, 0);
    m->last_response_ms = sq_col_or(st, 14, -1);
    m->payload_bytes = sqlite3_column_int64(st, 15);
    m->last_error_class = col_text(st, 16);
    m->erased_at = sq_col_or(st, 17, 0);
}

#define SQ_SEARCH(index, where)                                                                           \
    "SELECT " SQ_MSG_COLS ", CASE WHEN ?4 THEN q.payload END FROM webhook_queue q " index " "            \
    "LEFT JOIN endpoints e ON e.id = q.endpoint_id WHERE " where " AND q.id < ?2 AND q.id >= ?6 "        \
    "ORDER BY q.id DESC LIMIT ?3"

/* INDEXED BY for the dead letters: with idx_queue_dead (status,
 * created_at) at hand the planner reads every dead letter and sorts */
const char *sq_search_sql(const struct store_scan *sc)
{
    if (sc->event_id)
        return SQ_SEARCH("", "q.event_id = ?1 AND ?5 IS NULL");
    if (sc->dead_letters && sc->endpoint)
        return SQ_SEARCH("INDEXED BY idx_queue_dead_ep", "?1 IS NULL AND q.status = 'dead_letter' "
                         "AND q.endpoint_id = (SELECT x.id FROM endpoints x WHERE x.name = ?5)");
    if (sc->dead_letters)
        return SQ_SEARCH("INDEXED BY idx_queue_dead_id", "?1 IS NULL AND ?5 IS NULL AND q.status = 'dead_letter'");
    /* the span of ids, read whole: +endpoint_id keeps the planner off
     * the endpoint-first partial indexes, which do not hold every row */
    if (sc->endpoint)
        return SQ_SEARCH("", "?1 IS NULL AND +q.endpoint_id = (SELECT x.id FROM endpoints x WHERE x.name = ?5)");
    return SQ_SEARCH("", "?1 IS NULL AND ?5 IS NULL");
}

/* Prepared per call: searches are rare, and the writer runs them too
 * (requeue, purge and erase by filter), whose statements are its own.
 * Newest first by rowid (a walk of the table's own B-tree from `before`
 * down), or the rows of one event id from idx_queue_event, or dead
 * letters from idx_queue_dead_id / idx_queue_dead_ep, or one endpoint's
 * rows out of a span of the table. */
int sq_message_scan(struct store *s, const struct store_scan *sc,
                    int (*fn)(void *ctx, const struct store_message *m, const char *payload, size_t len),
                    void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = NULL;
    int rc, stop = 0;

    rc = sqlite3_prepare_v2(q->db, sq_search_sql(sc), -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(q, rc, "search");
    if (sc->event_id)
        sqlite3_bind_text(st, 1, sc->event_id, -1, SQLITE_STATIC);
    if (sc->endpoint && !sc->event_id)
        sqlite3_bind_text(st, 5, sc->endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, sc->floor);
    /* a plain bound: "(?2 = 0 OR id < ?2)" would walk from the newest
     * row down on every page instead of seeking */
    sqlite3_bind_int64(st, 2, sc->before > 0 ? sc->before : INT64_MAX);
    sqlite3_bind_int64(st, 3, sc->limit);
    sqlite3_bind_int(st, 4, sc->with_payload != 0);
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_message m;
        sq_msg_cols(st, &m);
        stop = fn(ctx, &m, sc->with_payload ? (const char *)sqlite3_column_blob(st, SQ_MSG_NCOLS) : NULL,
                  sc->with_payload ? (size_t)sqlite3_column_bytes(st, SQ_MSG_NCOLS) : 0);
    }
    sqlite3_finalize(st);
    if (stop < 0)
        return store_fail(s, STORE_E_NOMEM, "search: out of memory");
    if (!stop && rc != SQLITE_DONE)
        return sq_fail(q, rc, "search");
    return 0;
}

int sq_message_attempts(struct store *s, const struct store_message *m, int limit,
                        int (*fn)(void *ctx, const struct store_attempt *a), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_GET_ATTEMPTS);
    int rc;

    sqlite3_bind_int64(st, 1, m->id);
    sqlite3_bind_int(st, 2, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_attempt a;
        a.at = sqlite3_column_int64(st, 0);
        a.response_ms = sq_col_or(st, 1, -1);
        a.status_code = (int)sq_col_or(st, 2, 0);
        a.error_class = col_text(st, 3);
        a.detail = col_text(st, 4);
        a.method = col_text(st, 5);
        a.url = col_text(st, 6);
        a.response = col_text(st, 7);
        a.generation = sqlite3_column_int(st, 8);
        a.attempt = sqlite3_column_int(st, 9);
        if (fn(ctx, &a) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "get: out of memory");
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "get attempts");
}

int sq_endpoint_list(struct store *s, int with_queue, int (*fn)(void *ctx, const struct store_endpoint_info *e),
                     void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_EP_LIST);
    int rc, i;

    sqlite3_bind_int(st, 1, with_queue != 0);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_endpoint_info e;
        memset(&e, 0, sizeof e);
        e.id = sqlite3_column_int64(st, 0);
        e.name = col_text(st, 1);
        e.url = col_text(st, 2);
        e.from_config = strcmp(col_text(st, 3), "config") == 0;
        e.paused = sqlite3_column_int(st, 4);
        e.event_types = col_text(st, 5);
        e.nsecrets = sqlite3_column_int(st, 6);
        e.header_names = col_text(st, 7);
        e.settings = col_text(st, 8);
        e.h.endpoint_id = e.id;
        e.h.endpoint_url = e.url;
        sq_health_cols(st, 9, &e.h);
        for (i = 0; i < MSG__COUNT; i++)
            e.queue[i] = sqlite3_column_int64(st, 9 + SQ_HEALTH_NCOLS + i);
        e.pause_reason = sqlite3_column_type(st, 9 + SQ_HEALTH_NCOLS + MSG__COUNT) == SQLITE_NULL
                             ? NULL
                             : col_text(st, 9 + SQ_HEALTH_NCOLS + MSG__COUNT);
        e.oldest_waiting = sq_col_or(st, 10 + SQ_HEALTH_NCOLS + MSG__COUNT, 0);
        if (fn(ctx, &e) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "endpoint list: out of memory");
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "endpoint list");
}

int sq_dead_letters(struct store *s, int64_t since, int limit,
                    int (*fn)(void *ctx, const struct store_dead_group *g), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_DEAD_LETTERS);
    int rc;

    sqlite3_bind_int64(st, 1, since);
    sqlite3_bind_int(st, 2, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_dead_group g;
        g.endpoint_id = sqlite3_column_int64(st, 0);
        g.endpoint = col_text(st, 1);
        g.dead_count = sqlite3_column_int64(st, 2);
        g.primary_error_class = col_text(st, 3);
        g.example_error = col_text(st, 4);
        g.primary_status_code = (int)sq_col_or(st, 5, 0);
        g.first_dead = sqlite3_column_int64(st, 6);
        g.last_dead = sqlite3_column_int64(st, 7);
        g.avg_attempts = sqlite3_column_int64(st, 8);
        if (fn(ctx, &g) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "dead letters: out of memory");
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "dead letters");
}

int sq_slow_endpoints(struct store *s, int64_t p95_ms, int64_t min_samples,
                      int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_SLOW);
    int rc;

    sqlite3_bind_int64(st, 1, p95_ms);
    sqlite3_bind_int64(st, 2, min_samples);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_endpoint_info e;
        memset(&e, 0, sizeof e);
        e.id = e.h.endpoint_id = sqlite3_column_int64(st, 0);
        e.name = col_text(st, 1);
        e.url = e.h.endpoint_url = col_text(st, 2);
        sq_health_cols(st, 3, &e.h);
        if (fn(ctx, &e) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "slow: out of memory");
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "slow");
}

int sq_latency_window(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                      size_t *cap, size_t *n)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_LATENCY);
    int rc;

    *n = 0;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, since);
    sqlite3_bind_int64(st, 3, until);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            int64_t *nb = realloc(*buf, nc * sizeof *nb);
            if (!nb) {
                sqlite3_reset(st);
                return store_fail(s, STORE_E_NOMEM, "latency window: out of memory");
            }
            *buf = nb;
            *cap = nc;
        }
        (*buf)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "latency window");
}

int sq_history(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_HISTORY);
    int rc;

    sqlite3_bind_int64(st, 1, since);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_history h;
        h.endpoint_id = sqlite3_column_int64(st, 0);
        h.bucket_at = sqlite3_column_int64(st, 1);
        h.delivered = sqlite3_column_int64(st, 2);
        h.failed = sqlite3_column_int64(st, 3);
        h.breaker_opens = sqlite3_column_int64(st, 4);
        h.has_latency = sqlite3_column_type(st, 6) != SQLITE_NULL;
        h.p50_ms = sq_col_or(st, 5, 0);
        h.p95_ms = sq_col_or(st, 6, 0);
        h.p99_ms = sq_col_or(st, 7, 0);
        h.sample_count = sqlite3_column_int64(st, 8);
        if (fn(ctx, &h) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "history: out of memory");
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "history");
}

int sq_dead_classes(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                    void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_DEAD_CLASSES);
    int rc;

    sqlite3_bind_int64(st, 1, since);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (fn(ctx, col_text(st, 0), sqlite3_column_int64(st, 1)) != 0) {
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "dead letter classes: out of memory");
        }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "dead letter classes");
}

int sq_export_rows(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *r), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = NULL;
    /* once per export: prepared here, not kept */
    int rc = sqlite3_prepare_v2(q->db,
                                "SELECT endpoint_id, event_id, event_type, payload, status, attempt_count, "
                                "max_attempts, created_at, next_attempt_at, last_error, last_error_class, "
                                "last_status_code, last_response_ms, ordering_key, deliver_at FROM webhook_queue "
                                /* an erased row has nothing to move */
                                "WHERE status IN ('pending', 'failed', 'in_flight', 'dead_letter') "
                                "AND erased_at IS NULL ORDER BY id",
                                -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, "export");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_row r;
        const char *status = (const char *)sqlite3_column_text(st, 4);
        memset(&r, 0, sizeof r);
        r.endpoint_id = sqlite3_column_int64(st, 0);
        r.event_id = (const char *)sqlite3_column_text(st, 1);
        r.event_type = (const char *)sqlite3_column_text(st, 2);
        r.payload = (const char *)sqlite3_column_text(st, 3);
        r.payload_len = (size_t)sqlite3_column_bytes(st, 3);
        r.attempt_count = sqlite3_column_int(st, 5);
        r.max_attempts = sqlite3_column_int(st, 6);
        r.created_at = sqlite3_column_int64(st, 7);
        r.next_attempt_at = sqlite3_column_int64(st, 8);
        r.last_error = (const char *)sqlite3_column_text(st, 9);
        r.last_error_class = (const char *)sqlite3_column_text(st, 10);
        r.last_status_code = (int)sq_col_or(st, 11, 0);
        r.last_response_ms = sq_col_or(st, 12, -1);
        r.ordering_key = (const char *)sqlite3_column_text(st, 13);
        r.deliver_at = sq_col_or(st, 14, 0);
        if (msg_status_parse(status, &r.status) < 0)
            r.status = MSG_PENDING;   /* the CHECK constraint allows nothing else */
        if (r.status == MSG_IN_FLIGHT) {
            r.status = r.attempt_count > 0 ? MSG_FAILED : MSG_PENDING;
            r.next_attempt_at = now;
        }
        if (fn(ctx, &r) != 0) {
            sqlite3_finalize(st);
            return store_fail(s, STORE_E_NOMEM, "export: out of memory");
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "export");
}
