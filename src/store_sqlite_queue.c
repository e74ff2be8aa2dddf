/* store_sqlite_queue.c - the queue on SQLite: enqueue, claim, settle,
 * recovery, requeue, purge and retention. Writer connection only; every
 * function runs inside the caller's transaction. */
#include "store_sqlite.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One statement with one integer run once (recovery and clock steps are
 * rare: not worth a prepared slot); *changed, when asked, gets its rows. */
static int exec_once(struct sq_store *q, const char *what, const char *sql, int64_t v, int64_t *changed)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, what);
    sqlite3_bind_int64(st, 1, v);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sq_fail(q, rc, what);
    if (changed)
        *changed = sqlite3_changes(q->db);
    return 0;
}

int sq_recover(struct store *s, int64_t now, int64_t *n)
{
    struct sq_store *q = (struct sq_store *)s;
    int64_t orphans = 0;

    if (exec_once(q, "recover",
                  "UPDATE webhook_queue SET status = CASE WHEN erased_at IS NOT NULL THEN 'dead_letter' "
                  "WHEN attempt_count > 0 THEN 'failed' ELSE 'pending' END, next_attempt_at = ?1 "
                  "WHERE status = 'in_flight'",
                  now, n) < 0)
        return -1;
    /* Rows waiting for an endpoint that no longer exists (a requeue by
     * id before requeue refused them) would wait forever: no claim sees
     * them, retention keeps them. They become the dead letters the
     * endpoint's delete made of its other rows. */
    if (exec_once(q, "recover",
                  "UPDATE webhook_queue SET status = 'dead_letter', last_error = 'endpoint deleted', "
                  "last_error_class = 'endpoint_deleted', next_attempt_at = ?1 "
                  "WHERE status IN ('pending', 'failed') "
                  "AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = webhook_queue.endpoint_id)",
                  now, &orphans) < 0)
        return -1;
    if (orphans)
        log_warn("orphans_dead_lettered", "count=%lld note=\"waiting rows of deleted endpoints\"",
                 (long long)orphans);
    return 0;
}

/* A row still waiting for the wall-clock time its enqueue named
 * (schema 14): no attempt yet, and nothing has rewritten its due time
 * (a retry, requeue, release or recovery sets another). */
#define SQ_DUE_FIXED "(attempt_count = 0 AND deliver_at IS NOT NULL AND next_attempt_at = deliver_at)"

/* One process owns the file: every stored wait is this clock's. */
int sq_clock_step(struct store *s, int64_t step_ms, int mine_only, int64_t *rows)
{
    struct sq_store *q = (struct sq_store *)s;

    (void)mine_only;
    if (exec_once(q, "clock step",
                  "UPDATE webhook_queue SET next_attempt_at = CASE WHEN " SQ_DUE_FIXED " THEN next_attempt_at "
                  "ELSE next_attempt_at + ?1 END, created_at = created_at + ?1 "
                  "WHERE status IN ('pending', 'failed', 'in_flight')", step_ms, rows) < 0 ||
        exec_once(q, "clock step", "UPDATE endpoint_health SET opened_at = opened_at + ?1 WHERE opened_at > 0",
                  step_ms, NULL) < 0 ||
        exec_once(q, "clock step",
                  "UPDATE endpoint_health SET failing_since = failing_since + ?1 WHERE failing_since > 0",
                  step_ms, NULL) < 0)
        return -1;
    return 0;
}

/* An enqueue's values from parameter at + 1 on, in SQ_INSERT's order
 * (SQ_INSERT_CLAIMED's: the first 6, and with claimed_n its due and
 * claimed times, 7 and 8, which the one-row statement takes from 6). */
