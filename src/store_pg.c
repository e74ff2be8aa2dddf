/* store_pg.c - the PostgreSQL backend: the schema, transactions, the
 * ops table and opening a store (the connection is store_pg_conn.c). */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "log.h"
#include "schema_pg_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (pg_ensure_conn(g) < 0)
        return -1;
    if (pg_exec_sql(g, sql, what) == 0)
        return 0;
    if (PQstatus(g->conn) != CONNECTION_BAD || pg_ensure_conn(g) < 0)
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
    if (g->node_id && PQstatus(g->conn) == CONNECTION_OK)
        pg_node_leave(g);
    PQfinish(g->conn);
    seal_key_wipe(&g->base.seal);
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
    .erase = pg_erase,
    .endpoint_put = pg_endpoint_put,
    .endpoint_delete = pg_endpoint_delete,
    .endpoint_pause = pg_endpoint_pause,
    .health_save = pg_health_save,
    .rollup_save = pg_rollup_save,
    .history_add = pg_history_add,
    .history_latency = pg_history_latency,
    .latency_ring_size = pg_latency_ring_size,
    .import_rows = pg_import_rows,
    .clock_step = pg_clock_step,
    .node_beat = pg_node_beat,
    .health_lock = pg_health_lock,
    .checkpoint = pgs_checkpoint,
    .backup = pgs_backup,
    .snapshot_begin = pg_snapshot_begin,
    .snapshot_end = pg_snapshot_end,
    .message_get = pg_message_get,
    .message_scan = pg_message_scan,
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

int store_pg_ping(const struct config *c, char *msg, size_t len)
{
    PGconn *conn = pg_connect(c);
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
    if (role == STORE_WRITER)
        g->on_session = pg_node_register;
    g->conn = pg_connect(c);
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
    if (pg_session_setup(g) < 0) {
        snprintf(err, errlen, "postgres: %s", g->base.errmsg);
        pgs_close(&g->base);
        return -1;
    }
    *out = &g->base;
    return 0;
}
