/* dispatch.c - claims, fair across endpoints. */
#include "dispatch.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* shared, failing, every request the threshold allows in flight on other
 * nodes: look again after this long */
#define DISPATCH_FAILING_RECHECK_MS 250

struct claim_ctx {
    struct endpoint *e;
    int probe;
    int64_t active;   /* how many of the endpoint's rows go as requests now; */
    int64_t n;        /* the ones after those are claimed ahead */
    struct djob **tail;
};

/* djob (deliver.h) is made here; whoever holds it last frees it */
void djob_free(struct djob *j)
{
    if (!j)
        return;
    ep_conf_unref(j->ep);
    free(j->event_id);
    free(j->event_type);
    free(j->payload);
    free(j->sent_url);
    free(j->response);
    free(j);
}

struct djob *dispatch_job(struct endpoint *e, const struct store_claimed *row, int probe)
{
    struct djob *j = calloc(1, sizeof *j);

    if (!j)
        return NULL;
    j->id = row->id;
    j->ep = ep_conf_ref(e->conf);
    j->event_id = strdup(row->event_id);
    j->payload = malloc(row->payload_len + 1);
    if (!j->event_id || !j->payload ||
        (!e->conf->plain && row->event_type && !(j->event_type = strdup(row->event_type)))) {
        djob_free(j);
        return NULL;
    }
    memcpy(j->payload, row->payload, row->payload_len);
    j->payload[row->payload_len] = '\0';
    j->payload_len = row->payload_len;
    j->attempt_count = row->attempt_count;
    j->max_attempts = row->max_attempts;
    j->created_at = row->created_at;
    j->probe = probe;
    j->retry_after_ms = -1;
    j->outcome = -1;
    j->claimed_mono_us = util_mono_us();
    return j;
}

static int claim_row(void *arg, const struct store_claimed *row)
{
    struct claim_ctx *x = arg;
    struct djob *j = dispatch_job(x->e, row, x->probe);

    if (!j)
        return -1;
    x->probe = 0;
    j->ahead = x->n++ >= x->active;
    *x->tail = j;
    x->tail = &j->next;
    return 0;
}

/* How many jobs may be claimed ahead for e when `room` more requests to
 * it are being claimed. Only where no request needs the writer's
 * judgement before the next one leaves: no probe (the breaker must be
 * closed with no failure counted), no rate limit (its tokens are taken
 * at the claim), no ordering key (a job given back would let a later one
 * of its key pass), one node; and at most one beside each request, with
 * everything claimed under half of max_in_flight_total, so the rest of
 * the cap stays for other endpoints' requests. */
static int64_t ahead_room(const struct registry *r, const struct endpoint *e, int64_t room)
{
    int64_t ahead = registry_requests(e) + room - e->ahead, total = r->c->max_in_flight_total / 2 - r->in_flight - room;

    if (!r->c->claim_ahead || r->shared || e->br.state != BREAKER_CLOSED || e->br.consecutive_failures > 0 ||
        e->rate.n > 0 || e->conf->order_tpl.nmacros > 0)
        return 0;
    if (ahead > total)
        ahead = total;
    return ahead > 0 ? ahead : 0;
}

int dispatch_admit_one(struct registry *r, struct endpoint *e, int64_t now, int64_t now_mono)
{
    /* shared: another node may have opened the breaker; the round's claim
     * asks the database, a row stored in flight here would not */
    if (r->shared || e->paused || e->next_due <= now || e->hold_until > now || e->br.state != BREAKER_CLOSED ||
        limiter_room(&e->lim, registry_requests(e)) == 0 || r->in_flight >= r->c->max_in_flight_total)
        return 0;
    registry_touch(r, e);
    if (e->rate.n > 0 && !tlimit_take(&e->rate, now_mono))
        return 0;
    e->hold_until = 0;   /* over */
    e->in_flight++;
    r->in_flight++;
    return 1;
}

void dispatch_unadmit_one(struct registry *r, struct endpoint *e)
{
    registry_touch(r, e);
    if (e->rate.n > 0)
        tlimit_refund(&e->rate, 1);
    e->in_flight--;
    r->in_flight--;
}

/* How many of e's rows may go now (0: none), taking breaker admission and
 * rate-limit tokens for them; *active of them as requests, the rest
 * ahead. *probe: the one row is the breaker's probe. */
