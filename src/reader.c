/* reader.c - the reader thread: answers the query ops on its own read-only
 * connection and runs the read-heavy periodic work (percentile rollup,
 * health summary, metrics file) so none of it holds up the writer.
 *
 * Nothing here reads webhook_queue.payload (only its length) or the
 * values of endpoints.secrets / endpoints.headers: SQLite counts the
 * secrets and cuts the header names, so those values never reach C. */
#include "reader.h"
#include "breaker.h"
#include "db.h"
#include "log.h"
#include "metrics.h"
#include "outcome.h"
#include "percentile.h"
#include "util.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR_MS (3600 * 1000LL)
#define GET_ATTEMPTS_MAX 100
#define DEAD_LETTERS_MAX 20
/* attempts are looked up from the message's creation on; allow for the
 * wall clock having stepped back a little between enqueue and attempt */
#define CLOCK_SLACK_MS 60000

enum rstmt {
    /* counts by status. "status IN (...) AND status = x" is deliberate:
     * SQLite only uses the partial index idx_queue_next when the WHERE
     * clause repeats its IN list; "status = 'pending'" alone scans the
     * table (measured: 0.8 s vs 7 ms on 1M rows). */
    RS_CNT_PENDING,
    RS_CNT_FAILED,
    RS_CNT_IN_FLIGHT,
    RS_CNT_DEAD,
    RS_CNT_DELIVERED,
    RS_DELIVERED_SINCE,
    RS_FAILED_SINCE,
    RS_OLDEST_PENDING,
    RS_GET,
    RS_GET_ATTEMPTS,
    RS_EP_LIST,
    RS_EP_QUEUE,
    RS_DEAD_LETTERS,
    RS_SLOW,
    RS_EP_IDS,
    RS_LATENCY,
    RS_EP_HEALTH,
    RS_BEGIN,
    RS_COMMIT,
    RS__COUNT
};

static const char *const reader_sql[RS__COUNT] = {
    [RS_CNT_PENDING] =
        "SELECT count(*) FROM webhook_queue WHERE status IN ('pending', 'failed') AND status = 'pending'",
    [RS_CNT_FAILED] =
        "SELECT count(*) FROM webhook_queue WHERE status IN ('pending', 'failed') AND status = 'failed'",
    /* no index covers in_flight in schema v1: a table scan (see the
     * proposed idx_queue_status_ep); in_flight rows are few, the scan is not */
    [RS_CNT_IN_FLIGHT] = "SELECT count(*) FROM webhook_queue WHERE status = 'in_flight'",
    [RS_CNT_DEAD] = "SELECT count(*) FROM webhook_queue WHERE status = 'dead_letter'",
    /* covering scan of idx_queue_delivered (~50 ms per 1M rows) */
    [RS_CNT_DELIVERED] = "SELECT count(*) FROM webhook_queue WHERE status = 'delivered'",
    /* INDEXED BY: with an index on status the planner prefers it and
     * walks every delivered row (4 s on 1M) instead of the last hour */
    [RS_DELIVERED_SINCE] =
        "SELECT count(*), avg(last_response_ms) FROM webhook_queue INDEXED BY idx_queue_delivered "
        "WHERE status = 'delivered' AND delivered_at >= ?1",
    [RS_FAILED_SINCE] =
        "SELECT (SELECT count(*) FROM webhook_queue WHERE status IN ('pending', 'failed') "
        "AND status = 'failed' AND created_at >= ?1) + "
        "(SELECT count(*) FROM webhook_queue WHERE status = 'dead_letter' AND created_at >= ?1)",
    /* min(created_at) would look up every waiting row in the table; ids
     * grow with insertion time and created_at is the insertion time, so
     * the smallest waiting id is the oldest message. min(id) comes from
     * the covering index alone (8 ms vs 110 ms on 70k waiting rows). */
    [RS_OLDEST_PENDING] =
        "SELECT created_at FROM webhook_queue WHERE id = (SELECT min(id) FROM webhook_queue "
        "INDEXED BY idx_queue_next WHERE status IN ('pending', 'failed'))",
    [RS_GET] =
        "SELECT q.id, e.name, q.endpoint_id, q.event_id, q.event_type, q.status, q.attempt_count, "
        "q.max_attempts, q.created_at, q.next_attempt_at, q.claimed_at, q.delivered_at, q.last_error, "
        "q.last_status_code, q.last_response_ms, length(CAST(q.payload AS BLOB)) "
        "FROM webhook_queue q LEFT JOIN endpoints e ON e.id = q.endpoint_id WHERE q.id = ?1",
    /* message_id has no index; endpoint and time bound the search to
     * idx_latency_endpoint (7 ms vs a 45 ms scan of 300k attempts) */
    [RS_GET_ATTEMPTS] =
        "SELECT measured_at, response_ms, status_code, error_class FROM endpoint_latency "
        "WHERE endpoint_id = ?2 AND measured_at >= ?3 AND message_id = ?1 ORDER BY id LIMIT ?4",
    [RS_EP_LIST] =
        "SELECT e.id, e.name, e.url, e.source, e.paused, e.event_types, "
        "CASE WHEN json_valid(e.secrets) AND json_type(e.secrets) = 'array' "
        "THEN json_array_length(e.secrets) ELSE 0 END, "
        "CASE WHEN json_valid(e.headers) AND json_type(e.headers) = 'array' THEN "
        "(SELECT json_group_array(trim(CASE WHEN instr(value, ':') > 0 "
        "THEN substr(value, 1, instr(value, ':') - 1) ELSE '' END)) FROM json_each(e.headers)) "
        "ELSE '[]' END, "
        "CASE WHEN json_valid(e.settings) AND json_type(e.settings) = 'object' "
        "THEN json(e.settings) ELSE '{}' END, "
        "coalesce(h.state, 'closed'), coalesce(h.consecutive_failures, 0), h.p50_ms, h.p95_ms, h.p99_ms, "
        "coalesce(h.sample_count, 0) "
        "FROM endpoints e LEFT JOIN endpoint_health h ON h.endpoint_id = e.id ORDER BY e.name",
    /* one pass; status first so an index on (status, endpoint_id) is
     * walked in order without a temp b-tree */
    [RS_EP_QUEUE] =
        "SELECT status, endpoint_id, count(*) FROM webhook_queue GROUP BY status, endpoint_id",
    /* the seed's analyze_dead_letters. mode() = most frequent non-null
     * value, ties to the smallest (PostgreSQL's mode() WITHIN GROUP). */
    [RS_DEAD_LETTERS] =
        "WITH d AS MATERIALIZED (SELECT endpoint_id, last_error, last_status_code, created_at, attempt_count "
        "  FROM webhook_queue WHERE status = 'dead_letter' AND created_at >= ?1), "
        "agg AS (SELECT endpoint_id, count(*) AS n, min(created_at) AS first_dead, "
        "  max(created_at) AS last_dead, avg(attempt_count) AS att FROM d GROUP BY endpoint_id), "
        "err AS (SELECT endpoint_id, last_error AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_error) AS rn FROM d WHERE last_error IS NOT NULL "
        "  GROUP BY endpoint_id, last_error), "
        "sc AS (SELECT endpoint_id, last_status_code AS v, row_number() OVER (PARTITION BY endpoint_id "
        "  ORDER BY count(*) DESC, last_status_code) AS rn FROM d WHERE last_status_code IS NOT NULL "
        "  GROUP BY endpoint_id, last_status_code) "
        "SELECT e.name, a.n, err.v, sc.v, a.first_dead, a.last_dead, CAST(round(a.att) AS INTEGER) "
        "FROM agg a LEFT JOIN endpoints e ON e.id = a.endpoint_id "
        "LEFT JOIN err ON err.endpoint_id = a.endpoint_id AND err.rn = 1 "
        "LEFT JOIN sc ON sc.endpoint_id = a.endpoint_id AND sc.rn = 1 "
        "ORDER BY a.n DESC, a.endpoint_id LIMIT ?2",
    [RS_SLOW] =
        "SELECT e.name, h.p50_ms, h.p95_ms, h.p99_ms, h.sample_count, h.state "
        "FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
        "WHERE h.p95_ms > ?1 AND h.sample_count >= ?2 ORDER BY h.p95_ms DESC, e.name",
    [RS_EP_IDS] = "SELECT id FROM endpoints ORDER BY id",
    [RS_LATENCY] = "SELECT response_ms FROM endpoint_latency WHERE endpoint_id = ?1 AND measured_at >= ?2",
    [RS_EP_HEALTH] =
        "SELECT e.name, coalesce(h.state, 'closed'), h.p50_ms, h.p95_ms, h.p99_ms, coalesce(h.sample_count, 0) "
        "FROM endpoints e LEFT JOIN endpoint_health h ON h.endpoint_id = e.id ORDER BY e.name",
    /* one snapshot for the several queries of a reply or a task */
    [RS_BEGIN] = "BEGIN",
    [RS_COMMIT] = "COMMIT",
};

