/* registry.c - the live endpoint table. */
#include "registry.h"
#include "clockstep.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static size_t hash_id(int64_t id, size_t nb)
{
    return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 17) & (nb - 1);
}

static size_t hash_name(const char *s, size_t nb)
{
    return (size_t)util_hash(s, strlen(s), 0) & (nb - 1);
}

static int rehash(struct registry *r, size_t nb)
{
    struct endpoint **bi = calloc(nb, sizeof *bi), **bn = calloc(nb, sizeof *bn);
    size_t i;

    if (!bi || !bn) {
        free(bi);
        free(bn);
        return -1;
    }
    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        size_t hi = hash_id(e->id, nb), hn = hash_name(e->conf->def.name, nb);
        e->next_id = bi[hi];
        bi[hi] = e;
        e->next_name = bn[hn];
        bn[hn] = e;
    }
    free(r->by_id);
    free(r->by_name);
    r->by_id = bi;
    r->by_name = bn;
    r->nbuckets = nb;
    return 0;
}

int registry_init(struct registry *r, const struct config *c)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->nodes = 1;
    r->tlog.window_ms = 10000;
    r->tlog.limit = REGISTRY_TRANSITION_LINES;
    r->flog.window_ms = 10000;
    r->flog.limit = REGISTRY_TRANSITION_LINES;
    return rehash(r, 64);
}

void registry_free(struct registry *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        ep_conf_unref(r->v[i]->conf);
        free(r->v[i]);
    }
    free(r->v);
    free(r->by_id);
    free(r->by_name);
    free(r->undo);
    free(r->dirty);
    free(r->hist_out);
    memset(r, 0, sizeof *r);
}

struct endpoint *registry_by_id(const struct registry *r, int64_t id)
{
    struct endpoint *e = r->by_id[hash_id(id, r->nbuckets)];

    while (e && e->id != id)
        e = e->next_id;
    return e;
}

struct endpoint *registry_by_name(const struct registry *r, const char *name)
{
    struct endpoint *e = r->by_name[hash_name(name, r->nbuckets)];

    while (e && strcmp(e->conf->def.name, name) != 0)
        e = e->next_name;
    return e;
}

static void unlink_chains(struct registry *r, struct endpoint *e)
{
    struct endpoint **p = &r->by_id[hash_id(e->id, r->nbuckets)];

    while (*p != e)
        p = &(*p)->next_id;
    *p = e->next_id;
    p = &r->by_name[hash_name(e->conf->def.name, r->nbuckets)];
    while (*p != e)
        p = &(*p)->next_name;
    *p = e->next_name;
}

static void link_chains(struct registry *r, struct endpoint *e)
{
    size_t hi = hash_id(e->id, r->nbuckets), hn = hash_name(e->conf->def.name, r->nbuckets);

    e->next_id = r->by_id[hi];
    r->by_id[hi] = e;
    e->next_name = r->by_name[hn];
    r->by_name[hn] = e;
}

static int same_rates(const struct ep_settings *a, const struct ep_settings *b)
{
    return a->burst == b->burst && a->rate.n == b->rate.n &&
           (a->rate.n <= 0 || memcmp(a->rate.r, b->rate.r, (size_t)a->rate.n * sizeof a->rate.r[0]) == 0);
}

/* This node's share of the endpoint's rate limits: with n nodes, each
 * sends count / n per window with a burst of burst / n, so the endpoint
 * as a whole sees the limit within one burst (the share follows the live
 * nodes, counted at each heartbeat). */
static void rates_init(const struct registry *r, struct endpoint *e, int64_t now_mono)
{
    const struct ep_rates *rt = &e->conf->eff.rate;
    double count[EP_RATES_MAX], burst = (double)e->conf->eff.burst;
    int64_t per[EP_RATES_MAX];
    int i;

    for (i = 0; i < rt->n && i < EP_RATES_MAX; i++) {
        count[i] = rt->r[i].count / r->nodes;
        per[i] = rt->r[i].per_ms;
    }
    if (burst > 0) {
        burst /= r->nodes;
        if (burst < 1)
            burst = 1;
    }
    tlimit_init(&e->rate, count, per, rt->n > 0 ? rt->n : 0, burst, now_mono);
}

