/* store_sqlite_sql.c - the SQLite backend's statements (prepared once per
 * connection by store_sqlite.c) and the helpers that run them. */
#include "store_sqlite.h"
#include "breaker.h"

#include <stdio.h>

/* The columns of an endpoint_health row, in the order sq_health_cols
 * reads them (SQ_HEALTH_NCOLS of them); coalesced for the LEFT JOINs of
 * endpoints without one. */
#define SQ_HEALTH_COLS                                                                                       \
    "coalesce(h.state, 'closed'), coalesce(h.consecutive_failures, 0), h.failure_threshold, "              \
    "h.last_failure_at, h.last_success_at, h.opened_at, h.cooldown_ms, h.slow_since, h.p50_ms, h.p95_ms, " \
    "h.p99_ms, coalesce(h.sample_count, 0), coalesce(h.ring_next, 0), h.concurrency_limit, h.failing_since"

/* Row q is not held back by an older row of its ordering key (the
 * status test as idx_queue_order states it, so that index answers). */
#define SQ_KEY_FREE                                                                                   \
    "(q.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_queue o "                           \
    "WHERE o.endpoint_id = q.endpoint_id AND o.ordering_key = q.ordering_key AND o.id < q.id AND "   \
    "o.ordering_key IS NOT NULL AND (o.status = 'pending' OR o.status = 'failed' OR o.status = 'in_flight')))"

#define SQ_ROWS8(r) r ", " r ", " r ", " r ", " r ", " r ", " r ", " r

