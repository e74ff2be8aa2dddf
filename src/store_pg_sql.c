/* store_pg_sql.c - the PostgreSQL backend's statements (prepared once per
 * connection by store_pg.c), and the helpers that bind their parameters
 * and read their columns. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "breaker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS PG_TS
#define MS PG_MS

/* endpoint_health's columns in the order pg_health_cols reads them,
 * coalesced for the LEFT JOINs of endpoints without a health row */
#define PG_HEALTH_COLS                                                                                    \
    "coalesce(h.state, 'closed'), coalesce(h.consecutive_failures, 0), h.failure_threshold, "           \
    MS("h.last_failure_at") ", " MS("h.last_success_at") ", " MS("h.opened_at") ", h.cooldown_ms, "     \
    MS("h.slow_since") ", h.p50_ms, h.p95_ms, h.p99_ms, coalesce(h.sample_count, 0), "                  \
    "coalesce(h.ring_next, 0), h.concurrency_limit, " MS("h.failing_since")

/* row q is not held back by an older row of its ordering key */
#define PG_KEY_FREE                                                                                     \
    "(q.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM hookd_queue o "                               \
    "WHERE o.endpoint_id = q.endpoint_id AND o.ordering_key = q.ordering_key AND o.id < q.id AND "     \
    "o.ordering_key IS NOT NULL AND o.status IN ('pending', 'failed', 'in_flight')))"

/* No other node has blocked the endpoint: its shared breaker is closed
 * without failures counted, and it is not paused. A claim of an endpoint
 * whose health row this transaction has not read under lock asks this
 * first: a node learns of another's breaker opening, or of failures that
 * make every node's admission go through the locked row (the requests in
 * flight count against the threshold), from the claim that found nothing. */
#define PG_UNBLOCKED(ep)                                                                                \
    "(NOT EXISTS (SELECT 1 FROM endpoint_health h WHERE h.endpoint_id = " ep " AND (h.state <> 'closed' "    \
    "OR h.consecutive_failures > 0)) "                                                                        \
    "AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = " ep " AND e.paused <> 0))"

/* The claim: due rows of one endpoint, oldest due first, taken with
 * SKIP LOCKED (a row another transaction holds is not waited for),
 * handed back in that order. The ids go to the UPDATE as an array: with
 * a join instead, the generic plan of the prepared statement hashes the
 * whole queue table (measured: 44 ms instead of 1 ms at 100k rows). */
#define PG_CLAIM_SQL(cond)                                                                              \
    "WITH u AS (UPDATE hookd_queue q SET status = 'in_flight', claimed_at = " TS("$2") ", claimed_by = $4 " \
    "WHERE q.id = ANY (ARRAY(SELECT q.id FROM hookd_queue q WHERE q.endpoint_id = $1 AND q.status IN "  \
    "('pending', 'failed') AND q.next_attempt_at <= " TS("$2") cond " AND ($5::int = 1 OR "            \
    PG_UNBLOCKED("$1") ") ORDER BY q.next_attempt_at, q.id "                                            \
    "LIMIT $3 FOR UPDATE SKIP LOCKED)) RETURNING q.id, q.event_id, q.payload, q.attempt_count, "        \
    "q.max_attempts, q.created_at, q.event_type, q.next_attempt_at) "                                   \
    "SELECT id, event_id, payload, attempt_count, max_attempts, " MS("created_at") ", event_type "      \
    "FROM u ORDER BY next_attempt_at, id"

