/* searchdb.c - a large queue for the search benchmark, fast: the rows a
 * busy hookd would hold, inserted straight into a database hookd created
 * (its own schema, its endpoints), one connection, 100,000 rows per
 * transaction, synchronous off (a fixture, not a measurement).
 *
 *   searchdb -d DB -n ROWS [-D DAYS] [-r SEED]
 *
 * The spread a search meets in the field:
 *  - endpoints: every row of the endpoints table, skewed (endpoint k of E
 *    is picked with u^2: the first ones are large, most are small);
 *  - times: created_at from DAYS ago to now in id order (ids grow with
 *    time, as hookd's do), delivered 20 to 2,000 ms later;
 *  - statuses: older than a day, 97% delivered, 3% dead letters; the last
 *    day, 90% delivered, 2% dead letters, 3% failed, 5% pending (paused
 *    endpoints: nothing is delivered while the benchmark runs);
 *  - error classes (dead letters, failed rows, a tenth of the delivered
 *    ones that needed a retry): http_503 http_500 http_404 timeout dns
 *    connect;
 *  - event ids ev-<row>, one in five fanned out to a second endpoint
 *    (same event id), types conversion, order.created, order.paid,
 *    lead.new, refund.issued, player.deposit;
 *  - payloads of about 150 bytes with a click_id c_<n> unique per event,
 *    a status, an amount and a player id.
 * Prints key=value: rows, endpoints, first_ms, last_ms, gen_s, and one
 * sample of each thing a search asks for (an event id, a click id). */
#include "bench_common.h"

#include <getopt.h>
#include <sqlite3.h>

static void check(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "searchdb: %s: %s\n", what, sqlite3_errmsg(db));
        exit(2);
    }
}

/* splitmix64: a fixed, fast stream (the same database for the same seed) */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static const char *const types[] = {"conversion", "conversion", "conversion", "order.created",
                                    "order.paid", "lead.new", "refund.issued", "player.deposit"};
static const char *const classes[] = {"http_503", "http_500", "http_404", "timeout", "dns", "connect"};
static const int class_codes[] = {503, 500, 404, 0, 0, 0};

