/* queue.c - webhook_queue statements (writer connection only). */
#include "queue.h"
#include "db.h"
#include "log.h"

#include <string.h>

static const char *const queue_sql[QS__COUNT] = {
    [QS_INSERT] =
        "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, max_attempts, "
        "created_at, next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) "
        "ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    [QS_FIND] = "SELECT id FROM webhook_queue WHERE endpoint_id = ?1 AND event_id = ?2",
    /* one statement per endpoint and round: RETURNING's temporary table
     * is paid once per batch, not once per row */
    [QS_CLAIM] =
        "UPDATE webhook_queue SET status = 'in_flight', claimed_at = ?2 WHERE id IN ("
        "SELECT id FROM webhook_queue WHERE endpoint_id = ?1 AND status IN ('pending', 'failed') "
        "AND next_attempt_at <= ?2 ORDER BY next_attempt_at, id LIMIT ?3) "
        "RETURNING id, event_id, payload, attempt_count, max_attempts",
    [QS_NEXT_DUE] =
        "SELECT min(next_attempt_at) FROM webhook_queue "
        "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed')",
    [QS_DELIVERED] =
        "UPDATE webhook_queue SET status = 'delivered', delivered_at = ?5, attempt_count = ?2, "
        "last_status_code = ?3, last_response_ms = ?4, last_error = NULL WHERE id = ?1",
    [QS_FAILED] =
        "UPDATE webhook_queue SET status = 'failed', attempt_count = ?2, next_attempt_at = ?3, "
        "last_error = ?4, last_status_code = ?5, last_response_ms = ?6 WHERE id = ?1",
    [QS_DEAD] =
        "UPDATE webhook_queue SET status = 'dead_letter', attempt_count = ?2, last_error = ?3, "
        "last_status_code = ?4, last_response_ms = ?5 WHERE id = ?1",
    [QS_RELEASE] =
        "UPDATE webhook_queue SET status = CASE WHEN attempt_count > 0 THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = ?2 WHERE id = ?1 AND status = 'in_flight'",
    [QS_LATENCY] =
        "INSERT INTO endpoint_latency (endpoint_id, message_id, response_ms, status_code, "
        "error_class, measured_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [QS_HEALTH] =
        "INSERT INTO endpoint_health (endpoint_id, endpoint_url, state, consecutive_failures, "
        "failure_threshold, last_failure_at, last_success_at, opened_at, cooldown_ms) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (endpoint_id) DO UPDATE SET "
        "endpoint_url = excluded.endpoint_url, state = excluded.state, "
        "consecutive_failures = excluded.consecutive_failures, "
        "failure_threshold = excluded.failure_threshold, last_failure_at = excluded.last_failure_at, "
        "last_success_at = excluded.last_success_at, opened_at = excluded.opened_at, "
        "cooldown_ms = excluded.cooldown_ms",
    [QS_REQUEUE_ID] =
        "UPDATE webhook_queue SET status = 'pending', attempt_count = 0, next_attempt_at = ?2, "
        "last_error = NULL WHERE id = ?1 AND status IN ('dead_letter', 'failed', 'delivered')",
    [QS_REQUEUE_EP] =
        "UPDATE webhook_queue SET status = 'pending', attempt_count = 0, next_attempt_at = ?3, "
        "last_error = NULL WHERE endpoint_id = ?1 AND status = 'dead_letter' AND created_at >= ?2",
    [QS_PURGE] =
        "DELETE FROM webhook_queue WHERE status = 'dead_letter' AND created_at >= ?2 "
        "AND (?1 = 0 OR endpoint_id = ?1)",
};

int queue_open(struct queue *q, sqlite3 *db)
{
    int i;

    memset(q, 0, sizeof *q);
    q->db = db;
    for (i = 0; i < QS__COUNT; i++)
        if (db_prepare(db, &q->st[i], queue_sql[i]) < 0) {
            queue_close(q);
            return -1;
        }
    return 0;
}

void queue_close(struct queue *q)
{
    int i;

    for (i = 0; i < QS__COUNT; i++) {
        sqlite3_finalize(q->st[i]);
        q->st[i] = NULL;
    }
}

/* Run a statement that returns no rows; reset it either way. */
static int run(struct queue *q, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        q->last_rc = rc;
        log_error("db_write", "rc=%d err=\"%s\"", rc, sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static void bind_opt_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int queue_insert(struct queue *q, int64_t endpoint_id, const char *event_id, const char *event_type,
                 const char *payload, size_t len, int max_attempts, int64_t now, int64_t *id, int *dup)
{
    sqlite3_stmt *st = q->st[QS_INSERT];
    int rc;

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_text(st, 2, event_id, -1, SQLITE_STATIC);
    bind_opt_text(st, 3, event_type);
    sqlite3_bind_text(st, 4, payload, (int)len, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, max_attempts);
    sqlite3_bind_int64(st, 6, now);
    /* no RETURNING: it costs SQLite a temporary table per execution */
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        q->last_rc = rc;
        return -1;
    }
    if (sqlite3_changes(q->db) > 0) {
        *id = sqlite3_last_insert_rowid(q->db);
        *dup = 0;
        return 0;
    }
    st = q->st[QS_FIND];
    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_text(st, 2, event_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *dup = 1;
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        q->last_rc = rc;
        return -1;
    }
    return 0;
}

int queue_claim(struct queue *q, int64_t endpoint_id, int64_t now, int limit,
                int (*cb)(void *ctx, const struct queue_row *row), void *ctx)
{
    sqlite3_stmt *st = q->st[QS_CLAIM];
    struct queue_row row;
    int rc, n = 0, cb_failed = 0;

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int(st, 3, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cb_failed)
            continue;  /* the statement must run to completion */
        row.id = sqlite3_column_int64(st, 0);
        row.event_id = (const char *)sqlite3_column_text(st, 1);
        row.payload = (const char *)sqlite3_column_text(st, 2);
        row.payload_len = (size_t)sqlite3_column_bytes(st, 2);
        row.attempt_count = sqlite3_column_int(st, 3);
        row.max_attempts = sqlite3_column_int(st, 4);
        if (cb(ctx, &row) < 0)
            cb_failed = 1;
        else
            n++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        q->last_rc = rc;
        return -1;
    }
    if (cb_failed) {
        /* out of memory: the caller rolls the transaction back */
        q->last_rc = SQLITE_NOMEM;
        return -1;
    }
    return n;
}

