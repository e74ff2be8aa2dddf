/* counters.c - delivery counters since start. */
#include "counters.h"

#include <string.h>

static struct counters C;

void counters_outcome(int outcome, int64_t response_ms)
{
    if (outcome < 0 || outcome >= METRICS_NOUTCOMES)
        return;
    if (response_ms < 0)
        response_ms = 0;
    __atomic_fetch_add(&C.outcomes[outcome], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&C.bucket[metrics_bucket_index(response_ms)], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&C.sum_ms, (uint64_t)response_ms, __ATOMIC_RELAXED);
}

void counters_ahead(int started)
{
    __atomic_fetch_add(&C.ahead[started != 0], 1, __ATOMIC_RELAXED);
}

void counters_read(struct counters *out)
{
    int i;

    for (i = 0; i < 2; i++)
        out->ahead[i] = __atomic_load_n(&C.ahead[i], __ATOMIC_RELAXED);
    for (i = 0; i < METRICS_NOUTCOMES; i++)
        out->outcomes[i] = __atomic_load_n(&C.outcomes[i], __ATOMIC_RELAXED);
    for (i = 0; i <= METRICS_NBUCKETS; i++)
        out->bucket[i] = __atomic_load_n(&C.bucket[i], __ATOMIC_RELAXED);
    out->sum_ms = __atomic_load_n(&C.sum_ms, __ATOMIC_RELAXED);
}