static int64_t admit(struct registry *r, struct endpoint *e, int64_t now, int64_t now_mono, int64_t budget, int *probe,
                     int64_t *active)
{
    struct breaker_transition t;
    enum breaker_admit adm;
    int64_t retry_at, limit, room, tokens = 0;

    *probe = 0;
    *active = 0;
    if (e->paused || e->next_due > now || e->hold_until > now)
        return 0;
    if (e->hold_until) {   /* a 429's hold is over: jobs ahead may start again */
        registry_touch(r, e);
        e->hold_until = 0;
    }
    /* shared: a breaker that is open or failing is judged only on its
     * health row read under lock this round (the cluster's count) */
    if (!registry_health_ok(r, e) &&
        (e->stale || e->br.state != BREAKER_CLOSED || e->br.consecutive_failures > 0))
        return 0;
    room = limiter_room(&e->lim, registry_requests(e));
    limit = room + ahead_room(r, e, room);
    if (limit <= 0)
        return 0;
    if (limit > budget)
        limit = budget;
    registry_touch(r, e);
    adm = breaker_admit(&e->br, now, &retry_at, &t);
    if (t.from != t.to) {
        registry_log_transition(r, e, &t, now);
        registry_mark_health(r, e);
    }
    if (adm == BREAKER_DENY)
        return 0;
    if (adm == BREAKER_ADMIT && registry_failing_room(r, e) < limit) {
        /* shared and failing: no more requests than could fail before
         * the threshold, over every node; when the others hold them all,
         * ask again shortly (their results do not wake this node) */
        limit = registry_failing_room(r, e);
        if (limit == 0) {
            e->next_due = now + DISPATCH_FAILING_RECHECK_MS;
            return 0;
        }
    }
    if (adm == BREAKER_ADMIT_PROBE) {
        limit = 1;
        *probe = 1;
        registry_mark_health(r, e);   /* shared: the probe is out, on this node */
    }
    if (e->rate.n > 0) {
        while (tokens < limit && tlimit_take(&e->rate, now_mono))
            tokens++;
        limit = tokens;
    }
    if (limit == 0 && *probe) {
        breaker_probe_abandoned(&e->br);
        *probe = 0;
    }
    *active = room < limit ? room : limit;
    return limit;
}

/* After an endpoint's claim: what it took counts, unused tokens go back,
 * a probe that found nothing is abandoned, and when it got fewer than
 * its limit its next due time is the database's. */
static void claimed(struct registry *r, struct endpoint *e, int64_t limit, int64_t active, int n, int probe_left,
                    int64_t next_due)
{
    if (e->rate.n > 0 && n < limit)
        tlimit_refund(&e->rate, (int)(limit - n));  /* give back what was not used */
    if (probe_left) {  /* nothing was due after all */
        breaker_probe_abandoned(&e->br);
        registry_mark_health(r, e);   /* shared: the probe slot is free again */
    }
    e->in_flight += n;
    r->in_flight += n;
    if (n > active)
        e->ahead += (int)(n - active);
    if (n < limit)
        e->next_due = next_due;
}

struct batch {
    struct claim_ctx *x;
    struct batch_ep {
        struct endpoint *e;
        int probe;
        int64_t active, n;
    } *ep;                        /* beside w[k]: its endpoint, its probe, its split */
};

static int batch_row(void *arg, size_t k, const struct store_claimed *row)
{
    struct batch *b = arg;
    int rc;

    b->x->e = b->ep[k].e;
    b->x->probe = b->ep[k].probe;
    b->x->active = b->ep[k].active;
    b->x->n = b->ep[k].n;
    rc = claim_row(b->x, row);
    b->ep[k].probe = b->x->probe;
    b->ep[k].n = b->x->n;
    return rc;
}

/* A backend with claim_many (PostgreSQL: a round trip per statement):
 * every admitted endpoint's claim in one call. Each endpoint's limit
 * is reserved from the budget when it is admitted. The arrays grow with
 * the endpoints admitted, not with all of them (10,000 endpoints with
 * a few due must not cost a large allocation per round). */
static int claim_batched(struct registry *r, struct store *st, int64_t now, int64_t now_mono, int64_t budget,
                         struct claim_ctx *x, size_t start)
{
    struct store_claim_want *w = NULL;
    struct batch b = {x, NULL};
    size_t k, m = 0, cap = 0;
    int rc = -1;

