/* settle.c - applying delivery results. */
#include "settle.h"
#include "backoff.h"
#include "log.h"
#include "outcome.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void settle_decide(const struct djob *j, const struct ep_settings *s, int64_t now, uint64_t rnd,
                   struct settle_row *out)
{
    struct store_settle *r = &out->s;
    enum outcome oc;
    int attempts = j->attempt_count + 1;

    memset(out, 0, sizeof *out);
    r->id = j->id;
    r->endpoint_id = j->ep->id;
    r->at = now;
    out->outcome = -1;
    if (!j->attempted) {
        /* given back untried (shutdown): as it was, due now */
        r->verdict = SETTLE_RELEASE;
        r->attempts = j->attempt_count;
        r->next_attempt_at = now;
        return;
    }
    oc = outcome_classify_ok(j->http_status, j->errc, j->ep->has_ok ? &j->ep->ok : NULL);
    r->attempts = attempts;
    r->method = ep_method_name(j->ep->def.rq.method);
    r->url = j->sent_url ? j->sent_url : j->ep->shown_url;
    r->response = j->response;
    r->status_code = j->http_status;
    r->response_ms = j->response_ms;
    r->sample = j->sample;
    if (oc != OUTCOME_DELIVERED) {
        outcome_error_class(j->http_status, j->errc, out->error_class, sizeof out->error_class);
        if (j->http_status && j->errc == ERRC_BODY_MISMATCH)
            snprintf(out->error, sizeof out->error, "HTTP %d: %s", j->http_status, j->error);
        else if (j->http_status)
            snprintf(out->error, sizeof out->error, "HTTP %d%s%s", j->http_status, j->error[0] ? ": " : "",
                     j->error);
        else
            snprintf(out->error, sizeof out->error, "%s: %s", errclass_name(j->errc), j->error);
        r->error_class = out->error_class;
        r->error = out->error;
    }
    switch (oc) {
    case OUTCOME_DELIVERED:
        r->verdict = SETTLE_DELIVERED;
        break;
    case OUTCOME_RETRY:
        if (attempts >= j->max_attempts) {
            r->verdict = SETTLE_DEAD;
            oc = OUTCOME_DEAD;
            break;
        }
        {
            int64_t delay = backoff_delay_ms((uint32_t)attempts, s->base_delay_ms, s->max_delay_ms, rnd);
            /* Retry-After is a floor, capped at max_delay; a 429's also
             * holds the whole endpoint */
            if (j->retry_after_ms >= 0 && (j->http_status == 429 || j->http_status == 503)) {
                int64_t floor_ms = j->retry_after_ms < s->max_delay_ms ? j->retry_after_ms : s->max_delay_ms;
                if (delay < floor_ms)
                    delay = floor_ms;
                if (j->http_status == 429)
                    out->hold_until = now + floor_ms;
            }
            r->verdict = SETTLE_RETRY;
            r->next_attempt_at = now + delay;
        }
        break;
    case OUTCOME_DEAD:
    case OUTCOME_GONE:
        r->verdict = SETTLE_DEAD;
        break;
    }
    out->outcome = (int)oc;
}

/* What an attempt says about the endpoint's load. */
static enum limiter_signal limiter_signal_of(int status, enum errclass errc)
{
    if (status == 429 || status == 503 || status == 408 || errc == ERRC_TIMEOUT)
        return LIMITER_OVERLOAD;
    if (status == 0 || status >= 500)
        return LIMITER_FAILURE;
    return LIMITER_OK;   /* 2xx, and 4xx: answered, whatever it meant */
}

/* Auto-disable: no success for disable_after while attempts kept
 * failing. Paused with a reason (its queue is kept; hookd resume). */
static int disable(struct registry *r, struct store *st, struct endpoint *e, const struct settle_row *row,
                   int64_t now)
{
    char after[32], reason[96];
    struct opsev ev;

    util_fmt_duration(e->conf->eff.disable_after_ms, after, sizeof after);
    snprintf(reason, sizeof reason, "disabled: no successful delivery for %s", after);
    if (st->ops->endpoint_pause(st, e->id, 1, reason, now) < 0)
        return -1;
    e->paused = 1;
    log_warn("endpoint_disabled", "endpoint=%s failing_since_ms=%lld disable_after=%s consecutive_failures=%u "
             "last_error_class=%s note=\"queued messages are kept; hookd resume re-enables it\"", e->conf->def.name,
             (long long)e->br.failing_since, after, e->br.consecutive_failures,
             row->error_class[0] ? row->error_class : "none");
    opsev_init(&ev, OPSEV_DISABLED, now, e->conf->def.name, "%s", reason);
    opsev_fig(&ev, "failing_since_ms", e->br.failing_since);
    opsev_fig(&ev, "last_success_at_ms", e->br.last_success_at);
    opsev_fig(&ev, "consecutive_failures", e->br.consecutive_failures);
    opsev_fig(&ev, "disable_after_ms", e->conf->eff.disable_after_ms);
    if (row->error_class[0]) {
        ev.text_key = "last_error_class";
        util_strlcpy(ev.text, row->error_class, sizeof ev.text);
    }
    registry_notify(r, &ev);
    return 0;
}