struct reader {
    const struct config *c;
    struct writer *w;
    sqlite3 *db;
    sqlite3_stmt *st[RS__COUNT];
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* shared, under mu */
    struct req *inbox, **inbox_tail;
    int stop;
    int want_rollup, want_summary, want_metrics;
    int64_t rollup_window_ms;
    int64_t summary_now_ms;
    char *metrics_path;
    /* reader thread only */
    int64_t *lat;          /* rollup scratch, reused between runs */
    size_t lat_cap;
    int have_prev_dead;
    int64_t prev_dead;
};

/* Delivery counters, written by the writer thread, read here. Relaxed
 * atomics: each counter is exact; a scrape may see one attempt counted in
 * one series and not yet in another, which Prometheus tolerates. */
static uint64_t reader_outcomes[METRICS_NOUTCOMES];
static uint64_t reader_buckets[METRICS_NBUCKETS + 1];
static uint64_t reader_sum_ms;

/* Queue summary shared by stats, summary and metrics. */
struct qstats {
    int64_t n[MQ__COUNT];
    int64_t delivered_last_hour, failed_last_hour;
    int has_avg;
    double avg_delivery_ms;
    int has_oldest;
    int64_t oldest_pending, oldest_age_ms;
};

void reader_count_outcome(int outcome, int64_t response_ms)
{
    if (outcome < 0 || outcome >= METRICS_NOUTCOMES)
        return;
    if (response_ms < 0)
        response_ms = 0;
    __atomic_fetch_add(&reader_outcomes[outcome], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&reader_buckets[metrics_bucket_index(response_ms)], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&reader_sum_ms, (uint64_t)response_ms, __ATOMIC_RELAXED);
}

/* ---- statement helpers ---- */

static sqlite3_stmt *stmt(struct reader *rd, enum rstmt i)
{
    sqlite3_reset(rd->st[i]);
    sqlite3_clear_bindings(rd->st[i]);
    return rd->st[i];
}

