/* admin.c - admin requests and the config file's endpoints. */
#include "admin.h"
#include "log.h"
#include "msgsel.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(PROTO_STATUS_FAILED == MSG_BIT(MSG_FAILED) && PROTO_STATUS_DELIVERED == MSG_BIT(MSG_DELIVERED) &&
                   PROTO_STATUS_DEAD_LETTER == MSG_BIT(MSG_DEAD_LETTER),
               "the protocol's status bits are the store's");

static int store_error(struct store *st, struct req *q)
{
    req_error(q, store_error_code(st->errc), "storage error: %s", st->errmsg);
    st->ops->rollback(st);
    return -1;
}

static int begin(struct store *st, struct req *q)
{
    return st->ops->begin(st, 1) < 0 ? store_error(st, q) : 0;
}

static int commit(struct store *st, struct req *q)
{
    return st->ops->commit(st) < 0 ? store_error(st, q) : 0;
}

/* A pause or resume by hand (by: "operator", "config"): its operational
 * event, queued before the transaction that stores it (the event stands
 * or falls with it: notify_round_begin, registry_notify_flush) ... */
static void pause_event(struct registry *r, struct endpoint *e, int paused, const char *by, int64_t now)
{
    struct opsev ev;

    opsev_init(&ev, paused ? OPSEV_PAUSED : OPSEV_ENABLED, now, e->conf->def.name, "%s", by);
    opsev_fig(&ev, "consecutive_failures", e->br.consecutive_failures);
    registry_notify(r, &ev);
}

/* ... and, once committed, the endpoint's state: its jobs not yet
 * started come back untried while it is paused (registry_sync_hold). */
static void pause_apply(struct registry *r, struct endpoint *e, int paused, const char *by, int64_t now)
{
    if (e->paused != paused)
        log_info(paused ? "endpoint_paused" : "endpoint_resumed", "endpoint=%s reason=%s", e->conf->def.name, by);
    if (!paused && e->paused && e->br.failing_since) {
        /* a resumed endpoint gets a whole disable_after again: the
         * next failure must not disable it at once */
        registry_mark_health(r, e);
        e->br.failing_since = now;
    }
    e->paused = paused;
    e->next_due = 0;
    registry_sync_hold(e);
}

static int endpoint_put(struct registry *r, struct store *st, struct req *q, int64_t now)
{
    struct endpoint *e = registry_by_name(r, q->p.endpoint);
    struct ep_def d;
    char why[256];
    int64_t id;
    int created, repause, rc = -1;

    if (e && e->from_config) {
        req_error(q, PERR_CONFLICT, "endpoint '%s' is defined in the config file; edit it there", q->p.endpoint);
        return 0;
    }
    if (endpoint_def_from_json(q->p.body, &d, why, sizeof why) < 0) {
        req_error(q, PERR_BAD_REQUEST, "%s", why);
        return 0;
    }
    /* "paused" given for an existing endpoint pauses or resumes it as
     * hookd pause/resume would; left out, its state stays */
    repause = e && d.paused_given && e->paused != d.paused;
    if (r->notify)
        notify_round_begin(r->notify);
    if (repause)
        pause_event(r, e, d.paused, "operator", now);
    if (begin(st, q) < 0)
        goto undo;
    if (st->ops->endpoint_put(st, &d, 0, now, &id, &created) < 0 || registry_notify_flush(r, st, now) < 0) {
        store_error(st, q);
        goto undo;
    }
    if (commit(st, q) < 0)
        goto undo;
    if (r->notify)
        notify_committed(r->notify);
    rc = 0;
    if (!(e = registry_install(r, id, &d, 0)))
        log_error("endpoint_install", "endpoint=%s err=\"out of memory\" note=\"stored; delivered after a restart\"",
                  d.name);
    else if (repause)
        pause_apply(r, e, d.paused, "operator", now);
    log_info(created ? "endpoint_added" : "endpoint_updated", "endpoint=%s source=api", d.name);
    buf_printf(&q->reply, "{\"ok\":true,\"endpoint\":{\"id\":%lld,\"name\":", (long long)id);
    buf_json_str(&q->reply, d.name);
    buf_printf(&q->reply, "},\"created\":%s}\n", created ? "true" : "false");
    goto out;
undo:
    if (r->notify)
        notify_undo(r->notify);
out:
    ep_def_free(&d);
    return rc;
}

#define BY_FILTER_LIMIT 1000   /* rows one requeue, purge or erase by filter touches unless told */

