/* store.h - the storage backend: everything the daemon asks of its
 * database, as one struct of operations (OpenSMTPD's queue_backend
 * pattern). SQLite (src/store_sqlite*.c) is the embedded default; the
 * unit tests' in-memory fake (tests/unit/store_mem.c) implements the same
 * table, and one behaviour table (tests/unit/test_store.c) runs against
 * every backend so they cannot drift.
 *
 * Roles. A writer store is the only one that changes anything; it is used
 * by the writer thread alone. Reader stores answer queries and never
 * write. A backend may serve several readers.
 *
 * Errors. Every operation returns 0 or -1; after -1, s->errc says what
 * kind of failure it was and s->errmsg (never a payload or a secret) says
 * what happened. STORE_E_IO is fatal: after a failed write or fsync the
 * process must not retry (see writer.c), it exits 75 and recovers from
 * what is on disk.
 *
 * Rows handed to a callback (claimed rows, list entries) are valid during
 * the callback only; a callback returning non-zero stops the walk and the
 * operation fails with STORE_E_NOMEM (the only reason callers stop). */
#ifndef HOOKD_STORE_H
#define HOOKD_STORE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "seal.h"

enum store_role { STORE_WRITER = 0, STORE_READER };

enum store_errc {
    STORE_OK = 0,
    STORE_E_FULL,         /* out of space: nothing was half-written; retry later */
    STORE_E_IO,           /* I/O error or damage: fatal, never retried */
    STORE_E_BUSY,         /* a lock was not granted in time */
    STORE_E_UNAVAILABLE,  /* the database cannot be reached now (retryable) */
    STORE_E_NOMEM,
    STORE_E_OTHER
};

/* The queue statuses, as the seed names them (and stores them). */
enum msg_status {
    MSG_PENDING = 0,
    MSG_FAILED,        /* awaiting retry */
    MSG_IN_FLIGHT,
    MSG_DELIVERED,
    MSG_DEAD_LETTER,
    MSG__COUNT
};
#define MSG_BIT(s) (1u << (s))

const char *msg_status_name(enum msg_status s);
int msg_status_parse(const char *s, enum msg_status *out);   /* 0 / -1 */

struct store {
    const struct store_ops *ops;
    enum store_errc errc;
    char errmsg[256];
    /* seals endpoint secrets and header values (store_open loads it from
     * [storage] key_file; unset in a reader without the key, which then
     * cannot load sealed endpoints) */
    struct seal_key seal;
};

/* ---- records ---- */

/* One row to enqueue; id and duplicate are filled in. */
struct store_enqueue {
    int64_t endpoint_id;
    const char *event_id;
    const char *event_type;      /* NULL: none */
    const char *payload;         /* the exact bytes to send */
    size_t payload_len;
    int max_attempts;
    const char *ordering_key;    /* NULL: unordered. A keyed row is claimed
                                  * only after every older row of its
                                  * endpoint and key is delivered or dead */
    int claim;                   /* stored in_flight, claimed now: the dispatcher
                                  * hands it to delivery straight away */
    int64_t id;                  /* out */
    int duplicate;               /* out: (endpoint, event_id) existed; nothing stored */
    int64_t due_at;              /* a delayed row (never claimed): its first
                                  * next_attempt_at; 0: now */
    int due_fixed;               /* due_at is the enqueue's absolute deliver_at:
                                  * stored as the row's deliver_at, a time on the
                                  * wall clock that clock_step leaves alone */
};

/* A row claimed for delivery: now in_flight. */
struct store_claimed {
    int64_t id;
    int64_t endpoint_id;
    const char *event_id;
    const char *event_type;      /* NULL: none */
    const char *payload;
    size_t payload_len;
    int attempt_count;           /* attempts before this one */
    int max_attempts;
    int64_t created_at;
};

enum store_verdict {
    SETTLE_DELIVERED = 0,
    SETTLE_RETRY,                /* failed: pending again at next_attempt_at */
    SETTLE_DEAD,                 /* dead letter */
    SETTLE_RELEASE               /* not attempted (shutdown): back to the queue as it was */
};

/* The result of one claimed row. Only a row still in_flight is changed:
 * a row dead-lettered meanwhile (its endpoint deleted) keeps its status,
 * and applied says so. */