static void bind_enqueue(sqlite3_stmt *st, int at, const struct store_enqueue *e, int64_t now, int claimed_n)
{
    sqlite3_bind_int64(st, at + 1, e->endpoint_id);
    sqlite3_bind_text(st, at + 2, e->event_id, -1, SQLITE_STATIC);
    sq_bind_text_or_null(st, at + 3, e->event_type);
    sqlite3_bind_text(st, at + 4, e->payload, (int)e->payload_len, SQLITE_STATIC);
    sqlite3_bind_int(st, at + 5, e->max_attempts);
    sqlite3_bind_int64(st, at + 6, now);
    if (e->claim) {
        if (claimed_n) {
            sqlite3_bind_int64(st, at + 7, now);
            sqlite3_bind_int64(st, at + 8, now);
        }
        return;
    }
    sq_bind_text_or_null(st, at + 7, e->ordering_key);
    sqlite3_bind_int64(st, at + 8, e->due_at > now ? e->due_at : now);
    if (e->due_fixed && e->due_at > now)
        sqlite3_bind_int64(st, at + 9, e->due_at);
}

/* The id of the stored row with e's (endpoint, event id). */
static int find_id(struct sq_store *q, const struct store_enqueue *e, int64_t *id)
{
    sqlite3_stmt *st = sq_stmt(q, SQ_FIND);
    int rc;

    sqlite3_bind_int64(st, 1, e->endpoint_id);
    sqlite3_bind_text(st, 2, e->event_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sq_fail(q, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "enqueue: duplicate lookup");
    return 0;
}

/* SQ_INSERT_ROWS enqueues of the same kind (claimed or not) in one
 * statement: 13k instructions an enqueue fewer than one by one (the
 * statement's own cost, AUTOINCREMENT's sqlite_sequence read and write).
 * All stored: their ids are the last one's predecessors, in order (one
 * statement, one writer). Otherwise each id is looked up: every row the
 * statement stored has an id above every row that was there before
 * (AUTOINCREMENT), so the rows stored are the first rows holding the
 * `stored` largest ids; any other row is a duplicate, of an older row
 * or of an earlier one of the same statement, as one by one. */
static int enqueue_rows(struct sq_store *q, struct store_enqueue *v, int64_t now)
{
    int claim = v[0].claim, per = claim ? 8 : 9, j, k, stored, above;
    sqlite3_stmt *st = sq_stmt(q, claim ? SQ_INSERT_CLAIMED_N : SQ_INSERT_N);
    int64_t last, floor_id = INT64_MAX;

    for (j = 0; j < SQ_INSERT_ROWS; j++)
        bind_enqueue(st, j * per, &v[j], now, 1);
    if (sq_exec_stmt(q, st, "enqueue") < 0)
        return -1;
    stored = sqlite3_changes(q->db);
    last = sqlite3_last_insert_rowid(q->db);
    if (stored == SQ_INSERT_ROWS) {
        for (j = 0; j < SQ_INSERT_ROWS; j++) {
            v[j].id = last - (SQ_INSERT_ROWS - 1) + j;
            v[j].duplicate = 0;
        }
        return 0;
    }
    for (j = 0; j < SQ_INSERT_ROWS; j++)
        if (find_id(q, &v[j], &v[j].id) < 0)
            return -1;
    /* floor_id: the smallest of the `stored` largest distinct ids */
    for (j = 0; j < SQ_INSERT_ROWS && stored > 0; j++) {
        for (above = 0, k = 0; k < SQ_INSERT_ROWS; k++) {
            int first = 1, m;

            for (m = 0; m < k; m++)
                first &= v[m].id != v[k].id;
            above += first && v[k].id > v[j].id;
        }
        if (above < stored && v[j].id < floor_id)
            floor_id = v[j].id;
    }
    for (j = 0; j < SQ_INSERT_ROWS; j++) {
        v[j].duplicate = v[j].id < floor_id;
        for (k = 0; k < j; k++)
            v[j].duplicate |= v[k].id == v[j].id;
    }
    return 0;
}

/* Runs of SQ_INSERT_ROWS enqueues of one kind in one statement each, the
 * rest one by one. */
int sq_enqueue(struct store *s, struct store_enqueue *v, size_t n, int64_t now)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i, j;

    for (i = 0; i < n;) {
        struct store_enqueue *e = &v[i];
        sqlite3_stmt *st;

        for (j = 1; i + j < n && j < SQ_INSERT_ROWS && v[i + j].claim == e->claim; j++)
            ;
        if (j == SQ_INSERT_ROWS) {
            if (enqueue_rows(q, e, now) < 0)
                return -1;
            i += j;
            continue;
        }
        st = sq_stmt(q, e->claim ? SQ_INSERT_CLAIMED : SQ_INSERT);
        bind_enqueue(st, 0, e, now, 0);
        /* no RETURNING: it costs SQLite a temporary table per execution */
        if (sq_exec_stmt(q, st, "enqueue") < 0)
            return -1;
        i++;
        if (sqlite3_changes(q->db) > 0) {
            e->id = sqlite3_last_insert_rowid(q->db);
            e->duplicate = 0;
            continue;
        }
        if (find_id(q, e, &e->id) < 0)
            return -1;
        e->duplicate = 1;
    }
    return 0;
}

