/* rawinsert.c - the enqueue baseline: the rows hookd would store, inserted
 * straight into SQLite by one connection, no server in between.
 *
 *   rawinsert -d DB -s SCHEMA.sql [-n 200000] [-b 1000] [-c 4] [-t TAG] [-S full] [-U|-I] [-M]
 *
 * Same schema (the file hookd migrates with), same pragmas as hookd's
 * writer connection (WAL, synchronous, cache_size -16000, temp_store
 * MEMORY), a checkpoint every 1000 log pages as hookd's writer makes
 * (SQLite's auto-checkpoint here, inside the commit; hookd's writer runs
 * it after the round instead), same rows (endpoint 1, event ids
 * TAG-<conn>-<i> interleaved over C "connections" as the clients send them,
 * the same payload bytes), a prepared plain INSERT, BEGIN IMMEDIATE ...
 * COMMIT every B rows. Time runs from the first BEGIN to the last COMMIT.
 * -U: hookd's own statement instead (INSERT ... ON CONFLICT (endpoint_id,
 * event_id) DO NOTHING RETURNING id, stepped to the end, bindings cleared),
 * to split the gap between hookd and the plain baseline into "the SQL"
 * and "the server". -I: the same upsert without RETURNING (the id from
 * sqlite3_last_insert_rowid() when sqlite3_changes() is 1). -M: memory
 * statistics off (SQLITE_CONFIG_MEMSTATUS 0: no global mutex per malloc). */
#include "bench_common.h"

#include <getopt.h>
#include <sqlite3.h>

static void check(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "rawinsert: %s: %s\n", what, sqlite3_errmsg(db));
        exit(2);
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s;
    long n;

    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    s[n] = '\0';
    fclose(f);
    return s;
}

int main(int argc, char **argv)
{
    const char *dbpath = NULL, *schema = NULL, *tag = "r", *sync = "FULL";
    long n = 200000, batch = 1000, conns = 4, i;
    sqlite3 *db;
    sqlite3_stmt *st;
    char sql[128], id[96], pl[256];
    int64_t t0, t1, now_ms = 0;
    int o, upsert = 0, nomemstatus = 0;

    while ((o = getopt(argc, argv, "d:s:n:b:c:t:S:UIM")) != -1) {
        switch (o) {
        case 'd': dbpath = optarg; break;
        case 's': schema = optarg; break;
        case 'n': n = atol(optarg); break;
        case 'b': batch = atol(optarg); break;
        case 'c': conns = atol(optarg); break;
        case 't': tag = optarg; break;
        case 'S': sync = optarg; break;
        case 'U': upsert = 1; break;
        case 'I': upsert = 2; break;
        case 'M': nomemstatus = 1; break;
        default: goto usage;
        }
    }
    if (!dbpath || !schema || n < 1 || batch < 1 || conns < 1)
        goto usage;
    if (nomemstatus)
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    remove(dbpath);
    check(NULL, sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL),
          "open");
    check(db, sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL), "wal");
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", sync);
    check(db, sqlite3_exec(db, sql, NULL, NULL, NULL), "synchronous");
    check(db, sqlite3_exec(db, "PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;"
                               "PRAGMA wal_autocheckpoint = 1000; PRAGMA cache_size = -16000", NULL, NULL, NULL),
          "pragmas");
    check(db, sqlite3_exec(db, slurp(schema), NULL, NULL, NULL), "schema");
    check(db, sqlite3_prepare_v3(db,
                                 upsert == 2 ? "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, "
                                          "max_attempts, created_at, next_attempt_at) VALUES (1, ?1, NULL, ?2, 5, ?3, ?3) "
                                          "ON CONFLICT (endpoint_id, event_id) DO NOTHING"
                                 : upsert ? "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, "
                                          "max_attempts, created_at, next_attempt_at) VALUES (1, ?1, NULL, ?2, 5, ?3, ?3) "
                                          "ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id"
                                        : "INSERT INTO webhook_queue (endpoint_id, event_id, event_type, payload, "
                                          "max_attempts, created_at, next_attempt_at) VALUES (1, ?1, NULL, ?2, 5, ?3, ?3)",
                                 -1, SQLITE_PREPARE_PERSISTENT, &st, NULL),
          "prepare");
    t0 = bench_mono_us();
    for (i = 0; i < n; i++) {
        /* row i is message i / conns of connection i % conns */
        long c = i % conns, k = i / conns;
        if (i % batch == 0) {
            check(db, sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), "begin");
            now_ms = bench_wall_us() / 1000;
        }
        bench_event_id(id, sizeof id, tag, (int)c, k);
        bench_payload(pl, sizeof pl, k);
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, pl, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now_ms);
        if (upsert == 2) {
            check(db, sqlite3_step(st), "insert");
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            if (sqlite3_changes(db) == 1)
                (void)sqlite3_last_insert_rowid(db);
        } else if (upsert) {
            int rc;
            while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                (void)sqlite3_column_int64(st, 0);
            check(db, rc, "insert");
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            (void)sqlite3_changes(db);
        } else {
            check(db, sqlite3_step(st), "insert");
            sqlite3_reset(st);
        }
        if (i % batch == batch - 1 || i == n - 1)
            check(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
    }
    t1 = bench_mono_us();
    sqlite3_finalize(st);
    sqlite3_close(db);
    printf("rows=%ld batch=%ld synchronous=%s statement=%s raw_s=%.3f raw_rate=%.0f\n", n, batch, sync,
           upsert == 2 ? "upsert-rowid" : upsert ? "hookd" : "plain", (double)(t1 - t0) / 1e6,
           (double)n / ((double)(t1 - t0) / 1e6));
    return 0;
usage:
    fprintf(stderr, "usage: rawinsert -d DB -s SCHEMA.sql [-n N] [-b BATCH] [-c CONNS] [-t TAG] [-S full] [-U|-I] [-M]\n");
    return 2;
}