struct store_settle {
    int64_t id;
    int64_t endpoint_id;
    enum store_verdict verdict;
    int attempts;                /* attempt_count after this attempt */
    int64_t next_attempt_at;     /* RETRY and RELEASE */
    int64_t at;                  /* when the attempt ended (wall ms) */
    int status_code;             /* 0: no HTTP response */
    int64_t response_ms;         /* the attempt's duration */
    int sample;                  /* 1: the request reached the endpoint; the
                                  * duration is a latency sample. 0: refused
                                  * before a byte was sent (SSRF, DNS, connect) */
    int64_t ring_slot;           /* sample: its slot in the endpoint's latency ring */
    const char *error_class;     /* stable failure class ("http_503", "timeout"); NULL on success */
    const char *error;           /* human detail, may hold a sanitised body excerpt */
    /* the attempt log (NULL: none): the method, the URL as sent with its
     * secrets masked, the start of the response with control characters
     * escaped */
    const char *method, *url, *response;
    int applied;                 /* out */
};

/* One endpoint's part of a batched claim (claim_many). */
struct store_claim_want {
    int64_t endpoint_id;
    int limit;
    int ordered;
    int checked;                 /* its shared breaker state was read under lock
                                  * this transaction (health_lock): claim as asked */
    int n;                       /* out: rows claimed */
    int64_t next_due;            /* out, when n < limit: as next_due answers */
    int blocked;                 /* out, shared backends, unchecked endpoints: nothing
                                  * was claimed because another node opened its
                                  * breaker or paused it (read it under lock) */
};

/* This node among the nodes sharing one database (node_beat). */
struct store_node {
    int64_t node_id;             /* this incarnation's row */
    int nodes;                   /* live nodes, this one included */
    int lead;                    /* this node runs the cluster's periodic jobs */
    int lease_lost;              /* it had been declared dead (silent past its
                                  * lease): it came back as a new node */
    int64_t taken_over;          /* rows in flight of dead nodes sent back to the queue */
    int64_t dead_nodes;          /* dead nodes removed */
};

/* Breaker state and latency figures of one endpoint (endpoint_health). */
struct store_health {
    int64_t endpoint_id;
    const char *endpoint_url;
    int state;                   /* enum breaker_state */
    int64_t consecutive_failures;
    int64_t failure_threshold;   /* the effective one, as the seed keeps it */
    int64_t last_failure_at, last_success_at, opened_at;   /* 0: never */
    int64_t cooldown_ms;
    int64_t slow_since;          /* 0: threshold not lowered by the slow scan */
    int64_t ring_next;           /* the latency ring's next slot */
    int64_t concurrency_limit;   /* the adaptive limit when saved (0: unknown) */
    int64_t failing_since;       /* the current run of failures began (0: not failing) */
    int probe_out;               /* half_open: the single probe is out (shared backends;
                                  * health_save stores it as this node's) */
    int paused;                  /* health_lock only: the endpoint's paused flag */
    int64_t in_flight;           /* health_lock only: its rows in flight on every node */
    /* latency rollup (health_load and the reads; ignored by health_save) */
    int has_latency;
    int64_t p50_ms, p95_ms, p99_ms, sample_count;
};

struct store_history;
struct store_rollup {
    int64_t endpoint_id;
    int has_latency;             /* 0: no samples in the window */
    int64_t p50_ms, p95_ms, p99_ms, sample_count;
    int64_t at;
    /* the percentiles of the previous and the current [history] bucket
     * (bucket_at 0 or no samples: nothing to store) */
    struct {
        int64_t bucket_at;
        int has_latency;
        int64_t p50_ms, p95_ms, p99_ms, sample_count;
    } bucket[2];
};

/* A queue row as it moves between databases (hookd export / import):
 * waiting (pending, failed) or a dead letter. The payload's bytes are
 * the ones enqueued. */
