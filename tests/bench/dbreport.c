/* dbreport.c - read a hookd database (read-only) after a benchmark run.
 *
 *   dbreport delivery DB FIRST_SEND_MS
 *       Rows per status; delivered per second measured in the database:
 *       delivered rows / (last delivered_at - the client's first send).
 *   dbreport latency DB TAG
 *       Enqueue-to-first-attempt latency of the messages whose event_id
 *       starts with TAG-, from webhook_queue.created_at and the message's
 *       first delivery_attempts row (all epoch ms):
 *         start = at - response_ms   (estimate of the attempt start)
 *         done  = at                 (result recorded by the writer)
 *       Prints p50/p99/max of start - created_at and done - created_at.
 *   dbreport wait DB N TIMEOUT_S [-a]
 *       Poll (10/s, cheaply) until nothing is pending, retrying or in
 *       flight; exit 0 if at least N rows are delivered. -a: rows waiting
 *       for a retry do not count (every row attempted is enough); exit 0
 *       if N rows are delivered or waiting for a retry.
 */
#include "bench_common.h"

#include <sqlite3.h>
#include <unistd.h>

static sqlite3 *open_ro(const char *path)
{
    sqlite3 *db;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "dbreport: %s: %s\n", path, sqlite3_errmsg(db));
        exit(2);
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "dbreport: %s: %s\n", sql, sqlite3_errmsg(db));
        exit(2);
    }
    return st;
}

static int delivery(const char *path, long long first_ms)
{
    sqlite3 *db = open_ro(path);
    sqlite3_stmt *st = prep(db, "SELECT status, count(*) FROM webhook_queue GROUP BY status");
    long long delivered = 0, other = 0, min_c = 0, max_d = 0, attempts = 0;

    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(st, 0);
        long long k = sqlite3_column_int64(st, 1);
        if (strcmp(s, "delivered") == 0)
            delivered = k;
        else
            other += k;
    }
    sqlite3_finalize(st);
    st = prep(db, "SELECT min(created_at), max(delivered_at), sum(attempt_count) FROM webhook_queue");
    if (sqlite3_step(st) == SQLITE_ROW) {
        min_c = sqlite3_column_int64(st, 0);
        max_d = sqlite3_column_int64(st, 1);
        attempts = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    printf("db_delivered=%lld db_not_delivered=%lld db_attempts=%lld first_created_ms=%lld last_delivered_ms=%lld "
           "db_span_s=%.3f db_delivered_rate=%.0f\n",
           delivered, other, attempts, min_c, max_d, (double)(max_d - first_ms) / 1e3,
           max_d > first_ms ? (double)delivered / ((double)(max_d - first_ms) / 1e3) : 0.0);
    return other ? 1 : 0;
}

static int latency(const char *path, const char *tag)
{
    sqlite3 *db = open_ro(path);
    sqlite3_stmt *st = prep(db, "SELECT q.created_at, a.at - coalesce(a.response_ms, 0), a.at "
                                "FROM webhook_queue q JOIN delivery_attempts a ON a.message_id = q.id "
                                "AND a.attempt = 1 WHERE q.event_id LIKE ?1");
    char like[128];
    size_t n = 0, cap = 1 << 14;
    int64_t *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);

    snprintf(like, sizeof like, "%s-%%", tag);
    sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0);
        if (n == cap) {
            cap *= 2;
            a = realloc(a, cap * sizeof *a);
            b = realloc(b, cap * sizeof *b);
        }
        a[n] = sqlite3_column_int64(st, 1) - c;
        b[n] = sqlite3_column_int64(st, 2) - c;
        n++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    qsort(a, n, sizeof *a, bench_cmp_i64);
    qsort(b, n, sizeof *b, bench_cmp_i64);
    printf("lat_samples=%zu start_p50_ms=%lld start_p99_ms=%lld start_max_ms=%lld "
           "done_p50_ms=%lld done_p99_ms=%lld done_max_ms=%lld\n",
           n, (long long)bench_pct(a, n, 50), (long long)bench_pct(a, n, 99), n ? (long long)a[n - 1] : -1LL,
           (long long)bench_pct(b, n, 50), (long long)bench_pct(b, n, 99), n ? (long long)b[n - 1] : -1LL);
    return n ? 0 : 1;
}

/* Wait until no row is pending, failed (awaiting a retry) or in flight.
 * Cheap on purpose: two EXISTS probes that stop at the first matching
 * entry of the partial indexes, on a short-lived read snapshot, so the
 * polling costs the daemon nothing measurable (the stats op counts whole
 * indexes and costs tens of ms per call on a 200k-row table). */
static int wait_db(const char *path, long long want, long timeout_s, int attempted)
{
    int64_t t0 = bench_mono_us(), deadline = t0 + (int64_t)timeout_s * 1000000;
    sqlite3 *db = open_ro(path);
    sqlite3_stmt *busy = prep(db, attempted ? "SELECT EXISTS (SELECT 1 FROM webhook_queue WHERE status IN ('pending', 'in_flight'))"
                                            : "SELECT EXISTS (SELECT 1 FROM webhook_queue WHERE status IN ('pending', 'failed')) "
                                              "OR EXISTS (SELECT 1 FROM webhook_queue WHERE status = 'in_flight')");
    sqlite3_stmt *cnt = prep(db, attempted ? "SELECT count(*), sum(status IN ('delivered', 'failed')) FROM webhook_queue"
                                           : "SELECT count(*), sum(status = 'delivered') FROM webhook_queue");
    long long rows = 0, delivered = 0;
    int settled = 0;

    while (bench_mono_us() < deadline) {
        int b = 1;
        if (sqlite3_step(busy) == SQLITE_ROW)
            b = sqlite3_column_int(busy, 0);
        sqlite3_reset(busy);
        if (!b) {
            settled = 1;
            break;
        }
        usleep(100000);
    }
    if (sqlite3_step(cnt) == SQLITE_ROW) {
        rows = sqlite3_column_int64(cnt, 0);
        delivered = sqlite3_column_int64(cnt, 1);
    }
    sqlite3_finalize(cnt);
    sqlite3_finalize(busy);
    sqlite3_close(db);
    printf("settled=%s settled_s=%.3f rows=%lld delivered=%lld\n", settled ? "yes" : "no",
           (double)(bench_mono_us() - t0) / 1e6, rows, delivered);
    return settled && delivered >= want ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "delivery") == 0)
        return delivery(argv[2], atoll(argv[3]));
    if (argc == 4 && strcmp(argv[1], "latency") == 0)
        return latency(argv[2], argv[3]);
    if ((argc == 5 || (argc == 6 && strcmp(argv[5], "-a") == 0)) && strcmp(argv[1], "wait") == 0)
        return wait_db(argv[2], atoll(argv[3]), atol(argv[4]), argc == 6);
    fprintf(stderr, "usage: dbreport delivery DB FIRST_SEND_MS | latency DB TAG | wait DB N TIMEOUT_S [-a]\n");
    return 2;
}