/* Run a statement that yields one integer (NULL -> *has = 0). */
static int scalar(struct reader *rd, sqlite3_stmt *st, int64_t *out, int *has)
{
    int rc = sqlite3_step(st);

    if (rc != SQLITE_ROW) {
        *out = 0;
        if (has)
            *has = 0;
        sqlite3_reset(st);
        /* no row is a valid "nothing" for the subquery forms */
        return rc == SQLITE_DONE ? 0 : -1;
    }
    if (has)
        *has = sqlite3_column_type(st, 0) != SQLITE_NULL;
    *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return 0;
}

static int count_of(struct reader *rd, enum rstmt i, int64_t *out)
{
    return scalar(rd, stmt(rd, i), out, NULL);
}

static int snap_begin(struct reader *rd)
{
    return sqlite3_step(stmt(rd, RS_BEGIN)) == SQLITE_DONE ? 0 : -1;
}

static void snap_end(struct reader *rd)
{
    /* a read transaction: nothing to lose, but it must end so the writer
     * can checkpoint past our snapshot */
    if (sqlite3_step(stmt(rd, RS_COMMIT)) != SQLITE_DONE && !sqlite3_get_autocommit(rd->db))
        sqlite3_exec(rd->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_reset(rd->st[RS_COMMIT]);
}

static int put_int_or_null(struct buf *b, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return buf_puts(b, "null");
    return buf_printf(b, "%lld", (long long)sqlite3_column_int64(st, col));
}

static int put_str_or_null(struct buf *b, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return buf_puts(b, "null");
    return buf_json_str(b, (const char *)sqlite3_column_text(st, col));
}

static void reply_db_error(struct reader *rd, struct req *r)
{
    int rc = sqlite3_extended_errcode(rd->db);

    req_error(r, db_error_code(rc), "storage error: %s", sqlite3_errmsg(rd->db));
}

/* ---- queue summary ---- */

/* The delivered total is a scan of idx_queue_delivered (~50 ms per 1M
 * rows): only metrics ask for it. */
static int qstats_read(struct reader *rd, int64_t now, int want_delivered, struct qstats *q)
{
    sqlite3_stmt *st;
    int64_t oldest;
    int has;

    memset(q, 0, sizeof *q);
    if (count_of(rd, RS_CNT_PENDING, &q->n[MQ_PENDING]) < 0 || count_of(rd, RS_CNT_FAILED, &q->n[MQ_FAILED]) < 0 ||
        count_of(rd, RS_CNT_IN_FLIGHT, &q->n[MQ_IN_FLIGHT]) < 0 ||
        count_of(rd, RS_CNT_DEAD, &q->n[MQ_DEAD_LETTER]) < 0 ||
        (want_delivered && count_of(rd, RS_CNT_DELIVERED, &q->n[MQ_DELIVERED]) < 0))
        return -1;

    st = stmt(rd, RS_DELIVERED_SINCE);
    sqlite3_bind_int64(st, 1, now - HOUR_MS);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        return -1;
    }
    q->delivered_last_hour = sqlite3_column_int64(st, 0);
    q->has_avg = sqlite3_column_type(st, 1) != SQLITE_NULL;
    q->avg_delivery_ms = sqlite3_column_double(st, 1);
    sqlite3_reset(st);

    st = stmt(rd, RS_FAILED_SINCE);
    sqlite3_bind_int64(st, 1, now - HOUR_MS);
    if (scalar(rd, st, &q->failed_last_hour, NULL) < 0)
        return -1;

    if (scalar(rd, stmt(rd, RS_OLDEST_PENDING), &oldest, &has) < 0)
        return -1;
    if (has) {
        q->has_oldest = 1;
        q->oldest_pending = oldest;
        q->oldest_age_ms = now > oldest ? now - oldest : 0;
    }
    return 0;
}

/* ---- replies ---- */

static int do_get(struct reader *rd, struct req *r)
{
    struct buf *b = &r->reply;
    sqlite3_stmt *st = stmt(rd, RS_GET), *at;
    int rc, n = 0;

    sqlite3_bind_int64(st, 1, r->p.id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        req_error(r, PERR_NOT_FOUND, "no message %lld", (long long)r->p.id);
        return 0;
    }
    if (rc != SQLITE_ROW)
        return -1;
    if (buf_printf(b, "{\"ok\":true,\"message\":{\"id\":%lld,\"endpoint\":", (long long)sqlite3_column_int64(st, 0)) < 0 ||
        put_str_or_null(b, st, 1) < 0 ||
        buf_printf(b, ",\"endpoint_id\":%lld,\"event_id\":", (long long)sqlite3_column_int64(st, 2)) < 0 ||
        put_str_or_null(b, st, 3) < 0 || buf_puts(b, ",\"event_type\":") < 0 || put_str_or_null(b, st, 4) < 0 ||
        buf_puts(b, ",\"status\":") < 0 || put_str_or_null(b, st, 5) < 0 ||
        buf_printf(b, ",\"attempt_count\":%lld,\"max_attempts\":%lld,\"created_at\":%lld,\"next_attempt_at\":%lld",
                   (long long)sqlite3_column_int64(st, 6), (long long)sqlite3_column_int64(st, 7),
                   (long long)sqlite3_column_int64(st, 8), (long long)sqlite3_column_int64(st, 9)) < 0 ||
        buf_puts(b, ",\"claimed_at\":") < 0 || put_int_or_null(b, st, 10) < 0 ||
        buf_puts(b, ",\"delivered_at\":") < 0 || put_int_or_null(b, st, 11) < 0 ||
        buf_puts(b, ",\"last_error\":") < 0 || put_str_or_null(b, st, 12) < 0 ||
        buf_puts(b, ",\"last_status_code\":") < 0 || put_int_or_null(b, st, 13) < 0 ||
        buf_puts(b, ",\"last_response_ms\":") < 0 || put_int_or_null(b, st, 14) < 0 ||
        buf_printf(b, ",\"payload_bytes\":%lld,\"attempts\":[", (long long)sqlite3_column_int64(st, 15)) < 0)
        goto oom;

    at = stmt(rd, RS_GET_ATTEMPTS);
    sqlite3_bind_int64(at, 1, r->p.id);
    sqlite3_bind_int64(at, 2, sqlite3_column_int64(st, 2));
    sqlite3_bind_int64(at, 3, sqlite3_column_int64(st, 8) - CLOCK_SLACK_MS);
    sqlite3_bind_int(at, 4, GET_ATTEMPTS_MAX);
    while ((rc = sqlite3_step(at)) == SQLITE_ROW) {
        const char *ec = (const char *)sqlite3_column_text(at, 3);
        if (buf_printf(b, "%s{\"at\":%lld,\"response_ms\":%lld,\"status_code\":", n++ ? "," : "",
                       (long long)sqlite3_column_int64(at, 0), (long long)sqlite3_column_int64(at, 1)) < 0 ||
            put_int_or_null(b, at, 2) < 0 || buf_puts(b, ",\"error_class\":") < 0 ||
            buf_json_str(b, ec ? ec : "") < 0 || buf_puts(b, "}") < 0) {
            sqlite3_reset(at);
            goto oom;
        }
    }
    sqlite3_reset(at);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (buf_puts(b, "]}}\n") < 0)
        goto oom;
    return 0;
oom:
    sqlite3_reset(st);
    req_error(r, PERR_INTERNAL, "out of memory");
    return 0;
}