struct store_row {
    int64_t endpoint_id;
    const char *event_id;
    const char *event_type;      /* NULL: none */
    const char *payload;
    size_t payload_len;
    enum msg_status status;      /* MSG_PENDING, MSG_FAILED or MSG_DEAD_LETTER */
    int attempt_count, max_attempts;
    int64_t created_at, next_attempt_at;
    const char *last_error, *last_error_class;   /* NULL: none */
    int last_status_code;        /* 0: none */
    int64_t last_response_ms;    /* -1: none */
    const char *ordering_key;    /* NULL: none */
    int64_t deliver_at;          /* the enqueue's absolute deliver_at (0: none) */
    int duplicate;               /* import, out: (endpoint, event_id) existed; left as it was */
};

/* One endpoint's figures for one [history] bucket (endpoint_history). */
struct store_history {
    int64_t endpoint_id;
    int64_t bucket_at;                   /* the bucket's start, wall ms */
    int64_t delivered, failed, breaker_opens;   /* history_add adds these */
    int has_latency;                     /* history_latency sets these */
    int64_t p50_ms, p95_ms, p99_ms, sample_count;
};

/* Which rows an admin operation touches. */
struct store_filter {
    int64_t id;                  /* one message (0: by endpoint) */
    int64_t endpoint_id;         /* 0: every endpoint */
    int64_t since;               /* created_at >= since */
    unsigned statuses;           /* MSG_BIT()s */
};

/* What a search reads (message_scan), from an index where it can. */
struct store_scan {
    const char *event_id;        /* only this event id's rows; NULL: any */
    int dead_letters;            /* without event_id: only dead letters */
    const char *endpoint;        /* without event_id: only this endpoint's rows (name; NULL: any) */
    int64_t before;              /* ids below this one (0: no bound) */
    int64_t floor;               /* ... and at or above this one (0: no bound); with endpoint and
                                  * neither event_id nor dead_letters, every row of the span is read
                                  * and only the endpoint's are handed over */
    int64_t limit;               /* at most this many rows */
    int with_payload;            /* the payload's bytes too (else NULL) */
};

/* Retention: a message's attempt log goes with it; the latency ring
 * needs none (fixed slots). */
enum store_expiry {
    EXPIRE_DELIVERED = 0,        /* delivered rows delivered before `before` */
    EXPIRE_DEAD_LETTERS,         /* dead letters created before `before` */
    EXPIRE_HISTORY,              /* history rows of buckets that began before `before` */
    EXPIRE_PAYLOADS              /* [retention] payload: delivered rows delivered before
                                  * `before` are erased (as the erase op), rows kept */
};

/* ---- what the reads return ---- */

struct store_stats {
    int64_t n[MSG__COUNT];       /* n[MSG_DELIVERED] only when asked for */
    int64_t delivered_last_hour, failed_last_hour;
    int has_avg;
    double avg_delivery_ms;      /* last hour */
    int has_oldest;
    int64_t oldest_pending;      /* since when the oldest due waiting row
                                  * waits (created_at, or a delayed row's
                                  * due time); scheduled rows do not count */
    int64_t scheduled;           /* pending rows delayed past now: not in
                                  * n[MSG_PENDING] */
};

struct store_message {
    int64_t id, endpoint_id;
    const char *endpoint;        /* NULL: the endpoint is gone */
    const char *event_id, *event_type;
    enum msg_status status;
    int attempt_count, max_attempts;
    int64_t created_at, next_attempt_at;
    int64_t claimed_at, delivered_at;      /* 0: never */
    const char *last_error, *last_error_class;
    int last_status_code;                  /* 0: none */
    int64_t last_response_ms;              /* -1: none */
    int64_t payload_bytes;
    int64_t erased_at;                     /* 0: not erased */
};

struct store_attempt {
    int64_t at;
    int64_t response_ms;         /* -1: no response (nothing was sent) */
    int status_code;             /* 0: none */
    const char *error_class;     /* NULL: success */
    const char *detail;          /* NULL: none */
    const char *method, *url, *response;   /* NULL: not recorded */
    int generation;              /* requeues before it (0: none) */
    int attempt;                 /* 1, 2, ... in its generation; 0: the requeue
                                  * that began the generation (at: when) */
};

struct store_endpoint_info {
    int64_t id;
    const char *name, *url;
    int from_config, paused;
    const char *pause_reason;    /* NULL: not paused, or paused before schema 7 */
    const char *event_types;     /* NULL: none */
    int nsecrets;                /* a count: secret values never leave the backend */
    const char *header_names;    /* JSON array of header names (values never leave) */
    const char *settings;        /* JSON object of the endpoint's overrides */
    struct store_health h;       /* defaults (closed, no latency) when never saved */
    int64_t queue[MSG__COUNT];   /* rows per status */
    int64_t oldest_waiting;      /* created_at of its oldest pending or failed row (0: none) */
};