/* where the next request goes on (after = next); null: nothing left */
static void put_next(struct buf *b, int64_t next)
{
    if (next)
        buf_printf(b, "%lld", (long long)next);
    else
        buf_puts(b, "null");
}

struct ids {
    int64_t *v;
    size_t n, cap;
};

static int collect(void *ctx, const struct store_message *m)
{
    struct ids *x = ctx;

    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        int64_t *v = realloc(x->v, cap * sizeof *v);
        if (!v)
            return -1;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = m->id;
    return 0;
}

/* requeue, purge and erase by a selector (msgsel.h): the rows it finds,
 * at most its limit, then each by its id, in one transaction. The walk
 * is bounded (MSGSEL_SCAN_MAX rows read), so the writer is held for a
 * bounded time; "more" says the same request would find more. */
static int by_filter(struct registry *r, struct store *st, struct req *q, struct endpoint *e, int64_t now)
{
    static const char *const done_name[] = {[OP_REQUEUE] = "requeued", [OP_PURGE] = "purged", [OP_ERASE] = "erased"};
    struct msgsel *s = q->p.sel;
    struct ids ids = {0};
    struct msgsel_walk w;
    int64_t limit = s->limit ? s->limit : BY_FILTER_LIMIT, done = 0, n = 0, gone = 0, g = 0;
    unsigned take = 0;
    size_t i;
    int rc = -1;

    if (q->p.op == OP_REQUEUE) {
        /* by id or event id: whatever it became; by endpoint, only its
         * dead letters unless asked for more */
        take = q->p.statuses ? q->p.statuses
               : s->id || s->event_id
                   ? MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)
                   : MSG_BIT(MSG_DEAD_LETTER);
        s->skip_erased = 1;   /* nothing left to send */
    } else if (q->p.op == OP_PURGE) {
        take = MSG_BIT(MSG_DEAD_LETTER);
    } else {
        s->skip_erased = 1;
    }
    if (take)
        s->statuses = s->statuses ? s->statuses & take : take;
    /* the writer's walk is shorter: enqueues wait for it */
    s->scan_max = MSGSEL_SCAN_WRITER;
    if (begin(st, q) < 0)
        return -1;
    if (msgsel_walk(st, s, limit, collect, &ids, &w) < 0) {
        store_error(st, q);
        goto out;
    }
    for (i = 0; !s->dry_run && i < ids.n; i++) {
        struct store_filter f = {ids.v[i], 0, 0, s->statuses};
        if ((q->p.op == OP_REQUEUE ? st->ops->requeue(st, &f, now, &n, &g)
             : q->p.op == OP_PURGE ? st->ops->purge(st, &f, &n)
                                   : st->ops->erase(st, ids.v[i], now, &n)) < 0) {
            store_error(st, q);
            goto out;
        }
        done += n;
        gone += g;   /* rows of a deleted endpoint: requeue leaves them */
        g = 0;
    }
    if (s->dry_run)
        st->ops->rollback(st);
    else if (commit(st, q) < 0)
        goto out;
    rc = 0;
    if (s->dry_run) {
        buf_printf(&q->reply, "{\"ok\":true,\"dry_run\":true,\"matched\":%lld,\"more\":%s,\"next\":",
                   (long long)ids.n, w.next ? "true" : "false");
        put_next(&q->reply, w.next);
        buf_printf(&q->reply, ",\"scanned\":%lld}\n", (long long)w.scanned);
        goto out;
    }
    if (q->p.op == OP_REQUEUE)
        for (i = 0; i < r->n; i++)
            if (!e || e == r->v[i])
                r->v[i]->next_due = 0;
    if (q->p.op == OP_ERASE && done && st->ops->checkpoint(st, 1) < 0)
        /* the bytes leave the log at the next checkpoint instead */
        log_warn("checkpoint_failed", "when=erase err=\"%s\"", st->errmsg);
    log_info(q->p.op == OP_REQUEUE ? "requeued" : q->p.op == OP_PURGE ? "purged" : "erased",
             "count=%lld by=filter%s%s", (long long)done, e ? " endpoint=" : "", e ? e->conf->def.name : "");
    buf_printf(&q->reply, "{\"ok\":true,\"%s\":%lld,", done_name[q->p.op], (long long)done);
    if (gone)
        buf_printf(&q->reply, "\"gone\":%lld,", (long long)gone);
    buf_printf(&q->reply, "\"more\":%s,\"next\":", w.next ? "true" : "false");
    put_next(&q->reply, w.next);
    buf_puts(&q->reply, "}\n");
out:
    free(ids.v);
    return rc;
}

