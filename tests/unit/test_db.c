/* Schema migration by PRAGMA user_version; refusal leaves files untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "db.h"
#include "schema_sql.h"
#include "store_sqlite.h"

static char dir[64];
static struct config cfg;

static int setup(void **st)
{
    (void)st;
    strcpy(dir, "/tmp/hookd-dbtest-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(config_init(&cfg), 0);
    free(cfg.db_path);
    cfg.db_path = malloc(128);
    snprintf(cfg.db_path, 128, "%s/sub/h.db", dir);
    return 0;
}

static int teardown(void **st)
{
    char cmd[128];

    (void)st;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return -1;
    config_free(&cfg);
    return 0;
}

static int version_of(sqlite3 *db)
{
    sqlite3_stmt *s;
    int v = -1;

    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    char *b;
    long len;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void test_fresh_and_reopen(void **st)
{
    sqlite3 *db;
    char err[512];
    struct stat sb;
    char sub[96];

    (void)st;
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(db_exec(db, "SELECT id, endpoint_id, event_id, event_type, payload, status, attempt_count, "
                                 "max_attempts, created_at, next_attempt_at, delivered_at, last_error, "
                                 "last_status_code, last_response_ms FROM webhook_queue"),
                     0);
    assert_int_equal(db_exec(db, "SELECT endpoint_id, response_ms, status_code, measured_at FROM endpoint_latency"), 0);
    assert_int_equal(db_exec(db, "SELECT state, consecutive_failures, p50_ms, p95_ms, p99_ms, sample_count "
                                 "FROM endpoint_health"),
                     0);
    db_close(db);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0750);
    /* idempotent */
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    db_close(db);
    /* a reader opens the same file read-only */
    assert_int_equal(db_open_reader(&cfg, &db, err, sizeof err), 0);
    assert_int_not_equal(db_exec(db, "DELETE FROM webhook_queue"), 0);
    db_close(db);
}

static void test_newer_schema_refused_untouched(void **st)
{
    sqlite3 *db;
    char err[512];
    char *before, *after;
    size_t nb, na;

    (void)st;
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(db_exec(db, "PRAGMA user_version = 99"), 0);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    assert_int_equal(db_exec(db, "PRAGMA journal_mode = DELETE"), 0);
    db_close(db);
    before = slurp(cfg.db_path, &nb);
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), -1);
    assert_non_null(strstr(err, "newer"));
    assert_non_null(strstr(err, "99"));
    after = slurp(cfg.db_path, &na);
    assert_int_equal(na, nb);
    assert_memory_equal(before, after, nb);
    free(before);
    free(after);
}

static void test_foreign_or_garbage_refused(void **st)
{
    sqlite3 *db;
    char err[512];
    FILE *f;
    char *before, *after;
    size_t nb, na;

    (void)st;
    /* someone else's database */
    {
        char p[128];
        snprintf(p, sizeof p, "%s/sub", dir);
        assert_int_equal(mkdir(p, 0750), 0);
    }
    assert_int_equal(sqlite3_open(cfg.db_path, &db), SQLITE_OK);
    assert_int_equal(db_exec(db, "CREATE TABLE theirs (x)"), 0);
    sqlite3_close(db);
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), -1);
    assert_non_null(strstr(err, "refusing"));
    unlink(cfg.db_path);
    /* not a database at all (e.g. truncated or overwritten) */
    f = fopen(cfg.db_path, "wb");
    fputs("this is not an sqlite database, it is a text file of some length.....", f);
    fclose(f);
    before = slurp(cfg.db_path, &nb);
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), -1);
    assert_non_null(strstr(err, "refusing"));
    after = slurp(cfg.db_path, &na);
    assert_int_equal(na, nb);
    assert_memory_equal(before, after, nb);
    free(before);
    free(after);
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    int64_t v = -1;

    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* How many OpenEphemeral opcodes a statement runs: a CHECK written as
 * IN (three or more constants) builds a temporary index each time. */
