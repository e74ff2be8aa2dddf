/* query.c - the answers to the read-only ops, from a reader store.
 * Replies are built with the buffer's sticky failure (util.h): one check
 * at the end of each answer. */
#include "query.h"
#include "epstats.h"
#include "query_report.h"
#include "breaker.h"
#include "counters.h"
#include "epdef.h"
#include "metrics.h"
#include "msgsel.h"
#include "tpl.h"
#include "urlmask.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS (3600 * 1000LL)
#define GET_ATTEMPTS_MAX 100
#define DEAD_LETTERS_MAX 20

static void put_str(struct buf *b, const char *s)
{
    if (s)
        buf_json_str(b, s);
    else
        buf_puts(b, "null");
}

/* v, or null when v == none */
static void put_int(struct buf *b, int64_t v, int64_t none)
{
    if (v == none)
        buf_puts(b, "null");
    else
        buf_printf(b, "%lld", (long long)v);
}

static int oom(struct store *st)
{
    return store_fail(st, STORE_E_NOMEM, "out of memory building the reply");
}

/* ---- get ---- */

struct get_ctx {
    struct store *st;
    struct buf *b;
    int n;
};

static int get_attempt(void *arg, const struct store_attempt *a)
{
    struct get_ctx *x = arg;
    struct buf *b = x->b;

    /* attempt 0 is the requeue that began its generation: no request */
    buf_printf(b, "%s{\"attempt\":%d,\"generation\":%d,\"event\":\"%s\",\"at\":%lld,\"response_ms\":",
               x->n++ ? "," : "", a->attempt, a->generation, a->attempt == 0 ? "requeued" : "attempt",
               (long long)a->at);
    put_int(b, a->response_ms, -1);
    buf_puts(b, ",\"status_code\":");
    put_int(b, a->status_code, 0);
    buf_puts(b, ",\"error_class\":");
    buf_json_str(b, a->error_class ? a->error_class : "");
    buf_puts(b, ",\"detail\":");
    put_str(b, a->detail);
    buf_puts(b, ",\"method\":");
    put_str(b, a->method);
    buf_puts(b, ",\"url\":");
    put_str(b, a->url);
    buf_puts(b, ",\"response\":");
    put_str(b, a->response);
    buf_puts(b, "}");
    return b->failed;
}

static int get_message(void *arg, const struct store_message *m)
{
    struct get_ctx *x = arg;
    struct buf *b = x->b;

    buf_printf(b, "{\"ok\":true,\"message\":{\"id\":%lld,\"endpoint\":", (long long)m->id);
    put_str(b, m->endpoint);
    buf_printf(b, ",\"endpoint_id\":%lld,\"event_id\":", (long long)m->endpoint_id);
    put_str(b, m->event_id);
    buf_puts(b, ",\"event_type\":");
    put_str(b, m->event_type);
    buf_puts(b, ",\"status\":");
    buf_json_str(b, msg_status_name(m->status));
    buf_printf(b, ",\"attempt_count\":%d,\"max_attempts\":%d,\"created_at\":%lld,\"next_attempt_at\":%lld",
               m->attempt_count, m->max_attempts, (long long)m->created_at, (long long)m->next_attempt_at);
    buf_puts(b, ",\"claimed_at\":");
    put_int(b, m->claimed_at, 0);
    buf_puts(b, ",\"delivered_at\":");
    put_int(b, m->delivered_at, 0);
    buf_puts(b, ",\"last_error\":");
    put_str(b, m->last_error);
    buf_puts(b, ",\"last_error_class\":");
    put_str(b, m->last_error_class);
    buf_puts(b, ",\"last_status_code\":");
    put_int(b, m->last_status_code, 0);
    buf_puts(b, ",\"last_response_ms\":");
    put_int(b, m->last_response_ms, -1);
    buf_puts(b, ",\"erased_at\":");
    put_int(b, m->erased_at, 0);
    buf_printf(b, ",\"payload_bytes\":%lld,\"attempts\":[", (long long)m->payload_bytes);
    if (x->st->ops->message_attempts(x->st, m, GET_ATTEMPTS_MAX, get_attempt, x) < 0)
        return -1;
    buf_puts(b, "]}}\n");
    return b->failed;
}

