/* store_pg_admin.c - the queue's rare writes on PostgreSQL: recovery at
 * start, clock steps, requeue, purge, erase, retention and import. Writer
 * connection; every function runs inside the caller's transaction. The
 * hot path (enqueue, claim, settle) is store_pg_queue.c. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"

#include "log.h"

#include <stdio.h>

/* At start: what an earlier process of this node's name had in flight
 * goes back to the queue (it is dead: this one holds the name's lock),
 * and what dead nodes had too. Other live nodes' rows stay theirs. */
int pg_recover(struct store *s, int64_t now, int64_t *n)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;

    pg_p_init(&p);
    pg_p_i64(&p, now);
    pg_p_i64(&p, g->node_id);
    pg_p_text(&p, g->c->pg_node_name);
    pg_p_i64(&p, 1);
    if (!(r = pg_exec(g, PG_TAKEOVER, &p, 0, "recover")))
        return -1;
    *n = pg_i64(r, 0, 0, 0);
    PQclear(r);
    /* Rows waiting for an endpoint that no longer exists (a requeue by
     * id before requeue refused them) would wait forever: they become the
     * dead letters the endpoint's delete made of its other rows. Rows in
     * flight are left to their nodes. */
    pg_p_init(&p);
    pg_p_i64(&p, now);
    r = PQexecParams(g->conn,
                     "UPDATE hookd_queue q SET status = 'dead_letter', last_error = 'endpoint deleted', "
                     "last_error_class = 'endpoint_deleted', next_attempt_at = " PG_TS("$1") " "
                     "WHERE status IN ('pending', 'failed') "
                     "AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = q.endpoint_id)",
                     p.n, NULL, p.v, p.len, p.fmt, 0);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_fail(g, r, "recover");
        PQclear(r);
        return -1;
    }
    if (pg_changed(r))
        log_warn("orphans_dead_lettered", "count=%lld note=\"waiting rows of deleted endpoints\"",
                 (long long)pg_changed(r));
    PQclear(r);
    return 0;
}

/* The wall clock stepped (clockstep.h). A node alone moves everything,
 * as SQLite does. Several nodes share the rows and each wrote its times
 * with its own clock: a node whose clock stepped moves only what its
 * clock wrote, the rows whose claimed_by is this node (it enqueued them,
 * or claimed them last: their retry time is its settle's, a released
 * row's its release's); nodes on one host all see the step and each
 * moves its own rows once. The shared breakers' times were written by
 * whichever node opened them: the lead moves them, once for the cluster
 * (right when the nodes step together, one host or one clock source; a
 * lead stepping alone has a clock an hour off the others', which the
 * cluster's times cannot follow anyway). */
int pg_clock_step(struct store *s, int64_t step_ms, int mine_only, int64_t *rows)
{
    struct pg_store *g = (struct pg_store *)s;
    char sql[768], mine[64] = "";
    PGresult *r;

    if (mine_only)
        snprintf(mine, sizeof mine, " AND claimed_by = %lld", (long long)g->node_id);
    snprintf(sql, sizeof sql,
             /* a row still waiting for the wall-clock time its enqueue
              * named (schema 7) keeps it, as on SQLite */
             "UPDATE hookd_queue SET next_attempt_at = CASE WHEN attempt_count = 0 AND "
             "next_attempt_at = deliver_at THEN next_attempt_at "
             "ELSE next_attempt_at + %lld * interval '1 millisecond' END, "
             "created_at = created_at + %lld * interval '1 millisecond' "
             "WHERE status IN ('pending', 'failed', 'in_flight')%s",
             (long long)step_ms, (long long)step_ms, mine);
    r = PQexec(g->conn, sql);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_fail(g, r, "clock step");
        PQclear(r);
        return -1;
    }
    *rows = pg_changed(r);
    PQclear(r);
    if (mine_only && !g->lead)
        return 0;
    snprintf(sql, sizeof sql,
             "UPDATE endpoint_health SET opened_at = opened_at + %lld * interval '1 millisecond', "
             "failing_since = failing_since + %lld * interval '1 millisecond' "
             "WHERE opened_at IS NOT NULL OR failing_since IS NOT NULL",
             (long long)step_ms, (long long)step_ms);
    return pg_exec_sql(g, sql, "clock step");
}