struct store_dead_group {
    int64_t endpoint_id;
    const char *endpoint;        /* NULL: the endpoint is gone */
    int64_t dead_count;
    const char *primary_error_class;   /* most common class (ties: smallest) */
    const char *example_error;         /* the newest last_error of that class */
    int primary_status_code;           /* most common; 0: none */
    int64_t first_dead, last_dead, avg_attempts;
};

/* ---- the backend ---- */

struct store_ops {
    const char *name;
    void (*close)(struct store *s);

    /* Transactions (writer). One writer transaction at a time. durable:
     * its commit must survive a power cut (it acknowledges enqueues) and
     * makes every earlier commit durable too; otherwise the commit may
     * wait for the next durable one (results, claims and jobs: losing them
     * to a power cut means delivering again, never losing an event). */
    int (*begin)(struct store *s, int durable);
    int (*commit)(struct store *s);
    void (*rollback)(struct store *s);   /* no-op outside a transaction */

    /* Start-up (writer, inside a transaction); hookd export reads the
     * endpoints and their health through a reader with these too. */
    /* in_flight -> waiting (*n counts them); waiting rows of endpoints that
     * no longer exist -> dead letters (endpoint_deleted) */
    int (*recover)(struct store *s, int64_t now, int64_t *n);
    int (*endpoints_load)(struct store *s,
                          int (*fn)(void *ctx, int64_t id, int from_config, const struct ep_def *d),
                          void *ctx);
    int (*health_load)(struct store *s, int (*fn)(void *ctx, const struct store_health *h), void *ctx);

    /* The queue (writer, inside a transaction). */
    int (*enqueue)(struct store *s, struct store_enqueue *v, size_t n, int64_t now);
    /* Up to limit due rows of one endpoint, oldest due first; each is
     * marked in_flight (claimed_at = now) and handed to fn. Returns the
     * count through *n. ordered (the endpoint has an ordering_key): a
     * keyed row is skipped while an older row of its key is waiting or
     * in flight; unordered endpoints do not pay for that test. */
    int (*claim)(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
                 int (*fn)(void *ctx, const struct store_claimed *row), void *ctx, int *n);
    /* Earliest next_attempt_at of the endpoint's claimable waiting rows
     * (the same rule as claim); INT64_MAX if none. */
    int (*next_due)(struct store *s, int64_t endpoint_id, int ordered, int64_t *at);
    /* Optional (NULL: the caller loops over claim and next_due): the
     * claims of several endpoints at once, each as claim would take them,
     * then next_due of those that got fewer than their limit. A row goes
     * to fn with the index k of its endpoint in w. For a backend where
     * each statement is a round trip (PostgreSQL): two per round. */
    int (*claim_many)(struct store *s, int64_t now, struct store_claim_want *w, size_t n,
                      int (*fn)(void *ctx, size_t k, const struct store_claimed *row), void *ctx);
    int (*settle)(struct store *s, struct store_settle *v, size_t n);
    /* Matching rows back to pending with attempt_count 0; never a row
     * whose endpoint no longer exists (nothing could claim it): *gone
     * counts those (with f->id: 1 when that message is such a row). */
    int (*requeue)(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone);
    /* Delete matching rows (dead letters only, whatever f->statuses says). */
    int (*purge)(struct store *s, const struct store_filter *f, int64_t *n);
    /* Erase one message: its payload, the response excerpts and the URLs
     * as sent go (secure_delete on SQLite), its ids, statuses and times
     * stay, erased_at is set. A waiting row becomes a dead letter of class
     * erased; a row in flight settles without URL or response and is not
     * retried. *n: 1 when it exists (erased before included), else 0. */
    int (*erase)(struct store *s, int64_t id, int64_t now, int64_t *n);
    /* Retention: delete at most limit rows of one kind older than before. */
    int (*expire)(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n);