/* ... and of its in-flight cap, rounded up */
static void cap_init(const struct registry *r, struct endpoint *e)
{
    int64_t cap = (e->conf->eff.max_in_flight + r->nodes - 1) / r->nodes;

    limiter_set_cap(&e->lim, (int)(cap < 1 ? 1 : cap), e->conf->eff.adaptive == 0);
}

void registry_set_nodes(struct registry *r, int n)
{
    size_t i;

    if (n < 1)
        n = 1;
    if (n == r->nodes)
        return;
    r->nodes = n;
    for (i = 0; i < r->n; i++) {
        rates_init(r, r->v[i], util_mono_ms());
        cap_init(r, r->v[i]);
    }
}

struct endpoint *registry_install(struct registry *r, int64_t id, const struct ep_def *def, int from_config)
{
    struct endpoint *e = registry_by_id(r, id);
    struct ep_conf *conf, *old;

    /* the same definition again (a reload, another node's change to
     * another endpoint): the snapshot stays, and the jobs holding it go on */
    if (e && ep_def_same(&e->conf->def, def))
        goto same;
    if (!(conf = ep_conf_new(id, def, &r->c->dflt)))
        return NULL;
    if (!e) {
        if (r->n == r->cap) {
            size_t nc = r->cap ? r->cap * 2 : 16;
            struct endpoint **nv = realloc(r->v, nc * sizeof *nv);
            if (!nv)
                goto oom;
            r->v = nv;
            r->cap = nc;
        }
        if (r->n + 1 > r->nbuckets && rehash(r, r->nbuckets * 2) < 0)
            goto oom;
        if (!(e = calloc(1, sizeof *e)))
            goto oom;
        e->id = id;
        e->conf = conf;
        e->paused = def->paused;
        e->slot = r->n;
        r->v[r->n++] = e;
        link_chains(r, e);
        e->bcfg.failure_threshold = (uint32_t)conf->eff.failure_threshold;
        e->bcfg.cooldown_ms = conf->eff.cooldown_ms;
        e->bcfg.max_cooldown_ms = conf->eff.max_cooldown_ms;
        breaker_init(&e->br, &e->bcfg);
        limiter_init(&e->lim, (int)conf->eff.max_in_flight);
        cap_init(r, e);
        rates_init(r, e, util_mono_ms());
    } else {
        old = e->conf;
        unlink_chains(r, e);   /* the name hash of the old snapshot */
        e->conf = conf;
        link_chains(r, e);
        e->bcfg.failure_threshold = (uint32_t)conf->eff.failure_threshold;
        e->bcfg.cooldown_ms = conf->eff.cooldown_ms;
        e->bcfg.max_cooldown_ms = conf->eff.max_cooldown_ms;
        if (!same_rates(&old->eff, &conf->eff))
            rates_init(r, e, util_mono_ms());
        cap_init(r, e);
        /* jobs claimed ahead with the old settings go back, to be claimed
         * again with the new ones */
        __atomic_store_n(&old->hold, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&old->halt, 1, __ATOMIC_RELAXED);   /* not even those waiting for a host slot */
        ep_conf_unref(old);
    }
same:
    e->from_config = from_config;
    e->is_ops = r->c->ops_endpoint && strcmp(def->name, r->c->ops_endpoint) == 0;
    e->next_due = 0;  /* re-examine the queue with the new settings */
    registry_sync_hold(e);
    return e;
oom:
    ep_conf_unref(conf);
    return NULL;
}

void registry_sync_hold(struct endpoint *e)
{
    __atomic_store_n(&e->conf->hold, e->paused || e->br.state != BREAKER_CLOSED || e->hold_until != 0,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&e->conf->halt, e->paused, __ATOMIC_RELAXED);
}

void registry_remove(struct registry *r, struct endpoint *e)
{
    struct endpoint *last = r->v[r->n - 1];

    /* deleted: its jobs that have not started go back (their rows are
     * dead letters now, which their results leave as they are) */
    __atomic_store_n(&e->conf->hold, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&e->conf->halt, 1, __ATOMIC_RELAXED);
    unlink_chains(r, e);
    last->slot = e->slot;
    r->v[e->slot] = last;
    r->n--;
    if (r->rr >= r->n)
        r->rr = 0;
    ep_conf_unref(e->conf);
    free(e);
}