/* The statuses an admin op may touch (never pending or in_flight rows),
 * as a PostgreSQL array literal. */
static int status_array(unsigned statuses, char *out, size_t n)
{
    static const enum msg_status ok[] = {MSG_FAILED, MSG_DELIVERED, MSG_DEAD_LETTER};
    size_t i, len = 1;

    snprintf(out, n, "{");
    for (i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (statuses & MSG_BIT(ok[i]))
            len += (size_t)snprintf(out + len, n - len, "%s%s", len > 1 ? "," : "", msg_status_name(ok[i]));
    if (len == 1)
        return -1;
    snprintf(out + len, n - len, "}");
    return 0;
}

/* Admin statements run rarely: not kept prepared. */
static int admin_exec(struct pg_store *g, const char *sql, const struct store_filter *f, const char *statuses,
                      int64_t now, int64_t *n, const char *what)
{
    struct pg_params p;
    PGresult *r;
    int ok;

    pg_p_init(&p);
    pg_p_i64(&p, f->id);
    pg_p_i64(&p, f->endpoint_id);
    pg_p_time(&p, f->since);
    if (statuses) {   /* requeue: $4 now, $5 the statuses; purge has neither */
        pg_p_i64(&p, now);
        pg_p_text(&p, statuses);
    }
    r = PQexecParams(g->conn, sql, p.n, NULL, p.v, p.len, p.fmt, 0);
    /* a statement changes rows (their count), or counts them (a SELECT) */
    ok = r && (PQresultStatus(r) == PGRES_COMMAND_OK || (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1));
    if (!ok) {
        pg_fail(g, r, what);
        PQclear(r);
        return -1;
    }
    *n = PQresultStatus(r) == PGRES_TUPLES_OK ? pg_i64(r, 0, 0, 0) : pg_changed(r);
    PQclear(r);
    return 0;
}

int pg_requeue(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone)
{
    struct pg_store *g = (struct pg_store *)s;
    char in[64];

    *n = *gone = 0;
    if (status_array(f->statuses, in, sizeof in) < 0)
        return 0;
    /* what is left alone: rows of endpoints that no longer exist */
    if (admin_exec(g,
                   "SELECT count(*) FROM hookd_queue WHERE status = ANY ($5::text[]) AND erased_at IS NULL "
                   "AND ($1::bigint = 0 OR id = $1) AND ($2::bigint = 0 OR endpoint_id = $2) "
                   "AND created_at >= " PG_TS("$3") " AND $4::bigint = $4::bigint "
                   "AND endpoint_id NOT IN (SELECT id FROM endpoints)",
                   f, in, now, gone, "requeue") < 0)
        return -1;
    /* the log keeps every attempt: the requeue is attempt 0 of the next
     * generation, and the count is of those rows; an erased row has
     * nothing left to send */
    return admin_exec(g,
                      "WITH r AS (UPDATE hookd_queue SET status = 'pending', attempt_count = 0, "
                      "generation = generation + 1, next_attempt_at = " PG_TS("$4")
                      ", last_error = NULL, last_error_class = NULL WHERE status = ANY ($5::text[]) "
                      "AND erased_at IS NULL AND ($1::bigint = 0 OR id = $1) AND ($2::bigint = 0 OR endpoint_id = $2) "
                      "AND created_at >= " PG_TS("$3") " "
                      /* a row whose endpoint is gone would wait forever */
                      "AND endpoint_id IN (SELECT id FROM endpoints) RETURNING id, generation, endpoint_id) "
                      "INSERT INTO delivery_attempts (message_id, generation, attempt, endpoint_id, at, detail) "
                      "SELECT id, generation, 0, endpoint_id, " PG_TS("$4") ", 'requeued' FROM r",
                      f, in, now, n, "requeue");
}

int pg_purge(struct store *s, const struct store_filter *f, int64_t *n)
{
    struct pg_store *g = (struct pg_store *)s;

    return admin_exec(g,
                      "DELETE FROM hookd_queue WHERE status = 'dead_letter' AND ($1::bigint = 0 OR id = $1) "
                      "AND ($2::bigint = 0 OR endpoint_id = $2) AND created_at >= " PG_TS("$3"),
                      f, NULL, 0, n, "purge");
}

/* What a partner sent or answered goes, what hookd did stays: the
 * attempt log's details first, then the row. $1 the ids, $2 when. */
static int erase_ids(struct pg_store *g, const char *ids_sql, int64_t a, int64_t b, int64_t *n)
{
    char sql[1024];
    struct pg_params p;
    PGresult *r;
    int ok;

    snprintf(sql, sizeof sql,
             "WITH ids AS (%s), "
             "l AS (UPDATE delivery_attempts SET detail = NULL, url = NULL, response = NULL "
             "WHERE message_id IN (SELECT id FROM ids)) "
             "UPDATE hookd_queue SET payload = ''::bytea, erased_at = coalesce(erased_at, " PG_TS("$2") "), "
             "last_error = NULL, "
             "last_error_class = CASE WHEN status IN ('pending', 'failed') THEN 'erased' ELSE last_error_class END, "
             "status = CASE WHEN status IN ('pending', 'failed') THEN 'dead_letter' ELSE status END "
             "WHERE id IN (SELECT id FROM ids)",
             ids_sql);
    pg_p_init(&p);
    pg_p_i64(&p, a);
    pg_p_i64(&p, b);
    r = PQexecParams(g->conn, sql, p.n, NULL, p.v, p.len, p.fmt, 0);
    ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) {
        pg_fail(g, r, "erase");
        PQclear(r);
        return -1;
    }
    *n = pg_changed(r);
    PQclear(r);
    return 0;
}