static int redrive(struct registry *r, struct store *st, struct req *q, struct endpoint *e, int64_t now)
{
    struct store_filter f = {q->p.id, e ? e->id : 0, q->p.since_ms, q->p.statuses};
    int64_t n = 0, gone = 0;
    size_t i;

    if (q->p.sel && q->p.sel->given)
        return by_filter(r, st, q, e, now);
    if (q->p.op == OP_REQUEUE && !f.statuses)
        /* a message named by id goes again whatever it became; by
         * endpoint, only its dead letters unless asked for more */
        f.statuses = f.id ? MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)
                          : MSG_BIT(MSG_DEAD_LETTER);
    if (begin(st, q) < 0)
        return -1;
    if ((q->p.op == OP_PURGE ? st->ops->purge(st, &f, &n) : st->ops->requeue(st, &f, now, &n, &gone)) < 0 ||
        st->ops->commit(st) < 0)
        return store_error(st, q);
    if (q->p.op == OP_PURGE) {
        log_info("purged", "count=%lld%s%s", (long long)n, e ? " endpoint=" : "", e ? e->conf->def.name : "");
        buf_printf(&q->reply, "{\"ok\":true,\"purged\":%lld}\n", (long long)n);
        return 0;
    }
    for (i = 0; i < r->n; i++)
        if (!e || e == r->v[i])
            r->v[i]->next_due = 0;
    if (q->p.id && n == 0) {
        /* requeue leaves rows of a deleted endpoint alone (store.h):
         * pending, they would wait for good */
        if (gone)
            req_error(q, PERR_UNKNOWN_ENDPOINT, "message %lld belongs to a deleted endpoint: nothing can deliver "
                      "it (hookd purge removes dead letters)", (long long)q->p.id);
        else
            req_error(q, PERR_NOT_FOUND, "message %lld does not exist or is not in a status requeue takes",
                      (long long)q->p.id);
        return 0;
    }
    log_info("requeued", "count=%lld%s%s", (long long)n, e ? " endpoint=" : "", e ? e->conf->def.name : "");
    buf_printf(&q->reply, "{\"ok\":true,\"requeued\":%lld}\n", (long long)n);
    return 0;
}

int admin_handle(struct registry *r, struct store *st, struct req *q, int64_t now)
{
    struct endpoint *e = NULL;
    int64_t n = 0;

    buf_reset(&q->reply);
    if (q->p.op == OP_ENDPOINT_PUT)
        return endpoint_put(r, st, q, now);
    if (q->p.endpoint && !(e = registry_by_name(r, q->p.endpoint))) {
        req_error(q, PERR_UNKNOWN_ENDPOINT, "no endpoint named '%s'", q->p.endpoint);
        return 0;
    }
    switch (q->p.op) {
    case OP_ENDPOINT_DELETE:
        if (e->from_config && e->in_file) {
            /* (one missing from this node's file is another node's, or
             * left over: deleting it is the operator's decision) */
            req_error(q, PERR_CONFLICT, "endpoint '%s' is defined in the config file; remove it there", q->p.endpoint);
            return 0;
        }
        /* its rows become dead letters; results of its deliveries still
         * in flight find them so and change nothing (store.h: settle) */
        if (begin(st, q) < 0)
            return -1;
        if (st->ops->endpoint_delete(st, e->id, now, &n) < 0 || st->ops->commit(st) < 0)
            return store_error(st, q);
        log_info("endpoint_deleted", "endpoint=%s dead_lettered=%lld", e->conf->def.name, (long long)n);
        registry_remove(r, e);
        buf_printf(&q->reply, "{\"ok\":true,\"dead_lettered\":%lld}\n", (long long)n);
        return 0;
    case OP_REQUEUE:
    case OP_PURGE:
        return redrive(r, st, q, e, now);
    case OP_ERASE:
        return by_filter(r, st, q, e, now);
    case OP_PAUSE:
    case OP_RESUME: {
        int paused = q->p.op == OP_PAUSE;
        if (r->notify)
            notify_round_begin(r->notify);   /* its event stands or falls with it */
        if (e->paused != paused)
            pause_event(r, e, paused, "operator", now);
        if (begin(st, q) < 0)
            goto undo;
        if (st->ops->endpoint_pause(st, e->id, paused, "operator", now) < 0 ||
            registry_notify_flush(r, st, now) < 0 || st->ops->commit(st) < 0) {
            store_error(st, q);
            goto undo;
        }
        if (r->notify)
            notify_committed(r->notify);
        pause_apply(r, e, paused, "operator", now);
        buf_puts(&q->reply, "{\"ok\":true,\"endpoint\":");
        buf_json_str(&q->reply, e->conf->def.name);
        buf_printf(&q->reply, ",\"paused\":%s}\n", paused ? "true" : "false");
        return 0;
    }
    default:
        req_error(q, PERR_INTERNAL, "op %s is not an admin op", proto_op_name(q->p.op));
        return 0;
    }
undo:
    /* the request failed: its event with it (the round tag marks it) */
    if (r->notify)
        notify_undo(r->notify);
    return -1;
}

