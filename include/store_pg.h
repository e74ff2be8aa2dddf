/* store_pg.h - the PostgreSQL storage backend ([storage] backend =
 * postgres), with libpq.
 *
 * The same contract as SQLite (store.h, held by the behaviour table in
 * tests/unit/test_store.c), on the schema in schema/postgres/ (applied by
 * the writer at start, versioned in the hookd_schema table). One
 * connection per store: the writer's does every change, readers' run
 * their queries in REPEATABLE READ snapshots. Statements are prepared
 * once per connection (again after a reconnect). Claims take rows with
 * FOR UPDATE SKIP LOCKED. Several nodes share one database: each writer
 * registers its node in hookd_node and keeps it alive with node_beat;
 * rows in flight carry their node (claimed_by), and results count only
 * for the node that claimed the row. The breaker is the health row's,
 * changed under its row lock (health_lock). A session advisory lock per
 * node name refuses a second process with the same name; another on the
 * writer connection makes one node the lead of the periodic jobs (it
 * goes with the session when that node dies).
 *
 * A lost connection is STORE_E_UNAVAILABLE (retryable): the next
 * transaction reconnects. Error messages carry PostgreSQL's primary
 * message only: its DETAIL can quote row values (payload fields).
 *
 * Files: store_pg.c (schema, transactions, the ops table, open),
 * store_pg_conn.c (connecting, reconnects, statements, pipelines, errors),
 * store_pg_sql.c (the statements and the parameter and column helpers),
 * store_pg_queue.c (enqueue, claim, settle: the hot path), store_pg_admin.c
 * (recovery, clock steps, requeue, purge, erase, retention, import),
 * store_pg_endpoint.c (endpoints and their health), store_pg_read.c
 * (the reader's queries), store_pg_node.c (nodes: registration,
 * heartbeat, takeover, lead), store_pg_watch.c (LISTEN/NOTIFY). Only these
 * files include libpq-fe.h. */
#ifndef HOOKD_STORE_PG_H
#define HOOKD_STORE_PG_H
#include <stdio.h>

#include "store.h"

int store_pg_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen);
/* The schema as SQL for operators who apply DDL themselves. */
void store_pg_schema_print(FILE *out);
/* Connect and say to what, or why not (check-config); 0 / -1. */
int store_pg_ping(const struct config *c, char *msg, size_t len);
/* The listener (store_pg_watch.c): LISTEN on a connection of its own. */
int store_pg_watch_start(const struct config *c, store_watch_fn fn, void *ctx, struct store_watch **out, char *err,
                         size_t errlen);
void store_pg_watch_stop(struct store_watch *w);

#ifdef HOOKD_STORE_PG_PRIVATE
#include <libpq-fe.h>

/* Times travel as epoch milliseconds and are stored as timestamptz. */
#define PG_TS(p) "(timestamptz 'epoch' + (" p ")::bigint * interval '1 millisecond')"
#define PG_MS(c) "(extract(epoch FROM " c ") * 1000)::bigint"

enum pg_stmt {
    /* writer */
    PG_INSERT, PG_INSERT_CLAIMED, PG_FIND, PG_CLAIM, PG_CLAIM_ORDERED, PG_NEXT_DUE, PG_NEXT_DUE_ORDERED,
    PG_CLAIM_MANY, PG_NEXT_DUE_MANY,
    PG_SETTLE, PG_RELEASE, PG_HEALTH_SAVE, PG_ROLLUP_SAVE, PG_HISTORY_ADD, PG_HISTORY_LATENCY,
    PG_EXPIRE_DELIVERED, PG_EXPIRE_DEAD, PG_EXPIRE_HISTORY,
    PG_EP_FIND, PG_EP_PUT, PG_EP_PAUSE, PG_EP_DELETE, PG_RING_TRIM, PG_IMPORT,
    PG_HEALTH_LOCK, PG_HEALTH_ENSURE, PG_NOTIFY, PG_TAKEOVER, PG_NODE_BEAT, PG_NODE_ADD, PG_NODE_LEAVE, PG_NODE_COUNT,
    PG_LEAD, PG_IN_FLIGHT,
    PG__WRITER,
    /* reader */
    PG_STATS = PG__WRITER, PG_GET, PG_GET_ATTEMPTS, PG_EP_LIST, PG_DEAD_LETTERS, PG_SLOW, PG_LATENCY,
    PG_HISTORY, PG_DEAD_CLASSES, PG_EXPORT,
    PG__COUNT
};