    for (k = 0; k < r->n && budget > 0; k++) {
        struct endpoint *e = r->v[(start + k) % r->n];
        int probe;
        int64_t active, limit = admit(r, e, now, now_mono, budget, &probe, &active);
        if (limit <= 0)
            continue;
        if (m == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct store_claim_want *nw = realloc(w, nc * sizeof *nw);
            struct batch_ep *ne = nw ? realloc(b.ep, nc * sizeof *ne) : NULL;
            if (nw)
                w = nw;
            if (!ne) {   /* the caller rolls the round back, admissions too */
                store_fail(st, STORE_E_NOMEM, "claim: out of memory");
                goto out;
            }
            b.ep = ne;
            cap = nc;
        }
        w[m] = (struct store_claim_want){.endpoint_id = e->id, .limit = (int)limit,
                                         .ordered = e->conf->order_tpl.nmacros > 0,
                                         .checked = registry_health_ok(r, e), .next_due = INT64_MAX};
        b.ep[m++] = (struct batch_ep){e, probe, active, 0};
        budget -= limit;
    }
    if (m > 0 && st->ops->claim_many(st, now, w, m, batch_row, &b) < 0)
        goto out;
    for (k = 0; k < m; k++) {
        claimed(r, b.ep[k].e, w[k].limit, b.ep[k].active, w[k].n, b.ep[k].probe, w[k].next_due);
        if (w[k].blocked) {   /* another node opened its breaker or paused it */
            b.ep[k].e->stale = 1;
            b.ep[k].e->next_due = 0;
        }
    }
    rc = 0;
out:
    free(w);
    free(b.ep);
    return rc;
}

int dispatch_claim(struct registry *r, struct store *st, int64_t now, int64_t now_mono, int64_t budget,
                   struct djob **out)
{
    struct claim_ctx x;
    size_t k, start = r->rr;

    /* the global cap: jobs hold payloads and transfers hold buffers */
    if (budget > r->c->max_in_flight_total - r->in_flight)
        budget = r->c->max_in_flight_total - r->in_flight;
    while (*out)
        out = &(*out)->next;
    x.tail = out;
    if (st->ops->claim_many && r->n > 0) {
        if (claim_batched(r, st, now, now_mono, budget, &x, start) < 0)
            return -1;
        r->rr = (start + 1) % r->n;
        return 0;
    }
    for (k = 0; k < r->n && budget > 0; k++) {
        struct endpoint *e = r->v[(start + k) % r->n];
        int64_t limit = admit(r, e, now, now_mono, budget, &x.probe, &x.active);
        int n, ordered = e->conf->order_tpl.nmacros > 0;

        if (limit <= 0)
            continue;
        x.e = e;
        x.n = 0;
        int64_t due = e->next_due;
        if (st->ops->claim(st, e->id, now, (int)limit, ordered, claim_row, &x, &n) < 0 ||
            (n < limit && st->ops->next_due(st, e->id, ordered, &due) < 0))
            return -1;
        claimed(r, e, limit, x.active, n, x.probe, due);
        budget -= n;
    }
    if (r->n)
        r->rr = (start + 1) % r->n;
    return 0;
}

int64_t dispatch_next_wake(const struct registry *r, int64_t now, int64_t now_mono)
{
    int64_t wake = INT64_MAX;
    size_t i;

    if (r->in_flight >= r->c->max_in_flight_total)
        return INT64_MAX;   /* a result will wake us */
    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        int64_t t;
        if (e->paused || e->next_due == INT64_MAX)
            continue;
        if (limiter_room(&e->lim, registry_requests(e)) == 0 && ahead_room(r, e, 0) == 0)
            continue;  /* a result will wake us */
        if (e->br.state == BREAKER_HALF_OPEN && e->br.probe_in_flight)
            continue;  /* so will the probe's */
        t = e->next_due;
        if (e->hold_until > t)
            t = e->hold_until;
        if (e->br.state == BREAKER_OPEN && e->br.opened_at + e->br.cooldown_ms > t)
            t = e->br.opened_at + e->br.cooldown_ms;
        if (e->rate.n > 0) {
            /* ready_at refills the buckets: a copy, this is only a look */
            struct tlimit tl = e->rate;
            int64_t ready = now + (tlimit_ready_at(&tl, now_mono) - now_mono);
            if (ready > t)
                t = ready;
        }
        if (t < wake)
            wake = t;
    }
    return wake;
}