/* The stored breaker state and the ring's next slot into e. */
static void apply_health(const struct registry *r, struct endpoint *e, const struct store_health *h)
{
    e->br.state = (enum breaker_state)h->state;
    e->br.consecutive_failures = (uint32_t)h->consecutive_failures;
    e->br.opened_at = h->opened_at;
    if (h->cooldown_ms > 0)
        e->br.cooldown_ms = h->cooldown_ms;
    e->br.last_failure_at = h->last_failure_at;
    e->br.last_success_at = h->last_success_at;
    e->br.failing_since = h->failing_since;
    e->slow_since = h->slow_since;
    e->ring_next = h->ring_next >= 0 && h->ring_next < r->c->latency_samples ? h->ring_next : 0;
}

void registry_load_health(struct registry *r, const struct store_health *h)
{
    struct endpoint *e = registry_by_id(r, h->endpoint_id);

    if (!e)
        return;
    apply_health(r, e, h);
    e->br.probe_in_flight = 0;  /* a probe cut short by a restart proves nothing */
    limiter_restore(&e->lim, h->concurrency_limit > INT32_MAX ? INT32_MAX : (int)h->concurrency_limit);
    e->p95_ms = h->has_latency ? h->p95_ms : 0;
    e->samples = h->sample_count;
}

void registry_sync_health(struct registry *r, const struct store_health *h)
{
    struct endpoint *e = registry_by_id(r, h->endpoint_id);

    if (!e)
        return;
    registry_touch(r, e);
    apply_health(r, e, h);
    /* whichever node holds it: the single probe of the whole cluster */
    e->br.probe_in_flight = h->state == BREAKER_HALF_OPEN && h->probe_out;
    e->paused = h->paused;
    e->cluster_in_flight = h->in_flight;
    e->locked = r->round;
    e->stale = 0;
}

int64_t registry_failing_room(const struct registry *r, const struct endpoint *e)
{
    int64_t left;

    if (!r->shared || e->br.state != BREAKER_CLOSED || e->br.consecutive_failures == 0)
        return INT64_MAX;
    left = (int64_t)endpoint_threshold(e) - (int64_t)e->br.consecutive_failures - e->cluster_in_flight;
    return left > 0 ? left : 0;
}

/* ---- the round's undo log ---- */

void registry_round_begin(struct registry *r)
{
    if (++r->round == 0)
        r->round = 1;   /* 0 is no round: an endpoint's locked starts at 0 */
    r->nundo = 0;
    if (r->notify)
        notify_round_begin(r->notify);
    r->undo_lost = 0;
    r->saved_in_flight = r->in_flight;
    r->saved_rr = r->rr;
    r->saved_nhist_out = r->nhist_out;
}

void registry_touch(struct registry *r, struct endpoint *e)
{
    if (e->touched == r->round)
        return;
    e->touched = r->round;
    if (r->nundo == r->undocap) {
        size_t nc = r->undocap ? r->undocap * 2 : 64;
        struct registry_undo *nu = realloc(r->undo, nc * sizeof *nu);
        if (!nu) {
            r->undo_lost = 1;
            return;
        }
        r->undo = nu;
        r->undocap = nc;
    }
    r->undo[r->nundo].e = e;
    r->undo[r->nundo].saved = *e;
    r->nundo++;
}

void registry_round_undo(struct registry *r)
{
    size_t i;

    for (i = r->nundo; i-- > 0;) {
        struct endpoint *e = r->undo[i].e;
        struct endpoint keep = *e;
        /* the state goes back; the table's own links stay as they are */
        *e = r->undo[i].saved;
        e->next_id = keep.next_id;
        e->next_name = keep.next_name;
        e->slot = keep.slot;
        e->touched = keep.touched;
    }
    if (r->undo_lost)
        log_error("registry_undo_incomplete", "note=\"out of memory during a failed round; endpoint "
                  "counters may be off until restart\"");
    r->in_flight = r->saved_in_flight;
    r->rr = r->saved_rr;
    r->nundo = 0;
    r->nhist_out = r->saved_nhist_out;   /* the endpoints got their counts back */
    if (r->notify)
        notify_undo(r->notify);
}

