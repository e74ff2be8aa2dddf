/* store_sqlite.h - the SQLite storage backend (the embedded default).
 *
 * One writer connection does every write and every checkpoint; readers
 * open read-only connections that never checkpoint. Statements are
 * prepared once for the connection's life. Only the files of this
 * backend (src/store_sqlite*.c, and db.c, its connection helper)
 * include sqlite3.h.
 *
 * Files: store_sqlite.c (open, transactions, checkpoint, backup, the ops
 * table), store_sqlite_sql.c (the statements and their helpers),
 * store_sqlite_queue.c (enqueue, claim, settle, admin and
 * retention), store_sqlite_endpoint.c (endpoints and their health),
 * store_sqlite_read.c (the reader's queries). */
#ifndef HOOKD_STORE_SQLITE_H
#define HOOKD_STORE_SQLITE_H
#include <sqlite3.h>

#include "store.h"

int store_sqlite_open(const struct config *c, enum store_role role, struct store **out, char *err,
                      size_t errlen);

/* ---- private to the backend's files ---- */

enum sq_stmt {
    /* writer */
    SQ_INSERT, SQ_INSERT_CLAIMED, SQ_INSERT_N, SQ_INSERT_CLAIMED_N, SQ_FIND, SQ_CLAIM, SQ_CLAIM_MARK, SQ_CLAIM_MARK_N, SQ_NEXT_DUE, SQ_CLAIM_ORDERED, SQ_NEXT_DUE_ORDERED,
    SQ_DELIVERED, SQ_DELIVERED_FIRST, SQ_FAILED, SQ_DEAD, SQ_RELEASE, SQ_ATTEMPT, SQ_SAMPLE, SQ_SAMPLE_N,
    SQ_HEALTH_SAVE, SQ_ROLLUP_SAVE, SQ_HISTORY_ADD, SQ_HISTORY_LATENCY,
    SQ_EXPIRE_DELIVERED, SQ_EXPIRE_DEAD, SQ_EXPIRE_HISTORY,
    SQ_EP_FIND, SQ_EP_PUT, SQ_EP_PAUSE, SQ_EP_DEAD, SQ_EP_DELETE, SQ_EP_HEALTH_DELETE, SQ_EP_RING_DELETE,
    SQ_EP_HISTORY_DELETE,
    SQ_RING_TRIM, SQ_IMPORT, SQ_TX_BEGIN, SQ_TX_COMMIT, SQ_TX_ROLLBACK,
    SQ__WRITER,
    /* reader */
    SQ_CNT_PENDING = SQ__WRITER, SQ_CNT_FAILED, SQ_CNT_IN_FLIGHT, SQ_CNT_DEAD, SQ_CNT_DELIVERED,
    SQ_DELIVERED_SINCE, SQ_FAILED_SINCE, SQ_OLDEST_PENDING, SQ_CNT_SCHEDULED,
    SQ_GET, SQ_GET_ATTEMPTS, SQ_EP_LIST, SQ_DEAD_LETTERS, SQ_SLOW, SQ_LATENCY, SQ_HISTORY, SQ_DEAD_CLASSES,
    SQ_BEGIN, SQ_COMMIT,
    SQ__COUNT
};

struct sq_store {
    struct store base;
    const struct config *c;
    enum store_role role;
    sqlite3 *db;
    sqlite3_stmt *st[SQ__COUNT];
    int lock_fd;         /* writer: the single-instance lock, held until close */
    int sync_level;      /* writer: PRAGMA synchronous now (enum cfg_sync) */
    int log_frames;      /* writer: frames in the -wal after the last commit, 0 once checkpointed */
    int64_t *claim_ids;  /* writer: a claim's row ids, between its select and its updates */
    size_t claim_cap;
};

extern const char *const sq_sql[SQ__COUNT];
/* The row ids one SQ_CLAIM_MARK_N takes; the samples one SQ_SAMPLE_N writes;
 * the rows one SQ_INSERT_N / SQ_INSERT_CLAIMED_N inserts. */
#define SQ_MARK_IDS 8
#define SQ_INSERT_ROWS 8
#define SQ_SAMPLES_N 8