static int ephemerals(sqlite3 *db, const char *sql)
{
    char explain[512];
    sqlite3_stmt *s;
    int n = 0;

    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    assert_int_equal(sqlite3_prepare_v2(db, explain, -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW)
        n += strcmp((const char *)sqlite3_column_text(s, 1), "OpenEphemeral") == 0;
    sqlite3_finalize(s);
    return n;
}

/* A database left by an older hookd: the schema up to version v, then
 * sql (its rows); closed again. */
static void db_at_version(int v, const char *sql)
{
    char sub[96], pragma[48];
    sqlite3 *db;
    int i;

    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0750), 0);
    assert_int_equal(sqlite3_open(cfg.db_path, &db), SQLITE_OK);
    for (i = 0; i < v; i++)
        assert_int_equal(db_exec(db, schema_sql[i]), 0);
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v);
    assert_int_equal(db_exec(db, pragma), 0);
    assert_int_equal(db_exec(db, sql), 0);
    sqlite3_close(db);
}

static void test_v4_to_v5_keeps_rows_counter_and_checks(void **st)
{
    static const char ins[] = "INSERT INTO webhook_queue (endpoint_id, event_id, payload, created_at, next_attempt_at) "
                              "VALUES (1, 'e4', '{}', 1, 1)";
    char err[512];
    sqlite3 *db;

    (void)st;
    db_at_version(4,
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, created_at, "
                  "next_attempt_at) VALUES (1, 'e1', '{\"a\":1}', 'delivered', 1, 1), "
                  "(1, 'e2', '{}', 'failed', 1, 1), (1, 'e3', '{}', 'pending', 1, 1);"
                  "DELETE FROM webhook_queue WHERE id = 3;"
                  "INSERT INTO endpoint_health (endpoint_id, endpoint_url, state, ring_next) "
                  "VALUES (1, 'http://x/', 'open', 7)");
    assert_int_equal(sqlite3_open(cfg.db_path, &db), SQLITE_OK);
    assert_true(ephemerals(db, ins) > 0);   /* what version 5 is for */
    sqlite3_close(db);

    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(one_int(db, "SELECT count(*) FROM webhook_queue"), 2);
    assert_int_equal(one_int(db, "SELECT count(*) FROM webhook_queue WHERE payload = '{\"a\":1}' "
                                 "AND status = 'delivered'"), 1);
    assert_int_equal(one_int(db, "SELECT ring_next FROM endpoint_health WHERE state = 'open'"), 7);
    /* the deleted id 3 is not handed out again */
    assert_int_equal(db_exec(db, ins), 0);
    assert_int_equal(sqlite3_last_insert_rowid(db), 4);
    assert_int_equal(ephemerals(db, ins), 0);
    assert_int_equal(ephemerals(db, "UPDATE webhook_queue SET status = 'in_flight' WHERE id = 4"), 0);
    /* the checks still refuse what they refused */
    assert_int_not_equal(db_exec(db, "UPDATE webhook_queue SET status = 'lost' WHERE id = 4"), 0);
    assert_int_not_equal(db_exec(db, "UPDATE endpoint_health SET state = 'ajar'"), 0);
    /* 5 from version 5, idx_queue_order from 6, idx_queue_event from 9
     * (the dedup key, event id first, instead of the table's autoindex),
     * idx_queue_payload from 12, idx_queue_dead_id and _ep from 13;
     * idx_queue_failed instead of idx_queue_next and idx_queue_delivered
     * instead of it and idx_queue_payload from 15 */
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_queue_%'"), 9);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_queue' "
                                 "AND name LIKE 'sqlite_autoindex%'"), 0);
    /* an (endpoint, event id) pair is still unique, and the enqueue's
     * ON CONFLICT target still names it */
    assert_int_equal(db_exec(db, "INSERT INTO webhook_queue (endpoint_id, event_id, payload, created_at, next_attempt_at) "
                                 "VALUES (1, 'e1', '{}', 1, 1) ON CONFLICT (endpoint_id, event_id) DO NOTHING"), 0);
    assert_int_equal(sqlite3_changes(db), 0);
    assert_int_not_equal(db_exec(db, "INSERT INTO webhook_queue (endpoint_id, event_id, payload, created_at, "
                                     "next_attempt_at) VALUES (1, 'e1', '{}', 1, 1)"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 1);
    db_close(db);
}

/* Version 10 renames the attempt log and puts a view of its old name
 * over it and the first attempts kept in the rows: a version-9 log reads
 * as before, and the trigger follows the rename. */
