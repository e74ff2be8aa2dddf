/* queue.h - the webhook_queue and its attempt records, as prepared
 * statements on the writer connection (kept for the process's life).
 * Every function runs inside the caller's transaction. */
#ifndef HOOKD_QUEUE_H
#define HOOKD_QUEUE_H
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

enum queue_stmt_id {
    QS_INSERT, QS_FIND, QS_CLAIM, QS_NEXT_DUE,
    QS_DELIVERED, QS_FAILED, QS_DEAD, QS_RELEASE, QS_LATENCY, QS_HEALTH,
    QS_REQUEUE_ID, QS_REQUEUE_EP, QS_PURGE,
    QS__COUNT
};

struct queue {
    sqlite3 *db;
    sqlite3_stmt *st[QS__COUNT];
    int last_rc;     /* SQLite result code of the last failure */
};

/* One claimed row, handed to the callback (strings valid only during it). */
struct queue_row {
    int64_t id;
    const char *event_id;
    const char *payload;
    size_t payload_len;
    int attempt_count;
    int max_attempts;
};

int queue_open(struct queue *q, sqlite3 *db);
void queue_close(struct queue *q);

/* Insert unless (endpoint_id, event_id) exists: then *dup = 1 and *id is
 * the existing row. */
int queue_insert(struct queue *q, int64_t endpoint_id, const char *event_id, const char *event_type,
                 const char *payload, size_t len, int max_attempts, int64_t now, int64_t *id, int *dup);

/* Claim up to limit due rows of one endpoint, oldest due first; each is
 * marked in_flight and passed to cb. Returns the count or -1. */
int queue_claim(struct queue *q, int64_t endpoint_id, int64_t now, int limit,
                int (*cb)(void *ctx, const struct queue_row *row), void *ctx);
/* Earliest next_attempt_at of the endpoint's pending/failed rows, or
 * INT64_MAX when there is none. -1 on error. */
int queue_next_due(struct queue *q, int64_t endpoint_id, int64_t *at);

int queue_mark_delivered(struct queue *q, int64_t id, int attempts, int status, int64_t ms, int64_t now);
int queue_mark_failed(struct queue *q, int64_t id, int attempts, int64_t next_at, const char *err,
                      int status, int64_t ms);
int queue_mark_dead(struct queue *q, int64_t id, int attempts, const char *err, int status, int64_t ms);
/* Back to the queue without counting an attempt (shutdown, recovery). */
int queue_release(struct queue *q, int64_t id, int64_t next_at);
int queue_latency_add(struct queue *q, int64_t endpoint_id, int64_t msg_id, int64_t ms, int status,
                      const char *errclass, int64_t now);
int queue_health_save(struct queue *q, int64_t endpoint_id, const char *url, const char *state,
                      int64_t consecutive_failures, int64_t threshold, int64_t last_failure_at,
                      int64_t last_success_at, int64_t opened_at, int64_t cooldown_ms);

/* Dead letter (or any non-in-flight row) -> pending, attempt_count 0. */
int queue_requeue_id(struct queue *q, int64_t id, int64_t now, int64_t *n);
int queue_requeue_endpoint(struct queue *q, int64_t endpoint_id, int64_t since, int64_t now, int64_t *n);
int queue_purge(struct queue *q, int64_t endpoint_id, int64_t since, int64_t *n);

/* At start: rows left in_flight by a crash go back to the queue. */
int queue_recover(sqlite3 *db, int64_t now, int64_t *n);

#endif