    /* Endpoints and their health (writer, inside a transaction). */
    int (*endpoint_put)(struct store *s, const struct ep_def *d, int from_config, int64_t now,
                        int64_t *id, int *created);
    /* Its undelivered rows (in_flight too) become dead letters with class
     * endpoint_deleted; *dead counts them. */
    int (*endpoint_delete)(struct store *s, int64_t id, int64_t now, int64_t *dead);
    /* paused with a reason ("operator", "410 Gone", "disabled: ...");
     * resuming (paused 0) clears the reason. A shared store also restarts
     * a resumed endpoint's failing clock in its health row (failing_since
     * = now where set; endpoint_put too when it resumes one): the nodes
     * judge disable_after on that row, re-read under lock each round,
     * not on their own memory. */
    int (*endpoint_pause)(struct store *s, int64_t id, int paused, const char *reason, int64_t now);
    int (*health_save)(struct store *s, const struct store_health *v, size_t n);
    int (*rollup_save)(struct store *s, const struct store_rollup *v, size_t n);
    /* History rows: counts added to the bucket's (created at 0 when
     * missing); percentiles set. */
    int (*history_add)(struct store *s, const struct store_history *v, size_t n);
    int (*history_latency)(struct store *s, const struct store_history *v, size_t n);
    /* The latency ring holds `slots` samples per endpoint: slots above go. */
    int (*latency_ring_size)(struct store *s, int64_t slots);
    /* Rows moved in from another database, stored as they are; a row
     * whose (endpoint, event_id) exists is left untouched (duplicate). */
    int (*import_rows)(struct store *s, struct store_row *v, size_t n);

    /* Several nodes on one database (both optional: NULL where one
     * process owns the database). */
    /* Outside a transaction: this node's heartbeat (a node silent past
     * its lease is dead: one that finds itself so comes back as a new
     * node, its old results no longer count), dead nodes' rows in flight
     * back to the queue, the live nodes, and the lead of the cluster's
     * periodic jobs. */
    int (*node_beat)(struct store *s, struct store_node *out);
    /* Inside the writer's transaction: the shared breaker state of these
     * endpoints (ids ascending: every node locks in one order), locked
     * until the transaction ends, each handed to fn with its paused flag.
     * Whatever this transaction saves of their health is then based on
     * what every node recorded. */
    int (*health_lock)(struct store *s, const int64_t *ids, size_t n,
                       int (*fn)(void *ctx, const struct store_health *h), void *ctx);

    /* Inside a transaction (writer): the wall clock stepped by step_ms
     * (clockstep.h). Waiting and in-flight rows' next_attempt_at and
     * created_at, and the breakers' opened_at and failing_since, move by
     * the step, so every wait keeps its length and every age its value;
     * a row that has had no attempt and still waits for its deliver_at
     * (next_attempt_at equal to it) keeps that time on the clock; past events (delivered_at, the attempt log, last_*_at, history)
     * keep theirs. mine_only (a shared store with other live nodes):
     * only rows whose times this node's clock wrote (claimed_by), and
     * the shared breakers only by the cluster's lead; *rows counts the
     * queue rows moved. */
    int (*clock_step)(struct store *s, int64_t step_ms, int mine_only, int64_t *rows);

    /* Outside a transaction (writer). full: also shrink the log. */
    int (*checkpoint)(struct store *s, int full);
    /* Outside a transaction (writer): 1 when the log has grown enough
     * that checkpoint(s, 0) should run now. The backend never checkpoints
     * inside a commit: the caller runs it once the round's acks and jobs
     * are out, so neither waits for the checkpoint's fsyncs. NULL: the
     * backend checkpoints on its own. */
    int (*checkpoint_due)(struct store *s);
    /* An online, consistent copy into path (writer or reader). */
    int (*backup)(struct store *s, const char *path);

