/* intake.c - enqueue requests into queue rows. */
#include "intake.h"
#include "counters.h"
#include "dispatch.h"
#include "filter.h"
#include "schedule.h"
#include "tpl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The rows of one batch, and which request each belongs to. */
struct rows {
    struct store_enqueue *v;
    struct endpoint **ep;
    size_t n, cap;
    struct buf keys;    /* the ordering keys, NUL separated (offsets in v until stored) */
};

/* The row's ordering key, expanded from the payload (values as they
 * are): a message without the key's fields is not ordered. Returns the
 * key's offset in rw->keys + 1, 0 for none, -1 out of memory. */
static int64_t ordering_key(struct rows *rw, const struct ep_conf *c, const struct req *q)
{
    struct tpl_vars v = {0};
    struct buf k = {0};
    char why[160];
    int64_t off = -1;
    int r;

    v.payload = q->p.payload;
    v.payload_len = q->p.payload_len;
    v.event_id = q->p.event_id;
    v.event_type = q->p.event_type;
    v.endpoint = c->def.name;
    v.missing_fail = 1;
    r = tpl_expand(&c->order_tpl, &v, &k, NULL, why, sizeof why);
    if (r == TPL_MISSING || r == TPL_BAD_VALUE || r == TPL_UNSAFE || (r == TPL_OK && k.len == 0)) {
        off = 0;
    } else if (r == TPL_OK) {
        off = (int64_t)rw->keys.len + 1;
        if (buf_append(&rw->keys, k.p, k.len + 1) < 0)
            off = -1;
    }
    buf_free(&k);
    return off;
}

static int rows_add(struct rows *rw, struct endpoint *e, const struct req *q, int claim, int64_t due)
{
    int64_t key = 0;

    if (e->conf->order_tpl.nmacros && (key = ordering_key(rw, e->conf, q)) < 0)
        return -1;
    if (rw->n == rw->cap) {
        size_t nc = rw->cap ? rw->cap * 2 : 256;
        struct store_enqueue *nv = realloc(rw->v, nc * sizeof *nv);
        struct endpoint **ne;
        if (!nv)
            return -1;
        rw->v = nv;
        if (!(ne = realloc(rw->ep, nc * sizeof *ne)))
            return -1;
        rw->ep = ne;
        rw->cap = nc;
    }
    memset(&rw->v[rw->n], 0, sizeof rw->v[rw->n]);
    /* an offset until the buffer stops moving (intake_batch) */
    rw->v[rw->n].ordering_key = (const char *)(intptr_t)key;
    rw->v[rw->n].endpoint_id = e->id;
    rw->v[rw->n].event_id = q->p.event_id;
    rw->v[rw->n].event_type = q->p.event_type;
    rw->v[rw->n].payload = q->p.payload;
    rw->v[rw->n].payload_len = q->p.payload_len;
    rw->v[rw->n].max_attempts = (int)e->conf->eff.max_attempts;
    rw->v[rw->n].claim = claim;
    rw->v[rw->n].due_at = due;
    /* a time the client named stays on the wall clock when it steps;
     * a delay, the request's or the endpoint's, is a wait and moves */
    rw->v[rw->n].due_fixed = due && q->p.deliver_at_ms > 0;
    rw->ep[rw->n] = e;
    rw->n++;
    return 0;
}

/* One row for e: claimed at once when e can take it, else queued (and
 * the dispatcher told to look). */
static int add_row(struct registry *r, struct rows *rw, struct endpoint *e, const struct req *q, int64_t now,
                   int64_t mono)
{
    int64_t due = 0, at;
    char why[120];
    int claim;

    /* a delayed row waits as a retry does, for its next_attempt_at (the
     * request's own time was checked against the bound before; an
     * endpoint's delay is within it) */
    if (sched_due(now, q->p.delay_ms, q->p.deliver_at_ms, e->conf->delay_ms, &due, why, sizeof why) < 0)
        due = 0;
    at = due ? due : now;
    /* an ordered endpoint's rows wait for the claim, which knows what
     * is still undelivered before them */
    claim = !due && !e->conf->order_tpl.nmacros && dispatch_admit_one(r, e, now, mono);
    if (!claim && e->next_due > at) {
        registry_touch(r, e);
        e->next_due = at;
    }
    if (rows_add(rw, e, q, claim, due) == 0)
        return 0;
    if (claim)
        dispatch_unadmit_one(r, e);
    return -1;
}

