/* metrics.h - Prometheus text exposition (format 0.0.4), pure: the reader
 * gathers numbers into a struct metrics_snapshot, metrics_render turns them
 * into text. No I/O and no globals, so unit tests drive it directly.
 *
 * Series (every family has # HELP and # TYPE):
 *   hookd_up 1, hookd_build_info{version} 1
 *   hookd_queue_messages{status}            gauge, rows per queue status
 *                                           (and "scheduled": delayed rows
 *                                           not due yet, not in pending)
 *   hookd_dead_letters                      gauge, = queue status dead_letter
 *                                           (kept for dashboards that want a
 *                                           label-free series to alert on)
 *   hookd_oldest_pending_age_seconds        gauge, 0 when nothing waits
 *   hookd_deliveries_total{outcome}         counter, attempts since start by
 *                                           delivered|retry|dead_letter|gone
 *   hookd_attempt_duration_seconds          histogram of attempt response time
 *   hookd_claimed_ahead_total{result}       counter, jobs claimed ahead that
 *                                           started in a request's place or
 *                                           were returned untried
 *   hookd_endpoint_concurrency_limit{endpoint} gauge, the adaptive limit
 *   hookd_breaker_state{endpoint}           gauge, 0 closed, 1 half_open,
 *                                           2 open (ordered by severity so
 *                                           "> 0" means "not healthy")
 *   hookd_endpoint_latency_seconds{endpoint,percentile="50|95|99"}
 *                                           gauge, the rolled-up p50/p95/p99
 *                                           of endpoint_health; absent while
 *                                           an endpoint has no samples.
 *                                           Seconds, not ms, and "percentile"
 *                                           rather than "quantile": promtool
 *                                           rejects "_ms" names and a
 *                                           quantile label outside summaries.
 *   hookd_endpoint_latency_samples{endpoint} gauge, attempts behind them
 *   hookd_endpoint_filtered_total{endpoint} counter, messages its filter
 *                                           kept out since start (absent
 *                                           until the first) */
#ifndef HOOKD_METRICS_H
#define HOOKD_METRICS_H
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "util.h"

/* Upper bounds of the finite histogram buckets, in ms (attempt durations
 * are whole ms, so integer bounds bucket them exactly). */
#define METRICS_NBUCKETS 11
extern const int64_t metrics_bucket_ms[METRICS_NBUCKETS];

/* Indexed like enum outcome (delivered, retry, dead, gone). */
#define METRICS_NOUTCOMES 4

struct metrics_snapshot {
    const char *version;
    int64_t queue[MSG__COUNT];
    int64_t scheduled;                       /* pending rows delayed past now */
    int has_oldest_pending;
    int64_t oldest_pending_age_ms;
    uint64_t outcomes[METRICS_NOUTCOMES];
    /* Per-bucket (not cumulative) counts; [METRICS_NBUCKETS] is above the
     * last bound. _count is their sum, so +Inf always equals _count even
     * when the counters were read while the writer was adding to them. */
    uint64_t bucket[METRICS_NBUCKETS + 1];
    uint64_t sum_ms;
    uint64_t ahead[2];                       /* returned, started */
    const struct store_endpoint_info *eps;   /* name, h.state, h.p50_ms.. */
    size_t neps;
    const uint64_t *filtered;                /* per eps entry; NULL: none */
};

/* Index of the bucket an observation of ms falls into (0..METRICS_NBUCKETS). */
size_t metrics_bucket_index(int64_t ms);

/* Append the exposition text to out. 0, or -1 when out of memory. */
int metrics_render(const struct metrics_snapshot *m, struct buf *out);

/* Append s as a label value: backslash, double quote and newline escaped
 * as the exposition format requires (no surrounding quotes). */
int metrics_label_escape(struct buf *out, const char *s);

#endif