int admin_sync_config(struct registry *r, struct store *st, const struct ep_def *defs, size_t n, int prune_shared,
                      int64_t now)
{
    int64_t *ids = n ? calloc(n, sizeof *ids) : NULL;
    int *created = n ? calloc(n, sizeof *created) : NULL, *flip = n ? calloc(n, sizeof *flip) : NULL;
    struct endpoint **gone = NULL;
    size_t i, j, ngone = 0;
    int rc = -1;
    /* Several nodes share the store: an endpoint missing from this file
     * may be another node's, or this file may be the older one. Removing
     * it for the whole cluster (its queue dead-lettered, rows in flight on
     * other nodes included) is an operator's decision: prune_endpoints,
     * or hookd endpoint-delete. One process owning its file decides
     * alone: what left its file goes. */
    int shared = st->ops->node_beat && st->ops->health_lock;
    int prune = !shared || prune_shared;

    if (n && (!ids || !created || !flip)) {
        store_fail(st, STORE_E_NOMEM, "reload: out of memory");
        goto out;
    }
    if (r->notify)
        notify_round_begin(r->notify);
    if (st->ops->begin(st, 1) < 0)
        goto out;
    for (i = 0; i < n; i++) {
        /* an explicit paused applies to an existing endpoint at every
         * start and reload; left out, its state (hookd pause/resume, a
         * 410, disable_after) stays */
        struct endpoint *e = registry_by_name(r, defs[i].name);
        if (e && defs[i].paused_given && e->paused != defs[i].paused) {
            flip[i] = 1;
            pause_event(r, e, defs[i].paused, "config", now);
        }
        if (st->ops->endpoint_put(st, &defs[i], 1, now, &ids[i], &created[i]) < 0)
            goto out;
    }
    if (r->n && !(gone = calloc(r->n, sizeof *gone))) {
        store_fail(st, STORE_E_NOMEM, "reload: out of memory");
        goto out;
    }
    for (j = 0; j < r->n; j++) {
        struct endpoint *e = r->v[j];
        int keep = 0;
        int64_t dead = 0;
        if (!e->from_config)
            continue;
        for (i = 0; i < n && !keep; i++)
            keep = strcmp(defs[i].name, e->conf->def.name) == 0;
        if (keep)
            continue;
        if (!prune) {
            log_info("endpoint_kept", "endpoint=%s source=config note=\"not in this node's file; kept for the "
                     "cluster ([postgres] prune_endpoints = yes or hookd endpoint-delete removes it)\"",
                     e->conf->def.name);
            continue;
        }
        if (st->ops->endpoint_delete(st, e->id, now, &dead) < 0)
            goto out;
        log_warn("endpoint_removed", "endpoint=%s source=config dead_lettered=%lld", e->conf->def.name,
                 (long long)dead);
        gone[ngone++] = e;
    }
    if (registry_notify_flush(r, st, now) < 0 || st->ops->commit(st) < 0)
        goto out;
    if (r->notify)
        notify_committed(r->notify);
    /* the registry changes once nothing can fail any more */
    for (i = 0; i < ngone; i++)
        registry_remove(r, gone[i]);
    for (j = 0; j < r->n; j++)
        r->v[j]->in_file = 0;
    for (i = 0; i < n; i++) {
        struct endpoint *e = registry_install(r, ids[i], &defs[i], 1);
        if (!e) {
            log_error("endpoint_install", "endpoint=%s err=\"out of memory or bad secret\"", defs[i].name);
            continue;
        }
        e->in_file = 1;
        if (created[i])
            log_info("endpoint_added", "endpoint=%s source=config", defs[i].name);
        if (flip[i])
            pause_apply(r, e, defs[i].paused, "config", now);
    }
    rc = 0;
out:
    if (rc < 0) {
        st->ops->rollback(st);
        if (r->notify)
            notify_undo(r->notify);
    }
    free(ids);
    free(created);
    free(flip);
    free(gone);
    return rc;
}
