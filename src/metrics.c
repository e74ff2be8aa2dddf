/* metrics.c - Prometheus text rendering (pure; see metrics.h). */
#include "metrics.h"
#include "breaker.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const int64_t metrics_bucket_ms[METRICS_NBUCKETS] = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};


/* Same order as enum outcome; "dead_letter" rather than outcome_name()'s
 * spelling so the label matches the queue status it produces. */
static const char *const outcome_label[METRICS_NOUTCOMES] = {"delivered", "retry", "dead_letter", "gone"};

size_t metrics_bucket_index(int64_t ms)
{
    size_t i;

    for (i = 0; i < METRICS_NBUCKETS; i++)
        if (ms <= metrics_bucket_ms[i])
            return i;
    return METRICS_NBUCKETS;
}

/* Whole ms as decimal seconds without float rounding: 5 -> "0.005",
 * 2500 -> "2.5", 10000 -> "10". Also gives the canonical le labels. */
static void fmt_seconds(int64_t ms, char *out, size_t n)
{
    uint64_t mag = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    unsigned frac = (unsigned)(mag % 1000);
    int len;

    len = snprintf(out, n, "%s%" PRIu64, ms < 0 ? "-" : "", mag / 1000);
    if (frac == 0 || len < 0 || (size_t)len >= n)
        return;
    char f[8];
    snprintf(f, sizeof f, ".%03u", frac);
    /* trailing zeros carry no information and make le labels non-canonical */
    for (size_t k = strlen(f); f[k - 1] == '0'; k--)
        f[k - 1] = '\0';
    snprintf(out + len, n - (size_t)len, "%s", f);
}

