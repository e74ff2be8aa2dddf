/* counters.c - delivery counters since start. */
#include "counters.h"

#include <pthread.h>
#include <stdlib.h>
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

/* ---- filtered, per endpoint: open addressing on the id ---- */

struct fslot {
    int64_t id;      /* 0: empty (ids start at 1) */
    uint64_t n;
};
static struct {
    pthread_mutex_t mu;
    struct fslot *v;
    size_t cap, used;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct fslot *fslot(int64_t id, int add)
{
    size_t i;

    if (add && (F.used + 1) * 2 > F.cap) {
        size_t nc = F.cap ? F.cap * 2 : 64, k;
        struct fslot *nv = calloc(nc, sizeof *nv);
        if (!nv)
            return NULL;
        for (k = 0; k < F.cap; k++)
            if (F.v[k].id) {
                for (i = (size_t)F.v[k].id & (nc - 1); nv[i].id; i = (i + 1) & (nc - 1))
                    ;
                nv[i] = F.v[k];
            }
        free(F.v);
        F.v = nv;
        F.cap = nc;
    }
    if (!F.cap)
        return NULL;
    for (i = (size_t)id & (F.cap - 1); F.v[i].id; i = (i + 1) & (F.cap - 1))
        if (F.v[i].id == id)
            return &F.v[i];
    if (!add)
        return NULL;
    F.v[i].id = id;
    F.used++;
    return &F.v[i];
}

void counters_filtered(int64_t endpoint_id)
{
    struct fslot *f;

    if (endpoint_id <= 0)
        return;
    pthread_mutex_lock(&F.mu);
    if ((f = fslot(endpoint_id, 1)))
        f->n++;
    pthread_mutex_unlock(&F.mu);
}

uint64_t counters_filtered_get(int64_t endpoint_id)
{
    struct fslot *f;
    uint64_t n;

    pthread_mutex_lock(&F.mu);
    f = fslot(endpoint_id, 0);
    n = f ? f->n : 0;
    pthread_mutex_unlock(&F.mu);
    return n;
}