/* Does e's filter keep this message out? 1 yes (counted), 0 no, -1 out
 * of memory. An endpoint without a filter costs this one test (measured
 * against a build without it: tests/bench/README.md, "filter hook"). */
static int filtered_out(struct endpoint *e, const struct req *q)
{
#ifdef HOOKD_BENCH_NO_FILTER
    /* bench.mk's hookd-nofilter: the baseline with no hook at all */
    (void)e;
    (void)q;
    return 0;
#else
    int m;

    if (!e->conf->filter)
        return 0;
    if ((m = filter_match(e->conf->filter, q->p.payload, q->p.payload_len)) < 0)
        return -1;
    if (m)
        return 0;
    counters_filtered(e->id);
    return 1;
#endif
}

/* The rows of one request: 1 answered at once (error reply, or a direct
 * enqueue its endpoint's filter kept out), 0 rows added (*nfilt: how
 * many subscribers' filters kept it out), -1 out of memory. */
static int request_rows(struct registry *r, struct req *q, struct rows *rw, int64_t now, int64_t mono,
                        size_t *nfilt)
{
    size_t i, hits = 0;
    int64_t due;
    char why[120];
    int f;

    if (!q->p.event_id) {
        char gen[64];
        util_random_id("evt_", gen, sizeof gen);
        if (!(q->p.event_id = strdup(gen)))
            return -1;
    }
    if (sched_due(now, q->p.delay_ms, q->p.deliver_at_ms, 0, &due, why, sizeof why) < 0) {
        req_error(q, PERR_BAD_REQUEST, "%s", why);
        return 1;
    }
    if (q->p.endpoint) {
        struct endpoint *e = registry_by_name(r, q->p.endpoint);
        if (!e) {
            req_error(q, PERR_UNKNOWN_ENDPOINT, "no endpoint named '%s'", q->p.endpoint);
            return 1;
        }
        if ((f = filtered_out(e, q)) != 0) {
            if (f < 0)
                return -1;
            buf_reset(&q->reply);
            buf_puts(&q->reply, "{\"ok\":true,\"filtered\":true,\"event_id\":");
            buf_json_str(&q->reply, q->p.event_id);
            buf_puts(&q->reply, "}\n");
            if (q->reply.failed)
                req_error(q, PERR_INTERNAL, "out of memory");
            return 1;
        }
        return add_row(r, rw, e, q, now, mono);
    }
    /* the ops endpoint hears hookd, not the applications' fan-out
     * (an application may still address it by name) */
    for (i = 0; i < r->n; i++)
        if (!r->v[i]->is_ops && ep_def_wants(&r->v[i]->conf->def, q->p.event_type)) {
            if ((f = filtered_out(r->v[i], q)) != 0) {
                if (f < 0)
                    return -1;
                (*nfilt)++;
                continue;
            }
            if (add_row(r, rw, r->v[i], q, now, mono) < 0)
                return -1;
            hits++;
        }
    if (!hits && !*nfilt) {
        req_error(q, PERR_NO_SUBSCRIBERS, "no endpoint subscribes to event type '%s'", q->p.event_type);
        return 1;
    }
    return 0;
}

/* A decimal integer: the reply to every enqueue carries one, and
 * vsnprintf costs ten times as much. */