int queue_next_due(struct queue *q, int64_t endpoint_id, int64_t *at)
{
    sqlite3_stmt *st = q->st[QS_NEXT_DUE];
    int rc;

    sqlite3_bind_int64(st, 1, endpoint_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *at = sqlite3_column_type(st, 0) == SQLITE_NULL ? INT64_MAX : sqlite3_column_int64(st, 0);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        q->last_rc = rc;
        return -1;
    }
    return 0;
}

int queue_mark_delivered(struct queue *q, int64_t id, int attempts, int status, int64_t ms, int64_t now)
{
    sqlite3_stmt *st = q->st[QS_DELIVERED];

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, attempts);
    sqlite3_bind_int(st, 3, status);
    sqlite3_bind_int64(st, 4, ms);
    sqlite3_bind_int64(st, 5, now);
    return run(q, st);
}

int queue_mark_failed(struct queue *q, int64_t id, int attempts, int64_t next_at, const char *err,
                      int status, int64_t ms)
{
    sqlite3_stmt *st = q->st[QS_FAILED];

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, attempts);
    sqlite3_bind_int64(st, 3, next_at);
    bind_opt_text(st, 4, err);
    bind_opt_int(st, 5, status);
    sqlite3_bind_int64(st, 6, ms);
    return run(q, st);
}

int queue_mark_dead(struct queue *q, int64_t id, int attempts, const char *err, int status, int64_t ms)
{
    sqlite3_stmt *st = q->st[QS_DEAD];

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, attempts);
    bind_opt_text(st, 3, err);
    bind_opt_int(st, 4, status);
    sqlite3_bind_int64(st, 5, ms);
    return run(q, st);
}

int queue_release(struct queue *q, int64_t id, int64_t next_at)
{
    sqlite3_stmt *st = q->st[QS_RELEASE];

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, next_at);
    return run(q, st);
}

int queue_latency_add(struct queue *q, int64_t endpoint_id, int64_t msg_id, int64_t ms, int status,
                      const char *errclass, int64_t now)
{
    sqlite3_stmt *st = q->st[QS_LATENCY];

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, msg_id);
    sqlite3_bind_int64(st, 3, ms);
    bind_opt_int(st, 4, status);
    bind_opt_text(st, 5, errclass);
    sqlite3_bind_int64(st, 6, now);
    return run(q, st);
}

int queue_health_save(struct queue *q, int64_t endpoint_id, const char *url, const char *state,
                      int64_t consecutive_failures, int64_t threshold, int64_t last_failure_at,
                      int64_t last_success_at, int64_t opened_at, int64_t cooldown_ms)
{
    sqlite3_stmt *st = q->st[QS_HEALTH];

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, state, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, consecutive_failures);
    sqlite3_bind_int64(st, 5, threshold);
    bind_opt_int(st, 6, last_failure_at);
    bind_opt_int(st, 7, last_success_at);
    bind_opt_int(st, 8, opened_at);
    sqlite3_bind_int64(st, 9, cooldown_ms);
    return run(q, st);
}

int queue_requeue_id(struct queue *q, int64_t id, int64_t now, int64_t *n)
{
    sqlite3_stmt *st = q->st[QS_REQUEUE_ID];

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now);
    if (run(q, st) < 0)
        return -1;
    *n = sqlite3_changes(q->db);
    return 0;
}

int queue_requeue_endpoint(struct queue *q, int64_t endpoint_id, int64_t since, int64_t now, int64_t *n)
{
    sqlite3_stmt *st = q->st[QS_REQUEUE_EP];

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, since);
    sqlite3_bind_int64(st, 3, now);
    if (run(q, st) < 0)
        return -1;
    *n = sqlite3_changes(q->db);
    return 0;
}

int queue_purge(struct queue *q, int64_t endpoint_id, int64_t since, int64_t *n)
{
    sqlite3_stmt *st = q->st[QS_PURGE];

    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, since);
    if (run(q, st) < 0)
        return -1;
    *n = sqlite3_changes(q->db);
    return 0;
}

int queue_recover(sqlite3 *db, int64_t now, int64_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db,
                           "UPDATE webhook_queue SET status = CASE WHEN attempt_count > 0 "
                           "THEN 'failed' ELSE 'pending' END, next_attempt_at = ?1 "
                           "WHERE status = 'in_flight'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, now);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return -1;
    *n = sqlite3_changes(db);
    return 0;
}
