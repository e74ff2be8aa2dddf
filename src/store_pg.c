/* store_pg.c - the PostgreSQL backend: connections, the schema,
 * transactions, errors and the ops table. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "log.h"
#include "schema_pg_sql.h"

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

static int ensure_conn(struct pg_store *g);

/* A statement outside a transaction (the reader's reads) that fails
 * because the server went away is run once more on a new connection:
 * it changed nothing. Inside a transaction the caller rolls back. */
PGresult *pg_exec(struct pg_store *g, enum pg_stmt i, const struct pg_params *p, int binary, const char *what)
{
    int idle = PQtransactionStatus(g->conn) != PQTRANS_INTRANS && PQtransactionStatus(g->conn) != PQTRANS_INERROR;
    char name[16];
    PGresult *r;

    if (idle && ensure_conn(g) < 0)
        return NULL;
    snprintf(name, sizeof name, "h%d", (int)i);
    r = PQexecPrepared(g->conn, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL, p ? p->fmt : NULL,
                       binary);
    if (r && result_ok(r))
        return r;
    if (idle && PQstatus(g->conn) == CONNECTION_BAD) {
        PQclear(r);
        if (ensure_conn(g) < 0)
            return NULL;
        r = PQexecPrepared(g->conn, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL, p ? p->fmt : NULL,
                           binary);
        if (r && result_ok(r))
            return r;
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

static int take_writer_lock(struct pg_store *g)
{
    /* a session lock: held while this connection lives (one node per
     * database until multi-node claims exist) */
    PGresult *r = PQexec(g->conn, "SELECT pg_try_advisory_lock(hashtext('hookd.writer:' || current_schema()))");
    int ok = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    int got = ok && strcmp(PQgetvalue(r, 0, 0), "t") == 0;

    if (!ok)
        pg_fail(g, r, "writer lock");
    else if (!got)
        store_fail(&g->base, STORE_E_BUSY,
                   "another hookd node writes to this database (one node per database for now)");
    PQclear(r);
    return got ? 0 : -1;
}

/* A new connection (or the old one reset): the session as hookd needs
 * it, the writer's lock, the role's statements. */
static int session_setup(struct pg_store *g)
{
    g->prepared = 0;
    if (pg_exec_sql(g, "SET TIME ZONE 'UTC'; SET client_min_messages = warning", "session") < 0)
        return -1;
    if (g->role == STORE_WRITER && take_writer_lock(g) < 0)
        return -1;
    return prepare_all(g);
}

/* A lost connection is found at the next transaction: reset it once,
 * the caller fails with storage_unavailable if that does not work and
 * tries again later. */
static int ensure_conn(struct pg_store *g)
{
    if (PQstatus(g->conn) == CONNECTION_OK && g->prepared)
        return 0;
    if (PQstatus(g->conn) != CONNECTION_OK) {
        PQreset(g->conn);
        if (PQstatus(g->conn) != CONNECTION_OK)
            return pg_fail(g, NULL, "connect");
        log_info("pg_reconnected", "role=%s", g->role == STORE_WRITER ? "writer" : "reader");
    }
    return session_setup(g);
}

/* ---- schema ---- */

#define SCHEMA_PG_VERSION ((int)(sizeof schema_pg_sql / sizeof schema_pg_sql[0]))

/* The schema version in the database: 0 without hookd_schema (a new
 * database), -1 on failure. Reads only: a role without CREATE can run a
 * hookd whose schema an operator applied. */
static int schema_version(struct pg_store *g)
{
    /* two statements: a query naming a table that does not exist fails
     * when it is parsed, whatever branch it is in */
    PGresult *r = PQexec(g->conn, "SELECT to_regclass('hookd_schema') IS NOT NULL");
    int v = -1;

    if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "f") == 0) {
        PQclear(r);
        return 0;
    }
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK) {
        PQclear(r);
        r = PQexec(g->conn, "SELECT coalesce(max(version), 0) FROM hookd_schema");
    }
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = atoi(PQgetvalue(r, 0, 0));
    else
        pg_fail(g, r, "schema version");
    PQclear(r);
    return v;
}