/* Room for n row ids in the writer's claim buffer (kept for its life). */
static int claim_room(struct sq_store *q, size_t n)
{
    int64_t *v;

    if (n <= q->claim_cap)
        return 0;
    v = realloc(q->claim_ids, n * sizeof *v);
    if (!v)
        return -1;
    q->claim_ids = v;
    q->claim_cap = n;
    return 0;
}

/* The select hands each row to fn and keeps its id; the rows are marked
 * in flight (SQ_MARK_IDS a statement while as many are left, then one
 * by one) once it has finished (a statement must not see the rows it
 * walks change under it). Ordered claims see the same rows as before:
 * the key test of every row is made before any of them is marked. */
int sq_claim(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
             int (*fn)(void *ctx, const struct store_claimed *row), void *ctx, int *n)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st;
    struct store_claimed row;
    int rc = SQLITE_DONE, k = 0, i;

    *n = 0;
    if (limit <= 0)
        return 0;
    if (claim_room(q, (size_t)limit) < 0)
        return store_fail(s, STORE_E_NOMEM, "claim: out of memory");
    st = sq_stmt(q, ordered ? SQ_CLAIM_ORDERED : SQ_CLAIM);
    sqlite3_bind_int64(st, 1, endpoint_id);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_int(st, 3, limit);
    while (k < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        row.id = sqlite3_column_int64(st, 0);
        row.endpoint_id = endpoint_id;
        row.event_id = (const char *)sqlite3_column_text(st, 1);
        row.payload = (const char *)sqlite3_column_text(st, 2);
        row.payload_len = (size_t)sqlite3_column_bytes(st, 2);
        row.attempt_count = sqlite3_column_int(st, 3);
        row.max_attempts = sqlite3_column_int(st, 4);
        row.created_at = sqlite3_column_int64(st, 5);
        row.event_type = (const char *)sqlite3_column_text(st, 6);
        if (fn(ctx, &row) != 0) {  /* the caller rolls the transaction back */
            sqlite3_reset(st);
            return store_fail(s, STORE_E_NOMEM, "claim: out of memory");
        }
        q->claim_ids[k++] = row.id;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(q, rc, "claim");
    for (i = 0; i < k;) {
        int j, m = k - i >= SQ_MARK_IDS ? SQ_MARK_IDS : 1;
        st = sq_stmt(q, m > 1 ? SQ_CLAIM_MARK_N : SQ_CLAIM_MARK);
        sqlite3_bind_int64(st, 1, now);
        for (j = 0; j < m; j++)
            sqlite3_bind_int64(st, 2 + j, q->claim_ids[i + j]);
        if (sq_exec_stmt(q, st, "claim") < 0)
            return -1;
        i += m;
    }
    *n = k;
    return 0;
}

int sq_next_due(struct store *s, int64_t endpoint_id, int ordered, int64_t *at)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, ordered ? SQ_NEXT_DUE_ORDERED : SQ_NEXT_DUE);
    int rc;

    sqlite3_bind_int64(st, 1, endpoint_id);
    rc = sqlite3_step(st);
    *at = rc == SQLITE_ROW ? sq_col_or(st, 0, INT64_MAX) : INT64_MAX;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "next due");
}

/* Attempt 1 delivered, with its request recorded: the message's own row
 * holds the whole attempt (schema 10), and the log gets no row. */
