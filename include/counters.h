/* counters.h - delivery counters since start (outcomes, the attempt
 * duration histogram) for the metrics. Written by the writer thread once
 * a result is committed, read by whoever renders metrics: relaxed atomics,
 * each counter exact, a scrape may see one attempt counted in one series
 * and not yet in another (Prometheus tolerates that). */
#ifndef HOOKD_COUNTERS_H
#define HOOKD_COUNTERS_H
#include <stdint.h>

#include "metrics.h"

struct counters {
    uint64_t outcomes[METRICS_NOUTCOMES];   /* indexed like enum outcome */
    uint64_t bucket[METRICS_NBUCKETS + 1];  /* per bucket, not cumulative */
    uint64_t sum_ms;
    uint64_t ahead[2];   /* jobs claimed ahead: [0] came back untried, [1] started */
};

void counters_outcome(int outcome, int64_t response_ms);
/* A job claimed ahead (dispatch.c) started in a request's place (1) or
 * came back untried (0). */
void counters_ahead(int started);
void counters_read(struct counters *out);

/* Messages an endpoint's filter kept from it since start, by endpoint id
 * (a small table under a lock: the writer counts, the reader renders). */
void counters_filtered(int64_t endpoint_id);
uint64_t counters_filtered_get(int64_t endpoint_id);

#endif
