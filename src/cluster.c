/* cluster.c - this node's part of the nodes sharing one database. */
#include "cluster.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int sync_row(void *ctx, const struct store_health *h)
{
    registry_sync_health(ctx, h);
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* id appended to the growing array *v (*n used, *cap allocated); 0 / -1 */
static int ids_add(int64_t **v, size_t *n, size_t *cap, int64_t id)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        int64_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = id;
    return 0;
}

static int push(struct cluster *cl, size_t *n, int64_t id)
{
    return ids_add(&cl->ids, n, &cl->cap, id);
}

/* Sorted, without repeats: every node locks in id order, so two rounds
 * on two nodes wait for each other at most, never deadlock. */
static int lock_list(struct cluster *cl, size_t n)
{
    size_t i, m = 0;

    if (n == 0)
        return 0;
    qsort(cl->ids, n, sizeof *cl->ids, cmp_id);
    for (i = 0; i < n; i++)
        if (m == 0 || cl->ids[m - 1] != cl->ids[i])
            cl->ids[m++] = cl->ids[i];
    if (cl->st->ops->health_lock(cl->st, cl->ids, m, sync_row, cl->reg) < 0)
        return -1;
    /* no row (an endpoint put before its row was ensured): no node has
     * recorded anything; the row this round saves is the first */
    for (i = 0; i < m; i++) {
        struct endpoint *e = registry_by_id(cl->reg, cl->ids[i]);
        if (e && e->locked != cl->reg->round) {
            registry_touch(cl->reg, e);
            e->locked = cl->reg->round;
            e->stale = 0;
        }
    }
    return 0;
}

int cluster_lock(struct cluster *cl, const int64_t *ids, size_t n)
{
    size_t i, k = 0;

    if (!cl || !cl->shared)
        return 0;
    for (i = 0; i < n; i++)
        if (push(cl, &k, ids[i]) < 0)
            return store_fail(cl->st, STORE_E_NOMEM, "health lock: out of memory");
    return lock_list(cl, k);
}

/* Could a claim this round have to judge e's breaker? (The same tests
 * dispatch's admission makes before it asks the breaker.) A closed
 * breaker without failures is not read: a claim asks the database
 * whether another node blocked it, and says so (store_claim_want.blocked). */
static int may_judge(const struct endpoint *e, int64_t now)
{
    if (e->stale)
        return 1;
    if (e->paused || e->next_due > now || e->hold_until > now)
        return 0;
    switch (e->br.state) {
    case BREAKER_CLOSED:
        return e->br.consecutive_failures > 0;
    case BREAKER_OPEN:
        return now >= e->br.opened_at + e->br.cooldown_ms;
    case BREAKER_HALF_OPEN:
        return !e->br.probe_in_flight;
    }
    return 1;
}

int cluster_lock_round(struct cluster *cl, const struct djob *results, int claiming, int64_t now)
{
    struct registry *r = cl->reg;
    const struct djob *j;
    size_t n = 0, i;

    if (!cl->shared)
        return 0;
    for (j = results; j; j = j->next)
        if (registry_by_id(r, j->ep->id) && push(cl, &n, j->ep->id) < 0)
            goto oom;
    if (claiming)
        for (i = 0; i < r->n; i++)
            if (may_judge(r->v[i], now) && push(cl, &n, r->v[i]->id) < 0)
                goto oom;
    return lock_list(cl, n);
oom:
    return store_fail(cl->st, STORE_E_NOMEM, "health lock: out of memory");
}

void cluster_recheck(struct cluster *cl)
{
    size_t i;

    if (!cl->shared)
        return;
    for (i = 0; i < cl->reg->n; i++) {
        struct endpoint *e = cl->reg->v[i];
        if (e->br.state != BREAKER_CLOSED || e->paused)
            e->stale = 1;
    }
}

void cluster_beat(struct cluster *cl)
{
    struct store_node nd;
    const char *name = cl->c->pg_node_name;

    if (!cl->shared)
        return;
    if (cl->st->ops->node_beat(cl->st, &nd) < 0) {
        /* the store is retried by the rounds too; one line per outage */
        if (!cl->beat_failed)
            log_warn("heartbeat_failed", "node=%s err=\"%s\" note=\"past the lease (%lld ms) the other nodes take "
                     "this node's messages in flight over\"", name, cl->st->errmsg, (long long)cl->c->pg_lease_ms);
        cl->beat_failed = 1;
        return;
    }
    if (cl->beat_failed)
        log_info("heartbeat_ok", "node=%s", name);
    cl->beat_failed = 0;
    if (nd.lease_lost)
        log_warn("node_lease_lost", "node=%s node_id=%lld old_node_id=%lld note=\"silent past its lease: the other "
                 "nodes sent its messages in flight back to the queue (delivered again); its results still "
                 "arriving no longer count\"", name, (long long)nd.node_id, (long long)cl->node_id);
    else if (cl->node_id && nd.node_id != cl->node_id)
        log_info("node_reregistered", "node=%s node_id=%lld", name, (long long)nd.node_id);
    if (nd.dead_nodes || nd.taken_over)
        log_warn("nodes_taken_over", "node=%s dead_nodes=%lld messages=%lld note=\"silent past their lease: their "
                 "messages in flight are back in the queue (receivers may see these webhook-ids twice)\"", name,
                 (long long)nd.dead_nodes, (long long)nd.taken_over);
    if (nd.lead != cl->lead || !cl->node_id)
        log_info("cluster_lead", "node=%s lead=%s jobs=\"retention, slow scan, rollup, health summary\"", name,
                 nd.lead ? "yes" : "no");
    if (nd.nodes != cl->reg->nodes || !cl->node_id)
        log_info("cluster_nodes", "node=%s nodes=%d note=\"each endpoint's in-flight cap and rate limits are "
                 "shared out among the live nodes\"", name, nd.nodes);
    cl->node_id = nd.node_id;
    cl->lead = nd.lead;
    cron_set_lead(cl->cron, nd.lead);
    registry_set_nodes(cl->reg, nd.nodes);
}