const char *const sq_sql[SQ__COUNT] = {
    /* ---- writer ---- */
    [SQ_INSERT] =
        "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, max_attempts, "
        "created_at, next_attempt_at, ordering_key, deliver_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?7, ?9) "
        "ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    /* an enqueue the dispatcher takes at once: no claim statement later */
    [SQ_INSERT_CLAIMED] =
        "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, max_attempts, "
        "created_at, next_attempt_at, status, claimed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 'in_flight', ?6) "
        "ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    /* SQ_INSERT_ROWS enqueues a statement, their values in SQ_INSERT's
     * and SQ_INSERT_CLAIMED's parameter order (9 and 8 a row); OR FAIL:
     * no statement journal (see SQ_CLAIM_MARK_N) */
    [SQ_INSERT_N] =
        "INSERT OR FAIL INTO webhook_queue (endpoint_id, event_id, event_type, payload, max_attempts, "
        "created_at, ordering_key, next_attempt_at, deliver_at) VALUES " SQ_ROWS8("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
        " ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    [SQ_INSERT_CLAIMED_N] =
        "INSERT OR FAIL INTO webhook_queue (endpoint_id, event_id, event_type, payload, max_attempts, "
        "created_at, next_attempt_at, claimed_at, status) VALUES " SQ_ROWS8("(?, ?, ?, ?, ?, ?, ?, ?, 'in_flight')")
        " ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    [SQ_FIND] = "SELECT id FROM webhook_queue WHERE endpoint_id = ?1 AND event_id = ?2",
    /* a claim selects its rows, then marks each by id (SQ_CLAIM_MARK).
     * UPDATE ... WHERE id IN (SELECT ... LIMIT) RETURNING built two
     * temporary tables per execution, ~80k instructions: at 100 endpoints
     * (a few rows per claim) more than the rows' own updates */
    [SQ_CLAIM] =
        "SELECT id, event_id, payload, attempt_count, max_attempts, created_at, event_type FROM webhook_queue "
        "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed') AND next_attempt_at <= ?2 "
        "ORDER BY next_attempt_at, id LIMIT ?3",
    [SQ_CLAIM_MARK] = "UPDATE webhook_queue SET status = 'in_flight', claimed_at = ?1 WHERE id = ?2",
    /* SQ_MARK_IDS rows a statement: 25.5k instructions a row against
     * 31.2k one by one; for fewer rows its IN list costs more than it saves.
     * OR FAIL: the status CHECK would ABORT, and a statement that may
     * abort after writing some of its rows keeps a statement journal (a
     * copy of every page it touches first): 2.9k instructions a row.
     * Nothing here can fail half-way but an I/O error or a full disk,
     * and the writer rolls the whole round back on any failure. */
    [SQ_CLAIM_MARK_N] =
        "UPDATE OR FAIL webhook_queue SET status = 'in_flight', claimed_at = ?1 WHERE id IN (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [SQ_NEXT_DUE] =
        "SELECT min(next_attempt_at) FROM webhook_queue "
        "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed')",
    /* an endpoint with an ordering_key: the same, skipping held-back rows */
    [SQ_CLAIM_ORDERED] =
        "SELECT id, event_id, payload, attempt_count, max_attempts, created_at, event_type FROM webhook_queue q "
        "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed') AND next_attempt_at <= ?2 AND " SQ_KEY_FREE " "
        "ORDER BY next_attempt_at, id LIMIT ?3",
    /* ORDER BY + LIMIT walks idx_queue_due and stops at the first
     * claimable row; min() with the key test would read them all */
    [SQ_NEXT_DUE_ORDERED] =
        "SELECT next_attempt_at FROM webhook_queue q "
        "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed') AND " SQ_KEY_FREE " "
        "ORDER BY next_attempt_at LIMIT 1",
    /* results change only rows still in flight: a row dead-lettered
     * meanwhile (its endpoint deleted) keeps its status */
    [SQ_DELIVERED] =
        "UPDATE webhook_queue SET status = 'delivered', delivered_at = ?5, attempt_count = ?2, "
        "last_status_code = ?3, last_response_ms = ?4, last_error = NULL, last_error_class = NULL "
        "WHERE id = ?1 AND status = 'in_flight'",
    /* a first attempt that delivers stays in its row (schema 10): the
     * attempt log, keyed by message id, would cost a page of its own */
    [SQ_DELIVERED_FIRST] =
        "UPDATE webhook_queue SET status = 'delivered', delivered_at = ?5, attempt_count = ?2, "
        "last_status_code = ?3, last_response_ms = ?4, last_error = NULL, last_error_class = NULL, "
        "first_method = ?6, first_url = CASE WHEN erased_at IS NULL THEN ?7 END, "
        "first_response = CASE WHEN erased_at IS NULL THEN ?8 END "
        "WHERE id = ?1 AND status = 'in_flight'",
    [SQ_FAILED] =
        "UPDATE webhook_queue SET status = CASE WHEN erased_at IS NULL THEN 'failed' ELSE 'dead_letter' END, "
        "attempt_count = ?2, next_attempt_at = ?3, "
        "last_error = CASE WHEN erased_at IS NULL THEN ?4 END, last_status_code = ?5, last_response_ms = ?6, last_error_class = ?7 "
        "WHERE id = ?1 AND status = 'in_flight'",
    [SQ_DEAD] =
        "UPDATE webhook_queue SET status = 'dead_letter', attempt_count = ?2, "
        "last_error = CASE WHEN erased_at IS NULL THEN ?3 END, "
        "last_status_code = ?4, last_response_ms = ?5, last_error_class = ?6 "
        "WHERE id = ?1 AND status = 'in_flight'",
    [SQ_RELEASE] =
        "UPDATE webhook_queue SET status = CASE WHEN erased_at IS NOT NULL THEN 'dead_letter' "
        "WHEN attempt_count > 0 THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = ?2 WHERE id = ?1 AND status = 'in_flight'",
    [SQ_ATTEMPT] =
        "INSERT INTO attempt_rows (message_id, generation, attempt, endpoint_id, at, response_ms, status_code, "
        "error_class, detail, method, url, response) SELECT ?1, generation, ?2, ?3, ?4, ?5, ?6, ?7, "
        "CASE WHEN erased_at IS NULL THEN ?8 END, ?9, CASE WHEN erased_at IS NULL THEN ?10 END, "
        "CASE WHEN erased_at IS NULL THEN ?11 END FROM webhook_queue WHERE id = ?1 "
        "ON CONFLICT (message_id, generation, attempt) DO UPDATE SET at = excluded.at, response_ms = excluded.response_ms, "
        "status_code = excluded.status_code, error_class = excluded.error_class, detail = excluded.detail, "
        "method = excluded.method, url = excluded.url, response = excluded.response",
    /* one B-tree write per sample, no cleanup: a fixed slot of the ring.
     * REPLACE: the row is the key and every other column, and the table
     * has no other index and no trigger, so replacing the slot's row is
     * the upsert's update, without its second pass (1.4k instructions a
     * sample once the ring is full) */
    [SQ_SAMPLE] =
        "REPLACE INTO endpoint_latency (endpoint_id, slot, message_id, response_ms, status_code, measured_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    /* SQ_SAMPLES_N samples (6 values each, in order: a later one for the
     * same slot wins, as one by one): 7.4k instructions a sample against
     * 9.3k one by one */
    [SQ_SAMPLE_N] =
        "REPLACE INTO endpoint_latency (endpoint_id, slot, message_id, response_ms, status_code, measured_at) "
        "VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?), "
        "(?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)",
    [SQ_HEALTH_SAVE] =
        "INSERT INTO endpoint_health (endpoint_id, endpoint_url, state, consecutive_failures, "
        "failure_threshold, last_failure_at, last_success_at, opened_at, cooldown_ms, slow_since, ring_next, "
        "concurrency_limit, failing_since) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) ON CONFLICT (endpoint_id) DO UPDATE SET "
        "endpoint_url = excluded.endpoint_url, state = excluded.state, "
        "consecutive_failures = excluded.consecutive_failures, "
        "failure_threshold = excluded.failure_threshold, last_failure_at = excluded.last_failure_at, "
        "last_success_at = excluded.last_success_at, opened_at = excluded.opened_at, "
        "cooldown_ms = excluded.cooldown_ms, slow_since = excluded.slow_since, ring_next = excluded.ring_next, "
        "concurrency_limit = excluded.concurrency_limit, failing_since = excluded.failing_since",
    [SQ_HISTORY_ADD] =
        "INSERT INTO endpoint_history (endpoint_id, bucket_at, delivered, failed, breaker_opens) "
        "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (endpoint_id, bucket_at) DO UPDATE SET "
        "delivered = delivered + excluded.delivered, failed = failed + excluded.failed, "
        "breaker_opens = breaker_opens + excluded.breaker_opens",
    [SQ_HISTORY_LATENCY] =
        "INSERT INTO endpoint_history (endpoint_id, bucket_at, p50_ms, p95_ms, p99_ms, sample_count) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (endpoint_id, bucket_at) DO UPDATE SET "
        "p50_ms = excluded.p50_ms, p95_ms = excluded.p95_ms, p99_ms = excluded.p99_ms, "
        "sample_count = excluded.sample_count",
    [SQ_ROLLUP_SAVE] =
        "UPDATE endpoint_health SET p50_ms = ?2, p95_ms = ?3, p99_ms = ?4, "
        "sample_count = ?5, rolled_up_at = ?6 WHERE endpoint_id = ?1",
    /* retention in bounded chunks, so the writer never stalls; a trigger
     * takes each message's attempt log with it */
    [SQ_EXPIRE_DELIVERED] =
        "DELETE FROM webhook_queue WHERE id IN (SELECT id FROM webhook_queue "
        "WHERE status = 'delivered' AND (erased_at IS NOT NULL) IN (0, 1) AND delivered_at < ?1 LIMIT ?2)",
    [SQ_EXPIRE_DEAD] =
        "DELETE FROM webhook_queue WHERE id IN (SELECT id FROM webhook_queue "
        "WHERE status = 'dead_letter' AND created_at < ?1 LIMIT ?2)",
    [SQ_EXPIRE_HISTORY] =
        "DELETE FROM endpoint_history WHERE (endpoint_id, bucket_at) IN (SELECT endpoint_id, bucket_at "
        "FROM endpoint_history WHERE bucket_at < ?1 LIMIT ?2)",
    [SQ_EP_FIND] = "SELECT id FROM endpoints WHERE name = ?1",
    [SQ_EP_PUT] =
        "INSERT INTO endpoints (name, url, secrets, headers, event_types, settings, "
        "source, paused, pause_reason, created_at, updated_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, CASE WHEN ?8 <> 0 THEN ?11 END, ?9, ?9) "
        "ON CONFLICT (name) DO UPDATE SET url = excluded.url, "
        "secrets = excluded.secrets, headers = excluded.headers, "
        "event_types = excluded.event_types, settings = excluded.settings, "
        "source = excluded.source, updated_at = excluded.updated_at, "
        /* an existing endpoint's paused flag changes only when said (?10) */
        "paused = CASE WHEN ?10 <> 0 THEN excluded.paused ELSE endpoints.paused END, "
        "pause_reason = CASE WHEN ?10 = 0 OR excluded.paused = endpoints.paused THEN endpoints.pause_reason "
        "ELSE excluded.pause_reason END "
        "RETURNING id",
    [SQ_EP_PAUSE] = "UPDATE endpoints SET paused = ?2, updated_at = ?3, pause_reason = ?4 WHERE id = ?1",
    [SQ_EP_DEAD] =
        "UPDATE webhook_queue SET status = 'dead_letter', last_error = 'endpoint deleted', "
        "last_error_class = 'endpoint_deleted', next_attempt_at = ?2 "
        /* each status from its partial index (no index leads with the
         * endpoint alone since schema 9) */
        "WHERE id IN (SELECT id FROM webhook_queue WHERE endpoint_id = ?1 AND status IN ('pending', 'failed') "
        "UNION ALL SELECT id FROM webhook_queue WHERE endpoint_id = ?1 AND status = 'in_flight')",
    [SQ_EP_DELETE] = "DELETE FROM endpoints WHERE id = ?1",
    [SQ_EP_HEALTH_DELETE] = "DELETE FROM endpoint_health WHERE endpoint_id = ?1",
    [SQ_EP_RING_DELETE] = "DELETE FROM endpoint_latency WHERE endpoint_id = ?1",
    [SQ_EP_HISTORY_DELETE] = "DELETE FROM endpoint_history WHERE endpoint_id = ?1",
    [SQ_RING_TRIM] = "DELETE FROM endpoint_latency WHERE slot >= ?1",
    [SQ_IMPORT] =
        "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, status, attempt_count, "
        "max_attempts, created_at, next_attempt_at, last_error, last_error_class, last_status_code, "
        "last_response_ms, ordering_key, deliver_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
        "?13, ?14, ?15) ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    /* the writer's transactions, prepared once: sqlite3_exec parsed and
     * compiled them for every round (~4k instructions each) */
    [SQ_TX_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_TX_COMMIT] = "COMMIT",
    [SQ_TX_ROLLBACK] = "ROLLBACK",

    /* ---- reader ---- */
    /* counts by status (schema 15): the waiting rows are idx_queue_due's,
     * the failed ones idx_queue_failed's, pending ones the difference, in
     * one statement so both counts read the same snapshot. Each scan
     * reads its index alone (covering): the status is in neither. */
    [SQ_CNT_PENDING] =
        "SELECT (SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_due WHERE status IN ('pending', 'failed')) - "
        "(SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_failed WHERE status = 'failed')",
    [SQ_CNT_FAILED] = "SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_failed WHERE status = 'failed'",
    [SQ_CNT_IN_FLIGHT] = "SELECT count(*) FROM webhook_queue WHERE status = 'in_flight'",
    [SQ_CNT_DEAD] = "SELECT count(*) FROM webhook_queue WHERE status = 'dead_letter'",
    /* covering scan of idx_queue_delivered (~50 ms per 1M rows) */
    [SQ_CNT_DELIVERED] = "SELECT count(*) FROM webhook_queue WHERE status = 'delivered'",
    /* INDEXED BY: with an index on status the planner prefers it and
     * walks every delivered row (4 s on 1M) instead of the last hour.
     * IN (0, 1): the rows erased or not, each part from ?1 on (schema 15) */
    [SQ_DELIVERED_SINCE] =
        "SELECT count(*), avg(last_response_ms) FROM webhook_queue INDEXED BY idx_queue_delivered "
        "WHERE status = 'delivered' AND (erased_at IS NOT NULL) IN (0, 1) AND delivered_at >= ?1",
    [SQ_FAILED_SINCE] =
        "SELECT (SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_failed WHERE status = 'failed' "
        "AND created_at >= ?1) + "
        "(SELECT count(*) FROM webhook_queue WHERE status = 'dead_letter' AND created_at >= ?1)",
    /* min(created_at) would look up every waiting row in the table; ids
     * grow with insertion time and created_at is the insertion time, so
     * the smallest waiting id is the oldest message. min(id) comes from
     * the covering indexes alone (8 ms vs 110 ms on 70k waiting rows). */
    /* rows delayed past now (?1) are scheduled, not waiting; a delayed
     * row that came due waits since its due time. Waiting and not
     * (pending and due later) = due by now, or failed. */
    [SQ_OLDEST_PENDING] =
        "SELECT max(created_at, CASE WHEN status = 'pending' THEN next_attempt_at ELSE 0 END) "
        "FROM webhook_queue WHERE id = (SELECT min(w) FROM ("
        "SELECT min(id) AS w FROM webhook_queue INDEXED BY idx_queue_due WHERE status IN ('pending', 'failed') "
        "AND next_attempt_at <= ?1 UNION ALL "
        "SELECT min(id) FROM webhook_queue INDEXED BY idx_queue_failed WHERE status = 'failed'))",
    [SQ_CNT_SCHEDULED] =
        "SELECT (SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_due WHERE status IN ('pending', 'failed') "
        "AND next_attempt_at > ?1) - "
        "(SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_failed WHERE status = 'failed' "
        "AND next_attempt_at > ?1)",
    [SQ_GET] =
        "SELECT " SQ_MSG_COLS " FROM webhook_queue q LEFT JOIN endpoints e ON e.id = q.endpoint_id WHERE q.id = ?1",
    [SQ_GET_ATTEMPTS] =
        "SELECT at, response_ms, status_code, error_class, detail, method, url, response, generation, attempt "
        "FROM delivery_attempts WHERE message_id = ?1 ORDER BY generation, attempt LIMIT ?2",
    /* secrets are counted and header values cut off by SQLite itself:
     * neither ever reaches the reader's memory. ?1 = 0: no queue counts
     * (the counts are one scan of the queue). */
    [SQ_EP_LIST] =
        "SELECT e.id, e.name, e.url, e.source, e.paused, e.event_types, "
        "CASE WHEN json_valid(e.secrets) AND json_type(e.secrets) = 'array' "
        "THEN json_array_length(e.secrets) ELSE 0 END, "
        "CASE WHEN json_valid(e.headers) AND json_type(e.headers) = 'array' THEN "
        "(SELECT json_group_array(trim(CASE WHEN instr(value, ':') > 0 "
        "THEN substr(value, 1, instr(value, ':') - 1) ELSE '' END)) FROM json_each(e.headers)) "
        "ELSE '[]' END, "
        "CASE WHEN json_valid(e.settings) AND json_type(e.settings) = 'object' "
        "THEN json(e.settings) ELSE '{}' END, "
        SQ_HEALTH_COLS ", "
        "coalesce(c.pending, 0), coalesce(c.failed, 0), coalesce(c.in_flight, 0), coalesce(c.delivered, 0), "
        "coalesce(c.dead, 0), e.pause_reason, c.oldest "
        "FROM endpoints e LEFT JOIN endpoint_health h ON h.endpoint_id = e.id "
        "LEFT JOIN (SELECT endpoint_id, sum(status = 'pending') AS pending, sum(status = 'failed') AS failed, "
        "  sum(status = 'in_flight') AS in_flight, sum(status = 'delivered') AS delivered, "
        "  sum(status = 'dead_letter') AS dead, "
        "  min(CASE WHEN status = 'pending' OR status = 'failed' THEN created_at END) AS oldest "
        "  FROM webhook_queue WHERE ?1 GROUP BY endpoint_id) c "
        "ON c.endpoint_id = e.id ORDER BY e.name",
    /* the seed's analyze_dead_letters, grouped by the stable error class
     * (a body excerpt in last_error would make every 503 its own group).
     * mode() = most frequent non-null value, ties to the smallest
     * (PostgreSQL's mode() WITHIN GROUP). */
    [SQ_DEAD_LETTERS] =
        "WITH d AS MATERIALIZED (SELECT id, endpoint_id, last_error, last_error_class, last_status_code, "
        "  created_at, attempt_count FROM webhook_queue WHERE status = 'dead_letter' AND created_at >= ?1), "
        "agg AS (SELECT endpoint_id, count(*) AS n, min(created_at) AS first_dead, "
        "  max(created_at) AS last_dead, avg(attempt_count) AS att FROM d GROUP BY endpoint_id), "
        "err AS (SELECT endpoint_id, last_error_class AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_error_class) AS rn FROM d WHERE last_error_class IS NOT NULL "
        "  GROUP BY endpoint_id, last_error_class), "
        "sc AS (SELECT endpoint_id, last_status_code AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_status_code) AS rn FROM d WHERE last_status_code IS NOT NULL "
        "  GROUP BY endpoint_id, last_status_code) "
        "SELECT a.endpoint_id, e.name, a.n, err.v, "
        "  (SELECT d2.last_error FROM d d2 WHERE d2.endpoint_id = a.endpoint_id "
        "   AND d2.last_error_class = err.v ORDER BY d2.id DESC LIMIT 1), "
        "  sc.v, a.first_dead, a.last_dead, CAST(round(a.att) AS INTEGER) "
        "FROM agg a LEFT JOIN endpoints e ON e.id = a.endpoint_id "
        "LEFT JOIN err ON err.endpoint_id = a.endpoint_id AND err.rn = 1 "
        "LEFT JOIN sc ON sc.endpoint_id = a.endpoint_id AND sc.rn = 1 "
        "ORDER BY a.n DESC, a.endpoint_id LIMIT ?2",
    [SQ_SLOW] =
        "SELECT e.id, e.name, e.url, " SQ_HEALTH_COLS " "
        "FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
        "WHERE h.p95_ms > ?1 AND h.sample_count >= ?2 ORDER BY h.p95_ms DESC, e.name",
    /* the endpoint's ring, at most [latency] samples rows */
    [SQ_LATENCY] = "SELECT response_ms FROM endpoint_latency WHERE endpoint_id = ?1 AND measured_at >= ?2 "
                   "AND measured_at < ?3",
    [SQ_HISTORY] =
        "SELECT endpoint_id, bucket_at, delivered, failed, breaker_opens, p50_ms, p95_ms, p99_ms, sample_count "
        "FROM endpoint_history WHERE bucket_at >= ?1 ORDER BY endpoint_id, bucket_at",
    [SQ_DEAD_CLASSES] =
        "SELECT coalesce(last_error_class, 'unknown'), count(*) FROM webhook_queue "
        "WHERE status = 'dead_letter' AND created_at >= ?1 GROUP BY 1 ORDER BY 2 DESC, 1",
    /* one snapshot for the several queries of a reply or a task */
    [SQ_BEGIN] = "BEGIN",
    [SQ_COMMIT] = "COMMIT",
};

