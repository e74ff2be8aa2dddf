/* store_sqlite.c - the SQLite backend: its statements, connections,
 * transactions, checkpoints, backup and the ops table. */
#include "store_sqlite.h"
#include "db.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- transactions and the log ---- */

/* In WAL mode synchronous=NORMAL syncs nothing at commit, FULL syncs the
 * log; a FULL commit syncs every frame before it too. So only a commit
 * that acknowledges something pays for the fsync, and the level is set
 * per transaction, never above what the configuration asks for. */
static int sq_begin(struct store *s, int durable)
{
    struct sq_store *q = (struct sq_store *)s;
    int level = durable || q->c->synchronous < CFG_SYNC_NORMAL ? q->c->synchronous : CFG_SYNC_NORMAL;
    int rc;

    if (level != q->sync_level) {
        if (db_set_synchronous(q->db, level) < 0)
            return sq_fail(q, sqlite3_extended_errcode(q->db), "begin: synchronous");
        q->sync_level = level;
    }
    rc = sqlite3_step(q->st[SQ_TX_BEGIN]);
    sqlite3_reset(q->st[SQ_TX_BEGIN]);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "begin");
}

/* A COMMIT that fails (SQLITE_BUSY, an I/O error) leaves the transaction
 * open, as sqlite3_exec did: the caller rolls back. */
static int sq_commit(struct store *s)
{
    struct sq_store *q = (struct sq_store *)s;
    int rc = sqlite3_step(q->st[SQ_TX_COMMIT]);

    sqlite3_reset(q->st[SQ_TX_COMMIT]);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "commit");
}

static void sq_rollback(struct store *s)
{
    struct sq_store *q = (struct sq_store *)s;

    if (!sqlite3_get_autocommit(q->db)) {
        sqlite3_step(q->st[SQ_TX_ROLLBACK]);
        sqlite3_reset(q->st[SQ_TX_ROLLBACK]);
    }
}

/* SQLite's own auto-checkpoint runs inside the COMMIT that crosses its
 * threshold, so the acks and the claimed jobs of that round would wait
 * for the checkpoint's fsyncs (2.4 ms on average and up to 10 ms on this
 * project's disk, one round in about 50 while draining). This hook
 * replaces it and only counts; the writer checkpoints after the round
 * (sq_checkpoint_due), at SQLite's default threshold. */
#define SQ_CHECKPOINT_FRAMES 1000

static int wal_counted(void *arg, sqlite3 *db, const char *name, int frames)
{
    struct sq_store *q = arg;

    (void)db;
    (void)name;
    q->log_frames = frames;
    return SQLITE_OK;
}

static int sq_checkpoint_due(struct store *s)
{
    return ((struct sq_store *)s)->log_frames >= SQ_CHECKPOINT_FRAMES;
}

/* PASSIVE never waits for readers; when they let the whole log through,
 * restart it so the -wal file stops growing (TRUNCATE would wait). */
static int sq_checkpoint(struct store *s, int full)
{
    struct sq_store *q = (struct sq_store *)s;
    int log_pages = 0, ckpt = 0, rc;

    /* counted again by the next commit: a log that readers kept from
     * being copied is tried again then, as SQLite's own hook does */
    q->log_frames = 0;
    if (full) {
        rc = sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        return rc == SQLITE_OK ? 0 : sq_fail(q, rc, "checkpoint");
    }
    rc = sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &ckpt);
    if (rc == SQLITE_OK && log_pages > 0 && ckpt == log_pages && log_pages > 4096)
        sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    else if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        return sq_fail(q, rc, "checkpoint");
    return 0;
}

/* SQLite's online backup: a consistent copy while hookd keeps serving.
 * One step for the whole file: it reads one WAL snapshot, so the writer
 * is never held (it only keeps checkpoints from passing the snapshot
 * until the copy ends). Copied in several steps, every commit made
 * by another connection between two steps would restart the copy, and
 * under steady load it would never end. */