static int folds(const struct store_settle *r)
{
    return r->verdict == SETTLE_DELIVERED && r->attempts == 1 && r->sample && r->method;
}

static int settle_row(struct sq_store *q, struct store_settle *r)
{
    sqlite3_stmt *st;

    switch (r->verdict) {
    case SETTLE_DELIVERED:
        st = sq_stmt(q, folds(r) ? SQ_DELIVERED_FIRST : SQ_DELIVERED);
        sqlite3_bind_int(st, 2, r->attempts);
        sqlite3_bind_int(st, 3, r->status_code);
        sqlite3_bind_int64(st, 4, r->response_ms);
        sqlite3_bind_int64(st, 5, r->at);
        if (folds(r)) {
            sqlite3_bind_text(st, 6, r->method, -1, SQLITE_STATIC);
            sq_bind_text_or_null(st, 7, r->url);
            sq_bind_text_or_null(st, 8, r->response);
        }
        break;
    case SETTLE_RETRY:
        st = sq_stmt(q, SQ_FAILED);
        sqlite3_bind_int(st, 2, r->attempts);
        sqlite3_bind_int64(st, 3, r->next_attempt_at);
        sq_bind_text_or_null(st, 4, r->error);
        sq_bind_pos_or_null(st, 5, r->status_code);
        sqlite3_bind_int64(st, 6, r->response_ms);
        sq_bind_text_or_null(st, 7, r->error_class);
        break;
    case SETTLE_DEAD:
        st = sq_stmt(q, SQ_DEAD);
        sqlite3_bind_int(st, 2, r->attempts);
        sq_bind_text_or_null(st, 3, r->error);
        sq_bind_pos_or_null(st, 4, r->status_code);
        sqlite3_bind_int64(st, 5, r->response_ms);
        sq_bind_text_or_null(st, 6, r->error_class);
        break;
    default:
        st = sq_stmt(q, SQ_RELEASE);
        sqlite3_bind_int64(st, 2, r->next_attempt_at);
        break;
    }
    sqlite3_bind_int64(st, 1, r->id);
    if (sq_exec_stmt(q, st, "settle") < 0)
        return -1;
    r->applied = sqlite3_changes(q->db) > 0;
    return 0;
}

/* The attempt as a row of the message's log. */
static int log_attempt(struct sq_store *q, const struct store_settle *r)
{
    sqlite3_stmt *st = sq_stmt(q, SQ_ATTEMPT);

    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int(st, 2, r->attempts);
    sqlite3_bind_int64(st, 3, r->endpoint_id);
    sqlite3_bind_int64(st, 4, r->at);
    if (r->sample)
        sqlite3_bind_int64(st, 5, r->response_ms);
    else
        sqlite3_bind_null(st, 5);
    sq_bind_pos_or_null(st, 6, r->status_code);
    sq_bind_text_or_null(st, 7, r->error_class);
    sq_bind_text_or_null(st, 8, r->verdict == SETTLE_DELIVERED ? NULL : r->error);
    sq_bind_text_or_null(st, 9, r->method);
    sq_bind_text_or_null(st, 10, r->url);
    sq_bind_text_or_null(st, 11, r->response);
    return sq_exec_stmt(q, st, "attempt");
}

/* Samples for the latency ring, kept until SQ_SAMPLES_N can go in one
 * statement; the rest one by one at the end of the batch. */
struct samples {
    const struct store_settle *v[SQ_SAMPLES_N];
    int n;
};

static void bind_sample(sqlite3_stmt *st, int at, const struct store_settle *r)
{
    sqlite3_bind_int64(st, at + 1, r->endpoint_id);
    sqlite3_bind_int64(st, at + 2, r->ring_slot);
    sqlite3_bind_int64(st, at + 3, r->id);
    sqlite3_bind_int64(st, at + 4, r->response_ms);
    sq_bind_pos_or_null(st, at + 5, r->status_code);
    sqlite3_bind_int64(st, at + 6, r->at);
}

