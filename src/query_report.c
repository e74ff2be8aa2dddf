/* query_report.c - the answer to the report op: the history time series
 * of the busiest endpoints over a period, every endpoint's totals in one
 * series, dead letters by error class and the slow endpoints, as JSON for
 * `hookd report` to draw (report.c). Two passes over endpoint_history:
 * the first ranks the endpoints and sums all of them per bucket, the
 * second keeps the series of the chosen ones only, so memory stays small
 * with 10,000 endpoints over 7 days. */
#include "query_report.h"
#include "breaker.h"

#include <stdlib.h>
#include <string.h>

#define HOUR_MS 3600000LL

struct ep_name {
    int64_t id;
    char *name;
    int state;                 /* enum breaker_state */
    const char *status;        /* active, paused, disabled (static) */
    int has_latency;
    int64_t p50, p95, p99;
    /* pass 1 */
    int64_t attempts, opens;
    int chosen;
};

struct rep {
    const struct config *c;
    int64_t since, step, now;
    struct ep_name *ep;
    size_t nep, cap;
    int64_t (*tot)[3];         /* per bucket: delivered, failed, opens */
    size_t nb;
    struct buf *b;
    int64_t cur;               /* pass 2: the endpoint being written (0: none) */
    int first_row;
};

static int add_name(void *ctx, const struct store_endpoint_info *e)
{
    struct rep *x = ctx;
    struct ep_name *n;

    if (x->nep == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        struct ep_name *nv = realloc(x->ep, nc * sizeof *nv);
        if (!nv)
            return -1;
        x->ep = nv;
        x->cap = nc;
    }
    n = &x->ep[x->nep];
    memset(n, 0, sizeof *n);
    if (!(n->name = strdup(e->name ? e->name : "")))
        return -1;
    n->id = e->id;
    n->state = e->h.state;
    n->status = !e->paused ? "active"
                : e->pause_reason && strncmp(e->pause_reason, "disabled", 8) == 0 ? "disabled"
                                                                                   : "paused";
    n->has_latency = e->h.has_latency;
    n->p50 = e->h.p50_ms;
    n->p95 = e->h.p95_ms;
    n->p99 = e->h.p99_ms;
    x->nep++;
    return 0;
}