static int do_stats(struct reader *rd, struct req *r)
{
    struct buf *b = &r->reply;
    struct qstats q;
    int64_t now = util_now_ms();
    int rc;

    if (snap_begin(rd) < 0)
        return -1;
    rc = qstats_read(rd, now, 0, &q);
    if (rc < 0)
        reply_db_error(rd, r);  /* before COMMIT replaces the message */
    snap_end(rd);
    if (rc < 0)
        return 0;
    if (buf_printf(b,
                   "{\"ok\":true,\"stats\":{\"pending\":%lld,\"awaiting_retry\":%lld,\"in_flight\":%lld,"
                   "\"dead_letter\":%lld,\"delivered_last_hour\":%lld,\"failed_last_hour\":%lld",
                   (long long)q.n[MQ_PENDING], (long long)q.n[MQ_FAILED], (long long)q.n[MQ_IN_FLIGHT],
                   (long long)q.n[MQ_DEAD_LETTER], (long long)q.delivered_last_hour,
                   (long long)q.failed_last_hour) < 0)
        goto oom;
    if (q.has_oldest
            ? buf_printf(b, ",\"oldest_pending\":%lld,\"oldest_pending_age_ms\":%lld", (long long)q.oldest_pending,
                         (long long)q.oldest_age_ms) < 0
            : buf_puts(b, ",\"oldest_pending\":null,\"oldest_pending_age_ms\":null") < 0)
        goto oom;
    if (q.has_avg ? buf_printf(b, ",\"avg_delivery_ms_last_hour\":%.1f}}\n", q.avg_delivery_ms) < 0
                  : buf_puts(b, ",\"avg_delivery_ms_last_hour\":null}}\n") < 0)
        goto oom;
    return 0;
oom:
    req_error(r, PERR_INTERNAL, "out of memory");
    return 0;
}

/* Queue counts of one endpoint, gathered before the endpoint rows. */
struct epq {
    int64_t id;
    int64_t n[MQ__COUNT];
};

static int epq_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct epq *)a)->id, y = ((const struct epq *)b)->id;
    return (x > y) - (x < y);
}