static void test_v9_to_v10_keeps_the_attempt_log(void **st)
{
    char err[512];
    sqlite3 *db;

    (void)st;
    db_at_version(9,
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, attempt_count, "
                  "created_at, next_attempt_at, delivered_at, last_status_code) VALUES "
                  "(1, 'e1', '{}', 'delivered', 1, 1, 1, 5, 200), "
                  "(1, 'e2', '{}', 'delivered', 2, 1, 1, 9, 204);"
                  "INSERT INTO delivery_attempts (message_id, attempt, endpoint_id, at, status_code, "
                  "method, url) VALUES (1, 1, 1, 5, 200, 'POST', 'http://x/'), "
                  "(2, 1, 1, 6, 503, 'POST', 'http://x/'), (2, 2, 1, 9, 204, 'POST', 'http://x/')");

    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(one_int(db, "SELECT count(*) FROM attempt_rows"), 3);
    assert_int_equal(one_int(db, "SELECT count(*) FROM delivery_attempts"), 3);
    assert_int_equal(one_int(db, "SELECT status_code FROM delivery_attempts WHERE message_id = 2 AND attempt = 1"),
                     503);
    /* a row delivered at its first attempt since: one attempt, from the row */
    assert_int_equal(db_exec(db, "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, attempt_count, "
                                 "created_at, next_attempt_at, delivered_at, last_status_code, last_response_ms, "
                                 "first_method, first_url) VALUES (1, 'e3', '{}', 'delivered', 1, 1, 1, 12, 202, 3, "
                                 "'GET', 'http://x/pb')"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM delivery_attempts WHERE message_id = 3"), 1);
    assert_int_equal(one_int(db, "SELECT at * 1000 + status_code FROM delivery_attempts WHERE message_id = 3"),
                     12202);
    /* deleting messages still takes their log with them */
    assert_int_equal(db_exec(db, "DELETE FROM webhook_queue WHERE id = 2"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM attempt_rows"), 1);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 1);
    db_close(db);
}

/* Version 11 keys the log by generation: a version-10 message whose row
 * folds a delivered attempt 1 over a logged attempt 1 (it was requeued)
 * shows both, the older first, and a later requeue adds to the log. */
static void test_v10_to_v11_shows_the_hidden_attempt(void **st)
{
    char err[512];
    sqlite3 *db;

    (void)st;
    db_at_version(10,
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, attempt_count, "
                  "created_at, next_attempt_at, delivered_at, last_status_code, last_response_ms, first_method, "
                  "first_url) VALUES (1, 'e1', '{}', 'delivered', 1, 1, 1, 50, 200, 4, 'GET', 'http://x/2'), "
                  "(1, 'e2', '{}', 'failed', 1, 1, 1, NULL, 503, 4, NULL, NULL);"
                  "INSERT INTO attempt_rows (message_id, attempt, endpoint_id, at, error_class, detail) "
                  "VALUES (1, 1, 1, 5, 'dns', 'dns: no such host'), (2, 1, 1, 6, 'http_503', 'HTTP 503')");
    assert_int_equal(sqlite3_open(cfg.db_path, &db), SQLITE_OK);
    assert_int_equal(one_int(db, "SELECT count(*) FROM delivery_attempts WHERE message_id = 1"), 1);   /* the bug */
    sqlite3_close(db);

    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(one_int(db, "SELECT count(*) FROM delivery_attempts WHERE message_id = 1"), 2);
    assert_int_equal(one_int(db, "SELECT at FROM delivery_attempts WHERE message_id = 1 "
                                 "ORDER BY generation, attempt LIMIT 1"), 5);
    assert_int_equal(one_int(db, "SELECT generation * 100 + at FROM delivery_attempts WHERE message_id = 1 "
                                 "ORDER BY generation DESC, attempt LIMIT 1"), 150);
    assert_int_equal(one_int(db, "SELECT generation FROM webhook_queue WHERE id = 2"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM delivery_attempts WHERE message_id = 2"), 1);
    assert_int_equal(db_exec(db, "DELETE FROM webhook_queue WHERE id = 1"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM attempt_rows"), 1);
    db_close(db);
}

/* Version 14 adds deliver_at: rows of a version-13 queue keep their
 * times and have none (version 13 stored no mark, so their due times,
 * given as a delay or as a time, move with a clock step as they did);
 * new rows can carry one. */
static void test_v13_to_v14_adds_deliver_at(void **st)
{
    char err[512];
    sqlite3 *db;

    (void)st;
    db_at_version(13,
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, created_at, next_attempt_at) "
                  "VALUES (1, 'later', '{}', 'pending', 1, 600001), (1, 'now', '{}', 'pending', 1, 1)");
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(one_int(db, "SELECT count(*) FROM webhook_queue WHERE deliver_at IS NULL"), 2);
    assert_int_equal(one_int(db, "SELECT next_attempt_at FROM webhook_queue WHERE event_id = 'later'"), 600001);
    assert_int_equal(db_exec(db, "INSERT INTO webhook_queue (endpoint_id, event_id, payload, created_at, "
                                 "next_attempt_at, deliver_at) VALUES (1, 'at', '{}', 2, 700000, 700000)"), 0);
    assert_int_equal(one_int(db, "SELECT deliver_at FROM webhook_queue WHERE event_id = 'at'"), 700000);
    db_close(db);
}

/* How many values a statement reads from webhook_queue's own rows (not
 * from an index): Column and Rowid on a cursor opened on its root page. */
static int table_reads(sqlite3 *db, const char *sql)
{
    char explain[1024];
    sqlite3_stmt *s;
    int64_t root = one_int(db, "SELECT rootpage FROM sqlite_master WHERE name = 'webhook_queue'");
    int cursors[16], nc = 0, n = 0, i;

    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    assert_int_equal(sqlite3_prepare_v2(db, explain, -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *op = (const char *)sqlite3_column_text(s, 1);
        int p1 = sqlite3_column_int(s, 2);

        if (strcmp(op, "OpenRead") == 0 && sqlite3_column_int64(s, 3) == root && nc < 16)
            cursors[nc++] = p1;
        if (strcmp(op, "Column") == 0 || strcmp(op, "Rowid") == 0)
            for (i = 0; i < nc; i++)
                n += cursors[i] == p1;
    }
    sqlite3_finalize(s);
    return n;
}

/* One integer from sql with ?1 bound to v. */
static int64_t one_int_at(sqlite3 *db, const char *sql, int64_t v)
{
    sqlite3_stmt *s;
    int64_t r = -1;

    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, v);
    if (sqlite3_step(s) == SQLITE_ROW)
        r = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return r;
}

/* Version 15 drops idx_queue_next: the stats count waiting rows from
 * idx_queue_due and failed ones from idx_queue_failed, with the same
 * answers, and never read the table's rows for it. */
static void test_v14_to_v15_counts_without_idx_queue_next(void **st)
{
    char err[512];
    sqlite3 *db;

    (void)st;
    /* id 1: pending, due later (scheduled); 2: failed, due later; 3:
     * pending, due; 4: failed, due; 5: in flight; 6: delivered */
    db_at_version(14,
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, attempt_count, created_at, "
                  "next_attempt_at) VALUES (1, 'a', '{}', 'pending', 0, 10, 600000), "
                  "(1, 'b', '{}', 'failed', 1, 20, 700000), (2, 'c', '{}', 'pending', 0, 30, 40), "
                  "(2, 'd', '{}', 'failed', 2, 50, 60), (1, 'e', '{}', 'in_flight', 1, 70, 70), "
                  "(1, 'f', '{}', 'delivered', 1, 80, 80); "
                  "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, attempt_count, created_at, "
                  "next_attempt_at, delivered_at, erased_at) VALUES (1, 'g', '', 'delivered', 1, 90, 90, 95, 99), "
                  "(1, 'h', '{}', 'delivered', 1, 100, 100, 105, NULL)");
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    assert_int_equal(version_of(db), db_schema_version());
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'idx_queue_next'"), 0);
    assert_int_equal(one_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'idx_queue_failed'"), 1);
    assert_int_equal(one_int(db, sq_sql[SQ_CNT_PENDING]), 2);
    assert_int_equal(one_int(db, sq_sql[SQ_CNT_FAILED]), 2);
    assert_int_equal(one_int_at(db, sq_sql[SQ_CNT_SCHEDULED], 1000), 1);
    assert_int_equal(one_int_at(db, sq_sql[SQ_FAILED_SINCE], 25), 1);
    /* the oldest waiting: id 1 is scheduled, id 2 failed (waits since
     * its creation) */
    assert_int_equal(one_int_at(db, sq_sql[SQ_OLDEST_PENDING], 1000), 20);
    assert_int_equal(db_exec(db, "UPDATE webhook_queue SET status = 'dead_letter' WHERE id = 2"), 0);
    /* then id 3, pending and due at 40 after its creation at 30 */
    assert_int_equal(one_int_at(db, sq_sql[SQ_OLDEST_PENDING], 1000), 40);
    /* delivered rows, erased (g) or not (h, f without a delivery time) */
    assert_int_equal(one_int(db, sq_sql[SQ_CNT_DELIVERED]), 3);
    assert_int_equal(one_int_at(db, sq_sql[SQ_DELIVERED_SINCE], 90), 2);
    /* [retention] payload: h alone, not erased yet */
    assert_int_equal(one_int(db, "SELECT count(*) FROM webhook_queue INDEXED BY idx_queue_delivered "
                                 "WHERE status = 'delivered' AND (erased_at IS NOT NULL) = 0 AND delivered_at < 200"),
                     1);
    assert_int_equal(one_int(db, "SELECT id FROM webhook_queue INDEXED BY idx_queue_delivered "
                                 "WHERE status = 'delivered' AND (erased_at IS NOT NULL) = 0 AND delivered_at < 200"),
                     8);
    assert_int_equal(table_reads(db, sq_sql[SQ_CNT_PENDING]), 0);
    assert_int_equal(table_reads(db, sq_sql[SQ_CNT_FAILED]), 0);
    assert_int_equal(table_reads(db, sq_sql[SQ_CNT_SCHEDULED]), 0);
    db_close(db);
}

/* Enqueues in runs of SQ_INSERT_ROWS (one statement each): the same ids
 * and duplicate flags as one by one, with duplicates of older rows and
 * of earlier rows of the same statement, claimed or not. */
static void test_enqueue_rows_as_one_by_one(void **st)
{
    char err[512], ev[40][16];
    struct store *s = NULL;
    struct store_enqueue v[40];
    sqlite3 *db;
    int64_t first;
    int i;

    (void)st;
    assert_int_equal(store_sqlite_open(&cfg, STORE_WRITER, &s, err, sizeof err), 0);
    memset(v, 0, sizeof v);
    for (i = 0; i < 40; i++) {
        /* 0-9 new; 10-17 repeat 2..9; 18-25 new with 20 == 18 and
         * 25 == 19; 26-33 claimed, new but 30 == 2; 34-39 one by one */
        int k = i >= 10 && i < 18 ? i - 8 : i == 20 ? 18 : i == 25 ? 19 : i == 30 ? 2 : i;

        snprintf(ev[i], sizeof ev[i], "ev-%d", k);
        v[i].endpoint_id = 1;
        v[i].event_id = ev[i];
        v[i].payload = "{}";
        v[i].payload_len = 2;
        v[i].max_attempts = 5;
        v[i].claim = i >= 26 && i < 34;
        v[i].id = -1;
    }
    assert_int_equal(s->ops->begin(s, 1), 0);
    assert_int_equal(s->ops->enqueue(s, v, 40, 1000), 0);
    assert_int_equal(s->ops->commit(s), 0);
    s->ops->close(s);
    assert_int_equal(sqlite3_open(cfg.db_path, &db), SQLITE_OK);
    for (i = 0; i < 40; i++) {
        char sql[160];
        int dup = (i >= 10 && i < 18) || i == 20 || i == 25 || i == 30;

        if (v[i].duplicate != dup)
            fail_msg("enqueue %d: duplicate %d, expected %d", i, v[i].duplicate, dup);
        snprintf(sql, sizeof sql, "SELECT id FROM webhook_queue WHERE event_id = '%s'", ev[i]);
        assert_int_equal(one_int(db, sql), v[i].id);
        snprintf(sql, sizeof sql, "SELECT status = '%s' FROM webhook_queue WHERE id = %lld",
                 i >= 26 && i < 34 && !dup ? "in_flight" : "pending", (long long)v[i].id);
        if (!dup)
            assert_int_equal(one_int(db, sql), 1);
    }
    first = v[0].id;
    assert_int_equal(v[9].id, first + 9);
    assert_int_equal(one_int(db, "SELECT count(*) FROM webhook_queue"), 40 - 11);
    sqlite3_close(db);
}

/* The plan of sql, its rows' details joined by " | ". */
static void plan_of(sqlite3 *db, const char *sql, char *out, size_t n)
{
    char q[2048];
    sqlite3_stmt *st;
    size_t len = 0;

    snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW && len + 1 < n)
        len += (size_t)snprintf(out + len, n - len, "%s | ", (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
}

/* The search reads by index, never the whole table sorted: an event id
 * from the dedup key's index, otherwise the rowids newest first (no sort);
 * [retention] payload walks the first part of idx_queue_delivered. */
static void test_search_and_erase_plans(void **st)
{
    char err[512], plan[1024];
    sqlite3 *db;

    (void)st;
    assert_int_equal(db_open_writer(&cfg, &db, err, sizeof err), 0);
    {
    struct store_scan by_event = {.event_id = "e"}, dead = {.dead_letters = 1},
                      dead_ep = {.dead_letters = 1, .endpoint = "a"}, by_ep = {.endpoint = "a"}, all = {0};

    plan_of(db, sq_search_sql(&by_event), plan, sizeof plan);
    assert_non_null(strstr(plan, "idx_queue_event"));
    plan_of(db, sq_search_sql(&dead), plan, sizeof plan);
    if (!strstr(plan, "idx_queue_dead_id"))
        fail_msg("%s", plan);
    assert_null(strstr(plan, "TEMP B-TREE"));
    plan_of(db, sq_search_sql(&dead_ep), plan, sizeof plan);
    assert_non_null(strstr(plan, "idx_queue_dead_ep"));
    assert_null(strstr(plan, "TEMP B-TREE"));
    plan_of(db, sq_search_sql(&all), plan, sizeof plan);
    /* each page seeks to its bound in the table's own order: no sort, and
     * no walk from the newest row down (measured: 100,000 rows in pages
     * of 500 took 3.5 s with "(?2 = 0 OR id < ?2)", which scans) */
    assert_non_null(strstr(plan, "SEARCH q USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"));
    assert_null(strstr(plan, "TEMP B-TREE"));
    /* one endpoint's rows: a span of the table read whole, never a
     * partial index that leads with the endpoint */
    plan_of(db, sq_search_sql(&by_ep), plan, sizeof plan);
    if (!strstr(plan, "SEARCH q USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"))
        fail_msg("%s", plan);
    assert_null(strstr(plan, "TEMP B-TREE"));
    plan_of(db, "SELECT id FROM webhook_queue INDEXED BY idx_queue_delivered WHERE status = 'delivered' "
                "AND (erased_at IS NOT NULL) = 0 AND delivered_at < 5 ORDER BY delivered_at LIMIT 10", plan, sizeof plan);
    if (!strstr(plan, "idx_queue_delivered (<expr>=? AND delivered_at<?)"))
        fail_msg("%s", plan);
    assert_null(strstr(plan, "TEMP B-TREE"));
    /* the delivered rows of the last hour and the ones retention deletes:
     * a range of each part of idx_queue_delivered, never all of it */
    plan_of(db, sq_sql[SQ_DELIVERED_SINCE], plan, sizeof plan);
    if (!strstr(plan, "idx_queue_delivered (<expr>=? AND delivered_at>?)"))
        fail_msg("%s", plan);
    plan_of(db, sq_sql[SQ_EXPIRE_DELIVERED], plan, sizeof plan);
    if (!strstr(plan, "idx_queue_delivered (<expr>=? AND delivered_at<?)"))
        fail_msg("%s", plan);
    }
    db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fresh_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_or_garbage_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v4_to_v5_keeps_rows_counter_and_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v9_to_v10_keeps_the_attempt_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v10_to_v11_shows_the_hidden_attempt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v13_to_v14_adds_deliver_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v14_to_v15_counts_without_idx_queue_next, setup, teardown),
        cmocka_unit_test_setup_teardown(test_search_and_erase_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enqueue_rows_as_one_by_one, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