static int schema_apply(struct pg_store *g, char *err, size_t errlen)
{
    int have, want = SCHEMA_PG_VERSION, v;
    char sql[96];

    if ((have = schema_version(g)) < 0)
        goto fail;
    if (have == want)
        return 0;
    /* nodes starting together migrate one after the other: the version
     * is read again under the lock */
    if (pg_exec_sql(g, "BEGIN; SELECT pg_advisory_xact_lock(hashtext('hookd.schema:' || current_schema())); "
                       "CREATE TABLE IF NOT EXISTS hookd_schema (version integer NOT NULL)",
                    "schema") < 0 ||
        (have = schema_version(g)) < 0)
        goto fail;
    if (have > want) {
        snprintf(err, errlen, "the database's schema version %d is newer than this hookd's (%d): upgrade hookd",
                 have, want);
        PQclear(PQexec(g->conn, "ROLLBACK"));
        return -1;
    }
    for (v = have; v < want; v++) {
        if (pg_exec_sql(g, schema_pg_sql[v], "schema migration") < 0)
            goto fail;
        snprintf(sql, sizeof sql, "INSERT INTO hookd_schema (version) VALUES (%d)", v + 1);
        if (pg_exec_sql(g, sql, "schema version") < 0)
            goto fail;
    }
    if (pg_exec_sql(g, "COMMIT", "schema") < 0)
        goto fail;
    if (want > have)
        log_info("schema_migrated", "backend=postgres from=%d to=%d", have, want);
    return 0;
fail:
    snprintf(err, errlen, "postgres schema: %s", g->base.errmsg);
    PQclear(PQexec(g->conn, "ROLLBACK"));
    return -1;
}

void store_pg_schema_print(FILE *out)
{
    int v;

    fprintf(out, "-- hookd's PostgreSQL schema, versions 1 to %d (hookd schema-sql). Run it as a role\n"
                 "-- with CREATE on the schema hookd uses; hookd then needs only SELECT, INSERT,\n"
                 "-- UPDATE and DELETE on its tables (and USAGE on their sequences).\n"
                 "BEGIN;\nCREATE TABLE IF NOT EXISTS hookd_schema (version integer NOT NULL);\n",
            SCHEMA_PG_VERSION);
    for (v = 0; v < SCHEMA_PG_VERSION; v++)
        fprintf(out, "%s\nINSERT INTO hookd_schema (version) VALUES (%d);\n", schema_pg_sql[v], v + 1);
    fprintf(out, "COMMIT;\n");
}

/* ---- transactions ---- */

/* Every commit is durable on PostgreSQL's own terms (synchronous_commit
 * as the server or the role sets it); a commit that acknowledges
 * nothing does not wait for the WAL flush, as with SQLite's NORMAL. */
/* The first command after the server went away is what finds out: when
 * BEGIN fails on a connection that turns out dead, nothing has been done
 * yet, so reconnect and try once more. */
static int begin_sql(struct pg_store *g, const char *sql, const char *what)
{
    if (ensure_conn(g) < 0)
        return -1;
    if (pg_exec_sql(g, sql, what) == 0)
        return 0;
    if (PQstatus(g->conn) != CONNECTION_BAD || ensure_conn(g) < 0)
        return -1;
    return pg_exec_sql(g, sql, what);
}

static int pgs_begin(struct store *s, int durable)
{
    return begin_sql((struct pg_store *)s, durable ? "BEGIN" : "BEGIN; SET LOCAL synchronous_commit = off", "begin");
}

static int pgs_commit(struct store *s)
{
    struct pg_store *g = (struct pg_store *)s;
    PGresult *r = PQexec(g->conn, "COMMIT");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;

    /* a COMMIT of a failed transaction answers ROLLBACK, not an error */
    if (ok && strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        PQclear(r);
        return store_fail(s, STORE_E_OTHER, "commit: the transaction had failed and was rolled back");
    }
    if (!ok)
        pg_fail(g, r, "commit");
    PQclear(r);
    return ok ? 0 : -1;
}

static void pgs_rollback(struct store *s)
{
    struct pg_store *g = (struct pg_store *)s;
    PGTransactionStatusType t = PQtransactionStatus(g->conn);

    if (t == PQTRANS_INTRANS || t == PQTRANS_INERROR)
        PQclear(PQexec(g->conn, "ROLLBACK"));
}