static int status_index(const char *s)
{
    static const char *const names[MQ__COUNT] = {"pending", "failed", "in_flight", "delivered", "dead_letter"};
    int i;

    for (i = 0; s && i < MQ__COUNT; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int epq_load(struct reader *rd, struct epq **out, size_t *nout)
{
    sqlite3_stmt *st = stmt(rd, RS_EP_QUEUE);
    struct epq *v = NULL;
    size_t n = 0, cap = 0, i, k;
    int rc;

    /* one entry per (status, endpoint) row, then sort by id and merge:
     * at most five rows per endpoint, so this stays small */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int si = status_index((const char *)sqlite3_column_text(st, 0));
        if (si < 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct epq *nv = realloc(v, nc * sizeof *v);
            if (!nv)
                goto fail;
            v = nv;
            cap = nc;
        }
        memset(&v[n], 0, sizeof v[n]);
        v[n].id = sqlite3_column_int64(st, 1);
        v[n].n[si] = sqlite3_column_int64(st, 2);
        n++;
    }
    if (rc != SQLITE_DONE)
        goto fail;
    sqlite3_reset(st);
    if (n)
        qsort(v, n, sizeof *v, epq_cmp);
    for (i = 0, k = 0; i < n; i++) {
        int si;
        if (k && v[k - 1].id == v[i].id) {
            for (si = 0; si < MQ__COUNT; si++)
                v[k - 1].n[si] += v[i].n[si];
        } else {
            if (k != i)
                v[k] = v[i];
            k++;
        }
    }
    *out = v;
    *nout = k;
    return 0;
fail:
    sqlite3_reset(st);
    free(v);
    return -1;
}

static int do_endpoint_list(struct reader *rd, struct req *r)
{
    struct buf *b = &r->reply;
    sqlite3_stmt *st;
    struct epq *q = NULL, key;
    size_t nq = 0;
    int rc = SQLITE_DONE, n = 0, oom = 0;

    if (snap_begin(rd) < 0)
        return -1;
    if (epq_load(rd, &q, &nq) < 0) {
        rc = SQLITE_ERROR;
        goto out;
    }
    oom = 1;
    if (buf_puts(b, "{\"ok\":true,\"endpoints\":[") < 0)
        goto out;
    st = stmt(rd, RS_EP_LIST);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        static const struct epq zero;
        const struct epq *c;
        key.id = sqlite3_column_int64(st, 0);
        c = nq ? bsearch(&key, q, nq, sizeof *q, epq_cmp) : NULL;
        if (!c)
            c = &zero;
        /* columns 7 (header names) and 8 (settings) are JSON that SQLite
         * itself produced or validated: copied as they are */
        if (buf_printf(b, "%s{\"id\":%lld,\"name\":", n++ ? "," : "", (long long)key.id) < 0 ||
            put_str_or_null(b, st, 1) < 0 || buf_puts(b, ",\"url\":") < 0 || put_str_or_null(b, st, 2) < 0 ||
            buf_puts(b, ",\"source\":") < 0 || put_str_or_null(b, st, 3) < 0 ||
            buf_printf(b, ",\"paused\":%s,\"event_types\":", sqlite3_column_int(st, 4) ? "true" : "false") < 0 ||
            put_str_or_null(b, st, 5) < 0 ||
            buf_printf(b, ",\"secrets\":%lld,\"headers\":%s,\"settings\":%s,\"state\":",
                       (long long)sqlite3_column_int64(st, 6), (const char *)sqlite3_column_text(st, 7),
                       (const char *)sqlite3_column_text(st, 8)) < 0 ||
            put_str_or_null(b, st, 9) < 0 ||
            buf_printf(b, ",\"consecutive_failures\":%lld,\"p50_ms\":", (long long)sqlite3_column_int64(st, 10)) < 0 ||
            put_int_or_null(b, st, 11) < 0 || buf_puts(b, ",\"p95_ms\":") < 0 || put_int_or_null(b, st, 12) < 0 ||
            buf_puts(b, ",\"p99_ms\":") < 0 || put_int_or_null(b, st, 13) < 0 ||
            buf_printf(b,
                       ",\"sample_count\":%lld,\"queue\":{\"pending\":%lld,\"failed\":%lld,\"in_flight\":%lld,"
                       "\"delivered\":%lld,\"dead_letter\":%lld}}",
                       (long long)sqlite3_column_int64(st, 14), (long long)c->n[MQ_PENDING],
                       (long long)c->n[MQ_FAILED], (long long)c->n[MQ_IN_FLIGHT], (long long)c->n[MQ_DELIVERED],
                       (long long)c->n[MQ_DEAD_LETTER]) < 0)
            break;
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE && buf_puts(b, "]}\n") == 0)
        oom = 0;
out:
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        reply_db_error(rd, r);  /* before COMMIT replaces the message */
    else if (oom)
        req_error(r, PERR_INTERNAL, "out of memory");
    snap_end(rd);
    free(q);
    return 0;
}

static int do_dead_letters(struct reader *rd, struct req *r)
{
    struct buf *b = &r->reply;
    sqlite3_stmt *st = stmt(rd, RS_DEAD_LETTERS);
    int rc, n = 0;

    sqlite3_bind_int64(st, 1, util_now_ms() - r->p.hours * HOUR_MS);
    sqlite3_bind_int(st, 2, DEAD_LETTERS_MAX);
    if (buf_printf(b, "{\"ok\":true,\"hours\":%lld,\"endpoints\":[", (long long)r->p.hours) < 0)
        goto oom;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (buf_puts(b, n++ ? ",{\"endpoint\":" : "{\"endpoint\":") < 0 || put_str_or_null(b, st, 0) < 0 ||
            buf_printf(b, ",\"dead_count\":%lld,\"primary_error\":", (long long)sqlite3_column_int64(st, 1)) < 0 ||
            put_str_or_null(b, st, 2) < 0 || buf_puts(b, ",\"primary_status_code\":") < 0 ||
            put_int_or_null(b, st, 3) < 0 ||
            buf_printf(b, ",\"first_dead\":%lld,\"last_dead\":%lld,\"avg_attempts\":%lld}",
                       (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5),
                       (long long)sqlite3_column_int64(st, 6)) < 0)
            goto oom;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (buf_puts(b, "]}\n") < 0)
        goto oom;
    return 0;
oom:
    sqlite3_reset(st);
    req_error(r, PERR_INTERNAL, "out of memory");
    return 0;
}

static int do_slow(struct reader *rd, struct req *r)
{
    struct buf *b = &r->reply;
    sqlite3_stmt *st = stmt(rd, RS_SLOW);
    int64_t thr = r->p.p95_ms > 0 ? r->p.p95_ms : rd->c->slow_p95_ms;
    int rc, n = 0;

    sqlite3_bind_int64(st, 1, thr);
    sqlite3_bind_int64(st, 2, rd->c->min_samples);
    if (buf_printf(b, "{\"ok\":true,\"p95_ms\":%lld,\"endpoints\":[", (long long)thr) < 0)
        goto oom;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (buf_puts(b, n++ ? ",{\"name\":" : "{\"name\":") < 0 || put_str_or_null(b, st, 0) < 0 ||
            buf_puts(b, ",\"p50_ms\":") < 0 || put_int_or_null(b, st, 1) < 0 || buf_puts(b, ",\"p95_ms\":") < 0 ||
            put_int_or_null(b, st, 2) < 0 || buf_puts(b, ",\"p99_ms\":") < 0 || put_int_or_null(b, st, 3) < 0 ||
            buf_printf(b, ",\"sample_count\":%lld,\"state\":", (long long)sqlite3_column_int64(st, 4)) < 0 ||
            put_str_or_null(b, st, 5) < 0 || buf_puts(b, "}") < 0)
            goto oom;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (buf_puts(b, "]}\n") < 0)
        goto oom;
    return 0;
oom:
    sqlite3_reset(st);
    req_error(r, PERR_INTERNAL, "out of memory");
    return 0;
}