int main(int argc, char **argv)
{
    const char *dbpath = NULL;
    long n = 1000000, days = 30, i, nep = 0, cap = 0;
    int64_t *eps = NULL, now_ms, span_ms, first_ms, t0;
    sqlite3 *db;
    sqlite3_stmt *st;
    int o, prev_ep = -1;
    char eid[64], pl[320], sample_eid[64] = "", sample_click[64] = "";

    rnd_state = 1;
    while ((o = getopt(argc, argv, "d:n:D:r:")) != -1) {
        switch (o) {
        case 'd': dbpath = optarg; break;
        case 'n': n = atol(optarg); break;
        case 'D': days = atol(optarg); break;
        case 'r': rnd_state = (uint64_t)atoll(optarg); break;
        default: goto usage;
        }
    }
    if (!dbpath || n < 1 || days < 1)
        goto usage;
    check(NULL, sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), "open");
    check(db, sqlite3_exec(db, "PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY",
                           NULL, NULL, NULL),
          "pragmas");
    check(db, sqlite3_prepare_v2(db, "SELECT id FROM endpoints ORDER BY id", -1, &st, NULL), "endpoints");
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nep == cap) {
            cap = cap ? cap * 2 : 1024;
            if (!(eps = realloc(eps, (size_t)cap * sizeof *eps)))
                exit(2);
        }
        eps[nep++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (nep < 2) {
        fprintf(stderr, "searchdb: %s has %ld endpoints (start hookd on it with them first)\n", dbpath, nep);
        return 2;
    }
    check(db, sqlite3_prepare_v2(db,
                                 "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, status, "
                                 "attempt_count, max_attempts, created_at, next_attempt_at, delivered_at, last_error, "
                                 "last_error_class, last_status_code, last_response_ms) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 5, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                                 -1, &st, NULL),
          "prepare");
    now_ms = bench_wall_us() / 1000;
    span_ms = days * 86400000LL;
    first_ms = now_ms - span_ms;
    t0 = bench_mono_us();
    for (i = 0; i < n; i++) {
        int64_t created = first_ms + (int64_t)((double)span_ms * (double)i / (double)n), ms, ev;
        int recent = now_ms - created < 86400000LL, ep, cls = -1, attempts = 1, code = 200;
        const char *status, *type;
        double u = unit();

        if (i % 100000 == 0)
            check(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
        /* one row in five is the previous row's event sent to a second endpoint */
        if (i % 5 == 1) {
            ev = i - 1;
            ep = (prev_ep + 1 + (int)(rnd() % (uint64_t)(nep - 1))) % (int)nep;
        } else {
            double x = unit();
            ev = i;
            ep = (int)((double)nep * x * x);
        }
        prev_ep = ep;
        type = types[(ev * 2654435761u >> 7) % (sizeof types / sizeof *types)];
        ms = 20 + (int64_t)(rnd() % 1980);
        if (recent && u < 0.05) {
            status = "pending";
            attempts = 0;
            code = 0;
        } else if (recent && u < 0.08) {
            status = "failed";
            attempts = 1 + (int)(rnd() % 4);
            cls = (int)(rnd() % 6);
        } else if (u < (recent ? 0.10 : 0.03)) {
            status = "dead_letter";
            attempts = 5;
            cls = (int)(rnd() % 6);
        } else {
            status = "delivered";
            if (unit() < 0.1) {
                attempts = 2;
                cls = (int)(rnd() % 6);
            }
        }
        if (cls >= 0 && strcmp(status, "delivered") != 0)
            code = class_codes[cls];
        snprintf(eid, sizeof eid, "ev-%ld", (long)ev);
        snprintf(pl, sizeof pl,
                 "{\"event_id\":\"%s\",\"type\":\"%s\",\"click_id\":\"c_%ld\",\"status\":\"%s\","
                 "\"amount\":%ld.%02ld,\"currency\":\"EUR\",\"player\":{\"id\":\"p_%ld\",\"country\":\"DE\"},"
                 "\"offer_id\":%ld}",
                 eid, type, (long)ev, (ev & 7) ? "approved" : "rejected", (long)(ev % 500), (long)(ev % 100),
                 (long)(ev % 100003), (long)(ev % 257));
        sqlite3_bind_int64(st, 1, eps[ep]);
        sqlite3_bind_text(st, 2, eid, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, pl, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, status, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 6, attempts);
        sqlite3_bind_int64(st, 7, created);
        sqlite3_bind_int64(st, 8, strcmp(status, "failed") == 0 ? created + 60000LL * attempts : created);
        if (strcmp(status, "delivered") == 0)
            sqlite3_bind_int64(st, 9, created + ms);
        else
            sqlite3_bind_null(st, 9);
        if (cls >= 0) {
            sqlite3_bind_text(st, 10, classes[cls], -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 11, classes[cls], -1, SQLITE_STATIC);
        } else {
            sqlite3_bind_null(st, 10);
            sqlite3_bind_null(st, 11);
        }
        if (code)
            sqlite3_bind_int(st, 12, code);
        else
            sqlite3_bind_null(st, 12);
        if (attempts)
            sqlite3_bind_int64(st, 13, ms);
        else
            sqlite3_bind_null(st, 13);
        check(db, sqlite3_step(st), "insert");
        sqlite3_reset(st);
        if (i == n / 2) {
            snprintf(sample_eid, sizeof sample_eid, "%s", eid);
            snprintf(sample_click, sizeof sample_click, "c_%ld", (long)ev);
        }
        if (i % 100000 == 99999 || i == n - 1)
            check(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
    }
    sqlite3_finalize(st);
    check(db, sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), "checkpoint");
    sqlite3_close(db);
    printf("rows=%ld endpoints=%ld first_ms=%lld last_ms=%lld gen_s=%.1f sample_event_id=%s sample_click_id=%s\n", n,
           nep, (long long)first_ms, (long long)now_ms, (double)(bench_mono_us() - t0) / 1e6, sample_eid,
           sample_click);
    free(eps);
    return 0;
usage:
    fprintf(stderr, "usage: searchdb -d DB -n ROWS [-D DAYS] [-r SEED]\n");
    return 2;
}