const char *const pg_sql[PG__COUNT] = {
    /* ---- writer ---- */
    /* claimed_by of a waiting row: the node whose clock wrote its
     * times (the enqueue's, the claim's that settled or released it),
     * the one that moves them when its clock steps (pg_clock_step) */
    [PG_INSERT] =
        "INSERT INTO hookd_queue (endpoint_id, event_id, event_type, payload, max_attempts, created_at, "
        "next_attempt_at, ordering_key, claimed_by, deliver_at) VALUES ($1, $2, $3, $4, $5, " TS("$6") ", " TS("$8")
        ", $7, $9, " TS("$10") ") ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id",
    [PG_INSERT_CLAIMED] =
        "INSERT INTO hookd_queue (endpoint_id, event_id, event_type, payload, max_attempts, created_at, "
        "next_attempt_at, status, claimed_at, claimed_by) VALUES ($1, $2, $3, $4, $5, " TS("$6") ", " TS("$6")
        ", 'in_flight', " TS("$6") ", $7) ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id",
    [PG_FIND] = "SELECT id FROM hookd_queue WHERE endpoint_id = $1 AND event_id = $2",
    [PG_CLAIM] = PG_CLAIM_SQL(""),
    [PG_CLAIM_ORDERED] = PG_CLAIM_SQL(" AND " PG_KEY_FREE),
    /* unordered endpoints' claims in one statement: $1 the endpoints,
     * $2 their limits, $5 whether each was read under lock (else the
     * claim asks PG_UNBLOCKED); each row comes with its endpoint's number k */
    [PG_CLAIM_MANY] =
        "WITH w AS (SELECT * FROM unnest($1::bigint[], $2::int[], $5::int[]) WITH ORDINALITY AS w(ep, lim, chk, k)), "
        "c AS (SELECT w.k, x.id FROM w CROSS JOIN LATERAL (SELECT q.id FROM hookd_queue q "
        "WHERE q.endpoint_id = w.ep AND q.status IN ('pending', 'failed') AND q.next_attempt_at <= " TS("$3")
        " AND (w.chk = 1 OR " PG_UNBLOCKED("w.ep") ") "
        "ORDER BY q.next_attempt_at, q.id LIMIT w.lim FOR UPDATE SKIP LOCKED) x), "
        "u AS (UPDATE hookd_queue q SET status = 'in_flight', claimed_at = " TS("$3") ", claimed_by = $4 "
        "WHERE q.id = ANY (ARRAY(SELECT id FROM c)) RETURNING q.id, q.event_id, q.payload, q.attempt_count, "
        "q.max_attempts, q.created_at, q.event_type, q.next_attempt_at) "
        "SELECT u.id, u.event_id, u.payload, u.attempt_count, u.max_attempts, " MS("u.created_at") ", "
        "u.event_type, c.k FROM u JOIN c ON c.id = u.id ORDER BY c.k, u.next_attempt_at, u.id",
    /* the next due time of unordered endpoints, one statement; and
     * whether another node blocked each */
    [PG_NEXT_DUE_MANY] =
        "SELECT w.k, (SELECT " MS("min(q.next_attempt_at)") " FROM hookd_queue q WHERE q.endpoint_id = w.ep "
        "AND q.status IN ('pending', 'failed')), (NOT " PG_UNBLOCKED("w.ep") ")::int "
        "FROM unnest($1::bigint[]) WITH ORDINALITY AS w(ep, k)",
    [PG_NEXT_DUE] =
        "SELECT " MS("min(next_attempt_at)") " FROM hookd_queue "
        "WHERE endpoint_id = $1 AND status IN ('pending', 'failed')",
    [PG_NEXT_DUE_ORDERED] =
        "SELECT (SELECT " MS("q.next_attempt_at") " FROM hookd_queue q WHERE q.endpoint_id = $1 "
        "AND q.status IN ('pending', 'failed') AND " PG_KEY_FREE " ORDER BY q.next_attempt_at LIMIT 1), "
        "(NOT " PG_UNBLOCKED("$1") ")::int",
    /* A round's results, their attempt log rows and latency samples in
     * one statement: the rows come as arrays ($1..$17, one element per
     * result; WITH ORDINALITY numbers them). Only a row still in flight
     * and still this node's ($18) changes (one dead-lettered meanwhile
     * keeps its status; one taken over from a node declared dead is the
     * taker's now), and only
     * then are its attempt and sample written; the numbers of the rows
     * that changed come back. Two samples of one batch in the same ring
     * slot: the later one stays. */
    [PG_SETTLE] =
        "WITH v AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::bigint[], "
        "$6::text[], $7::int[], $8::int[], $9::text[], $10::bigint[], $11::int[], $12::int[], $13::text[], "
        "$14::text[], $15::text[], $16::text[], $17::int[]) WITH ORDINALITY AS v(id, status, attempts, next_at, "
        "at, last_error, last_status, response_ms, error_class, endpoint_id, sample, att_status, detail, method, "
        "url, response, slot, n)), "
        "u AS (UPDATE hookd_queue q SET status = CASE WHEN q.erased_at IS NOT NULL AND v.status = 'failed' "
        "THEN 'dead_letter' ELSE v.status END, attempt_count = v.attempts, "
        "next_attempt_at = CASE WHEN v.status = 'failed' THEN " TS("v.next_at") " ELSE q.next_attempt_at END, "
        "delivered_at = CASE WHEN v.status = 'delivered' THEN " TS("v.at") " ELSE q.delivered_at END, "
        "last_error = CASE WHEN q.erased_at IS NULL THEN v.last_error END, last_status_code = v.last_status, last_response_ms = v.response_ms, "
        "last_error_class = v.error_class FROM v WHERE q.id = v.id AND q.status = 'in_flight' AND q.claimed_by = $18 "
        "RETURNING v.n, q.generation, q.erased_at IS NOT NULL AS erased), "
        "a AS (INSERT INTO delivery_attempts (message_id, generation, attempt, endpoint_id, at, response_ms, "
        "status_code, error_class, detail, method, url, response) SELECT v.id, u.generation, v.attempts, "
        "v.endpoint_id, " TS("v.at") ", CASE WHEN v.sample = 1 THEN v.response_ms END, v.att_status, "
        "v.error_class, CASE WHEN NOT u.erased THEN v.detail END, v.method, CASE WHEN NOT u.erased THEN v.url END, "
        "CASE WHEN NOT u.erased THEN v.response END FROM v JOIN u ON u.n = v.n "
        "ON CONFLICT (message_id, generation, attempt) DO UPDATE SET at = excluded.at, response_ms = excluded.response_ms, "
        "status_code = excluded.status_code, error_class = excluded.error_class, detail = excluded.detail, "
        "method = excluded.method, url = excluded.url, response = excluded.response), "
        "l AS (INSERT INTO endpoint_latency (endpoint_id, slot, message_id, response_ms, status_code, measured_at) "
        "SELECT DISTINCT ON (v.endpoint_id, v.slot) v.endpoint_id, v.slot, v.id, v.response_ms, v.att_status, "
        TS("v.at") " FROM v JOIN u ON u.n = v.n WHERE v.sample = 1 AND v.slot >= 0 "
        "ORDER BY v.endpoint_id, v.slot, v.n DESC "
        "ON CONFLICT (endpoint_id, slot) DO UPDATE SET message_id = excluded.message_id, "
        "response_ms = excluded.response_ms, status_code = excluded.status_code, "
        "measured_at = excluded.measured_at) "
        "SELECT n FROM u",
    [PG_RELEASE] =
        "UPDATE hookd_queue SET status = CASE WHEN erased_at IS NOT NULL THEN 'dead_letter' "
        "WHEN attempt_count > 0 THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = " TS("$2") " WHERE id = $1 AND status = 'in_flight' AND claimed_by = $3",
    [PG_HEALTH_SAVE] =
        "INSERT INTO endpoint_health (endpoint_id, endpoint_url, state, consecutive_failures, failure_threshold, "
        "last_failure_at, last_success_at, opened_at, cooldown_ms, slow_since, ring_next, concurrency_limit, "
        "failing_since, probe_node) VALUES ($1, $2, $3, $4, $5, " TS("$6") ", " TS("$7") ", " TS("$8") ", $9, "
        TS("$10") ", $11, $12, " TS("$13") ", $14) ON CONFLICT (endpoint_id) DO UPDATE SET "
        "endpoint_url = excluded.endpoint_url, state = excluded.state, "
        "consecutive_failures = excluded.consecutive_failures, failure_threshold = excluded.failure_threshold, "
        "last_failure_at = excluded.last_failure_at, last_success_at = excluded.last_success_at, "
        "opened_at = excluded.opened_at, cooldown_ms = excluded.cooldown_ms, slow_since = excluded.slow_since, "
        "ring_next = excluded.ring_next, concurrency_limit = excluded.concurrency_limit, "
        "failing_since = excluded.failing_since, probe_node = excluded.probe_node",
    /* the shared breaker of several endpoints, locked in id order */
    [PG_HEALTH_LOCK] =
        "SELECT h.endpoint_id, h.endpoint_url, " PG_HEALTH_COLS ", (h.probe_node IS NOT NULL)::int, "
        "coalesce((SELECT e.paused FROM endpoints e WHERE e.id = h.endpoint_id), 0) "
        "FROM endpoint_health h WHERE h.endpoint_id = ANY ($1::bigint[]) ORDER BY h.endpoint_id FOR UPDATE",
    /* after PG_HEALTH_LOCK, in a statement of its own: a statement that
     * waited for a row lock reads other tables as they were when it began,
     * and would miss the rows the lock's previous holder just claimed.
     * From idx_queue_in_flight: what every node has sent and not settled. */
    [PG_IN_FLIGHT] =
        "SELECT endpoint_id, count(*) FROM hookd_queue WHERE endpoint_id = ANY ($1::bigint[]) "
        "AND status = 'in_flight' GROUP BY endpoint_id",
    /* every endpoint has its health row before any node locks it: a row
     * two nodes insert at once would make one wait inside its round */
    [PG_HEALTH_ENSURE] =
        "INSERT INTO endpoint_health (endpoint_id, endpoint_url) VALUES ($1, $2) ON CONFLICT (endpoint_id) DO NOTHING",
    [PG_NOTIFY] = "SELECT pg_notify($1, $2)",
    [PG_ROLLUP_SAVE] =
        "UPDATE endpoint_health SET p50_ms = $2, p95_ms = $3, p99_ms = $4, sample_count = $5, "
        "rolled_up_at = " TS("$6") " WHERE endpoint_id = $1",
    [PG_HISTORY_ADD] =
        "INSERT INTO endpoint_history AS h (endpoint_id, bucket_at, delivered, failed, breaker_opens) "
        "VALUES ($1, " TS("$2") ", $3, $4, $5) ON CONFLICT (endpoint_id, bucket_at) DO UPDATE SET "
        "delivered = h.delivered + excluded.delivered, failed = h.failed + excluded.failed, "
        "breaker_opens = h.breaker_opens + excluded.breaker_opens",
    [PG_HISTORY_LATENCY] =
        "INSERT INTO endpoint_history (endpoint_id, bucket_at, p50_ms, p95_ms, p99_ms, sample_count) "
        "VALUES ($1, " TS("$2") ", $3, $4, $5, $6) ON CONFLICT (endpoint_id, bucket_at) DO UPDATE SET "
        "p50_ms = excluded.p50_ms, p95_ms = excluded.p95_ms, p99_ms = excluded.p99_ms, "
        "sample_count = excluded.sample_count",
    /* retention in bounded chunks (ids as an array, as in the claim); the
     * attempt log goes by ON DELETE CASCADE */
    [PG_EXPIRE_DELIVERED] =
        "DELETE FROM hookd_queue WHERE id = ANY (ARRAY(SELECT id FROM hookd_queue WHERE status = 'delivered' "
        "AND delivered_at < " TS("$1") " LIMIT $2))",
    [PG_EXPIRE_DEAD] =
        "DELETE FROM hookd_queue WHERE id = ANY (ARRAY(SELECT id FROM hookd_queue WHERE status = 'dead_letter' "
        "AND created_at < " TS("$1") " LIMIT $2))",
    [PG_EXPIRE_HISTORY] =
        "DELETE FROM endpoint_history WHERE (endpoint_id, bucket_at) IN (SELECT endpoint_id, bucket_at "
        "FROM endpoint_history WHERE bucket_at < " TS("$1") " LIMIT $2)",
    [PG_EP_FIND] = "SELECT id FROM endpoints WHERE name = $1",
    /* a paused endpoint resumed ($10 said, $8 0) gets a whole
     * disable_after again: its failing clock restarts in the shared row,
     * which every node reads under lock before it judges the breaker (the
     * subquery sees the endpoint as it was before this statement) */
    [PG_EP_PUT] =
        "WITH h AS (UPDATE endpoint_health SET failing_since = " TS("$9") " "
        "WHERE $10 <> 0 AND $8 = 0 AND failing_since IS NOT NULL "
        "AND endpoint_id = (SELECT id FROM endpoints WHERE name = $1 AND paused <> 0)) "
        "INSERT INTO endpoints (name, url, secrets, headers, event_types, settings, source, paused, pause_reason, "
        "created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8 <> 0 THEN $11 END, "
        TS("$9") ", " TS("$9") ") "
        "ON CONFLICT (name) DO UPDATE SET url = excluded.url, secrets = excluded.secrets, "
        "headers = excluded.headers, event_types = excluded.event_types, settings = excluded.settings, "
        "source = excluded.source, updated_at = excluded.updated_at, "
        /* an existing endpoint's paused flag changes only when said ($10) */
        "paused = CASE WHEN $10 <> 0 THEN excluded.paused ELSE endpoints.paused END, "
        "pause_reason = CASE WHEN $10 = 0 OR excluded.paused = endpoints.paused THEN endpoints.pause_reason "
        "ELSE excluded.pause_reason END RETURNING id",
    /* resuming a paused endpoint restarts its failing clock (PG_EP_PUT) */
    [PG_EP_PAUSE] =
        "WITH h AS (UPDATE endpoint_health SET failing_since = " TS("$3") " "
        "WHERE endpoint_id = $1 AND $2 = 0 AND failing_since IS NOT NULL "
        "AND EXISTS (SELECT 1 FROM endpoints WHERE id = $1 AND paused <> 0)) "
        "UPDATE endpoints SET paused = $2, updated_at = " TS("$3") ", pause_reason = $4 WHERE id = $1",
    /* its undelivered rows become dead letters; the rest of it goes */
    [PG_EP_DELETE] =
        "WITH d AS (UPDATE hookd_queue SET status = 'dead_letter', last_error = 'endpoint deleted', "
        "last_error_class = 'endpoint_deleted', next_attempt_at = " TS("$2") " "
        "WHERE endpoint_id = $1 AND status IN ('pending', 'failed', 'in_flight') RETURNING 1), "
        "e AS (DELETE FROM endpoints WHERE id = $1), "
        "h AS (DELETE FROM endpoint_health WHERE endpoint_id = $1), "
        "r AS (DELETE FROM endpoint_latency WHERE endpoint_id = $1), "
        "y AS (DELETE FROM endpoint_history WHERE endpoint_id = $1) "
        "SELECT count(*) FROM d",
    [PG_RING_TRIM] = "DELETE FROM endpoint_latency WHERE slot >= $1",
    [PG_IMPORT] =
        "INSERT INTO hookd_queue (endpoint_id, event_id, event_type, payload, status, attempt_count, "
        "max_attempts, created_at, next_attempt_at, last_error, last_error_class, last_status_code, "
        "last_response_ms, ordering_key, deliver_at) VALUES ($1, $2, $3, $4, $5, $6, $7, " TS("$8") ", " TS("$9") ", "
        "$10, $11, $12, $13, $14, " TS("$15") ") ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    /* Nodes silent past their lease ($2 this node, $3 its name: an
     * older process of the same name is dead, it held the name's lock)
     * go, their rows in flight back to the queue (due $1), their breaker
     * probe freed; rows in flight without a node (schema 1, or a node
     * that left cleanly with results it could not record) too, and with
     * $4 = 1 (start-up) this node's own; they are due by this node's
     * clock and so its own (claimed_by: pg_clock_step). The other nodes
     * are told.
     * Health rows are locked in id order, as every round locks them. A
     * dead node's writer session that lives on (a stopped process) is
     * ended: it frees the lead lock. Returns the rows and the nodes. */
    [PG_TAKEOVER] =
        "WITH d AS (DELETE FROM hookd_node n WHERE n.id <> $2 AND (n.name = $3 OR "
        "n.heartbeat_at < now() - n.lease_ms * interval '1 millisecond') "
        "RETURNING n.id, n.backend_pid, n.backend_start), "
        "k AS (SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN d ON a.pid = d.backend_pid AND "
        "a.backend_start = d.backend_start WHERE a.usename = current_user AND a.pid <> pg_backend_pid()), "
        "q AS (UPDATE hookd_queue SET status = CASE WHEN erased_at IS NOT NULL THEN 'dead_letter' "
        "WHEN attempt_count > 0 THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = " TS("$1") ", claimed_by = $2 WHERE status = 'in_flight' AND "
        "(claimed_by IS NULL OR claimed_by IN (SELECT id FROM d) OR ($4::int = 1 AND claimed_by = $2) OR "
        "claimed_by NOT IN (SELECT id FROM hookd_node)) RETURNING 1), "
        "h AS (UPDATE endpoint_health SET probe_node = NULL WHERE endpoint_id = ANY (ARRAY(SELECT endpoint_id "
        "FROM endpoint_health WHERE probe_node IN (SELECT id FROM d) ORDER BY endpoint_id FOR UPDATE)) RETURNING 1) "
        "SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM d), (SELECT count(*) FROM h), (SELECT count(*) FROM k), "
        "CASE WHEN EXISTS (SELECT 1 FROM q) OR EXISTS (SELECT 1 FROM h) THEN pg_notify('hookd_due', '0') END",
    [PG_NODE_BEAT] =
        "UPDATE hookd_node SET heartbeat_at = now(), backend_pid = pg_backend_pid(), backend_start = "
        "(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()) WHERE id = $1",
    [PG_NODE_ADD] =
        "INSERT INTO hookd_node (name, pid, lease_ms, backend_pid, backend_start) VALUES ($1, $2, $3, "
        "pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())) RETURNING id",
    [PG_NODE_LEAVE] = "DELETE FROM hookd_node WHERE id = $1",
    [PG_NODE_COUNT] =
        "SELECT count(*) FROM hookd_node WHERE heartbeat_at >= now() - lease_ms * interval '1 millisecond'",
    [PG_LEAD] = "SELECT pg_try_advisory_lock(hashtext('hookd.lead:' || current_schema()))",

    /* ---- reader ---- */
    /* each count from its partial index; $1 = an hour ago */
    [PG_STATS] =
        "SELECT (SELECT count(*) FROM hookd_queue WHERE status IN ('pending', 'failed') AND status = 'pending'), "
        "(SELECT count(*) FROM hookd_queue WHERE status IN ('pending', 'failed') AND status = 'failed'), "
        "(SELECT count(*) FROM hookd_queue WHERE status = 'in_flight'), "
        "(SELECT count(*) FROM hookd_queue WHERE status = 'dead_letter'), "
        "CASE WHEN $2::int = 1 THEN (SELECT count(*) FROM hookd_queue WHERE status = 'delivered') END, "
        "d.n, d.avg, "
        "(SELECT count(*) FROM hookd_queue WHERE status IN ('pending', 'failed') AND status = 'failed' "
        "AND created_at >= " TS("$1") ") + (SELECT count(*) FROM hookd_queue WHERE status = 'dead_letter' "
        "AND created_at >= " TS("$1") "), "
        "(SELECT " MS("min(CASE WHEN status = 'pending' THEN greatest(created_at, next_attempt_at) "
                      "ELSE created_at END)") " FROM hookd_queue WHERE status IN ('pending', 'failed') "
        "AND NOT (status = 'pending' AND next_attempt_at > " TS("$3") ")), "
        "(SELECT count(*) FROM hookd_queue WHERE status IN ('pending', 'failed') AND status = 'pending' "
        "AND next_attempt_at > " TS("$3") ") "
        "FROM (SELECT count(*) AS n, avg(last_response_ms)::float8 AS avg FROM hookd_queue "
        "WHERE status = 'delivered' AND delivered_at >= " TS("$1") ") d",
    [PG_GET] =
        "SELECT " PG_MSG_COLS " FROM hookd_queue q LEFT JOIN endpoints e ON e.id = q.endpoint_id WHERE q.id = $1",
    [PG_GET_ATTEMPTS] =
        "SELECT " MS("at") ", response_ms, status_code, error_class, detail, method, url, response, generation, "
        "attempt FROM delivery_attempts WHERE message_id = $1 ORDER BY generation, attempt LIMIT $2",
    /* secrets are counted and header values cut off by PostgreSQL: they
     * never reach the reader's memory. $1 = 0: no queue counts. */
    [PG_EP_LIST] =
        "SELECT e.id, e.name, e.url, e.source, e.paused, e.event_types, "
        "CASE WHEN json_typeof(e.secrets::json) = 'array' THEN json_array_length(e.secrets::json) ELSE 0 END, "
        "CASE WHEN json_typeof(e.headers::json) = 'array' THEN (SELECT coalesce(json_agg(trim(CASE "
        "WHEN strpos(v, ':') > 0 THEN substr(v, 1, strpos(v, ':') - 1) ELSE '' END)), '[]')::text "
        "FROM json_array_elements_text(e.headers::json) v) ELSE '[]' END, "
        "CASE WHEN json_typeof(e.settings::json) = 'object' THEN e.settings ELSE '{}' END, "
        PG_HEALTH_COLS ", "
        "coalesce(c.pending, 0), coalesce(c.failed, 0), coalesce(c.in_flight, 0), coalesce(c.delivered, 0), "
        "coalesce(c.dead, 0), e.pause_reason, " MS("c.oldest") " "
        "FROM endpoints e LEFT JOIN endpoint_health h ON h.endpoint_id = e.id "
        "LEFT JOIN (SELECT endpoint_id, count(*) FILTER (WHERE status = 'pending') AS pending, "
        "  count(*) FILTER (WHERE status = 'failed') AS failed, "
        "  count(*) FILTER (WHERE status = 'in_flight') AS in_flight, "
        "  count(*) FILTER (WHERE status = 'delivered') AS delivered, "
        "  count(*) FILTER (WHERE status = 'dead_letter') AS dead, "
        "  min(created_at) FILTER (WHERE status IN ('pending', 'failed')) AS oldest "
        "  FROM hookd_queue WHERE $1::int = 1 GROUP BY endpoint_id) c "
        "ON c.endpoint_id = e.id ORDER BY e.name COLLATE \"C\"",
    /* the seed's analyze_dead_letters, grouped by the stable error class;
     * the most frequent value, ties to the smallest, as mode() picks it */
    [PG_DEAD_LETTERS] =
        "WITH d AS MATERIALIZED (SELECT id, endpoint_id, last_error, last_error_class, last_status_code, "
        "  created_at, attempt_count FROM hookd_queue WHERE status = 'dead_letter' AND created_at >= " TS("$1") "), "
        "agg AS (SELECT endpoint_id, count(*) AS n, min(created_at) AS first_dead, "
        "  max(created_at) AS last_dead, avg(attempt_count) AS att FROM d GROUP BY endpoint_id), "
        "err AS (SELECT endpoint_id, last_error_class AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_error_class COLLATE \"C\") AS rn FROM d "
        "  WHERE last_error_class IS NOT NULL GROUP BY endpoint_id, last_error_class), "
        "sc AS (SELECT endpoint_id, last_status_code AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_status_code) AS rn FROM d WHERE last_status_code IS NOT NULL "
        "  GROUP BY endpoint_id, last_status_code) "
        "SELECT a.endpoint_id, e.name, a.n, err.v, "
        "  (SELECT d2.last_error FROM d d2 WHERE d2.endpoint_id = a.endpoint_id "
        "   AND d2.last_error_class = err.v ORDER BY d2.id DESC LIMIT 1), "
        "  sc.v, " MS("a.first_dead") ", " MS("a.last_dead") ", CAST(round(a.att) AS bigint) "
        "FROM agg a LEFT JOIN endpoints e ON e.id = a.endpoint_id "
        "LEFT JOIN err ON err.endpoint_id = a.endpoint_id AND err.rn = 1 "
        "LEFT JOIN sc ON sc.endpoint_id = a.endpoint_id AND sc.rn = 1 "
        "ORDER BY a.n DESC, a.endpoint_id LIMIT $2",
    [PG_SLOW] =
        "SELECT e.id, e.name, e.url, " PG_HEALTH_COLS " "
        "FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
        "WHERE h.p95_ms > $1 AND h.sample_count >= $2 ORDER BY h.p95_ms DESC, e.name COLLATE \"C\"",
    [PG_LATENCY] =
        "SELECT response_ms FROM endpoint_latency WHERE endpoint_id = $1 AND measured_at >= " TS("$2") " "
        "AND measured_at < " TS("$3"),
    [PG_HISTORY] =
        "SELECT endpoint_id, " MS("bucket_at") ", delivered, failed, breaker_opens, p50_ms, p95_ms, p99_ms, "
        "sample_count FROM endpoint_history WHERE bucket_at >= " TS("$1") " ORDER BY endpoint_id, bucket_at",
    [PG_DEAD_CLASSES] =
        "SELECT coalesce(last_error_class, 'unknown') AS c, count(*) AS n FROM hookd_queue "
        "WHERE status = 'dead_letter' AND created_at >= " TS("$1") " GROUP BY 1 ORDER BY count(*) DESC, coalesce(last_error_class, 'unknown') COLLATE \"C\"",
    [PG_EXPORT] =
        "SELECT endpoint_id, event_id, event_type, payload, status, attempt_count, max_attempts, "
        MS("created_at") ", " MS("next_attempt_at") ", last_error, last_error_class, last_status_code, "
        "last_response_ms, ordering_key, " MS("deliver_at") " FROM hookd_queue "
        "WHERE status IN ('pending', 'failed', 'in_flight', 'dead_letter') AND erased_at IS NULL ORDER BY id",
};