static int samples_flush(struct sq_store *q, struct samples *b)
{
    sqlite3_stmt *st;
    int i;

    if (b->n == SQ_SAMPLES_N) {
        st = sq_stmt(q, SQ_SAMPLE_N);
        for (i = 0; i < b->n; i++)
            bind_sample(st, 6 * i, b->v[i]);
        b->n = 0;
        return sq_exec_stmt(q, st, "latency samples");
    }
    for (i = 0; i < b->n; i++) {
        st = sq_stmt(q, SQ_SAMPLE);
        bind_sample(st, 0, b->v[i]);
        if (sq_exec_stmt(q, st, "latency sample") < 0)
            return -1;
    }
    b->n = 0;
    return 0;
}

/* The attempt in the message's log unless its row holds it, and when
 * the request reached the endpoint a sample for its latency ring. */
static int attempt_rows(struct sq_store *q, const struct store_settle *r, struct samples *b)
{
    if (!folds(r) && log_attempt(q, r) < 0)
        return -1;
    if (!r->sample || r->ring_slot < 0)
        return 0;
    b->v[b->n++] = r;
    return b->n == SQ_SAMPLES_N ? samples_flush(q, b) : 0;
}

int sq_settle(struct store *s, struct store_settle *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    struct samples b = {.n = 0};
    size_t i;

    for (i = 0; i < n; i++) {
        if (settle_row(q, &v[i]) < 0)
            return -1;
        /* a stale result (its row dead-lettered meanwhile) is no attempt
         * of anything hookd still delivers */
        if (v[i].verdict != SETTLE_RELEASE && v[i].applied && attempt_rows(q, &v[i], &b) < 0)
            return -1;
    }
    return samples_flush(q, &b);
}

/* The statuses of a filter as an SQL IN list; only the ones an admin op
 * may touch (never pending or in_flight rows). */
static int status_list(unsigned statuses, char *out, size_t n)
{
    static const enum msg_status ok[] = {MSG_FAILED, MSG_DELIVERED, MSG_DEAD_LETTER};
    size_t i, len = 0;

    out[0] = '\0';
    for (i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (statuses & MSG_BIT(ok[i]))
            len += (size_t)snprintf(out + len, n - len, "%s'%s'", len ? ", " : "", msg_status_name(ok[i]));
    return len ? 0 : -1;
}

/* Admin statements change with the statuses asked for, and run rarely:
 * prepared per call, with the partial indexes still usable. */
static int admin_exec(struct sq_store *q, const char *sql, const struct store_filter *f, int64_t now, int64_t *n,
                      const char *what)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, what);
    sqlite3_bind_int64(st, 1, f->id);
    sqlite3_bind_int64(st, 2, f->endpoint_id);
    sqlite3_bind_int64(st, 3, f->since);
    sqlite3_bind_int64(st, 4, now);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sq_fail(q, rc, what);
    *n = sqlite3_changes(q->db);
    return 0;
}

/* The same filter, counted (the rows an admin op leaves alone). */
static int admin_count(struct sq_store *q, const char *sql, const struct store_filter *f, int64_t now, int64_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, "requeue");
    sqlite3_bind_int64(st, 1, f->id);
    sqlite3_bind_int64(st, 2, f->endpoint_id);
    sqlite3_bind_int64(st, 3, f->since);
    sqlite3_bind_int64(st, 4, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : sq_fail(q, rc, "requeue");
}