int pg_erase(struct store *s, int64_t id, int64_t now, int64_t *n)
{
    *n = 0;
    return erase_ids((struct pg_store *)s, "SELECT $1::bigint AS id", id, now, n);
}

int pg_expire(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n)
{
    struct pg_store *g = (struct pg_store *)s;
    enum pg_stmt i = what == EXPIRE_DELIVERED ? PG_EXPIRE_DELIVERED
                     : what == EXPIRE_HISTORY ? PG_EXPIRE_HISTORY
                                              : PG_EXPIRE_DEAD;
    struct pg_params p;
    PGresult *r;

    if (what == EXPIRE_PAYLOADS)   /* erased rows leave idx_queue_payload */
        return erase_ids(g,
                         "SELECT id FROM hookd_queue WHERE status = 'delivered' AND erased_at IS NULL "
                         "AND delivered_at < " PG_TS("$2") " ORDER BY delivered_at LIMIT $1",
                         limit, before, n);
    pg_p_init(&p);
    pg_p_time(&p, before);
    pg_p_i64(&p, limit);
    if (!(r = pg_exec(g, i, &p, 0, "expire")))
        return -1;
    *n = pg_changed(r);
    PQclear(r);
    return 0;
}

static int imported(void *ctx, size_t k, const PGresult *r)
{
    ((struct store_row *)ctx)[k].duplicate = pg_changed(r) == 0;
    return 0;
}

int pg_import_rows(struct store *s, struct store_row *v, size_t n)
{
    struct pg_pipe pp;
    size_t i;

    if (pg_pipe_begin(&pp, (struct pg_store *)s, "import", imported, v) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        struct store_row *w = &v[i];
        struct pg_params p;

        pg_p_init(&p);
        pg_p_i64(&p, w->endpoint_id);
        pg_p_text(&p, w->event_id);
        pg_p_text(&p, w->event_type);
        pg_p_bytes(&p, w->payload, w->payload_len);
        pg_p_text(&p, msg_status_name(w->status));
        pg_p_i64(&p, w->attempt_count);
        pg_p_i64(&p, w->max_attempts);
        pg_p_i64(&p, w->created_at);
        pg_p_i64(&p, w->next_attempt_at);
        pg_p_text(&p, w->last_error);
        pg_p_text(&p, w->last_error_class);
        pg_p_pos(&p, w->last_status_code);
        if (w->last_response_ms >= 0)
            pg_p_i64(&p, w->last_response_ms);
        else
            pg_p_null(&p);
        pg_p_text(&p, w->ordering_key);
        pg_p_pos(&p, w->deliver_at);
        if (pg_pipe_add(&pp, PG_IMPORT, &p) < 0)
            break;
    }
    return pg_pipe_end(&pp);
}