/* ---- parameters ---- */

void pg_p_init(struct pg_params *p)
{
    p->n = 0;
}

static int slot(struct pg_params *p)
{
    /* the statements above use at most PG_MAXP: a bug, not input */
    return p->n < PG_MAXP ? p->n++ : PG_MAXP - 1;
}

void pg_p_i64(struct pg_params *p, int64_t v)
{
    int i = slot(p);

    snprintf(p->buf[i], sizeof p->buf[i], "%lld", (long long)v);
    p->v[i] = p->buf[i];
    p->len[i] = 0;
    p->fmt[i] = 0;
}

void pg_p_null(struct pg_params *p)
{
    int i = slot(p);

    p->v[i] = NULL;
    p->len[i] = 0;
    p->fmt[i] = 0;
}

void pg_p_pos(struct pg_params *p, int64_t v)
{
    if (v > 0)
        pg_p_i64(p, v);
    else
        pg_p_null(p);
}

void pg_p_time(struct pg_params *p, int64_t ms)
{
    const int64_t lo = -62135596800000LL, hi = 253402300799999LL;   /* 0001-01-01, 9999-12-31 */

    pg_p_i64(p, ms < lo ? lo : ms > hi ? hi : ms);
}

void pg_p_text(struct pg_params *p, const char *s)
{
    int i;

    if (!s || !*s) {
        pg_p_null(p);
        return;
    }
    i = slot(p);
    p->v[i] = s;
    p->len[i] = 0;
    p->fmt[i] = 0;
}

