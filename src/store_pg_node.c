/* store_pg_node.c - the nodes sharing one PostgreSQL database: each
 * writer's row in hookd_node, its heartbeat, taking over the rows of a
 * node that went silent, and the lead of the cluster's periodic jobs.
 *
 * Liveness is judged on the database's clock (now() against each node's
 * own lease), so the nodes' clocks may disagree. A node that was silent
 * past its lease (a long stall, a network cut) finds its row gone at its
 * next heartbeat: the others have sent its rows in flight back to the
 * queue. It registers as a new node; its old claims name the old row, so
 * the results it still brings back change nothing (settle and release
 * ask for claimed_by = this node). The messages were sent twice: at
 * least once, as after a crash. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a node waits for its name's lock before it gives up. A node
 * restarted right after kill -9 finds its old session still holding the
 * lock until the server notices that the client is gone (a CI run saw it
 * 0.2 s after the kill); a second process with the name keeps it. */
#define NAME_LOCK_WAIT_MS 5000
#define NAME_LOCK_POLL_MS 50

/* A session lock per node name: two processes with one name would each
 * take the other's rows at start (recovery hands back the name's rows). */
static int take_name_lock(struct pg_store *g)
{
    const char *v[1] = {g->c->pg_node_name};
    int64_t t0 = util_mono_ms(), waited;
    int got = 0, tries = 0;

    for (;;) {
        tries++;
        PGresult *r = PQexecParams(g->conn,
                                   "SELECT pg_try_advisory_lock(hashtext('hookd.node:' || current_schema() || ':' || $1))",
                                   1, NULL, v, NULL, NULL, 0);
        if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
            pg_fail(g, r, "node lock");
            PQclear(r);
            return -1;
        }
        got = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        waited = util_mono_ms() - t0;
        if (got || waited >= NAME_LOCK_WAIT_MS)
            break;
        usleep(NAME_LOCK_POLL_MS * 1000);
    }
    if (!got)
        return store_fail(&g->base, STORE_E_BUSY,
                          "another hookd process runs as node %s on this database (its lock held for %lld ms): "
                          "give each node its own [postgres] node_name", g->c->pg_node_name, (long long)waited);
    if (tries > 1)
        log_info("node_lock_waited", "node=%s ms=%lld note=\"the previous session of this node had not ended yet\"",
                 g->c->pg_node_name, (long long)waited);
    return 0;
}

static int node_add(struct pg_store *g)
{
    struct pg_params p;
    PGresult *r;

    pg_p_init(&p);
    pg_p_text(&p, g->c->pg_node_name);
    pg_p_i64(&p, (int64_t)getpid());
    pg_p_i64(&p, g->c->pg_lease_ms);
    if (!(r = pg_exec(g, PG_NODE_ADD, &p, 0, "node register")))
        return -1;
    g->node_id = pg_i64(r, 0, 0, 0);
    PQclear(r);
    return 0;
}

/* Keep the row alive; 1 when it is gone (the lease had run out), 0, -1. */
static int node_touch(struct pg_store *g)
{
    struct pg_params p;
    PGresult *r;
    int64_t n;

    pg_p_init(&p);
    pg_p_i64(&p, g->node_id);
    if (!(r = pg_exec(g, PG_NODE_BEAT, &p, 0, "heartbeat")))
        return -1;
    n = pg_changed(r);
    PQclear(r);
    return n == 0;
}

int pg_node_register(struct pg_store *g)
{
    int gone;

    g->lead = 0;   /* a new session holds no lock */
    if (take_name_lock(g) < 0)
        return -1;
    if (!g->node_id)
        return node_add(g);
    /* a reconnect: the same node, unless it was declared dead meanwhile */
    if ((gone = node_touch(g)) < 0)
        return -1;
    if (gone) {
        g->lease_lost = 1;
        return node_add(g);
    }
    return 0;
}

int pg_node_beat(struct store *s, struct store_node *out)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;
    int gone;

    memset(out, 0, sizeof *out);
    if (pg_ensure_conn(g) < 0 || (gone = node_touch(g)) < 0)
        return -1;
    if (gone) {
        g->lease_lost = 1;
        if (node_add(g) < 0)
            return -1;
    }
    out->lease_lost = g->lease_lost;
    g->lease_lost = 0;
    out->node_id = g->node_id;
    pg_p_init(&p);
    pg_p_i64(&p, util_now_ms());   /* rows taken over are due now */
    pg_p_i64(&p, g->node_id);
    pg_p_null(&p);   /* no name: only the lease counts */
    pg_p_i64(&p, 0);  /* this node's rows stay its own */
    if (!(r = pg_exec(g, PG_TAKEOVER, &p, 0, "takeover")))
        return -1;
    out->taken_over = pg_i64(r, 0, 0, 0);
    out->dead_nodes = pg_i64(r, 0, 1, 0);
    PQclear(r);
    if (!g->lead) {
        if (!(r = pg_exec(g, PG_LEAD, NULL, 0, "lead")))
            return -1;
        g->lead = strcmp(pg_str(r, 0, 0) ? pg_str(r, 0, 0) : "f", "t") == 0;
        PQclear(r);
    }
    out->lead = g->lead;
    if (!(r = pg_exec(g, PG_NODE_COUNT, NULL, 0, "nodes")))
        return -1;
    out->nodes = (int)pg_i64(r, 0, 0, 1);
    if (out->nodes < 1)
        out->nodes = 1;
    PQclear(r);
    return 0;
}

void pg_node_leave(struct pg_store *g)
{
    struct pg_params p;

    pg_p_init(&p);
    pg_p_i64(&p, g->node_id);
    PQclear(pg_exec(g, PG_NODE_LEAVE, &p, 0, "node leave"));
}