int sq_requeue(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone)
{
    struct sq_store *q = (struct sq_store *)s;
    char in[96], sql[1024], where[384];
    int64_t moved;

    *n = *gone = 0;
    if (status_list(f->statuses, in, sizeof in) < 0)
        return 0;
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM webhook_queue WHERE status IN (%s) AND erased_at IS NULL AND (?1 = 0 OR id = ?1) "
             "AND (?2 = 0 OR endpoint_id = ?2) AND created_at >= ?3 AND ?4 = ?4 "
             "AND endpoint_id NOT IN (SELECT id FROM endpoints)",
             in);
    if (admin_count(q, sql, f, now, gone) < 0)
        return -1;
    /* an erased row has nothing left to send; a row whose endpoint is
     * gone would wait forever */
    snprintf(where, sizeof where,
             "status IN (%s) AND erased_at IS NULL AND (?1 = 0 OR id = ?1) AND (?2 = 0 OR endpoint_id = ?2) "
             "AND created_at >= ?3 AND endpoint_id IN (SELECT id FROM endpoints)",
             in);
    /* the log keeps every attempt (schema 11): a first attempt kept in
     * the row goes to the log under its generation, since the row's
     * fields it lived in start over; the requeue itself is attempt 0 of
     * the next generation */
    snprintf(sql, sizeof sql,
             "INSERT INTO attempt_rows (message_id, generation, attempt, endpoint_id, at, response_ms, status_code, "
             "method, url, response) SELECT id, generation, 1, endpoint_id, delivered_at, last_response_ms, "
             "last_status_code, first_method, first_url, first_response FROM webhook_queue "
             "WHERE first_method IS NOT NULL AND %s AND ?4 = ?4 ON CONFLICT DO NOTHING",
             where);
    if (admin_exec(q, sql, f, now, &moved, "requeue") < 0)
        return -1;
    snprintf(sql, sizeof sql,
             "INSERT INTO attempt_rows (message_id, generation, attempt, endpoint_id, at, detail) "
             "SELECT id, generation + 1, 0, endpoint_id, ?4, 'requeued' FROM webhook_queue WHERE %s "
             "ON CONFLICT DO NOTHING",
             where);
    if (admin_exec(q, sql, f, now, &moved, "requeue") < 0)
        return -1;
    snprintf(sql, sizeof sql,
             "UPDATE webhook_queue SET status = 'pending', attempt_count = 0, next_attempt_at = ?4, "
             "generation = generation + 1, last_error = NULL, last_error_class = NULL, first_method = NULL, "
             "first_url = NULL, first_response = NULL WHERE %s",
             where);
    return admin_exec(q, sql, f, now, n, "requeue");
}

int sq_purge(struct store *s, const struct store_filter *f, int64_t *n)
{
    struct sq_store *q = (struct sq_store *)s;

    return admin_exec(q,
                      "DELETE FROM webhook_queue WHERE status = 'dead_letter' AND (?1 = 0 OR id = ?1) "
                      "AND (?2 = 0 OR endpoint_id = ?2) AND created_at >= ?3 AND ?4 = ?4",
                      f, 0, n, "purge");
}

/* The erased row's statement and its log's: what a partner sent or
 * answered goes, what hookd did (ids, statuses, times) stays. */
#define SQ_ERASE_ROW                                                                                         \
    "UPDATE webhook_queue SET payload = '', erased_at = coalesce(erased_at, ?2), first_url = NULL, "         \
    "first_response = NULL, last_error = NULL, "                                                             \
    "last_error_class = CASE WHEN status IN ('pending', 'failed') THEN 'erased' ELSE last_error_class END, " \
    "status = CASE WHEN status IN ('pending', 'failed') THEN 'dead_letter' ELSE status END "
#define SQ_ERASE_LOG "UPDATE attempt_rows SET detail = NULL, url = NULL, response = NULL "

/* secure_delete ON while erasing: what is freed is overwritten with
 * zeros, the old cell and the pages of its overflow chain too, so the
 * bytes are gone from the file once the log is checkpointed. Other
 * writes keep the connection's mode (FAST at least, db.c: zeros in the
 * page, no extra I/O) and do not pay for the freed pages. */