/* The attempt log alone: {"ok":true,"id":N,"attempts":[...]}. */
static int attempts_of(void *arg, const struct store_message *m)
{
    struct get_ctx *x = arg;

    buf_printf(x->b, "{\"ok\":true,\"id\":%lld,\"status\":", (long long)m->id);
    buf_json_str(x->b, msg_status_name(m->status));
    buf_puts(x->b, ",\"attempts\":[");
    if (x->st->ops->message_attempts(x->st, m, GET_ATTEMPTS_MAX, get_attempt, x) < 0)
        return -1;
    buf_puts(x->b, "]}\n");
    return x->b->failed;
}

/* get and attempts: one message, its reply written by fn */
static int do_message(struct store *st, struct req *r, int (*fn)(void *ctx, const struct store_message *m))
{
    struct get_ctx x = {st, &r->reply, 0};
    int found = 0, rc;

    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    rc = st->ops->message_get(st, r->p.id, fn, &x, &found);
    st->ops->snapshot_end(st);
    if (rc < 0)
        return -1;
    if (!found)
        req_error(r, PERR_NOT_FOUND, "no message %lld", (long long)r->p.id);
    return 0;
}

/* get and attempts by event id (and endpoint): the one message it names */
struct pick_ctx {
    int64_t id, n;
    struct buf names;            /* endpoints of the candidates, for "ambiguous" */
};

static int pick(void *arg, const struct store_message *m)
{
    struct pick_ctx *x = arg;

    x->id = m->id;
    if (x->n++ < 10)
        buf_printf(&x->names, "%s%s", x->n > 1 ? ", " : "", m->endpoint ? m->endpoint : "(deleted)");
    return 0;
}

static int do_by_event(struct store *st, struct req *r, int (*fn)(void *ctx, const struct store_message *m))
{
    struct pick_ctx x = {0, 0, {0}};
    struct msgsel_walk w;
    int rc;

    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    rc = msgsel_walk(st, r->p.sel, 50, pick, &x, &w);
    st->ops->snapshot_end(st);
    if (rc < 0 || x.names.failed) {
        buf_free(&x.names);
        return rc < 0 ? -1 : oom(st);
    }
    if (x.n == 0)
        req_error(r, PERR_NOT_FOUND, "no message with event id '%.64s'%s%.64s", r->p.sel->event_id,
                  r->p.sel->endpoint ? " for endpoint " : "", r->p.sel->endpoint ? r->p.sel->endpoint : "");
    else if (x.n > 1)
        req_error(r, PERR_AMBIGUOUS, "%lld messages have event id '%.64s' (endpoints %s): give 'endpoint'",
                  (long long)x.n, r->p.sel->event_id, x.names.p);
    buf_free(&x.names);
    if (x.n != 1)
        return 0;
    r->p.id = x.id;
    return do_message(st, r, fn);
}

/* ---- messages ---- */

struct msgs_ctx {
    struct buf *b;
    int n;
};

static int put_row(void *arg, const struct store_message *m)
{
    struct msgs_ctx *x = arg;
    struct buf *b = x->b;

    buf_printf(b, "%s{\"id\":%lld,\"endpoint\":", x->n++ ? "," : "", (long long)m->id);
    put_str(b, m->endpoint);
    buf_puts(b, ",\"event_id\":");
    put_str(b, m->event_id);
    buf_puts(b, ",\"event_type\":");
    put_str(b, m->event_type);
    buf_puts(b, ",\"status\":");
    buf_json_str(b, msg_status_name(m->status));
    buf_printf(b, ",\"attempt_count\":%d,\"created_at\":%lld,\"delivered_at\":", m->attempt_count,
               (long long)m->created_at);
    put_int(b, m->delivered_at, 0);
    buf_puts(b, ",\"last_status_code\":");
    put_int(b, m->last_status_code, 0);
    buf_puts(b, ",\"last_error_class\":");
    put_str(b, m->last_error_class);
    buf_puts(b, ",\"erased_at\":");
    put_int(b, m->erased_at, 0);
    buf_puts(b, "}");
    return b->failed ? -1 : 0;
}

/* The messages a selector finds, newest first; next: where the next page
 * starts (after = next), null when nothing is left. */