/* ---- health ---- */

uint32_t endpoint_threshold(const struct endpoint *e)
{
    uint32_t th = e->bcfg.failure_threshold ? e->bcfg.failure_threshold : 1;

    if (e->slow_since) {
        th /= 2;
        if (th < 1)
            th = 1;
    }
    return th;
}

void endpoint_health_row(const struct endpoint *e, struct store_health *h)
{
    memset(h, 0, sizeof *h);
    h->endpoint_id = e->id;
    h->endpoint_url = e->conf->def.url;
    h->state = (int)e->br.state;
    h->consecutive_failures = e->br.consecutive_failures;
    h->failure_threshold = endpoint_threshold(e);
    h->last_failure_at = e->br.last_failure_at;
    h->last_success_at = e->br.last_success_at;
    h->failing_since = e->br.failing_since;
    h->opened_at = e->br.opened_at;
    h->cooldown_ms = e->br.cooldown_ms;
    h->slow_since = e->slow_since;
    h->ring_next = e->ring_next;
    h->concurrency_limit = limiter_current(&e->lim);
    h->probe_out = e->br.state == BREAKER_HALF_OPEN && e->br.probe_in_flight;
}

void registry_mark_health(struct registry *r, struct endpoint *e)
{
    registry_touch(r, e);
    if (e->health_dirty)
        return;
    if (r->ndirty == r->dirtycap) {
        size_t nc = r->dirtycap ? r->dirtycap * 2 : 64;
        int64_t *nd = realloc(r->dirty, nc * sizeof *nd);
        if (!nd) {
            log_error("oom", "where=registry_mark_health endpoint=%s note=\"breaker state saved later\"",
                      e->conf->def.name);
            return;
        }
        r->dirty = nd;
        r->dirtycap = nc;
    }
    r->dirty[r->ndirty++] = e->id;
    e->health_dirty = 1;
}

int registry_save_health(struct registry *r, struct store *st, int64_t now)
{
    struct store_health h;
    size_t i;

    for (i = 0; i < r->ndirty; i++) {
        struct endpoint *e = registry_by_id(r, r->dirty[i]);
        if (!e || !e->health_dirty)
            continue;
        if (!registry_health_ok(r, e)) {
            /* judged on a view that was not read under lock: the row
             * keeps what the nodes that held the lock saved */
            registry_touch(r, e);
            e->health_dirty = 0;
            continue;
        }
        endpoint_health_row(e, &h);
        if (st->ops->health_save(st, &h, 1) < 0)
            return -1;
        registry_touch(r, e);
        e->health_dirty = 0;
        e->health_saved_at = now;
    }
    return 0;
}

void registry_round_commit(struct registry *r)
{
    size_t i;

    for (i = 0; i < r->nundo; i++)
        registry_sync_hold(r->undo[i].e);
    r->ndirty = 0;
    r->nundo = 0;
    r->nhist_out = 0;
    if (r->notify)
        notify_committed(r->notify);
}

void registry_log_flush(struct registry *r, int64_t now)
{
    long n = log_budget_roll(&r->tlog, now), nf = log_budget_roll(&r->flog, now);

    if (nf) {
        log_warn("endpoint_failures", "held_back=%ld failing=%ld dead_letters=%ld window_ms=%lld "
                 "note=\"more than %d failure lines in the window; hookd endpoints and hookd dead-letters show each\"",
                 nf, r->held_failing, r->held_dead, (long long)r->flog.window_ms, r->flog.limit);
        r->held_failing = r->held_dead = 0;
    }
    if (n == 0)
        return;
    log_warn("breaker_transitions", "held_back=%ld to_open=%ld to_half_open=%ld to_closed=%ld window_ms=%lld "
             "note=\"more than %d transitions in the window; hookd endpoints shows each\"",
             n, r->held_to[BREAKER_OPEN], r->held_to[BREAKER_HALF_OPEN], r->held_to[BREAKER_CLOSED],
             (long long)r->tlog.window_ms, r->tlog.limit);
    memset(r->held_to, 0, sizeof r->held_to);
}