/* ---- helpers shared by the backend's files ---- */

sqlite3_stmt *sq_stmt(struct sq_store *q, enum sq_stmt i)
{
    sqlite3_reset(q->st[i]);
    sqlite3_clear_bindings(q->st[i]);
    return q->st[i];
}

/* A full disk wrote nothing half-way: hookd answers storage_full and
 * keeps serving. An I/O error or damage is fatal (no retry: see
 * writer.c). */
enum store_errc sq_errc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return STORE_E_FULL;
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return STORE_E_IO;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return STORE_E_BUSY;
    case SQLITE_NOMEM:
        return STORE_E_NOMEM;
    default:
        return STORE_E_OTHER;
    }
}

int sq_fail(struct sq_store *q, int rc, const char *what)
{
    return store_fail(&q->base, sq_errc(rc), "%s: %s (rc=%d)", what, sqlite3_errstr(rc), rc);
}

int sq_exec_stmt(struct sq_store *q, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);

    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sq_fail(q, rc, what);
    return 0;
}

const char *sq_health_select(void)
{
    return "SELECT h.endpoint_id, h.endpoint_url, " SQ_HEALTH_COLS " FROM endpoint_health h";
}

void sq_health_cols(sqlite3_stmt *st, int first, struct store_health *h)
{
    enum breaker_state bs = BREAKER_CLOSED;

    /* an unreadable state fails safe: open */
    if (breaker_state_parse((const char *)sqlite3_column_text(st, first), &bs) < 0)
        bs = BREAKER_OPEN;
    h->state = (int)bs;
    h->consecutive_failures = sqlite3_column_int64(st, first + 1);
    h->failure_threshold = sq_col_or(st, first + 2, 0);
    h->last_failure_at = sq_col_or(st, first + 3, 0);
    h->last_success_at = sq_col_or(st, first + 4, 0);
    h->opened_at = sq_col_or(st, first + 5, 0);
    h->cooldown_ms = sq_col_or(st, first + 6, 0);
    h->slow_since = sq_col_or(st, first + 7, 0);
    h->has_latency = sqlite3_column_type(st, first + 9) != SQLITE_NULL;
    h->p50_ms = sq_col_or(st, first + 8, 0);
    h->p95_ms = sq_col_or(st, first + 9, 0);
    h->p99_ms = sq_col_or(st, first + 10, 0);
    h->sample_count = sqlite3_column_int64(st, first + 11);
    h->ring_next = sqlite3_column_int64(st, first + 12);
    h->concurrency_limit = sq_col_or(st, first + 13, 0);
    h->failing_since = sq_col_or(st, first + 14, 0);
}

void sq_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

void sq_bind_pos_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int64_t sq_col_or(sqlite3_stmt *st, int col, int64_t null_value)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? null_value : sqlite3_column_int64(st, col);
}