static int do_messages(struct store *st, struct req *r)
{
    struct msgsel *s = r->p.sel;
    struct msgs_ctx x = {&r->reply, 0};
    struct msgsel_walk w;
    int rc;

    buf_puts(&r->reply, "{\"ok\":true,\"messages\":[");
    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    rc = msgsel_walk(st, s, s->limit ? s->limit : MSGSEL_LIMIT_DEFAULT, put_row, &x, &w);
    st->ops->snapshot_end(st);
    if (rc < 0)
        return -1;
    buf_puts(&r->reply, "],\"next\":");
    put_int(&r->reply, w.next, 0);
    buf_printf(&r->reply, ",\"scanned\":%lld}\n", (long long)w.scanned);
    return r->reply.failed ? oom(st) : 0;
}

/* ---- stats ---- */

static int do_stats(struct store *st, struct req *r, int64_t now)
{
    struct buf *b = &r->reply;
    struct store_stats q;
    int rc;

    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    rc = st->ops->queue_stats(st, now, 0, &q);
    st->ops->snapshot_end(st);
    if (rc < 0)
        return -1;
    buf_printf(b,
               "{\"ok\":true,\"stats\":{\"pending\":%lld,\"awaiting_retry\":%lld,\"in_flight\":%lld,"
               "\"dead_letter\":%lld,\"delivered_last_hour\":%lld,\"failed_last_hour\":%lld,\"scheduled\":%lld",
               (long long)q.n[MSG_PENDING], (long long)q.n[MSG_FAILED], (long long)q.n[MSG_IN_FLIGHT],
               (long long)q.n[MSG_DEAD_LETTER], (long long)q.delivered_last_hour, (long long)q.failed_last_hour,
               (long long)q.scheduled);
    if (q.has_oldest)
        buf_printf(b, ",\"oldest_pending\":%lld,\"oldest_pending_age_ms\":%lld", (long long)q.oldest_pending,
                   (long long)(now > q.oldest_pending ? now - q.oldest_pending : 0));
    else
        buf_puts(b, ",\"oldest_pending\":null,\"oldest_pending_age_ms\":null");
    if (q.has_avg)
        buf_printf(b, ",\"avg_delivery_ms_last_hour\":%.1f}}\n", q.avg_delivery_ms);
    else
        buf_puts(b, ",\"avg_delivery_ms_last_hour\":null}}\n");
    return b->failed ? oom(st) : 0;
}

/* ---- endpoint.list ---- */

struct list_ctx {
    struct buf *b;
    int n;
    int64_t now;
};

static void put_latency(struct buf *b, const struct store_health *h)
{
    buf_puts(b, ",\"p50_ms\":");
    put_int(b, h->has_latency ? h->p50_ms : -1, -1);
    buf_puts(b, ",\"p95_ms\":");
    put_int(b, h->has_latency ? h->p95_ms : -1, -1);
    buf_puts(b, ",\"p99_ms\":");
    put_int(b, h->has_latency ? h->p99_ms : -1, -1);
    buf_printf(b, ",\"sample_count\":%lld,\"state\":", (long long)h->sample_count);
    buf_json_str(b, breaker_state_name((enum breaker_state)h->state));
}

/* Credentials in the URL are masked as in attempt logs (urlmask.h). */
static void put_shown_url(struct buf *b, const struct store_endpoint_info *e)
{
    struct buf shown = {0};
    cJSON *s = NULL;
    const cJSON *mp = NULL;

    if (e->settings && strstr(e->settings, "\"mask_params\"") && (s = cJSON_Parse(e->settings)))
        mp = cJSON_GetObjectItemCaseSensitive(s, "mask_params");
    if (e->url && urlmask_url(e->url, cJSON_IsString(mp) ? mp->valuestring : NULL, &shown) == 0)
        put_str(b, shown.p);
    else
        put_str(b, NULL);
    cJSON_Delete(s);
    buf_free(&shown);
}