/* ---- metrics ---- */

static void free_names(struct metrics_endpoint *eps, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free((char *)eps[i].name);
    free(eps);
}

/* Gather everything metrics_render needs and render it into out. On
 * failure err says why (the SQLite message, read before COMMIT resets it). */
static int metrics_text(struct reader *rd, struct buf *out, char *err, size_t errlen)
{
    struct metrics_snapshot m;
    struct metrics_endpoint *eps = NULL;
    size_t neps = 0, cap = 0, i;
    struct qstats q;
    sqlite3_stmt *st;
    int rc = SQLITE_ERROR, ret = -1;

    memset(&m, 0, sizeof m);
    snprintf(err, errlen, "out of memory");
    if (snap_begin(rd) < 0) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(rd->db));
        return -1;
    }
    if (qstats_read(rd, util_now_ms(), 1, &q) < 0)
        goto out;
    st = stmt(rd, RS_EP_HEALTH);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct metrics_endpoint *e;
        enum breaker_state bs = BREAKER_CLOSED;
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (neps == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct metrics_endpoint *nv = realloc(eps, nc * sizeof *eps);
            if (!nv)
                break;
            eps = nv;
            cap = nc;
        }
        e = &eps[neps];
        memset(e, 0, sizeof *e);
        e->name = strdup(name ? name : "");
        if (!e->name)
            break;
        neps++;
        breaker_state_parse((const char *)sqlite3_column_text(st, 1), &bs);
        e->breaker = (int)bs;
        e->has_latency = sqlite3_column_type(st, 3) != SQLITE_NULL;
        e->p50_ms = sqlite3_column_int64(st, 2);
        e->p95_ms = sqlite3_column_int64(st, 3);
        e->p99_ms = sqlite3_column_int64(st, 4);
        e->samples = sqlite3_column_int64(st, 5);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)  /* SQLITE_ROW: stopped early, out of memory */
        goto out;

    m.version = HOOKD_VERSION;
    memcpy(m.queue, q.n, sizeof m.queue);
    m.has_oldest_pending = q.has_oldest;
    m.oldest_pending_age_ms = q.oldest_age_ms;
    for (i = 0; i < METRICS_NOUTCOMES; i++)
        m.outcomes[i] = __atomic_load_n(&reader_outcomes[i], __ATOMIC_RELAXED);
    for (i = 0; i <= METRICS_NBUCKETS; i++)
        m.bucket[i] = __atomic_load_n(&reader_buckets[i], __ATOMIC_RELAXED);
    m.sum_ms = __atomic_load_n(&reader_sum_ms, __ATOMIC_RELAXED);
    m.eps = eps;
    m.neps = neps;
    ret = metrics_render(&m, out);
out:
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        snprintf(err, errlen, "%s", sqlite3_errmsg(rd->db));
    snap_end(rd);
    free_names(eps, neps);
    return ret;
}

static int do_metrics(struct reader *rd, struct req *r)
{
    struct buf text = {0};
    char err[256];

    if (metrics_text(rd, &text, err, sizeof err) < 0)
        req_error(r, PERR_STORAGE_ERROR, "cannot gather metrics: %s", err);
    else if (buf_puts(&r->reply, "{\"ok\":true,\"text\":") < 0 || buf_json_str(&r->reply, text.p) < 0 ||
             buf_puts(&r->reply, "}\n") < 0)
        req_error(r, PERR_INTERNAL, "out of memory");
    buf_free(&text);
    return 0;
}

static void handle(struct reader *rd, struct req *r)
{
    int rc;

    r->reply.len = 0;
    switch (r->p.op) {
    case OP_GET:
        rc = do_get(rd, r);
        break;
    case OP_STATS:
        rc = do_stats(rd, r);
        break;
    case OP_ENDPOINT_LIST:
        rc = do_endpoint_list(rd, r);
        break;
    case OP_DEAD_LETTERS:
        rc = do_dead_letters(rd, r);
        break;
    case OP_SLOW:
        rc = do_slow(rd, r);
        break;
    case OP_METRICS:
        rc = do_metrics(rd, r);
        break;
    default:
        req_error(r, PERR_INTERNAL, "op %s is not a query", proto_op_name(r->p.op));
        rc = 0;
        break;
    }
    if (rc < 0)
        reply_db_error(rd, r);
    server_complete(r);
}

/* ---- periodic tasks ---- */

static int64_t round_ms(double v)
{
    /* half away from zero, as PostgreSQL's round(numeric) */
    return (int64_t)llround(v);
}