struct pg_store {
    struct store base;
    const struct config *c;
    enum store_role role;
    PGconn *conn;
    int prepared;        /* the role's statements are prepared on conn */
    /* the writer's node (store_pg_node.c) */
    int64_t node_id;     /* this incarnation's hookd_node row (0: none yet) */
    int lead;            /* holds the lead lock on this connection */
    int lease_lost;      /* node_beat found the row gone: say so once */
    /* run at the end of every session setup (the writer's node register:
     * set by the opener, so the connection code does not call up into
     * the node code) */
    int (*on_session)(struct pg_store *g);
};

/* Parameters of one statement: text values (a NULL value is SQL NULL)
 * and binary ones (bytea). */
#define PG_MAXP 20
struct pg_params {
    int n;
    const char *v[PG_MAXP];
    int len[PG_MAXP], fmt[PG_MAXP];
    char buf[PG_MAXP][24];
};

extern const char *const pg_sql[PG__COUNT];

void pg_p_init(struct pg_params *p);
void pg_p_i64(struct pg_params *p, int64_t v);
void pg_p_pos(struct pg_params *p, int64_t v);           /* NULL when v <= 0 */
/* A bound of a time range: "forever" (INT64_MAX) is beyond timestamptz,
 * so bounds are clamped to years 1 and 9999. */
void pg_p_time(struct pg_params *p, int64_t ms);
void pg_p_text(struct pg_params *p, const char *s);      /* NULL when NULL or "" */
void pg_p_bytes(struct pg_params *p, const char *b, size_t n);
void pg_p_null(struct pg_params *p);
/* p50, p95, p99: three values, or three NULLs without latency. */
void pg_p_latency(struct pg_params *p, int has, int64_t p50, int64_t p95, int64_t p99);

/* A connection with hookd's defaults under the operator's conninfo. */
PGconn *pg_connect(const struct config *c);
/* A new connection (or the old one reset): the session, the writer's
 * lock, the role's statements. */
int pg_session_setup(struct pg_store *g);
/* A lost connection reset (and set up again); 0, or -1 with the store's
 * error (storage_unavailable) when the server cannot be reached. */
int pg_ensure_conn(struct pg_store *g);

/* Run a prepared statement (results in binary when binary is set).
 * NULL on failure, with the store's error set; otherwise the caller
 * PQclear()s the result. */
PGresult *pg_exec(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, int binary, const char *what);
/* Run a prepared read and hand each row to row(ctx, r, i) in order; a
 * non-zero return stops the walk and the call fails with
 * STORE_E_NOMEM (callbacks stop for nothing else). */
int pg_each(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, int binary, const char *what,
            int (*row)(void *ctx, const PGresult *r, int i), void *ctx);
/* Run SQL text without parameters; 0 / -1 with the error set. */
int pg_exec_sql(struct pg_store *g, const char *sql, const char *what);
/* A pipeline: statements sent without waiting, results read in order
 * (fn gets the k-th statement's result). Inside the caller's
 * transaction; after a failure the rest is not run and end returns -1
 * with the first error. */
struct pg_pipe {
    struct pg_store *g;
    const char *what;
    int (*fn)(void *ctx, size_t k, const PGresult *r);
    void *ctx;
    size_t queued, done;
    int failed;
    int binary;           /* results in binary */
};
int pg_pipe_begin(struct pg_pipe *pp, struct pg_store *g, const char *what,
                  int (*fn)(void *ctx, size_t k, const PGresult *r), void *ctx);
/* The same, with the results in binary (claims: payload bytes as they are). */
int pg_pipe_begin_binary(struct pg_pipe *pp, struct pg_store *g, const char *what,
                         int (*fn)(void *ctx, size_t k, const PGresult *r), void *ctx);
int pg_pipe_add(struct pg_pipe *pp, enum pg_stmt i, const struct pg_params *p);
int pg_pipe_end(struct pg_pipe *pp);
/* n statements of one kind in one pipeline, the i-th's parameters set by
 * params(p, v, i); their results are not read. */
int pg_pipe_rows(struct pg_store *g, enum pg_stmt st, const char *what, size_t n,
                 void (*params)(struct pg_params *p, const void *v, size_t i), const void *v);
/* Record a libpq failure (res may be NULL) as the store's error; -1. */
int pg_fail(struct pg_store *g, const PGresult *res, const char *what);
/* Rows changed by a command's result. */
int64_t pg_changed(const PGresult *r);

/* Columns, in text or binary results alike. */
int64_t pg_i64(const PGresult *r, int row, int col, int64_t null_value);
double pg_f64(const PGresult *r, int row, int col);
const char *pg_str(const PGresult *r, int row, int col);  /* NULL for SQL NULL */
int pg_isnull(const PGresult *r, int row, int col);

/* endpoint_health's columns (PG_HEALTH_NCOLS from first on, in the
 * order of PG_HEALTH_COLS in store_pg_sql.c). */
#define PG_HEALTH_NCOLS 15
void pg_health_cols(const PGresult *r, int row, int first, struct store_health *h);
const char *pg_health_select(void);