static int list_one(void *arg, const struct store_endpoint_info *e)
{
    struct list_ctx *x = arg;
    struct buf *b = x->b;
    uint32_t ok, fail;

    buf_printf(b, "%s{\"id\":%lld,\"name\":", x->n++ ? "," : "", (long long)e->id);
    put_str(b, e->name);
    buf_puts(b, ",\"url\":");
    put_shown_url(b, e);
    buf_printf(b, ",\"source\":\"%s\",\"paused\":%s,\"status\":\"%s\",\"pause_reason\":",
               e->from_config ? "config" : "api", e->paused ? "true" : "false",
               !e->paused ? "active"
               : e->pause_reason && strncmp(e->pause_reason, "disabled", 8) == 0 ? "disabled"
                                                                                 : "paused");
    if (e->paused)
        put_str(b, e->pause_reason);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"event_types\":");
    put_str(b, e->event_types);
    /* header names and settings are JSON the backend built or validated */
    buf_printf(b, ",\"secrets\":%d,\"headers\":%s,\"settings\":%s", e->nsecrets, e->header_names, e->settings);
    put_latency(b, &e->h);
    buf_printf(b, ",\"consecutive_failures\":%lld,\"failure_threshold\":", (long long)e->h.consecutive_failures);
    put_int(b, e->h.failure_threshold, 0);
    buf_printf(b, ",\"slow\":%s,\"concurrency_limit\":", e->h.slow_since ? "true" : "false");
    put_int(b, e->h.concurrency_limit, 0);
    buf_printf(b, ",\"queue\":{\"pending\":%lld,\"failed\":%lld,\"in_flight\":%lld,\"delivered\":%lld,"
               "\"dead_letter\":%lld}",
               (long long)e->queue[MSG_PENDING], (long long)e->queue[MSG_FAILED], (long long)e->queue[MSG_IN_FLIGHT],
               (long long)e->queue[MSG_DELIVERED], (long long)e->queue[MSG_DEAD_LETTER]);
    epstats_get(e->id, x->now, &ok, &fail);
    buf_printf(b, ",\"last_10s\":{\"delivered\":%u,\"failed\":%u},\"oldest_pending_age_ms\":", ok, fail);
    if (e->oldest_waiting)
        buf_printf(b, "%lld}", (long long)(x->now > e->oldest_waiting ? x->now - e->oldest_waiting : 0));
    else
        buf_puts(b, "null}");
    return b->failed;
}

static int do_endpoint_list(struct store *st, struct req *r)
{
    struct list_ctx x = {&r->reply, 0, util_now_ms()};
    int rc;

    buf_puts(x.b, "{\"ok\":true,\"endpoints\":[");
    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    rc = st->ops->endpoint_list(st, 1, list_one, &x);
    st->ops->snapshot_end(st);
    if (rc < 0)
        return -1;
    buf_puts(x.b, "]}\n");
    return x.b->failed ? oom(st) : 0;
}

/* ---- dead_letters, slow ---- */

static int dead_one(void *arg, const struct store_dead_group *g)
{
    struct list_ctx *x = arg;
    struct buf *b = x->b;

    buf_puts(b, x->n++ ? ",{\"endpoint\":" : "{\"endpoint\":");
    put_str(b, g->endpoint);
    buf_printf(b, ",\"dead_count\":%lld,\"primary_error\":", (long long)g->dead_count);
    put_str(b, g->primary_error_class);
    buf_puts(b, ",\"example_error\":");
    put_str(b, g->example_error);
    buf_puts(b, ",\"primary_status_code\":");
    put_int(b, g->primary_status_code, 0);
    buf_printf(b, ",\"first_dead\":%lld,\"last_dead\":%lld,\"avg_attempts\":%lld}", (long long)g->first_dead,
               (long long)g->last_dead, (long long)g->avg_attempts);
    return b->failed;
}

static int do_dead_letters(struct store *st, struct req *r, int64_t now)
{
    struct list_ctx x = {&r->reply, 0, 0};

    buf_printf(x.b, "{\"ok\":true,\"hours\":%lld,\"endpoints\":[", (long long)r->p.hours);
    if (st->ops->dead_letters(st, now - r->p.hours * HOUR_MS, DEAD_LETTERS_MAX, dead_one, &x) < 0)
        return -1;
    buf_puts(x.b, "]}\n");
    return x.b->failed ? oom(st) : 0;
}

static int slow_one(void *arg, const struct store_endpoint_info *e)
{
    struct list_ctx *x = arg;
    struct buf *b = x->b;

    buf_puts(b, x->n++ ? ",{\"name\":" : "{\"name\":");
    put_str(b, e->name);
    put_latency(b, &e->h);
    buf_puts(b, "}");
    return b->failed;
}

static int do_slow(struct store *st, const struct config *c, struct req *r)
{
    struct list_ctx x = {&r->reply, 0, 0};
    int64_t thr = r->p.p95_ms > 0 ? r->p.p95_ms : c->slow_p95_ms;

    buf_printf(x.b, "{\"ok\":true,\"p95_ms\":%lld,\"endpoints\":[", (long long)thr);
    if (st->ops->slow_endpoints(st, thr, c->min_samples, slow_one, &x) < 0)
        return -1;
    buf_puts(x.b, "]}\n");
    return x.b->failed ? oom(st) : 0;
}