/* The statement, reset and unbound. */
sqlite3_stmt *sq_stmt(struct sq_store *q, enum sq_stmt i);
/* The kind of failure a SQLite result code is. */
enum store_errc sq_errc(int rc);
/* Record a SQLite failure (rc) as the store's error; returns -1. */
int sq_fail(struct sq_store *q, int rc, const char *what);
/* Step a statement that returns no rows; reset it either way. */
int sq_exec_stmt(struct sq_store *q, sqlite3_stmt *st, const char *what);
/* Bind NULL for an empty string / a value <= 0. */
void sq_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
void sq_bind_pos_or_null(sqlite3_stmt *st, int i, int64_t v);
/* The column as int64, null_value for NULL. */
int64_t sq_col_or(sqlite3_stmt *st, int col, int64_t null_value);
/* endpoint_health's columns from first on (SQ_HEALTH_COLS' order:
 * SQ_HEALTH_NCOLS of them), and the whole table's SELECT in that order
 * after endpoint_id, endpoint_url. */
#define SQ_HEALTH_NCOLS 15
void sq_health_cols(sqlite3_stmt *st, int first, struct store_health *h);
const char *sq_health_select(void);

/* A message's columns (q: webhook_queue, e: endpoints), as sq_msg_cols
 * reads them. */
#define SQ_MSG_COLS                                                                                         \
    "q.id, e.name, q.endpoint_id, q.event_id, q.event_type, q.status, q.attempt_count, q.max_attempts, "    \
    "q.created_at, q.next_attempt_at, q.claimed_at, q.delivered_at, q.last_error, q.last_status_code, "     \
    "q.last_response_ms, length(CAST(q.payload AS BLOB)), q.last_error_class, q.erased_at"
#define SQ_MSG_NCOLS 18
void sq_msg_cols(sqlite3_stmt *st, struct store_message *m);
/* The search's statement for sc (message_scan): by event id from its
 * index, dead letters from theirs, or newest first down the table's
 * rowids (exposed for the plan test). */
const char *sq_search_sql(const struct store_scan *sc);

/* The operations, by file. */
int sq_recover(struct store *s, int64_t now, int64_t *n);
int sq_erase(struct store *s, int64_t id, int64_t now, int64_t *n);
int sq_message_scan(struct store *s, const struct store_scan *sc,
                    int (*fn)(void *ctx, const struct store_message *m, const char *payload, size_t len),
                    void *ctx);
int sq_clock_step(struct store *s, int64_t step_ms, int mine_only, int64_t *rows);
int sq_enqueue(struct store *s, struct store_enqueue *v, size_t n, int64_t now);
int sq_claim(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
             int (*fn)(void *ctx, const struct store_claimed *row), void *ctx, int *n);
int sq_next_due(struct store *s, int64_t endpoint_id, int ordered, int64_t *at);
int sq_settle(struct store *s, struct store_settle *v, size_t n);
int sq_requeue(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone);
int sq_purge(struct store *s, const struct store_filter *f, int64_t *n);
int sq_expire(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n);

int sq_endpoints_load(struct store *s, int (*fn)(void *ctx, int64_t id, int from_config, const struct ep_def *d),
                      void *ctx);
int sq_health_load(struct store *s, int (*fn)(void *ctx, const struct store_health *h), void *ctx);
int sq_endpoint_put(struct store *s, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                    int *created);
int sq_endpoint_delete(struct store *s, int64_t id, int64_t now, int64_t *dead);
int sq_endpoint_pause(struct store *s, int64_t id, int paused, const char *reason, int64_t now);
int sq_health_save(struct store *s, const struct store_health *v, size_t n);
int sq_rollup_save(struct store *s, const struct store_rollup *v, size_t n);
int sq_history_add(struct store *s, const struct store_history *v, size_t n);
int sq_history_latency(struct store *s, const struct store_history *v, size_t n);
int sq_latency_ring_size(struct store *s, int64_t slots);
int sq_import_rows(struct store *s, struct store_row *v, size_t n);

int sq_snapshot_begin(struct store *s);
void sq_snapshot_end(struct store *s);
int sq_message_get(struct store *s, int64_t id, int (*fn)(void *ctx, const struct store_message *m), void *ctx,
                   int *found);
int sq_message_attempts(struct store *s, const struct store_message *m, int limit,
                        int (*fn)(void *ctx, const struct store_attempt *a), void *ctx);
int sq_queue_stats(struct store *s, int64_t now, int with_delivered, struct store_stats *out);
int sq_endpoint_list(struct store *s, int with_queue, int (*fn)(void *ctx, const struct store_endpoint_info *e),
                     void *ctx);
int sq_dead_letters(struct store *s, int64_t since, int limit,
                    int (*fn)(void *ctx, const struct store_dead_group *g), void *ctx);
int sq_slow_endpoints(struct store *s, int64_t p95_ms, int64_t min_samples,
                      int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx);
int sq_latency_window(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                      size_t *cap, size_t *n);
int sq_history(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx);
int sq_export_rows(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *r), void *ctx);
int sq_dead_classes(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                    void *ctx);

#endif