static int64_t bucket_of(const struct registry *r, int64_t now)
{
    int64_t b = r->c->history_bucket_ms > 0 ? r->c->history_bucket_ms : 300000;
    return now - now % b;
}

static void hist_push(struct registry *r, struct endpoint *e)
{
    struct store_history *h;

    if (!e->hist.ok && !e->hist.fail && !e->hist.opens)
        return;
    if (r->nhist_out == r->hist_out_cap) {
        size_t nc = r->hist_out_cap ? r->hist_out_cap * 2 : 64;
        struct store_history *nv = realloc(r->hist_out, nc * sizeof *nv);
        if (!nv)
            return;   /* out of memory: the counts wait for the next flush */
        r->hist_out = nv;
        r->hist_out_cap = nc;
    }
    h = &r->hist_out[r->nhist_out++];
    memset(h, 0, sizeof *h);
    h->endpoint_id = e->id;
    h->bucket_at = e->hist.bucket;
    h->delivered = e->hist.ok;
    h->failed = e->hist.fail;
    h->breaker_opens = e->hist.opens;
    e->hist.ok = e->hist.fail = e->hist.opens = 0;
}

static void hist_roll(struct registry *r, struct endpoint *e, int64_t now)
{
    int64_t b = bucket_of(r, now);

    if (e->hist.bucket == b)
        return;
    hist_push(r, e);
    if (!e->hist.ok && !e->hist.fail && !e->hist.opens)
        e->hist.bucket = b;
}

void registry_history_note(struct registry *r, struct endpoint *e, int ok, int64_t now)
{
    registry_touch(r, e);
    hist_roll(r, e, now);
    if (ok)
        e->hist.ok++;
    else
        e->hist.fail++;
}

void registry_history_collect(struct registry *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        if (!e->hist.ok && !e->hist.fail && !e->hist.opens)
            continue;   /* 10,000 quiet endpoints cost no undo entry */
        registry_touch(r, e);
        hist_push(r, e);
    }
}

int registry_history_flush(struct registry *r, struct store *st)
{
    if (!r->nhist_out)
        return 0;
    if (st->ops->history_add(st, r->hist_out, r->nhist_out) < 0)
        return -1;
    /* emptied at commit (registry_round_commit): a rollback keeps them */
    return 0;
}

void registry_notify(struct registry *r, const struct opsev *ev)
{
    if (r->notify)
        notify_emit(r->notify, ev);
}

static void breaker_figures(struct opsev *ev, const struct endpoint *e)
{
    opsev_fig(ev, "consecutive_failures", e->br.consecutive_failures);
    opsev_fig(ev, "failure_threshold", endpoint_threshold(e));
    opsev_fig(ev, "cooldown_ms", e->br.cooldown_ms);
    opsev_fig(ev, "last_success_at_ms", e->br.last_success_at);
    opsev_fig(ev, "in_flight", e->in_flight);
}

/* Opening (from closed) and closing are the changes an operator hears
 * of; a failed probe re-opening a breaker is the same outage. */
static void breaker_event(struct registry *r, struct endpoint *e, const struct breaker_transition *t, int64_t now)
{
    enum opsev_type ty;
    struct opsev ev;

    if (t->to == BREAKER_OPEN && t->from == BREAKER_CLOSED) {
        hist_roll(r, e, now);
        e->hist.opens++;
        ty = OPSEV_BREAKER_OPENED;
    } else if (t->to == BREAKER_CLOSED) {
        ty = OPSEV_BREAKER_CLOSED;
    } else {
        return;
    }
    if (!r->notify || !notify_wanted(r->notify, ty, e->conf->def.name))
        return;
    if (!opsev_flap_note(&e->flap, ty, now, r->notify->quiet_ms)) {
        r->flapping++;
        return;
    }
    opsev_init(&ev, ty, now, e->conf->def.name, "%s", t->reason ? t->reason : "");
    breaker_figures(&ev, e);
    notify_emit(r->notify, &ev);
}