static void task_rollup(struct reader *rd, int64_t window_ms)
{
    struct writer_rollup *v = NULL;
    size_t n = 0, cap = 0, i;
    sqlite3_stmt *ids = stmt(rd, RS_EP_IDS), *lat;
    int64_t t0 = util_mono_ms(), since = util_now_ms() - window_ms, total = 0;
    int rc;

    /* no snapshot over the whole rollup: each endpoint's read is its own
     * short read transaction, so the writer's checkpoints can reset the
     * WAL between them even when the window holds millions of rows */
    while ((rc = sqlite3_step(ids)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct writer_rollup *nv = realloc(v, nc * sizeof *v);
            if (!nv)
                goto fail;
            v = nv;
            cap = nc;
        }
        memset(&v[n], 0, sizeof v[n]);
        v[n++].endpoint_id = sqlite3_column_int64(ids, 0);
    }
    sqlite3_reset(ids);
    if (rc != SQLITE_DONE)
        goto fail;
    for (i = 0; i < n; i++) {
        struct writer_rollup *x = &v[i];
        size_t k = 0;
        lat = stmt(rd, RS_LATENCY);
        sqlite3_bind_int64(lat, 1, x->endpoint_id);
        sqlite3_bind_int64(lat, 2, since);
        while ((rc = sqlite3_step(lat)) == SQLITE_ROW) {
            if (k == rd->lat_cap) {
                size_t nc = rd->lat_cap ? rd->lat_cap * 2 : 4096;
                int64_t *nl = realloc(rd->lat, nc * sizeof *nl);
                if (!nl) {
                    sqlite3_reset(lat);
                    goto fail;
                }
                rd->lat = nl;
                rd->lat_cap = nc;
            }
            rd->lat[k++] = sqlite3_column_int64(lat, 0);
        }
        sqlite3_reset(lat);
        if (rc != SQLITE_DONE)
            goto fail;
        if (k) {
            percentile_sort(rd->lat, k);
            x->p50 = round_ms(percentile_cont(rd->lat, k, 0.5));
            x->p95 = round_ms(percentile_cont(rd->lat, k, 0.95));
            x->p99 = round_ms(percentile_cont(rd->lat, k, 0.99));
        }
        x->samples = (int64_t)k;
        total += (int64_t)k;
    }
    log_debug("rollup", "endpoints=%zu samples=%lld duration_ms=%lld", n, (long long)total,
              (long long)(util_mono_ms() - t0));
    /* ownership of v moves to the writer */
    writer_rollup_done(rd->w, v, n);
    return;
fail:
    log_warn("rollup_failed", "err=\"%s\"", sqlite3_errmsg(rd->db));
    sqlite3_reset(ids);
    free(v);
}

static void task_summary(struct reader *rd, int64_t now)
{
    struct qstats q;
    sqlite3_stmt *st;
    int64_t endpoints = 0, open = 0;
    int rc;
    char age[32], nm[ENDPOINT_NAME_MAX * 2 + 8];

    if (snap_begin(rd) < 0) {
        log_warn("health_summary_failed", "err=\"%s\"", sqlite3_errmsg(rd->db));
        return;
    }
    rc = SQLITE_ERROR;
    if (qstats_read(rd, now, 0, &q) < 0)
        goto out;
    st = stmt(rd, RS_EP_HEALTH);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        endpoints++;
        if (strcmp((const char *)sqlite3_column_text(st, 1), "open") == 0)
            open++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        goto out;

    if (q.has_oldest)
        snprintf(age, sizeof age, "%lld", (long long)q.oldest_age_ms);
    else
        snprintf(age, sizeof age, "none");
    log_info("health_summary",
             "pending=%lld awaiting_retry=%lld in_flight=%lld dead_letter=%lld delivered_last_hour=%lld "
             "failed_last_hour=%lld oldest_pending_age_ms=%s endpoints=%lld open_breakers=%lld",
             (long long)q.n[MQ_PENDING], (long long)q.n[MQ_FAILED], (long long)q.n[MQ_IN_FLIGHT],
             (long long)q.n[MQ_DEAD_LETTER], (long long)q.delivered_last_hour, (long long)q.failed_last_hour, age,
             (long long)endpoints, (long long)open);

    /* the seed's three alerts */
    if (rd->have_prev_dead && q.n[MQ_DEAD_LETTER] > rd->prev_dead)
        log_warn("alert_dead_letters_growing", "dead_letter=%lld previous=%lld",
                 (long long)q.n[MQ_DEAD_LETTER], (long long)rd->prev_dead);
    rd->prev_dead = q.n[MQ_DEAD_LETTER];
    rd->have_prev_dead = 1;
    if (q.has_oldest && q.oldest_age_ms > rd->c->oldest_pending_alert_ms)
        log_warn("alert_oldest_pending", "oldest_pending_age_ms=%lld threshold_ms=%lld",
                 (long long)q.oldest_age_ms, (long long)rd->c->oldest_pending_alert_ms);
    st = stmt(rd, RS_SLOW);
    sqlite3_bind_int64(st, 1, rd->c->slow_p95_ms);
    sqlite3_bind_int64(st, 2, rd->c->min_samples);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        log_warn("alert_p95", "endpoint=%s p95_ms=%lld samples=%lld threshold_ms=%lld",
                 log_q((const char *)sqlite3_column_text(st, 0), nm, sizeof nm),
                 (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 4),
                 (long long)rd->c->slow_p95_ms);
    sqlite3_reset(st);
out:
    if (rc != SQLITE_DONE)
        log_warn("health_summary_failed", "err=\"%s\"", sqlite3_errmsg(rd->db));
    snap_end(rd);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Render and replace path atomically: a textfile collector must never
 * read a half-written file, so write path.tmp in the same directory,
 * fsync, rename. Failures are logged and the next run tries again. */
static void task_metrics_file(struct reader *rd, const char *path)
{
    struct buf text = {0}, tmp = {0};
    char why[256], qp[512], qw[300];
    const char *step = "render";
    int fd = -1, ok = 0;

    if (metrics_text(rd, &text, why, sizeof why) < 0)
        goto out;
    step = "write";
    snprintf(why, sizeof why, "out of memory");
    if (buf_printf(&tmp, "%s.tmp", path) < 0)
        goto out;
    fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || write_all(fd, text.p, text.len) < 0 || fsync(fd) < 0)
        goto out_errno;
    if (close(fd) < 0) {
        fd = -1;
        goto out_errno;
    }
    fd = -1;
    step = "rename";
    if (rename(tmp.p, path) < 0)
        goto out_errno;
    ok = 1;
    goto out;
out_errno:
    snprintf(why, sizeof why, "%s", strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp.p);
out:
    if (!ok)
        log_warn("metrics_file_failed", "path=%s step=%s err=%s", log_q(path, qp, sizeof qp), step,
                 log_q(why, qw, sizeof qw));
    buf_free(&text);
    buf_free(&tmp);
}