int metrics_label_escape(struct buf *out, const char *s)
{
    const char *p;

    for (p = s ? s : ""; *p; p++) {
        int rc;
        if (*p == '\\')
            rc = buf_puts(out, "\\\\");
        else if (*p == '"')
            rc = buf_puts(out, "\\\"");
        else if (*p == '\n')
            rc = buf_puts(out, "\\n");
        else
            rc = buf_append(out, p, 1);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int family(struct buf *b, const char *name, const char *type, const char *help)
{
    return buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int breaker_value(int state)
{
    /* ordered by severity, not by enum breaker_state's order */
    switch (state) {
    case BREAKER_OPEN:
        return 2;
    case BREAKER_HALF_OPEN:
        return 1;
    default:
        return 0;
    }
}

static int render_endpoints(const struct metrics_snapshot *m, struct buf *b)
{
    static const char *const pname[3] = {"50", "95", "99"};
    size_t i;
    int q;

    if (family(b, "hookd_breaker_state", "gauge",
               "Circuit breaker state per endpoint (0 closed, 1 half_open, 2 open).") < 0)
        return -1;
    for (i = 0; i < m->neps; i++) {
        if (buf_puts(b, "hookd_breaker_state{endpoint=\"") < 0 || metrics_label_escape(b, m->eps[i].name) < 0 ||
            buf_printf(b, "\"} %d\n", breaker_value(m->eps[i].h.state)) < 0)
            return -1;
    }
    if (family(b, "hookd_endpoint_concurrency_limit", "gauge",
               "Requests that may be in flight to the endpoint now (the adaptive limit).") < 0)
        return -1;
    for (i = 0; i < m->neps; i++) {
        if (m->eps[i].h.concurrency_limit <= 0)
            continue;   /* never saved yet */
        if (buf_puts(b, "hookd_endpoint_concurrency_limit{endpoint=\"") < 0 ||
            metrics_label_escape(b, m->eps[i].name) < 0 ||
            buf_printf(b, "\"} %" PRId64 "\n", m->eps[i].h.concurrency_limit) < 0)
            return -1;
    }
    if (family(b, "hookd_endpoint_latency_seconds", "gauge",
               "Attempt response time percentiles per endpoint over the latency window.") < 0)
        return -1;
    for (i = 0; i < m->neps; i++) {
        const struct store_endpoint_info *e = &m->eps[i];
        const int64_t v[3] = {e->h.p50_ms, e->h.p95_ms, e->h.p99_ms};
        if (!e->h.has_latency)
            continue;
        for (q = 0; q < 3; q++) {
            char s[32];
            fmt_seconds(v[q], s, sizeof s);
            if (buf_puts(b, "hookd_endpoint_latency_seconds{endpoint=\"") < 0 || metrics_label_escape(b, e->name) < 0 ||
                buf_printf(b, "\",percentile=\"%s\"} %s\n", pname[q], s) < 0)
                return -1;
        }
    }
    if (family(b, "hookd_endpoint_latency_samples", "gauge",
               "Attempts in the latency window behind the percentiles per endpoint.") < 0)
        return -1;
    for (i = 0; i < m->neps; i++) {
        if (buf_puts(b, "hookd_endpoint_latency_samples{endpoint=\"") < 0 || metrics_label_escape(b, m->eps[i].name) < 0 ||
            buf_printf(b, "\"} %" PRId64 "\n", m->eps[i].h.sample_count) < 0)
            return -1;
    }
    if (family(b, "hookd_endpoint_filtered_total", "counter",
               "Messages the endpoint's filter kept out since start (absent until the first).") < 0)
        return -1;
    for (i = 0; m->filtered && i < m->neps; i++) {
        if (!m->filtered[i])
            continue;
        if (buf_puts(b, "hookd_endpoint_filtered_total{endpoint=\"") < 0 ||
            metrics_label_escape(b, m->eps[i].name) < 0 || buf_printf(b, "\"} %" PRIu64 "\n", m->filtered[i]) < 0)
            return -1;
    }
    return 0;
}

static int render_histogram(const struct metrics_snapshot *m, struct buf *b)
{
    uint64_t cum = 0;
    char s[32];
    size_t i;

    if (family(b, "hookd_attempt_duration_seconds", "histogram",
               "Delivery attempt response time since start.") < 0)
        return -1;
    for (i = 0; i < METRICS_NBUCKETS; i++) {
        cum += m->bucket[i];
        fmt_seconds(metrics_bucket_ms[i], s, sizeof s);
        if (buf_printf(b, "hookd_attempt_duration_seconds_bucket{le=\"%s\"} %" PRIu64 "\n", s, cum) < 0)
            return -1;
    }
    cum += m->bucket[METRICS_NBUCKETS];
    fmt_seconds(m->sum_ms > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)m->sum_ms, s, sizeof s);
    if (buf_printf(b, "hookd_attempt_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum) < 0 ||
        buf_printf(b, "hookd_attempt_duration_seconds_sum %s\n", s) < 0 ||
        buf_printf(b, "hookd_attempt_duration_seconds_count %" PRIu64 "\n", cum) < 0)
        return -1;
    return 0;
}

int metrics_render(const struct metrics_snapshot *m, struct buf *b)
{
    size_t start = b->len;
    char s[32];
    int i;

    if (family(b, "hookd_up", "gauge", "1 while the daemon is serving.") < 0 || buf_puts(b, "hookd_up 1\n") < 0)
        goto fail;
    if (family(b, "hookd_build_info", "gauge", "Build information; the value is always 1.") < 0 ||
        buf_puts(b, "hookd_build_info{version=\"") < 0 || metrics_label_escape(b, m->version) < 0 ||
        buf_puts(b, "\"} 1\n") < 0)
        goto fail;
    if (family(b, "hookd_queue_messages", "gauge", "Messages in the queue by status.") < 0)
        goto fail;
    for (i = 0; i < MSG__COUNT; i++)
        if (buf_printf(b, "hookd_queue_messages{status=\"%s\"} %" PRId64 "\n", msg_status_name((enum msg_status)i),
                       m->queue[i]) < 0)
            goto fail;
    if (buf_printf(b, "hookd_queue_messages{status=\"scheduled\"} %" PRId64 "\n", m->scheduled) < 0)
        goto fail;
    if (family(b, "hookd_dead_letters", "gauge", "Messages in the dead letter queue.") < 0 ||
        buf_printf(b, "hookd_dead_letters %" PRId64 "\n", m->queue[MSG_DEAD_LETTER]) < 0)
        goto fail;
    fmt_seconds(m->has_oldest_pending && m->oldest_pending_age_ms > 0 ? m->oldest_pending_age_ms : 0, s, sizeof s);
    if (family(b, "hookd_oldest_pending_age_seconds", "gauge",
               "Age of the oldest pending or awaiting-retry message; 0 when none.") < 0 ||
        buf_printf(b, "hookd_oldest_pending_age_seconds %s\n", s) < 0)
        goto fail;
    if (family(b, "hookd_deliveries_total", "counter", "Delivery attempts since start by outcome.") < 0)
        goto fail;
    for (i = 0; i < METRICS_NOUTCOMES; i++)
        if (buf_printf(b, "hookd_deliveries_total{outcome=\"%s\"} %" PRIu64 "\n", outcome_label[i],
                       m->outcomes[i]) < 0)
            goto fail;
    if (family(b, "hookd_claimed_ahead_total", "counter",
               "Jobs claimed ahead of a free slot: started in a finished request's place, or returned untried.") < 0 ||
        buf_printf(b, "hookd_claimed_ahead_total{result=\"started\"} %" PRIu64 "\n", m->ahead[1]) < 0 ||
        buf_printf(b, "hookd_claimed_ahead_total{result=\"returned\"} %" PRIu64 "\n", m->ahead[0]) < 0)
        goto fail;
    if (render_histogram(m, b) < 0 || render_endpoints(m, b) < 0)
        goto fail;
    return 0;
fail:
    /* no half-rendered exposition: a truncated file would confuse scrapers */
    b->len = start;
    if (b->p)
        b->p[start] = '\0';
    return -1;
}