/* What the result means for its endpoint; e is still registered. */
static int endpoint_effects(struct registry *r, struct store *st, struct endpoint *e, const struct djob *j,
                            const struct settle_row *row, int64_t now)
{
    struct breaker_transition t;
    uint32_t fails;

    registry_touch(r, e);
    e->in_flight--;
    /* an ahead job stops counting as ahead when it is known to have
     * started (its predecessor came back handed) or came back unstarted */
    if (j->handed)
        e->ahead--;
    if (j->ahead && !j->took_slot)
        e->ahead--;
    if (!j->attempted) {
        if (j->probe) {
            breaker_probe_abandoned(&e->br);
            registry_mark_health(r, e);
        }
        e->next_due = 0;
        return 0;
    }
    registry_history_note(r, e, row->outcome == OUTCOME_DELIVERED, now);
    if (row->outcome == OUTCOME_DELIVERED)
        registry_log_success(r, e, now);
    else   /* a transport error's text is hookd's or libcurl's; a body is the receiver's: not logged */
        registry_log_failure(r, e, j->id, row->s.attempts, row->s.verdict == SETTLE_DEAD, j->http_status,
                             row->error_class, j->http_status ? NULL : j->error, now);
    if (row->hold_until > e->hold_until)
        e->hold_until = row->hold_until;
    if (row->s.verdict == SETTLE_RETRY && row->s.next_attempt_at < e->next_due)
        e->next_due = row->s.next_attempt_at;
    if (e->conf->order_tpl.nmacros && row->s.verdict != SETTLE_RETRY)
        e->next_due = 0;   /* the next row of its key may go now */
    if (j->errc == ERRC_TEMPLATE || j->errc == ERRC_TEMPLATE_MISSING || j->errc == ERRC_TEMPLATE_UNSAFE) {
        /* the message could not be built: nothing was sent, and it says
         * nothing about the endpoint (its probe was not sent either) */
        if (j->probe) {
            breaker_probe_abandoned(&e->br);
            registry_mark_health(r, e);
        }
        return 0;
    }
    if (row->outcome == OUTCOME_GONE && !e->paused) {
        struct opsev ev;
        if (st->ops->endpoint_pause(st, e->id, 1, "410 Gone", now) < 0)
            return -1;
        e->paused = 1;
        log_warn("endpoint_paused", "endpoint=%s reason=\"410 Gone\" message_id=%lld", e->conf->def.name,
                 (long long)j->id);
        opsev_init(&ev, OPSEV_PAUSED, now, e->conf->def.name, "410 Gone");
        opsev_fig(&ev, "message_id", j->id);
        opsev_fig(&ev, "status_code", 410);
        registry_notify(r, &ev);
    }
    fails = e->br.consecutive_failures;
    breaker_record(&e->br, &e->bcfg, row->outcome == OUTCOME_DELIVERED, j->probe, endpoint_threshold(e), now, &t);
    registry_log_transition(r, e, &t, now);
    if (row->outcome != OUTCOME_DELIVERED && !e->paused &&
        breaker_failing_for(&e->br, j->ep->eff.disable_after_ms, now) && disable(r, st, e, row, now) < 0)
        return -1;
    /* a breaker change is saved in this round's transaction; the rest of
     * the health row (last_success_at, the ring's next slot, the adaptive
     * limit) at most once a second: one upsert per endpoint per round
     * would cost more than the deliveries' own rows with 100 endpoints */
    if (t.from != t.to || e->br.consecutive_failures != fails || now - e->health_saved_at >= HEALTH_SAVE_EVERY_MS ||
        r->shared)   /* shared: the count and the ring's next slot are every node's */
        registry_mark_health(r, e);
    if (t.to == BREAKER_CLOSED && t.from != BREAKER_CLOSED)
        e->next_due = 0;
    return 0;
}

int settle_results(struct registry *r, struct store *st, struct djob *list, int64_t now)
{
    struct settle_row *rows;
    struct store_settle *ss;
    struct djob *j;
    size_t n = 0, i;
    int rc = -1;

    for (j = list; j; j = j->next)
        n++;
    if (!n)
        return 0;
    rows = malloc(n * sizeof *rows);
    ss = malloc(n * sizeof *ss);
    if (!rows || !ss) {
        store_fail(st, STORE_E_NOMEM, "settle: out of memory");
        goto out;
    }
    /* the adaptive limits first, while every result of the batch still
     * counts as in flight: they came back together, and slow start must
     * see the whole round trip's successes against the full window */
    for (j = list; j; j = j->next) {
        struct endpoint *e = registry_by_id(r, j->ep->id);
        if (!e || !j->attempted || j->errc == ERRC_BLOCKED || j->errc == ERRC_TEMPLATE ||
            j->errc == ERRC_TEMPLATE_MISSING || j->errc == ERRC_TEMPLATE_UNSAFE)   /* never sent: says nothing of load */
            continue;
        registry_touch(r, e);
        limiter_record(&e->lim, limiter_signal_of(j->http_status, j->errc), j->response_ms, registry_requests(e),
                       now);
    }
    for (j = list, i = 0; j; j = j->next, i++) {
        /* the job's own snapshot: the endpoint may have changed or gone */
        struct endpoint *e = registry_by_id(r, j->ep->id);
        settle_decide(j, &j->ep->eff, now, backoff_rand64(), &rows[i]);
        j->outcome = rows[i].outcome;
        r->in_flight--;
        if (e && endpoint_effects(r, st, e, j, &rows[i], now) < 0)
            goto out;
        if (e && rows[i].s.sample) {
            /* the ring's next slot; a deleted endpoint keeps no samples */
            rows[i].s.ring_slot = e->ring_next;
            e->ring_next = (e->ring_next + 1) % r->c->latency_samples;
        } else {
            rows[i].s.sample = 0;
        }
        ss[i] = rows[i].s;
    }
    if (st->ops->settle(st, ss, n) < 0)
        goto out;
    rc = 0;
out:
    free(rows);
    free(ss);
    return rc;
}