    /* Reads. A snapshot makes several reads agree with each other. */
    int (*snapshot_begin)(struct store *s);
    void (*snapshot_end)(struct store *s);
    /* *found = 0 when there is no such message (fn not called). */
    int (*message_get)(struct store *s, int64_t id, int (*fn)(void *ctx, const struct store_message *m),
                       void *ctx, int *found);
    /* Messages for a search (msgsel.h), newest first, as sc says (the
     * caller tests every other condition on the rows). fn returns 0 to go
     * on, 1 to stop (the op returns 0), -1 to fail (STORE_E_NOMEM).
     * Writer or reader. */
    int (*message_scan)(struct store *s, const struct store_scan *sc,
                        int (*fn)(void *ctx, const struct store_message *m, const char *payload, size_t len),
                        void *ctx);
    /* The message's attempts, oldest first, at most limit. */
    int (*message_attempts)(struct store *s, const struct store_message *m, int limit,
                            int (*fn)(void *ctx, const struct store_attempt *a), void *ctx);
    int (*queue_stats)(struct store *s, int64_t now, int with_delivered, struct store_stats *out);
    int (*endpoint_list)(struct store *s, int with_queue,
                         int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx);
    int (*dead_letters)(struct store *s, int64_t since, int limit,
                        int (*fn)(void *ctx, const struct store_dead_group *g), void *ctx);
    /* Endpoints with p95 > p95_ms and at least min_samples, slowest first. */
    int (*slow_endpoints)(struct store *s, int64_t p95_ms, int64_t min_samples,
                          int (*fn)(void *ctx, const struct store_endpoint_info *e), void *ctx);
    /* Every latency sample of one endpoint measured at or after since
     * and before until, appended to *buf (grown with realloc; *cap its size). */
    int (*latency_window)(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                          size_t *cap, size_t *n);
    /* History rows of buckets from since on, by endpoint then bucket. */
    int (*history)(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx);
    /* Every waiting and dead-letter row, oldest first, for hookd export.
     * A row in flight comes as waiting (pending before its first attempt,
     * failed after), due at now: the export is what a restart would send. */
    int (*export_rows)(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *r), void *ctx);
    /* Dead letters created from since on, per error class ("unknown"
     * when none was recorded), most first. */
    int (*dead_classes)(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                        void *ctx);
};

/* Open the configured backend ([storage] path today). The writer checks
 * the database, refuses a damaged or foreign one untouched, and migrates
 * the schema. */
int store_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen);

/* The backend's schema as SQL on out (hookd schema-sql; postgres only:
 * for operators who apply DDL themselves). 0 / -1 with err. */
int store_schema_print(enum cfg_backend b, FILE *out, char *err, size_t errlen);

/* Can the configured database be reached? (check-config.) msg says to
 * what or why not ("" when there is nothing to try: SQLite). 0 / -1. */
int store_ping(const struct config *c, char *msg, size_t len);

/* Other nodes' work on a shared database: a thread of the backend's
 * own (its own connection) calls fn from that thread. STORE_WATCH_DUE:
 * rows of endpoint id (0: of any) may be due; STORE_WATCH_ENDPOINTS: the
 * endpoint id (0: any) was changed, paused, added or deleted. With
 * nothing heard for poll_interval, fn(DUE, 0) all the same (notifications
 * are lost while the connection is down). */
enum store_watch_kind { STORE_WATCH_DUE = 0, STORE_WATCH_ENDPOINTS };
typedef void (*store_watch_fn)(void *ctx, enum store_watch_kind kind, int64_t endpoint_id);
struct store_watch;
/* *out NULL when the backend is not shared (SQLite). 0 / -1 with err. */
int store_watch_start(const struct config *c, store_watch_fn fn, void *ctx, struct store_watch **out, char *err,
                      size_t errlen);
void store_watch_stop(struct store_watch *w);   /* NULL: nothing */

/* The protocol error code for a failure (storage_full, storage_error, ...). */
const char *store_error_code(enum store_errc e);
/* An I/O error or damage: the process must stop using the database. */
int store_error_fatal(enum store_errc e);
/* The log's checkpoint, run only when the backend says it is due
 * (checkpoint_due): between transactions, 0 / -1. */
int store_checkpoint_if_due(struct store *s);
/* For backends: set errc and a message; returns -1. */
int store_fail(struct store *s, enum store_errc e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Short-hands for s->ops->x(s, ...). */
static inline void store_close(struct store *s) { if (s) s->ops->close(s); }
static inline int store_begin(struct store *s, int durable) { return s->ops->begin(s, durable); }
static inline int store_commit(struct store *s) { return s->ops->commit(s); }
static inline void store_rollback(struct store *s) { s->ops->rollback(s); }

#endif