void pg_p_latency(struct pg_params *p, int has, int64_t p50, int64_t p95, int64_t p99)
{
    if (has) {
        pg_p_i64(p, p50);
        pg_p_i64(p, p95);
        pg_p_i64(p, p99);
    } else {
        pg_p_null(p);
        pg_p_null(p);
        pg_p_null(p);
    }
}

void pg_p_bytes(struct pg_params *p, const char *b, size_t n)
{
    int i = slot(p);

    p->v[i] = b ? b : "";
    p->len[i] = (int)n;
    p->fmt[i] = 1;
}

/* ---- columns ---- */

int pg_isnull(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

int64_t pg_i64(const PGresult *r, int row, int col, int64_t null_value)
{
    const unsigned char *b;
    uint64_t v = 0;
    int i, len;

    if (PQgetisnull(r, row, col))
        return null_value;
    if (PQfformat(r, col) == 0)
        return strtoll(PQgetvalue(r, row, col), NULL, 10);
    /* binary: int2, int4 or int8, big-endian, sign-extended */
    b = (const unsigned char *)PQgetvalue(r, row, col);
    len = PQgetlength(r, row, col);
    for (i = 0; i < len && i < 8; i++)
        v = (v << 8) | b[i];
    if (len == 4)
        return (int64_t)(int32_t)(uint32_t)v;
    if (len == 2)
        return (int64_t)(int16_t)(uint16_t)v;
    return (int64_t)v;
}

double pg_f64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

const char *pg_str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

int64_t pg_changed(const PGresult *r)
{
    const char *s = PQcmdTuples((PGresult *)r);

    return s && *s ? strtoll(s, NULL, 10) : 0;
}

const char *pg_health_select(void)
{
    return "SELECT h.endpoint_id, h.endpoint_url, " PG_HEALTH_COLS " FROM endpoint_health h";
}

void pg_health_cols(const PGresult *r, int row, int first, struct store_health *h)
{
    enum breaker_state bs = BREAKER_CLOSED;

    /* an unreadable state fails safe: open */
    if (breaker_state_parse(pg_str(r, row, first), &bs) < 0)
        bs = BREAKER_OPEN;
    h->state = (int)bs;
    h->consecutive_failures = pg_i64(r, row, first + 1, 0);
    h->failure_threshold = pg_i64(r, row, first + 2, 0);
    h->last_failure_at = pg_i64(r, row, first + 3, 0);
    h->last_success_at = pg_i64(r, row, first + 4, 0);
    h->opened_at = pg_i64(r, row, first + 5, 0);
    h->cooldown_ms = pg_i64(r, row, first + 6, 0);
    h->slow_since = pg_i64(r, row, first + 7, 0);
    h->has_latency = !pg_isnull(r, row, first + 9);
    h->p50_ms = pg_i64(r, row, first + 8, 0);
    h->p95_ms = pg_i64(r, row, first + 9, 0);
    h->p99_ms = pg_i64(r, row, first + 10, 0);
    h->sample_count = pg_i64(r, row, first + 11, 0);
    h->ring_next = pg_i64(r, row, first + 12, 0);
    h->concurrency_limit = pg_i64(r, row, first + 13, 0);
    h->failing_since = pg_i64(r, row, first + 14, 0);
}
