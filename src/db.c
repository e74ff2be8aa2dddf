/* db.c - connections, pragmas, schema migration. */
#include "db.h"
#include "log.h"
#include "proto.h"
#include "schema_sql.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int db_schema_version(void)
{
    return SCHEMA_VERSION;
}

static int mkdir_parent(const char *path, char *err, size_t errlen)
{
    char *copy = strdup(path), *dir;
    int rc = 0;

    if (!copy)
        return -1;
    dir = dirname(copy);
    if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
        rc = -1;
    }
    free(copy);
    return rc;
}

int db_lock(const struct config *c, int *fd, char *err, size_t errlen)
{
    char path[4200];

    *fd = -1;
    if (mkdir_parent(c->db_path, err, errlen) < 0)
        return -1;
    snprintf(path, sizeof path, "%s.lock", c->db_path);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (*fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "%s is in use by another hookd (lock %s held); refusing to start", c->db_path, path);
        close(*fd);
        *fd = -1;
        return -1;
    }
    return 0;
}

int db_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

    if (rc != SQLITE_OK) {
        log_error("db_error", "rc=%d err=\"%s\"", rc, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int db_begin(sqlite3 *db)
{
    return db_exec(db, "BEGIN IMMEDIATE");
}

int db_commit(sqlite3 *db)
{
    return db_exec(db, "COMMIT");
}

void db_rollback(sqlite3 *db)
{
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int db_prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql)
{
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);

    if (rc != SQLITE_OK) {
        log_error("db_prepare", "err=\"%s\"", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

const char *db_error_code(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return PERR_STORAGE_FULL;
    default:
        return PERR_STORAGE_ERROR;
    }
}

/* One integer from a one-row query; the SQLite result code. */
static int query_int(sqlite3 *db, const char *sql, int *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *v = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* SQLite reads pages lazily: a damaged page in the middle of the file
 * would only be found later, by a claim, and then every restart would
 * fail the same way. Look at every page once, before serving. */
static int check_integrity(sqlite3 *db, const struct config *c, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    const char *sql = c->check_at_start == 2 ? "PRAGMA integrity_check(5)" : "PRAGMA quick_check(5)";
    int64_t t0 = util_mono_ms();
    int rc, bad = 0;
    char first[200] = "";

    if (c->check_at_start == 0)
        return 0;
    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW)
            break;
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (line && strcmp(line, "ok") != 0) {
            if (!bad)
                util_strlcpy(first, line, sizeof first);
            bad++;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE || bad) {
        snprintf(err, errlen,
                 "%s: the database is damaged (%s); refusing to start, file left untouched "
                 "(restore a backup, or inspect with sqlite3 .recover)",
                 c->db_path, bad ? first : sqlite3_errstr(rc));
        return -1;
    }
    log_info("integrity_checked", "mode=%s duration_ms=%lld", c->check_at_start == 2 ? "full" : "quick",
             (long long)(util_mono_ms() - t0));
    return 0;
}

static int migrate(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    int v = 0, ntab = 0, rc;
    char sql[64];

    rc = query_int(db, "PRAGMA user_version", &v);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot read database (%s); refusing to start, file left untouched",
                 path, sqlite3_errstr(rc));
        return -1;
    }
    if (v > SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "%s: schema version %d is newer than this hookd understands (%d); "
                 "refusing to start, file left untouched (run a newer hookd)",
                 path, v, SCHEMA_VERSION);
        return -1;
    }
    if (v == 0) {
        /* an empty file (version 0, no tables) is ours to initialise; tables
         * without our version belong to some other program */
        rc = query_int(db, "SELECT count(*) FROM sqlite_master", &ntab);
        if (rc != SQLITE_OK || ntab > 0) {
            snprintf(err, errlen, "%s: %s; refusing to start, file left untouched", path,
                     rc != SQLITE_OK ? sqlite3_errstr(rc) : "database has tables but no hookd schema version");
            return -1;
        }
    }
    for (; v < SCHEMA_VERSION; v++) {
        if (db_begin(db) < 0)
            goto fail;
        if (db_exec(db, schema_sql[v]) < 0)
            goto fail;
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
        if (db_exec(db, sql) < 0 || db_commit(db) < 0)
            goto fail;
        log_info("schema_migrated", "version=%d", v + 1);
    }
    return 0;
fail:
    db_rollback(db);
    snprintf(err, errlen, "%s: schema migration to version %d failed: %s", path, v + 1,
             sqlite3_errmsg(db));
    return -1;
}

int db_open_writer(const struct config *c, sqlite3 **out, char *err, size_t errlen)
{
    static const char *const sync_sql[] = {"PRAGMA synchronous = OFF", "PRAGMA synchronous = NORMAL",
                                           "PRAGMA synchronous = FULL", "PRAGMA synchronous = EXTRA"};
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc;

    *out = NULL;
    if (mkdir_parent(c->db_path, err, errlen) < 0)
        return -1;
    rc = sqlite3_open_v2(c->db_path, &db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open database: %s", c->db_path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, (int)c->busy_timeout_ms);
    /* the checks come before anything that could write */
    if (check_integrity(db, c, err, errlen) < 0)
        goto fail;
    if (migrate(db, c->db_path, err, errlen) < 0)
        goto fail;
    rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW ||
        strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
        snprintf(err, errlen, "%s: cannot switch to WAL mode: %s", c->db_path, sqlite3_errmsg(db));
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (db_exec(db, sync_sql[c->synchronous]) < 0 ||
        db_exec(db, "PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;"
                    "PRAGMA wal_autocheckpoint = 1000; PRAGMA cache_size = -16000") < 0) {
        snprintf(err, errlen, "%s: cannot set pragmas: %s", c->db_path, sqlite3_errmsg(db));
        goto fail;
    }
    *out = db;
    return 0;
fail:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return -1;
}

int db_open_reader(const struct config *c, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc;

    *out = NULL;
    rc = sqlite3_open_v2(c->db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open read-only: %s", c->db_path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_extended_result_codes(db, 1);
    /* SQLite before 3.51.3 can corrupt the WAL when two connections
     * checkpoint at once: only the writer ever checkpoints */
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_busy_timeout(db, (int)c->busy_timeout_ms);
    db_exec(db, "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -16000");
    *out = db;
    return 0;
}

void db_close(sqlite3 *db)
{
    sqlite3_close_v2(db);
}
