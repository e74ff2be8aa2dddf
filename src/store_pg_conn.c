/* store_pg_conn.c - the PostgreSQL backend's connection: connecting and
 * reconnecting, the session (prepared statements, the writer's node), running
 * statements and pipelines, and turning libpq's failures into store
 * errors. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---- */

/* SQLSTATE classes: 08 connection, 57P0x shutdown/crash of the server,
 * 53 out of resources (53100 disk full), 40 serialization/deadlock,
 * 58/XX I/O or damage on the server. A lost server is retryable here,
 * never fatal: PostgreSQL recovers on its own. */
static enum store_errc errc_of(PGconn *conn, const char *state)
{
    if (PQstatus(conn) == CONNECTION_BAD || !state)
        return STORE_E_UNAVAILABLE;
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 || strcmp(state, "25006") == 0)
        return STORE_E_UNAVAILABLE;
    if (strcmp(state, "53100") == 0)
        return STORE_E_FULL;
    if (strcmp(state, "53200") == 0)
        return STORE_E_NOMEM;
    if (strncmp(state, "40", 2) == 0 || strcmp(state, "55P03") == 0)
        return STORE_E_BUSY;
    return STORE_E_OTHER;
}

/* The primary message only: DETAIL may quote a row's values. One line,
 * without double quotes: it ends up in err="..." of a log line. */
int pg_fail(struct pg_store *g, const PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    size_t n;
    char *p;

    if (!msg)   /* libpq's own message: connection failures, never row data */
        msg = g->conn ? PQerrorMessage(g->conn) : "no connection";
    store_fail(&g->base, errc_of(g->conn, state), "%s: %s%s%s", what, msg, state ? " sqlstate=" : "",
               state ? state : "");
    for (p = g->base.errmsg; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
        else if (*p == '"')
            *p = '\'';
    n = strlen(g->base.errmsg);
    while (n > 0 && g->base.errmsg[n - 1] == ' ')
        g->base.errmsg[--n] = '\0';
    return -1;
}

static int result_ok(const PGresult *r)
{
    ExecStatusType t = PQresultStatus(r);

    return t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK || t == PGRES_SINGLE_TUPLE;
}

/* ---- statements ---- */

static int prepare_all(struct pg_store *g)
{
    int first = g->role == STORE_WRITER ? 0 : PG__WRITER;
    int last = g->role == STORE_WRITER ? PG__WRITER : PG__COUNT;
    char name[16];
    int i;

    for (i = first; i < last; i++) {
        PGresult *r;
        snprintf(name, sizeof name, "h%d", i);
        r = PQprepare(g->conn, name, pg_sql[i], 0, NULL);
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            char what[48];
            snprintf(what, sizeof what, "prepare statement %d", i);
            pg_fail(g, r, what);
            PQclear(r);
            return -1;
        }
        PQclear(r);
    }
    g->prepared = 1;
    return 0;
}

/* A statement outside a transaction (the reader's reads) that fails
 * because the server went away is run once more on a new connection:
 * it changed nothing. Inside a transaction the caller rolls back. */
PGresult *pg_exec(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, int binary, const char *what)
{
    int idle = PQtransactionStatus(g->conn) != PQTRANS_INTRANS && PQtransactionStatus(g->conn) != PQTRANS_INERROR;
    int tries = idle ? 2 : 1;
    char name[16];
    PGresult *r = NULL;

    snprintf(name, sizeof name, "h%d", (int)i);
    while (tries-- > 0) {
        PQclear(r);
        if (idle && pg_ensure_conn(g) < 0)
            return NULL;
        r = PQexecPrepared(g->conn, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL, p ? p->fmt : NULL,
                           binary);
        if (r && result_ok(r))
            return r;
        if (PQstatus(g->conn) != CONNECTION_BAD)
            break;   /* the statement failed, not the connection */
    }
    pg_fail(g, r, what);
    PQclear(r);
    return NULL;
}

int pg_each(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, int binary, const char *what,
            int (*row)(void *ctx, const PGresult *r, int i), void *ctx)
{
    PGresult *r = pg_exec(g, i, p, binary, what);
    int k, rows;

    if (!r)
        return -1;
    rows = PQntuples(r);
    for (k = 0; k < rows; k++)
        if (row(ctx, r, k) != 0) {
            PQclear(r);
            return store_fail(&g->base, STORE_E_NOMEM, "%s: out of memory", what);
        }
    PQclear(r);
    return 0;
}

int pg_exec_sql(struct pg_store *g, const char *sql, const char *what)
{
    PGresult *r = PQexec(g->conn, sql);
    int ok = r && result_ok(r);

    if (!ok)
        pg_fail(g, r, what);
    PQclear(r);
    return ok ? 0 : -1;
}

/* ---- pipelines ---- */

/* Statements of one batch go out together and their results come back
 * together: one round trip for the batch instead of one per row. Every
 * PG_PIPE_MAX statements the batch is synced, so neither side can fill
 * its socket buffer while the other waits to write (libpq's warning
 * about blocking pipelines). */
#define PG_PIPE_MAX 256