static int sq_backup(struct store *s, const char *path)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3 *dst = NULL;
    sqlite3_backup *b;
    int rc = sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);

    if (rc != SQLITE_OK) {
        store_fail(s, STORE_E_OTHER, "backup: cannot open %s: %s", path, dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
        sqlite3_close(dst);
        return -1;
    }
    b = sqlite3_backup_init(dst, "main", q->db, "main");
    if (!b) {
        store_fail(s, STORE_E_OTHER, "backup: %s", sqlite3_errmsg(dst));
        sqlite3_close(dst);
        return -1;
    }
    do {
        rc = sqlite3_backup_step(b, -1);
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            sqlite3_sleep(5);
    } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        store_fail(s, sq_errc(rc), "backup: %s", sqlite3_errstr(rc));
        sqlite3_close(dst);
        return -1;
    }
    rc = sqlite3_close(dst);
    return rc == SQLITE_OK ? 0 : sq_fail(q, rc, "backup: close");
}

static void sq_close(struct store *s)
{
    struct sq_store *q = (struct sq_store *)s;
    int i;

    for (i = 0; i < SQ__COUNT; i++)
        sqlite3_finalize(q->st[i]);
    if (q->db && q->role == STORE_WRITER)
        sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    db_close(q->db);
    if (q->lock_fd >= 0)
        close(q->lock_fd);  /* after the database is closed */
    seal_key_wipe(&q->base.seal);
    free(q->claim_ids);
    free(q);
}

static const struct store_ops sq_ops = {
    .name = "sqlite",
    .close = sq_close,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .recover = sq_recover,
    .endpoints_load = sq_endpoints_load,
    .health_load = sq_health_load,
    .enqueue = sq_enqueue,
    .claim = sq_claim,
    .next_due = sq_next_due,
    .settle = sq_settle,
    .requeue = sq_requeue,
    .purge = sq_purge,
    .expire = sq_expire,
    .erase = sq_erase,
    .endpoint_put = sq_endpoint_put,
    .endpoint_delete = sq_endpoint_delete,
    .endpoint_pause = sq_endpoint_pause,
    .health_save = sq_health_save,
    .rollup_save = sq_rollup_save,
    .history_add = sq_history_add,
    .history_latency = sq_history_latency,
    .latency_ring_size = sq_latency_ring_size,
    .clock_step = sq_clock_step,
    .checkpoint = sq_checkpoint,
    .checkpoint_due = sq_checkpoint_due,
    .backup = sq_backup,
    .snapshot_begin = sq_snapshot_begin,
    .snapshot_end = sq_snapshot_end,
    .message_get = sq_message_get,
    .message_scan = sq_message_scan,
    .message_attempts = sq_message_attempts,
    .queue_stats = sq_queue_stats,
    .endpoint_list = sq_endpoint_list,
    .dead_letters = sq_dead_letters,
    .slow_endpoints = sq_slow_endpoints,
    .latency_window = sq_latency_window,
    .history = sq_history,
    .dead_classes = sq_dead_classes,
    .import_rows = sq_import_rows,
    .export_rows = sq_export_rows,
};

int store_sqlite_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen)
{
    struct sq_store *q = calloc(1, sizeof *q);
    int i, first, last;

    *out = NULL;
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    q->base.ops = &sq_ops;
    q->c = c;
    q->role = role;
    q->lock_fd = -1;
    q->sync_level = c->synchronous;   /* what db_open_writer sets */
    /* one hookd per database: the lock comes before anything touches it */
    if (role == STORE_WRITER && db_lock(c, &q->lock_fd, err, errlen) < 0) {
        free(q);
        return -1;
    }
    if ((role == STORE_WRITER ? db_open_writer(c, &q->db, err, errlen) : db_open_reader(c, &q->db, err, errlen)) < 0) {
        q->role = STORE_READER;
        sq_close(&q->base);
        return -1;
    }
    first = role == STORE_WRITER ? 0 : SQ__WRITER;
    last = role == STORE_WRITER ? SQ__WRITER : SQ__COUNT;
    for (i = first; i < last; i++)
        if (db_prepare(q->db, &q->st[i], sq_sql[i]) < 0) {
            snprintf(err, errlen, "%s: cannot prepare statement %d: %s", c->db_path, i, sqlite3_errmsg(q->db));
            q->role = STORE_READER;  /* nothing to checkpoint */
            sq_close(&q->base);
            return -1;
        }
    if (role == STORE_WRITER)
        sqlite3_wal_hook(q->db, wal_counted, q);
    if (role == STORE_WRITER &&
        /* a large -wal left by a crash or another tool would otherwise be
         * checkpointed after the first round, while clients wait for acks */
        sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        log_warn("checkpoint_failed", "when=start err=\"%s\"", sqlite3_errmsg(q->db));
    *out = &q->base;
    return 0;
}