void registry_ops_tick(struct registry *r, int64_t now)
{
    size_t i, still = 0;

    if (!r->flapping || !r->notify)
        return;
    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        enum opsev_type ty;
        struct opsev ev;
        uint32_t held;
        if (!e->flap.held)
            continue;
        ty = opsev_flap_due(&e->flap, now, r->notify->quiet_ms, &held);
        if (ty == OPSEV_NONE) {
            still++;
            continue;
        }
        opsev_init(&ev, ty, now, e->conf->def.name, "breaker changed state %u more times within the quiet "
                   "period; it is %s now", held, breaker_state_name(e->br.state));
        opsev_fig(&ev, "transitions", held);
        breaker_figures(&ev, e);
        notify_emit(r->notify, &ev);
    }
    r->flapping = still;
}

int registry_notify_flush(struct registry *r, struct store *st, int64_t now)
{
    struct endpoint *e;
    size_t stored = 0;

    if (!r->notify || !r->notify->n)
        return 0;
    e = r->notify->endpoint[0] ? registry_by_name(r, r->notify->endpoint) : NULL;
    if (notify_flush(r->notify, st, e ? e->id : 0, e ? (int)e->conf->eff.max_attempts : 0, now, &stored) < 0)
        return -1;
    if (stored) {
        registry_touch(r, e);
        e->next_due = 0;
    }
    return 0;
}

void registry_log_transition(struct registry *r, struct endpoint *e, const struct breaker_transition *t,
                             int64_t now)
{
    if (t->from == t->to)
        return;
    breaker_event(r, e, t, now);
    registry_log_flush(r, now);
    if (!log_budget_take(&r->tlog, now)) {
        if ((size_t)t->to < sizeof r->held_to / sizeof r->held_to[0])
            r->held_to[t->to]++;
        return;
    }
    log_warn("breaker_transition", "endpoint=%s from=%s to=%s reason=\"%s\" failures=%u cooldown_ms=%lld",
             e->conf->def.name, breaker_state_name(t->from), breaker_state_name(t->to),
             t->reason ? t->reason : "", e->br.consecutive_failures, (long long)e->br.cooldown_ms);
}

void registry_log_failure(struct registry *r, struct endpoint *e, int64_t message_id, int attempts, int dead,
                          int status, const char *error_class, const char *detail, int64_t now)
{
    char d[160];
    int first = !e->failing_logged;

    if (!dead && !first)
        return;
    e->failing_logged = 1;
    registry_log_flush(r, now);
    if (!log_budget_take(&r->flog, now)) {
        if (dead)
            r->held_dead++;
        else
            r->held_failing++;
        return;
    }
    log_q(detail ? detail : "", d, sizeof d);
    if (dead)
        log_warn("dead_letter", "endpoint=%s error_class=%s status=%d attempts=%d message_id=%lld detail=%s%s",
                 e->conf->def.name, error_class[0] ? error_class : "none", status, attempts, (long long)message_id,
                 d, first ? " note=\"the endpoint's first failure since start or its last success\"" : "");
    else
        log_warn("endpoint_failing", "endpoint=%s error_class=%s status=%d message_id=%lld detail=%s "
                 "note=\"first failure since start or the last success; retried with backoff\"",
                 e->conf->def.name, error_class[0] ? error_class : "none", status, (long long)message_id, d);
}

void registry_log_success(struct registry *r, struct endpoint *e, int64_t now)
{
    if (!e->failing_logged)
        return;
    e->failing_logged = 0;
    registry_log_flush(r, now);
    if (!log_budget_take(&r->flog, now))
        return;
    log_info("endpoint_delivering", "endpoint=%s note=\"delivered again after a logged failure\"",
             e->conf->def.name);
}

/* ---- wall-clock steps ---- */

void registry_clock_step(struct registry *r, int64_t step_ms)
{
    size_t i;

    /* outside a round: nothing to undo */
    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        e->next_due = clockstep_shift(e->next_due, step_ms);
        e->hold_until = clockstep_shift(e->hold_until, step_ms);
        e->br.opened_at = clockstep_shift(e->br.opened_at, step_ms);
        e->br.failing_since = clockstep_shift(e->br.failing_since, step_ms);
        e->health_saved_at = clockstep_shift(e->health_saved_at, step_ms);
        e->lim.cut_at = clockstep_shift(e->lim.cut_at, step_ms);
        e->flap.sent_at = clockstep_shift(e->flap.sent_at, step_ms);
    }
    r->tlog.start = clockstep_shift(r->tlog.start, step_ms);
}