/* ---- metrics ---- */

struct eps {
    struct store_endpoint_info *v;
    size_t n, cap;
};

/* The list callback's strings live only during the call: keep the name. */
static int keep_endpoint(void *arg, const struct store_endpoint_info *e)
{
    struct eps *x = arg;

    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 32;
        struct store_endpoint_info *nv = realloc(x->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        x->v = nv;
        x->cap = nc;
    }
    x->v[x->n] = *e;
    memset(x->v[x->n].queue, 0, sizeof x->v[x->n].queue);
    x->v[x->n].url = x->v[x->n].event_types = x->v[x->n].header_names = x->v[x->n].settings = NULL;
    x->v[x->n].h.endpoint_url = NULL;
    if (!(x->v[x->n].name = strdup(e->name ? e->name : "")))
        return -1;
    x->n++;
    return 0;
}

int query_metrics_text(struct store *st, struct buf *out)
{
    struct metrics_snapshot m;
    struct store_stats q;
    struct counters cn;
    struct eps eps = {0};
    uint64_t *filtered = NULL;
    size_t i;
    int rc = -1;
    int64_t now = util_now_ms();

    memset(&m, 0, sizeof m);
    if (st->ops->snapshot_begin(st) < 0)
        return -1;
    if (st->ops->queue_stats(st, now, 1, &q) < 0 || st->ops->endpoint_list(st, 0, keep_endpoint, &eps) < 0)
        goto out;
    m.version = HOOKD_VERSION;
    memcpy(m.queue, q.n, sizeof m.queue);
    m.scheduled = q.scheduled;
    m.has_oldest_pending = q.has_oldest;
    m.oldest_pending_age_ms = q.has_oldest && now > q.oldest_pending ? now - q.oldest_pending : 0;
    counters_read(&cn);
    memcpy(m.outcomes, cn.outcomes, sizeof m.outcomes);
    memcpy(m.bucket, cn.bucket, sizeof m.bucket);
    m.sum_ms = cn.sum_ms;
    memcpy(m.ahead, cn.ahead, sizeof m.ahead);
    m.eps = eps.v;
    m.neps = eps.n;
    if (eps.n && (filtered = calloc(eps.n, sizeof *filtered)))
        for (i = 0; i < eps.n; i++)
            filtered[i] = counters_filtered_get(eps.v[i].id);
    m.filtered = filtered;
    rc = metrics_render(&m, out) < 0 ? oom(st) : 0;
out:
    st->ops->snapshot_end(st);
    for (i = 0; i < eps.n; i++)
        free((char *)eps.v[i].name);
    free(eps.v);
    free(filtered);
    return rc;
}

static int do_metrics(struct store *st, struct req *r)
{
    struct buf text = {0};
    int rc = query_metrics_text(st, &text);

    if (rc == 0) {
        buf_puts(&r->reply, "{\"ok\":true,\"text\":");
        buf_json_str(&r->reply, text.p ? text.p : "");
        buf_puts(&r->reply, "}\n");
        if (r->reply.failed)
            rc = oom(st);
    }
    buf_free(&text);
    return rc;
}

int query_answer(struct store *st, const struct config *c, struct req *r)
{
    int64_t now = util_now_ms();

    buf_reset(&r->reply);
    switch (r->p.op) {
    case OP_GET:
        return r->p.id ? do_message(st, r, get_message) : do_by_event(st, r, get_message);
    case OP_ATTEMPTS:
        return r->p.id ? do_message(st, r, attempts_of) : do_by_event(st, r, attempts_of);
    case OP_MESSAGES:
        return do_messages(st, r);
    case OP_STATS:
        return do_stats(st, r, now);
    case OP_ENDPOINT_LIST:
        return do_endpoint_list(st, r);
    case OP_DEAD_LETTERS:
        return do_dead_letters(st, r, now);
    case OP_SLOW:
        return do_slow(st, c, r);
    case OP_METRICS:
        return do_metrics(st, r);
    case OP_REPORT:
        return query_report(st, c, r, now);
    default:
        req_error(r, PERR_INTERNAL, "op %s is not a query", proto_op_name(r->p.op));
        return 0;
    }
}