static void put_int(struct buf *b, int64_t v)
{
    char d[24];
    size_t i = sizeof d;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    do {
        d[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        d[--i] = '-';
    buf_append(b, d + i, sizeof d - i);
}

static void reply(struct req *q, const struct store_enqueue *v, struct endpoint *const *ep, size_t n, size_t nfilt)
{
    struct buf *b = &q->reply;
    size_t i;

    buf_reset(b);
    if (q->p.endpoint) {
        buf_puts(b, "{\"ok\":true,\"id\":");
        put_int(b, v[0].id);
        buf_puts(b, ",\"event_id\":");
        buf_json_str(b, q->p.event_id);
        buf_puts(b, v[0].duplicate ? ",\"duplicate\":true" : ",\"duplicate\":false");
        if (v[0].due_at && !v[0].duplicate)
            buf_printf(b, ",\"deliver_at\":%lld", (long long)v[0].due_at);
        buf_puts(b, "}\n");
    } else {
        buf_puts(b, "{\"ok\":true,\"event_id\":");
        buf_json_str(b, q->p.event_id);
        buf_puts(b, ",\"deliveries\":[");
        for (i = 0; i < n; i++) {
            buf_printf(b, "%s{\"endpoint\":", i ? "," : "");
            buf_json_str(b, ep[i]->conf->def.name);
            buf_printf(b, ",\"id\":%lld,\"duplicate\":%s}", (long long)v[i].id, v[i].duplicate ? "true" : "false");
        }
        buf_puts(b, "]");
        if (nfilt)
            buf_printf(b, ",\"filtered\":%zu", nfilt);
        buf_puts(b, "}\n");
    }
    if (b->failed)
        req_error(q, PERR_INTERNAL, "out of memory");
}

/* The delivery jobs of the rows stored claimed; a duplicate stored
 * nothing and gives its place back. */
static int claimed_jobs(struct registry *r, struct rows *rw, struct djob **jobs, int64_t now)
{
    size_t k;

    while (*jobs)
        jobs = &(*jobs)->next;
    for (k = 0; k < rw->n; k++) {
        struct store_enqueue *v = &rw->v[k];
        struct store_claimed row;
        struct djob *j;
        if (!v->claim)
            continue;
        if (v->duplicate) {
            dispatch_unadmit_one(r, rw->ep[k]);
            continue;
        }
        row.id = v->id;
        row.endpoint_id = v->endpoint_id;
        row.event_id = v->event_id;
        row.event_type = v->event_type;
        row.payload = v->payload;
        row.payload_len = v->payload_len;
        row.attempt_count = 0;
        row.max_attempts = v->max_attempts;
        row.created_at = now;
        if (!(j = dispatch_job(rw->ep[k], &row, 0)))
            return -1;
        *jobs = j;
        jobs = &j->next;
    }
    return 0;
}

int intake_batch(struct registry *r, struct store *st, struct req **batch, struct req **answered,
                 struct djob **jobs, int64_t now, int64_t now_mono)
{
    struct rows rw = {0};
    struct req **pp = batch, *q;
    size_t *first = NULL, *nfilt = NULL, k, nreq = 0;
    int rc = -1;

    for (q = *batch; q; q = q->next)
        nreq++;
    if (nreq && (!(first = malloc((nreq + 1) * sizeof *first)) || !(nfilt = calloc(nreq, sizeof *nfilt))))
        goto oom;
    k = 0;
    while ((q = *pp)) {
        int one;
        first[k] = rw.n;
        nfilt[k] = 0;
        one = request_rows(r, q, &rw, now, now_mono, &nfilt[k]);
        if (one < 0)
            goto oom;
        if (one > 0) {  /* answered: out of the batch */
            rw.n = first[k];
            *pp = q->next;
            q->next = *answered;
            *answered = q;
            continue;
        }
        pp = &q->next;
        k++;
    }
    first[k] = rw.n;
    for (size_t i = 0; i < rw.n; i++) {
        intptr_t off = (intptr_t)rw.v[i].ordering_key;
        rw.v[i].ordering_key = off ? rw.keys.p + off - 1 : NULL;
    }
    if (rw.n && st->ops->enqueue(st, rw.v, rw.n, now) < 0)
        goto out;
    if (claimed_jobs(r, &rw, jobs, now) < 0)
        goto oom;
    for (q = *batch, k = 0; q; q = q->next, k++)
        reply(q, rw.v + first[k], rw.ep + first[k], first[k + 1] - first[k], nfilt[k]);
    rc = 0;
    goto out;
oom:
    store_fail(st, STORE_E_NOMEM, "enqueue: out of memory");
out:
    free(rw.v);
    free(rw.ep);
    buf_free(&rw.keys);
    free(first);
    free(nfilt);
    return rc;
}