/* Rows of those endpoints may be due (another node enqueued them, took
 * a dead node's over, or the poll fallback came round): look now. An
 * endpoint not known here was added by another node. */
void cluster_poke(struct cluster *cl, const int64_t *ids, size_t n, int all)
{
    size_t i;
    int synced = 0;

    if (all) {
        for (i = 0; i < cl->reg->n; i++)
            if (cl->reg->v[i]->next_due > 0)
                cl->reg->v[i]->next_due = 0;
        cluster_recheck(cl);
        return;
    }
    for (i = 0; i < n; i++) {
        struct endpoint *e = registry_by_id(cl->reg, ids[i]);
        if (e) {
            e->next_due = 0;
        } else if (!synced) {
            cluster_sync_endpoints(cl);
            synced = 1;
            if ((e = registry_by_id(cl->reg, ids[i])))
                e->next_due = 0;
        }
    }
}

struct ep_seen {
    struct cluster *cl;
    int64_t *ids;
    size_t n, cap;
    int failed;
};

static int sync_one(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    struct ep_seen *x = ctx;
    struct endpoint *e;

    if (ids_add(&x->ids, &x->n, &x->cap, id) < 0)
        return -1;
    if (!(e = registry_install(x->cl->reg, id, d, from_config))) {
        x->failed = 1;   /* keep the old definition; the next change tries again */
        return 0;
    }
    e->paused = d->paused;
    registry_sync_hold(e);   /* paused on another node: jobs here that have not started go back */
    return 0;
}

/* Another node changed endpoints (added, changed, paused, deleted):
 * the stored definitions are the truth. Transfers running keep their
 * snapshots; jobs of a changed, paused or deleted endpoint that have not
 * started come back (ep_conf.halt). */
void cluster_sync_endpoints(struct cluster *cl)
{
    struct ep_seen x = {cl, NULL, 0, 0, 0};
    size_t i;

    if (cl->st->ops->endpoints_load(cl->st, sync_one, &x) < 0) {
        log_warn("endpoint_sync_failed", "err=\"%s\" note=\"tried again at the next change or reconnect\"",
                 cl->st->errmsg);
        free(x.ids);
        return;
    }
    if (x.n)
        qsort(x.ids, x.n, sizeof *x.ids, cmp_id);
    for (i = cl->reg->n; i-- > 0;) {
        struct endpoint *e = cl->reg->v[i];
        if (!x.n || !bsearch(&e->id, x.ids, x.n, sizeof *x.ids, cmp_id)) {
            log_info("endpoint_deleted", "endpoint=%s by=\"another node\"", e->conf->def.name);
            registry_remove(cl->reg, e);
        }
    }
    if (x.failed)
        log_warn("endpoint_sync_failed", "err=\"a stored definition is unusable\"");
    free(x.ids);
}

static void job_beat(void *ctx, int64_t now)
{
    (void)now;
    cluster_beat(ctx);
}

int cluster_init(struct cluster *cl, const struct config *c, struct store *st, struct registry *reg,
                 struct cron *cron, char *err, size_t errlen)
{
    int64_t every;

    memset(cl, 0, sizeof *cl);
    cl->c = c;
    cl->st = st;
    cl->reg = reg;
    cl->cron = cron;
    cl->shared = st->ops->node_beat && st->ops->health_lock;
    reg->shared = cl->shared;
    if (!cl->shared)
        return 0;
    /* four beats per lease: one late beat is no death */
    every = c->pg_lease_ms / 4 > 250 ? c->pg_lease_ms / 4 : 250;
    if (cron_add(cron, "heartbeat", CRON_WRITER, every, job_beat, cl) < 0) {
        snprintf(err, errlen, "too many periodic jobs");
        return -1;
    }
    cron_set_lead(cron, 0);   /* until the first beat says otherwise */
    return 0;
}

void cluster_free(struct cluster *cl)
{
    free(cl->ids);
    cl->ids = NULL;
    cl->cap = 0;
}