static int by_id(const void *a, const void *b)
{
    const struct ep_name *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static struct ep_name *find(struct rep *x, int64_t id)
{
    struct ep_name key;

    key.id = id;
    return bsearch(&key, x->ep, x->nep, sizeof *x->ep, by_id);
}

static int pass1(void *ctx, const struct store_history *h)
{
    struct rep *x = ctx;
    struct ep_name *e = find(x, h->endpoint_id);
    int64_t i = (h->bucket_at - x->since) / x->step;

    if (e) {
        e->attempts += h->delivered + h->failed;
        e->opens += h->breaker_opens;
    }
    if (i >= 0 && (size_t)i < x->nb) {
        x->tot[i][0] += h->delivered;
        x->tot[i][1] += h->failed;
        x->tot[i][2] += h->breaker_opens;
    }
    return 0;
}

static void put_ms(struct buf *b, int has, int64_t v)
{
    if (has)
        buf_printf(b, ",%lld", (long long)v);
    else
        buf_puts(b, ",null");
}

static void close_endpoint(struct rep *x)
{
    if (x->cur)
        buf_puts(x->b, "]}");
    x->cur = 0;
}

static void open_endpoint(struct rep *x, const struct ep_name *e)
{
    buf_puts(x->b, x->first_row ? "{\"name\":" : ",{\"name\":");
    x->first_row = 0;
    buf_json_str(x->b, e->name);
    buf_printf(x->b, ",\"state\":\"%s\",\"status\":\"%s\",\"attempts\":%lld,\"breaker_opens\":%lld",
               breaker_state_name((enum breaker_state)e->state), e->status, (long long)e->attempts,
               (long long)e->opens);
    buf_puts(x->b, ",\"p50_ms\":");
    if (e->has_latency)
        buf_printf(x->b, "%lld,\"p95_ms\":%lld,\"p99_ms\":%lld", (long long)e->p50, (long long)e->p95,
                   (long long)e->p99);
    else
        buf_puts(x->b, "null,\"p95_ms\":null,\"p99_ms\":null");
    buf_puts(x->b, ",\"series\":[");
    x->cur = e->id;
}

static int pass2(void *ctx, const struct store_history *h)
{
    struct rep *x = ctx;
    struct ep_name *e = find(x, h->endpoint_id);
    int first;

    if (!e || !e->chosen)
        return 0;
    first = x->cur != h->endpoint_id;
    if (first) {
        close_endpoint(x);
        open_endpoint(x, e);
    }
    buf_printf(x->b, "%s[%lld,%lld,%lld,%lld", first ? "" : ",", (long long)h->bucket_at, (long long)h->delivered,
               (long long)h->failed, (long long)h->breaker_opens);
    put_ms(x->b, h->has_latency, h->p50_ms);
    put_ms(x->b, h->has_latency, h->p95_ms);
    put_ms(x->b, h->has_latency, h->p99_ms);
    buf_puts(x->b, "]");
    return x->b->failed;
}

static int busier(const void *a, const void *b)
{
    const struct ep_name *const *x = a, *const *y = b;
    int64_t ka = (*x)->attempts + 1000 * (*x)->opens, kb = (*y)->attempts + 1000 * (*y)->opens;

    if (ka != kb)
        return ka > kb ? -1 : 1;
    return strcmp((*x)->name, (*y)->name);
}

static int class_one(void *ctx, const char *cls, int64_t n)
{
    struct rep *x = ctx;

    buf_puts(x->b, x->first_row ? "[" : ",[");
    x->first_row = 0;
    buf_json_str(x->b, cls);
    buf_printf(x->b, ",%lld]", (long long)n);
    return x->b->failed;
}

static int slow_one(void *ctx, const struct store_endpoint_info *e)
{
    struct rep *x = ctx;

    buf_puts(x->b, x->first_row ? "{\"name\":" : ",{\"name\":");
    x->first_row = 0;
    buf_json_str(x->b, e->name ? e->name : "");
    buf_printf(x->b, ",\"p50_ms\":%lld,\"p95_ms\":%lld,\"p99_ms\":%lld,\"sample_count\":%lld}",
               (long long)e->h.p50_ms, (long long)e->h.p95_ms, (long long)e->h.p99_ms,
               (long long)e->h.sample_count);
    return x->b->failed;
}

int query_report(struct store *st, const struct config *c, struct req *r, int64_t now)
{
    struct rep x;
    struct ep_name **rank = NULL;
    size_t i, nchosen = 0, active = 0;
    int rc = -1;

    memset(&x, 0, sizeof x);
    x.c = c;
    x.b = &r->reply;
    x.now = now;
    x.step = c->history_bucket_ms;
    x.since = now - r->p.hours * HOUR_MS;
    /* at most QUERY_REPORT_BUCKETS buckets: a year of one-second buckets
     * would be a gigabyte of totals; the reply's since says where it
     * starts */
    if ((now - x.since) / x.step > QUERY_REPORT_BUCKETS)
        x.since = now - QUERY_REPORT_BUCKETS * x.step;
    x.since -= x.since % x.step;
    x.nb = (size_t)((now - x.since) / x.step + 1);
    if (!(x.tot = calloc(x.nb, sizeof *x.tot)))
        goto oom;
    if (st->ops->snapshot_begin(st) < 0)
        goto out;
    if (st->ops->endpoint_list(st, 0, add_name, &x) < 0)
        goto out_snap;
    if (x.nep && !(rank = malloc(x.nep * sizeof *rank)))
        goto oom_snap;
    qsort(x.ep, x.nep, sizeof *x.ep, by_id);   /* listed by name; looked up by id */
    if (st->ops->history(st, x.since, pass1, &x) < 0)
        goto out_snap;
    for (i = 0; i < x.nep; i++) {
        rank[i] = &x.ep[i];
        active += x.ep[i].attempts || x.ep[i].opens;
    }
    qsort(rank, x.nep, sizeof *rank, busier);
    for (i = 0; i < x.nep && nchosen < QUERY_REPORT_ENDPOINTS; i++)
        if (rank[i]->attempts || rank[i]->opens) {
            rank[i]->chosen = 1;
            nchosen++;
        }
    buf_printf(x.b, "{\"ok\":true,\"report\":{\"since\":%lld,\"until\":%lld,\"bucket_ms\":%lld,\"hours\":%lld,"
               "\"endpoints_total\":%zu,\"endpoints_active\":%zu,\"endpoints\":[",
               (long long)x.since, (long long)now, (long long)x.step, (long long)r->p.hours, x.nep, active);
    x.first_row = 1;
    if (st->ops->history(st, x.since, pass2, &x) < 0)
        goto out_snap;
    close_endpoint(&x);
    buf_puts(x.b, "],\"totals\":[");
    for (i = 0; i < x.nb; i++)
        buf_printf(x.b, "%s[%lld,%lld,%lld,%lld]", i ? "," : "", (long long)(x.since + (int64_t)i * x.step),
                   (long long)x.tot[i][0], (long long)x.tot[i][1], (long long)x.tot[i][2]);
    buf_puts(x.b, "],\"dead_letters\":[");
    x.first_row = 1;
    if (st->ops->dead_classes(st, x.since, class_one, &x) < 0)
        goto out_snap;
    buf_printf(x.b, "],\"slow_p95_ms\":%lld,\"slow\":[", (long long)c->slow_p95_ms);
    x.first_row = 1;
    if (st->ops->slow_endpoints(st, c->slow_p95_ms, c->min_samples, slow_one, &x) < 0)
        goto out_snap;
    buf_puts(x.b, "]}}\n");
    if (x.b->failed)
        goto oom_snap;
    rc = 0;
    goto out_snap;
oom_snap:
    store_fail(st, STORE_E_NOMEM, "report: out of memory");
out_snap:
    st->ops->snapshot_end(st);
    goto out;
oom:
    store_fail(st, STORE_E_NOMEM, "report: out of memory");
out:
    for (i = 0; i < x.nep; i++)
        free(x.ep[i].name);
    free(x.ep);
    free(x.tot);
    free(rank);
    return rc;
}