/* ---- thread ---- */

static void *reader_main(void *arg)
{
    struct reader *rd = arg;

    for (;;) {
        struct req *reqs, *r;
        int rollup, summary, metrics, stop;
        int64_t window, now;
        char *path;

        pthread_mutex_lock(&rd->mu);
        while (!rd->inbox && !rd->want_rollup && !rd->want_summary && !rd->want_metrics && !rd->stop)
            pthread_cond_wait(&rd->cv, &rd->mu);
        reqs = rd->inbox;
        rd->inbox = NULL;
        rd->inbox_tail = &rd->inbox;
        stop = rd->stop;
        rollup = rd->want_rollup;
        summary = rd->want_summary;
        metrics = rd->want_metrics;
        window = rd->rollup_window_ms;
        now = rd->summary_now_ms;
        path = rd->metrics_path;
        rd->metrics_path = NULL;
        rd->want_rollup = rd->want_summary = rd->want_metrics = 0;
        pthread_mutex_unlock(&rd->mu);

        while ((r = reqs)) {
            reqs = r->next;
            r->next = NULL;
            if (stop) {
                req_error(r, PERR_SHUTTING_DOWN, "shutting down");
                server_complete(r);
            } else {
                handle(rd, r);
            }
        }
        if (stop) {
            free(path);
            break;
        }
        if (rollup)
            task_rollup(rd, window);
        if (summary)
            task_summary(rd, now);
        if (metrics && path)
            task_metrics_file(rd, path);
        free(path);
    }
    return NULL;
}

static void reader_free(struct reader *rd)
{
    int i;

    for (i = 0; i < RS__COUNT; i++)
        sqlite3_finalize(rd->st[i]);
    if (rd->db)
        db_close(rd->db);
    pthread_cond_destroy(&rd->cv);
    pthread_mutex_destroy(&rd->mu);
    free(rd->metrics_path);
    free(rd->lat);
    free(rd);
}

int reader_start(struct reader **out, const struct config *c, struct writer *w, char *err, size_t errlen)
{
    struct reader *rd;
    int i, rc;

    *out = NULL;
    rd = calloc(1, sizeof *rd);
    if (!rd) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rd->c = c;
    rd->w = w;
    rd->inbox_tail = &rd->inbox;
    pthread_mutex_init(&rd->mu, NULL);
    pthread_cond_init(&rd->cv, NULL);
    if (db_open_reader(c, &rd->db, err, errlen) < 0)
        goto fail;
    for (i = 0; i < RS__COUNT; i++)
        if (db_prepare(rd->db, &rd->st[i], reader_sql[i]) < 0) {
            snprintf(err, errlen, "reader: cannot prepare query %d: %s", i, sqlite3_errmsg(rd->db));
            goto fail;
        }
    rc = pthread_create(&rd->th, NULL, reader_main, rd);
    if (rc != 0) {
        snprintf(err, errlen, "reader: cannot start thread: %s", strerror(rc));
        goto fail;
    }
    pthread_setname_np(rd->th, "hookd-reader");
    rd->started = 1;
    *out = rd;
    return 0;
fail:
    reader_free(rd);
    return -1;
}

void reader_submit(struct reader *rd, struct req *r)
{
    r->next = NULL;
    pthread_mutex_lock(&rd->mu);
    if (rd->stop) {
        /* the thread is gone or going: answer here (any thread may) */
        pthread_mutex_unlock(&rd->mu);
        req_error(r, PERR_SHUTTING_DOWN, "shutting down");
        server_complete(r);
        return;
    }
    *rd->inbox_tail = r;
    rd->inbox_tail = &r->next;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void reader_request_rollup(struct reader *rd, int64_t window_ms)
{
    pthread_mutex_lock(&rd->mu);
    rd->want_rollup = 1;
    rd->rollup_window_ms = window_ms;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void reader_request_summary(struct reader *rd, int64_t now_ms)
{
    pthread_mutex_lock(&rd->mu);
    rd->want_summary = 1;
    rd->summary_now_ms = now_ms;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void reader_request_metrics_file(struct reader *rd, const char *path)
{
    /* copied: the caller's string may go away with a config reload */
    char *p = strdup(path);

    if (!p) {
        log_warn("metrics_file_failed", "err=\"out of memory\"");
        return;
    }
    pthread_mutex_lock(&rd->mu);
    free(rd->metrics_path);
    rd->metrics_path = p;
    rd->want_metrics = 1;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void reader_stop(struct reader *rd)
{
    if (!rd)
        return;
    pthread_mutex_lock(&rd->mu);
    rd->stop = 1;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
    if (rd->started)
        pthread_join(rd->th, NULL);
    reader_free(rd);
}