/* PostgreSQL checkpoints and vacuums on its own. */
static int pgs_checkpoint(struct store *s, int full)
{
    (void)s;
    (void)full;
    return 0;
}

static int pgs_backup(struct store *s, const char *path)
{
    (void)path;
    return store_fail(s, STORE_E_OTHER, "backup: not a postgres operation (pg_dump, pg_basebackup)");
}

int pg_snapshot_begin(struct store *s)
{
    return begin_sql((struct pg_store *)s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "snapshot");
}

void pg_snapshot_end(struct store *s)
{
    pgs_rollback(s);   /* read only: nothing to keep */
}

static void pgs_close(struct store *s)
{
    struct pg_store *g = (struct pg_store *)s;

    if (!g)
        return;
    PQfinish(g->conn);
    free(g);
}

static const struct store_ops pg_ops = {
    .name = "postgres",
    .close = pgs_close,
    .begin = pgs_begin,
    .commit = pgs_commit,
    .rollback = pgs_rollback,
    .recover = pg_recover,
    .endpoints_load = pg_endpoints_load,
    .health_load = pg_health_load,
    .enqueue = pg_enqueue,
    .claim = pg_claim,
    .claim_many = pg_claim_many,
    .next_due = pg_next_due,
    .settle = pg_settle,
    .requeue = pg_requeue,
    .purge = pg_purge,
    .expire = pg_expire,
    .endpoint_put = pg_endpoint_put,
    .endpoint_delete = pg_endpoint_delete,
    .endpoint_pause = pg_endpoint_pause,
    .health_save = pg_health_save,
    .rollup_save = pg_rollup_save,
    .history_add = pg_history_add,
    .history_latency = pg_history_latency,
    .latency_ring_size = pg_latency_ring_size,
    .import_rows = pg_import_rows,
    .checkpoint = pgs_checkpoint,
    .backup = pgs_backup,
    .snapshot_begin = pg_snapshot_begin,
    .snapshot_end = pg_snapshot_end,
    .message_get = pg_message_get,
    .message_attempts = pg_message_attempts,
    .queue_stats = pg_queue_stats,
    .endpoint_list = pg_endpoint_list,
    .dead_letters = pg_dead_letters,
    .slow_endpoints = pg_slow_endpoints,
    .latency_window = pg_latency_window,
    .history = pg_history,
    .export_rows = pg_export_rows,
    .dead_classes = pg_dead_classes,
};

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

static PGconn *connect_to(const struct config *c)
{
    /* the operator's conninfo comes last and wins; these are only
     * defaults (a dead host must not hang a reconnect for minutes) */
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const vals[] = {"10", "hookd", c->pg_conninfo, NULL};

    return PQconnectdbParams(keys, vals, 1);
}

int store_pg_ping(const struct config *c, char *msg, size_t len)
{
    PGconn *conn = connect_to(c);
    int ok = conn && PQstatus(conn) == CONNECTION_OK;

    if (ok) {
        int v = PQserverVersion(conn);
        snprintf(msg, len, "postgres: connected to server %d.%d as %s, database %s", v / 10000, v % 10000,
                 PQuser(conn), PQdb(conn));
    } else {
        struct pg_store g = {.conn = conn};
        pg_fail(&g, NULL, "postgres: cannot connect");
        snprintf(msg, len, "%s", g.base.errmsg);
    }
    PQfinish(conn);
    return ok ? 0 : -1;
}

int store_pg_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen)
{
    struct pg_store *g = calloc(1, sizeof *g);

    *out = NULL;
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->base.ops = &pg_ops;
    g->c = c;
    g->role = role;
    g->conn = connect_to(c);
    if (g->conn)
        PQsetNoticeProcessor(g->conn, on_notice, NULL);
    if (!g->conn || PQstatus(g->conn) != CONNECTION_OK) {
        pg_fail(g, NULL, "connect");
        snprintf(err, errlen, "postgres: %s", g->base.errmsg);
        pgs_close(&g->base);
        return -1;
    }
    if (role == STORE_WRITER && schema_apply(g, err, errlen) < 0) {
        pgs_close(&g->base);
        return -1;
    }
    if (session_setup(g) < 0) {
        snprintf(err, errlen, "postgres: %s", g->base.errmsg);
        pgs_close(&g->base);
        return -1;
    }
    *out = &g->base;
    return 0;
}
