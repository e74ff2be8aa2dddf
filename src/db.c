/* db.c - the SQLite backend's connections: the single-instance lock,
 * opening (integrity check, schema migration, pragmas), statements. */
#include "db.h"
#include "log.h"
#include "schema_sql.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <libgen.h>
#include <stdio.h>
#include <pthread.h>
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

/* The page cache is most of hookd's memory; rows live on disk and the OS
 * caches the file as well. Negative cache_size: KiB. */
static int set_cache(sqlite3 *db, const struct config *c)
{
    char sql[64];

    snprintf(sql, sizeof sql, "PRAGMA cache_size = -%lld", (long long)(c->cache_bytes / 1024));
    return db_exec(db, sql);
}

int db_set_synchronous(sqlite3 *db, int level)
{
    static const char *const sql[] = {"PRAGMA synchronous = OFF", "PRAGMA synchronous = NORMAL",
                                      "PRAGMA synchronous = FULL", "PRAGMA synchronous = EXTRA"};

    return sqlite3_exec(db, sql[level], NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
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

/* What the check at start reads: quick_check looks at every page but
 * does not compare indexes with their tables, integrity_check does (the
 * chaos suite found page damage only the latter reports). Measured on a
 * 336 MB database (600k messages, 2M latency rows), warm cache: quick
 * 1.4 s, full 3.5 s. auto runs the full check up to full_check_max. */
static int check_mode(const struct config *c)
{
    struct stat st;
    char wal[4200];
    int64_t size = 0;

    if (c->check_at_start != CFG_CHECK_AUTO)
        return c->check_at_start;
    if (stat(c->db_path, &st) == 0)
        size += st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", c->db_path);
    if (stat(wal, &st) == 0)
        size += st.st_size;
    return size <= c->full_check_max ? CFG_CHECK_FULL : CFG_CHECK_QUICK;
}

/* SQLite reads pages lazily: a damaged page in the middle of the file
 * would only be found later, by a claim, and then every restart would
 * fail the same way. Look at every page once, before serving. */
/* Run an integrity or quick check: *bad counts the lines that are not
 * "ok", the first kept in first. SQLITE_DONE: the check ran to its end. */
static int integrity_run(sqlite3 *db, const char *sql, int *bad, char *first, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

    *bad = 0;
    first[0] = '\0';
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (line && strcmp(line, "ok") != 0 && !(*bad)++)
            util_strlcpy(first, line, n);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

static int check_integrity(sqlite3 *db, const struct config *c, char *err, size_t errlen)
{
    int mode = check_mode(c);
    const char *sql = mode == CFG_CHECK_FULL ? "PRAGMA integrity_check(5)" : "PRAGMA quick_check(5)";
    int64_t t0 = util_mono_ms();
    int rc, bad;
    char first[200];

    if (mode == CFG_CHECK_OFF)
        return 0;
    rc = integrity_run(db, sql, &bad, first, sizeof first);
    if (rc != SQLITE_DONE || bad) {
        snprintf(err, errlen,
                 "%s: the database is damaged (%s); refusing to start, file left untouched "
                 "(restore a backup, or inspect with sqlite3 .recover)",
                 c->db_path, bad ? first : sqlite3_errstr(rc));
        return -1;
    }
    log_info("integrity_checked", "mode=%s duration_ms=%lld", mode == CFG_CHECK_FULL ? "full" : "quick",
             (long long)(util_mono_ms() - t0));
    return 0;
}

/* Opening a WAL database writes beside it even when nothing is changed:
 * the -wal and -shm are created if absent, and the first connection
 * rebuilds the -shm index. A file hookd refuses must be left exactly as
 * it was found, side files included, for whoever inspects or restores
 * it; so they are noted before the open and put back on refusal. Only
 * hookd touches them meanwhile (the single-instance lock is held). */
struct side_files {
    char wal[4200], shm[4200];
    int had_wal, had_shm;
    struct buf shm_bytes;
};

static int read_file(const char *path, struct buf *b)
{
    char tmp[65536];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((n = read(fd, tmp, sizeof tmp)) > 0)
        if (buf_append(b, tmp, (size_t)n) < 0)
            break;
    close(fd);
    return n == 0 ? 0 : -1;
}

static void side_note(struct side_files *sf, const char *db_path)
{
    memset(sf, 0, sizeof *sf);
    snprintf(sf->wal, sizeof sf->wal, "%s-wal", db_path);
    snprintf(sf->shm, sizeof sf->shm, "%s-shm", db_path);
    sf->had_wal = access(sf->wal, F_OK) == 0;
    sf->had_shm = access(sf->shm, F_OK) == 0 && read_file(sf->shm, &sf->shm_bytes) == 0;
}

/* After the connection is closed (without a checkpoint). */
static void side_restore(struct side_files *sf)
{
    int fd;

    if (!sf->had_wal)
        unlink(sf->wal);
    if (!sf->had_shm) {
        unlink(sf->shm);
    } else if ((fd = open(sf->shm, O_WRONLY | O_TRUNC | O_CLOEXEC)) >= 0) {
        size_t off = 0;
        while (off < sf->shm_bytes.len) {
            ssize_t n = write(fd, sf->shm_bytes.p + off, sf->shm_bytes.len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        close(fd);
    }
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

/* Before the first connection. SQLite's memory statistics take a global
 * mutex on every allocation of every connection; hookd never reads them. */
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int db_open_writer(const struct config *c, sqlite3 **out, char *err, size_t errlen)
{
    struct side_files sf;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc, refused = 0, sd = 0;

    *out = NULL;
    if (mkdir_parent(c->db_path, err, errlen) < 0)
        return -1;
    side_note(&sf, c->db_path);
    refused = 1;
    pthread_once(&sqlite_once, sqlite_setup);
    rc = sqlite3_open_v2(c->db_path, &db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open database: %s", c->db_path,
                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        goto fail;
    }
    /* closing must never checkpoint: a refused file stays as it was, and
     * the writer checkpoints explicitly (writer_free) when it is done */
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, (int)c->busy_timeout_ms);
    /* the checks come before anything that could write */
    if (check_integrity(db, c, err, errlen) < 0)
        goto fail;
    if (migrate(db, c->db_path, err, errlen) < 0)
        goto fail;
    refused = 0;
    rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW ||
        strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
        snprintf(err, errlen, "%s: cannot switch to WAL mode: %s", c->db_path, sqlite3_errmsg(db));
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (db_set_synchronous(db, c->synchronous) < 0 || set_cache(db, c) < 0 ||
        /* no wal_autocheckpoint: the store's WAL hook replaces SQLite's
         * (store_sqlite.c), so no commit ever runs a checkpoint */
        db_exec(db, "PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY;"
                    /* a log restarted from its start keeps the file's old
                     * length unless told: after a reader held it for
                     * minutes the -wal would stay hundreds of MB for good */
                    "PRAGMA journal_size_limit = 16777216") < 0) {
        snprintf(err, errlen, "%s: cannot set pragmas: %s", c->db_path, sqlite3_errmsg(db));
        goto fail;
    }
    /* hookd erase overwrites what it frees (store_sqlite_queue.c); the
     * copies earlier updates of a row left in its page's free space must
     * be gone too: FAST zeroes them in the page, at no I/O cost. A build
     * whose default is ON (Debian's) keeps it. */
    if (query_int(db, "PRAGMA secure_delete", &sd) != SQLITE_OK ||
        (sd == 0 && db_exec(db, "PRAGMA secure_delete = FAST") < 0)) {
        snprintf(err, errlen, "%s: cannot set secure_delete: %s", c->db_path, sqlite3_errmsg(db));
        goto fail;
    }
    buf_free(&sf.shm_bytes);
    *out = db;
    return 0;
fail:
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (refused)
        side_restore(&sf);
    buf_free(&sf.shm_bytes);
    return -1;
}

int db_open_reader(const struct config *c, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc;

    *out = NULL;
    pthread_once(&sqlite_once, sqlite_setup);
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
    db_exec(db, "PRAGMA wal_autocheckpoint = 0");
    set_cache(db, c);
    *out = db;
    return 0;
}

int db_check_file(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc, v = 0, tables = 0, bad = 0, had[2], i;
    char first[200] = "", side[2][4200];

    /* reading a WAL-mode file creates its -wal and -shm: those of a copy
     * that had none go again afterwards */
    for (i = 0; i < 2; i++) {
        snprintf(side[i], sizeof side[i], "%s-%s", path, i ? "shm" : "wal");
        had[i] = access(side[i], F_OK) == 0;
    }
    pthread_once(&sqlite_once, sqlite_setup);
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
                           "('webhook_queue', 'endpoints', 'endpoint_health')", &tables);
    if (rc == SQLITE_OK)
        rc = query_int(db, "PRAGMA user_version", &v);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot read it as a database: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        goto fail;
    }
    if (tables != 3 || v < 1) {
        snprintf(err, errlen, "%s is not a hookd database", path);
        goto fail;
    }
    if (v > db_schema_version()) {
        snprintf(err, errlen, "%s has schema %d, newer than this hookd knows (%d)", path, v, db_schema_version());
        goto fail;
    }
    rc = integrity_run(db, "PRAGMA integrity_check(5)", &bad, first, sizeof first);
    if (rc != SQLITE_DONE || bad) {
        snprintf(err, errlen, "%s is damaged (%s)", path, bad ? first : sqlite3_errstr(rc));
        v = -1;
    }
    goto out;
fail:
    v = -1;
out:
    sqlite3_close(db);
    for (i = 0; i < 2; i++)
        if (!had[i])
            unlink(side[i]);
    return v;
}

void db_close(sqlite3 *db)
{
    sqlite3_close_v2(db);
}