static int erase_exec(struct sq_store *q, const char *log_sql, const char *row_sql, int64_t a, int64_t b,
                      int64_t *n)
{
    static const char *const restore[] = {"PRAGMA secure_delete = OFF", "PRAGMA secure_delete = ON",
                                          "PRAGMA secure_delete = FAST"};
    sqlite3_stmt *st = NULL;
    const char *sql[2] = {log_sql, row_sql};
    int rc = SQLITE_OK, i, mode = 2;

    rc = sqlite3_prepare_v2(q->db, "PRAGMA secure_delete", -1, &st, NULL);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        mode = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (mode < 0 || mode > 2)
        mode = 2;
    if (sqlite3_exec(q->db, "PRAGMA secure_delete = ON", NULL, NULL, NULL) != SQLITE_OK)
        return sq_fail(q, sqlite3_errcode(q->db), "erase");
    rc = SQLITE_OK;
    for (i = 0; i < 2 && rc == SQLITE_OK; i++) {
        rc = sqlite3_prepare_v2(q->db, sql[i], -1, &st, NULL);
        if (rc != SQLITE_OK)
            break;
        sqlite3_bind_int64(st, 1, a);
        sqlite3_bind_int64(st, 2, b);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        if (i == 1 && rc == SQLITE_OK)
            *n = sqlite3_changes(q->db);
    }
    sqlite3_exec(q->db, restore[mode], NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sq_fail(q, rc, "erase");
}

int sq_erase(struct store *s, int64_t id, int64_t now, int64_t *n)
{
    *n = 0;
    return erase_exec((struct sq_store *)s, SQ_ERASE_LOG "WHERE message_id = ?1 AND ?2 = ?2",
                      SQ_ERASE_ROW "WHERE id = ?1", id, now, n);
}

/* [retention] payload: a chunk of the oldest delivered rows not erased
 * yet, from the first part of idx_queue_delivered (erased rows move to
 * its second part, so a pass never walks them again). */
static int expire_payloads(struct sq_store *q, int64_t before, int64_t limit, int64_t *n)
{
#define SQ_PAYLOAD_DUE                                                                                \
    "SELECT id FROM webhook_queue INDEXED BY idx_queue_delivered WHERE status = 'delivered' "        \
    "AND (erased_at IS NOT NULL) = 0 AND delivered_at < ?2 ORDER BY delivered_at LIMIT ?1"
    return erase_exec(q, SQ_ERASE_LOG "WHERE message_id IN (" SQ_PAYLOAD_DUE ")",
                      SQ_ERASE_ROW "WHERE id IN (" SQ_PAYLOAD_DUE ")", limit, before, n);
#undef SQ_PAYLOAD_DUE
}

int sq_expire(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n)
{
    struct sq_store *q = (struct sq_store *)s;
    enum sq_stmt i;
    sqlite3_stmt *st;

    if (what == EXPIRE_PAYLOADS)
        return expire_payloads(q, before, limit, n);
    i = what == EXPIRE_DELIVERED ? SQ_EXPIRE_DELIVERED
                     : what == EXPIRE_HISTORY ? SQ_EXPIRE_HISTORY
                                              : SQ_EXPIRE_DEAD;
    st = sq_stmt(q, i);

    sqlite3_bind_int64(st, 1, before);
    sqlite3_bind_int64(st, 2, limit);
    if (sq_exec_stmt(q, st, "expire") < 0)
        return -1;
    *n = sqlite3_changes(q->db);
    return 0;
}

int sq_import_rows(struct store *s, struct store_row *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i;

    for (i = 0; i < n; i++) {
        struct store_row *r = &v[i];
        sqlite3_stmt *st = sq_stmt(q, SQ_IMPORT);

        sqlite3_bind_int64(st, 1, r->endpoint_id);
        sqlite3_bind_text(st, 2, r->event_id, -1, SQLITE_STATIC);
        sq_bind_text_or_null(st, 3, r->event_type);
        sqlite3_bind_text(st, 4, r->payload, (int)r->payload_len, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, msg_status_name(r->status), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 6, r->attempt_count);
        sqlite3_bind_int(st, 7, r->max_attempts);
        sqlite3_bind_int64(st, 8, r->created_at);
        sqlite3_bind_int64(st, 9, r->next_attempt_at);
        sq_bind_text_or_null(st, 10, r->last_error);
        sq_bind_text_or_null(st, 11, r->last_error_class);
        sq_bind_pos_or_null(st, 12, r->last_status_code);
        if (r->last_response_ms >= 0)
            sqlite3_bind_int64(st, 13, r->last_response_ms);
        sq_bind_text_or_null(st, 14, r->ordering_key);
        if (r->deliver_at > 0)
            sqlite3_bind_int64(st, 15, r->deliver_at);
        if (sq_exec_stmt(q, st, "import") < 0)
            return -1;
        r->duplicate = sqlite3_changes(q->db) == 0;
    }
    return 0;
}