/* NOTIFY channel with an id as payload, at commit; 0 / -1. */
int pg_notify(struct pg_store *g, const char *channel, int64_t id);
void pg_notify_params(struct pg_params *p, const char *channel, int64_t id);   /* for a pipeline */
/* This node's row (store_pg_node.c), at every session setup: the name's
 * lock, then the same row again or a new one. */
int pg_node_register(struct pg_store *g);
/* A clean stop: the node's row goes (what it still had in flight is
 * anyone's to take over at once). Errors are ignored: the lease ends it. */
void pg_node_leave(struct pg_store *g);

/* The operations, by file. */
int pg_recover(struct store *s, int64_t now, int64_t *n);
int pg_erase(struct store *s, int64_t id, int64_t now, int64_t *n);
int pg_message_scan(struct store *s, const struct store_scan *sc,
                    int (*fn)(void *ctx, const struct store_message *m, const char *payload, size_t len),
                    void *ctx);
/* A message's columns (q: hookd_queue, e: endpoints), as pg_msg_cols reads them. */
#define PG_MSG_COLS                                                                                         \
    "q.id, e.name, q.endpoint_id, q.event_id, q.event_type, q.status, q.attempt_count, q.max_attempts, "    \
    PG_MS("q.created_at") ", " PG_MS("q.next_attempt_at") ", " PG_MS("q.claimed_at") ", "                   \
    PG_MS("q.delivered_at") ", q.last_error, q.last_status_code, q.last_response_ms, octet_length(q.payload), " \
    "q.last_error_class, " PG_MS("q.erased_at")
#define PG_MSG_NCOLS 18
int pg_clock_step(struct store *s, int64_t step_ms, int mine_only, int64_t *rows);
int pg_node_beat(struct store *s, struct store_node *out);
int pg_health_lock(struct store *s, const int64_t *ids, size_t n, int (*fn)(void *ctx, const struct store_health *h),
                   void *ctx);
int pg_enqueue(struct store *s, struct store_enqueue *v, size_t n, int64_t now);
int pg_claim(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
             int (*fn)(void *ctx, const struct store_claimed *row), void *ctx, int *n);
int pg_next_due(struct store *s, int64_t endpoint_id, int ordered, int64_t *at);
int pg_claim_many(struct store *s, int64_t now, struct store_claim_want *w, size_t n,
                  int (*fn)(void *ctx, size_t k, const struct store_claimed *row), void *ctx);
int pg_settle(struct store *s, struct store_settle *v, size_t n);
int pg_requeue(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone);
int pg_purge(struct store *s, const struct store_filter *f, int64_t *n);
int pg_expire(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n);
int pg_import_rows(struct store *s, struct store_row *v, size_t n);

int pg_endpoints_load(struct store *s, int (*fn)(void *ctx, int64_t id, int from_config, const struct ep_def *d),
                      void *ctx);
int pg_health_load(struct store *s, int (*fn)(void *ctx, const struct store_health *h), void *ctx);
int pg_endpoint_put(struct store *s, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                    int *created);
int pg_endpoint_delete(struct store *s, int64_t id, int64_t now, int64_t *dead);
int pg_endpoint_pause(struct store *s, int64_t id, int paused, const char *reason, int64_t now);
int pg_health_save(struct store *s, const struct store_health *v, size_t n);
int pg_rollup_save(struct store *s, const struct store_rollup *v, size_t n);
int pg_history_add(struct store *s, const struct store_history *v, size_t n);
int pg_history_latency(struct store *s, const struct store_history *v, size_t n);
int pg_latency_ring_size(struct store *s, int64_t slots);

int pg_snapshot_begin(struct store *s);
void pg_snapshot_end(struct store *s);
int pg_message_get(struct store *s, int64_t id, int (*fn)(void *ctx, const struct store_message *m), void *ctx,
                   int *found);
int pg_message_attempts(struct store *s, const struct store_message *m, int limit,
                        int (*fn)(void *ctx, const struct store_attempt *a), void *ctx);
int pg_queue_stats(struct store *s, int64_t now, int with_delivered, struct store_stats *out);
int pg_endpoint_list(struct store *s, int with_queue, int (*fn)(void *ctx, const struct store_endpoint_info *e),
                     void *ctx);
int pg_dead_letters(struct store *s, int64_t since, int limit,
                    int (*fn)(void *ctx, const struct store_dead_group *g), void *ctx);
int pg_slow_endpoints(struct store *s, int64_t p95_ms, int64_t min_samples,
                      int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx);
int pg_latency_window(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                      size_t *cap, size_t *n);
int pg_history(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx);
int pg_export_rows(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *r), void *ctx);
int pg_dead_classes(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                    void *ctx);
#endif

#endif