int pg_pipe_begin(struct pg_pipe *pp, struct pg_store *g, const char *what,
                  int (*fn)(void *ctx, size_t k, const PGresult *r), void *ctx)
{
    memset(pp, 0, sizeof *pp);
    pp->g = g;
    pp->what = what;
    pp->fn = fn;
    pp->ctx = ctx;
    if (!PQenterPipelineMode(g->conn))
        return pg_fail(g, NULL, what);
    return 0;
}

/* Sync what was sent and read its results, in order. */
static int pipe_drain(struct pg_pipe *pp)
{
    struct pg_store *g = pp->g;
    PGresult *r;

    if (pp->queued == 0)
        return pp->failed ? -1 : 0;
    if (!PQpipelineSync(g->conn)) {
        pp->failed = 1;
        return pg_fail(g, NULL, pp->what);
    }
    while (pp->queued > 0) {
        r = PQgetResult(g->conn);
        if (!r) {   /* the end of one statement's results */
            pp->queued--;
            pp->done++;
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {   /* should not come first */
            PQclear(r);
            break;
        }
        if (!pp->failed && !result_ok(r)) {
            pp->failed = 1;
            pg_fail(g, r, pp->what);
        } else if (!pp->failed && pp->fn && pp->fn(pp->ctx, pp->done, r) != 0) {
            pp->failed = 1;
            store_fail(&g->base, STORE_E_NOMEM, "%s: out of memory", pp->what);
        }
        PQclear(r);
    }
    /* the sync point */
    while ((r = PQgetResult(g->conn)) != NULL) {
        int sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
        if (sync)
            break;
    }
    pp->queued = 0;
    return pp->failed ? -1 : 0;
}

int pg_pipe_begin_binary(struct pg_pipe *pp, struct pg_store *g, const char *what,
                         int (*fn)(void *ctx, size_t k, const PGresult *r), void *ctx)
{
    if (pg_pipe_begin(pp, g, what, fn, ctx) < 0)
        return -1;
    pp->binary = 1;
    return 0;
}

int pg_pipe_add(struct pg_pipe *pp, enum pg_stmt i, const struct pg_params *p)
{
    char name[16];

    if (pp->failed)
        return -1;
    snprintf(name, sizeof name, "h%d", (int)i);
    if (!PQsendQueryPrepared(pp->g->conn, name, p->n, p->v, p->len, p->fmt, pp->binary)) {
        pp->failed = 1;
        return pg_fail(pp->g, NULL, pp->what);
    }
    if (++pp->queued >= PG_PIPE_MAX)
        return pipe_drain(pp);
    return 0;
}

int pg_pipe_end(struct pg_pipe *pp)
{
    int rc = pipe_drain(pp);

    if (!PQexitPipelineMode(pp->g->conn) && rc == 0)
        rc = pg_fail(pp->g, NULL, pp->what);
    return rc;
}

int pg_pipe_rows(struct pg_store *g, enum pg_stmt st, const char *what, size_t n,
                 void (*params)(struct pg_params *p, const void *v, size_t i), const void *v)
{
    struct pg_pipe pp;
    struct pg_params p;
    size_t i;

    if (pg_pipe_begin(&pp, g, what, NULL, NULL) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        params(&p, v, i);
        if (pg_pipe_add(&pp, st, &p) < 0)
            break;
    }
    return pg_pipe_end(&pp);
}

/* ---- connection ---- */

/* A new connection (or the old one reset): the session as hookd needs
 * it, the role's statements, the writer's node. */
int pg_session_setup(struct pg_store *g)
{
    g->prepared = 0;
    if (pg_exec_sql(g, "SET TIME ZONE 'UTC'; SET client_min_messages = warning", "session") < 0)
        return -1;
    if (prepare_all(g) < 0)
        return -1;
    return g->on_session ? g->on_session(g) : 0;
}

/* A lost connection is found at the next transaction: reset it once,
 * the caller fails with storage_unavailable if that does not work and
 * tries again later. */
int pg_ensure_conn(struct pg_store *g)
{
    if (PQstatus(g->conn) == CONNECTION_OK && g->prepared)
        return 0;
    if (PQstatus(g->conn) != CONNECTION_OK) {
        PQreset(g->conn);
        if (PQstatus(g->conn) != CONNECTION_OK)
            return pg_fail(g, NULL, "connect");
        log_info("pg_reconnected", "role=%s", g->role == STORE_WRITER ? "writer" : "reader");
    }
    return pg_session_setup(g);
}

/* The server's notices ("relation exists, skipping" while migrating, a
 * WARNING) at debug level, on one line: never on stderr as libpq would. */
static void on_notice(void *arg, const char *msg)
{
    char line[200];
    size_t i;

    (void)arg;
    snprintf(line, sizeof line, "%s", msg);
    for (i = 0; line[i]; i++)
        if (line[i] == '\n' || line[i] == '"')
            line[i] = ' ';
    log_debug("pg_notice", "msg=\"%s\"", line);
}

PGconn *pg_connect(const struct config *c)
{
    /* the operator's conninfo comes last and wins; these are only
     * defaults (a dead host must not hang a reconnect for minutes) */
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const vals[] = {"10", "hookd", c->pg_conninfo, NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);

    if (conn)
        PQsetNoticeProcessor(conn, on_notice, NULL);
    return conn;
}
