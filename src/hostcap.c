/* hostcap.c - per-host transfer counts and waiting lines of the delivery
 * pool (see hostcap.h). */
#include "hostcap.h"
#include "deliver.h"

#include <stdlib.h>

struct host {
    struct host *next;          /* hash chain */
    uint64_t h;
    int active;
    struct djob *wait, **wtail;
};

struct hostcap {
    int limit;
    size_t nb, n;               /* buckets (power of two), hosts */
    struct host **b;
    size_t waiting;
};

static size_t bucket(uint64_t h, size_t nb)
{
    return (size_t)(h * 0x9E3779B97F4A7C15ull >> 20) & (nb - 1);
}

struct hostcap *hostcap_new(int limit)
{
    struct hostcap *hc = calloc(1, sizeof *hc);

    if (!hc)
        return NULL;
    hc->limit = limit < 1 ? 1 : limit;
    hc->nb = 64;
    if (!(hc->b = calloc(hc->nb, sizeof *hc->b))) {
        free(hc);
        return NULL;
    }
    return hc;
}

void hostcap_free(struct hostcap *hc)
{
    size_t i;

    if (!hc)
        return;
    for (i = 0; i < hc->nb; i++) {
        struct host *x = hc->b[i], *next;
        for (; x; x = next) {
            next = x->next;
            free(x);
        }
    }
    free(hc->b);
    free(hc);
}

static struct host *find(const struct hostcap *hc, uint64_t h)
{
    struct host *x = hc->b[bucket(h, hc->nb)];

    while (x && x->h != h)
        x = x->next;
    return x;
}

static void grow(struct hostcap *hc)
{
    size_t nb = hc->nb * 2, i;
    struct host **b = calloc(nb, sizeof *b);

    if (!b)
        return;  /* longer chains, still correct */
    for (i = 0; i < hc->nb; i++) {
        struct host *x = hc->b[i], *next;
        for (; x; x = next) {
            size_t k = bucket(x->h, nb);
            next = x->next;
            x->next = b[k];
            b[k] = x;
        }
    }
    free(hc->b);
    hc->b = b;
    hc->nb = nb;
}

/* a host with nothing counted and nothing waiting is forgotten: the
 * table holds only hosts with transfers, not every host ever seen */
static void forget(struct hostcap *hc, struct host *x)
{
    struct host **p = &hc->b[bucket(x->h, hc->nb)];

    while (*p != x)
        p = &(*p)->next;
    *p = x->next;
    free(x);
    hc->n--;
}

int hostcap_admit(struct hostcap *hc, struct djob *j)
{
    uint64_t h = j->ep->host_hash;
    struct host *x = find(hc, h);

    if (!x) {
        if (!(x = calloc(1, sizeof *x)))
            return -1;
        x->h = h;
        x->wtail = &x->wait;
        if (hc->n + 1 > hc->nb)
            grow(hc);
        x->next = hc->b[bucket(h, hc->nb)];
        hc->b[bucket(h, hc->nb)] = x;
        hc->n++;
    }
    if (x->active < hc->limit) {
        x->active++;
        return 0;
    }
    j->next = NULL;
    *x->wtail = j;
    x->wtail = &j->next;
    hc->waiting++;
    return 1;
}

struct djob *hostcap_release(struct hostcap *hc, uint64_t h)
{
    struct host *x = find(hc, h);
    struct djob *j;

    if (!x)
        return NULL;  /* an uncounted (out of memory) transfer */
    if ((j = x->wait)) {
        if (!(x->wait = j->next))
            x->wtail = &x->wait;
        j->next = NULL;
        hc->waiting--;
        return j;     /* takes over the slot that was released */
    }
    if (--x->active <= 0)
        forget(hc, x);
    return NULL;
}

struct djob *hostcap_drain(struct hostcap *hc)
{
    struct djob *out = NULL, **tail = &out;
    size_t i;

    for (i = 0; i < hc->nb; i++) {
        struct host *x;
        for (x = hc->b[i]; x; x = x->next) {
            if (!x->wait)
                continue;
            *tail = x->wait;
            tail = x->wtail;
            x->wait = NULL;
            x->wtail = &x->wait;
        }
    }
    hc->waiting = 0;
    return out;
}

size_t hostcap_waiting(const struct hostcap *hc)
{
    return hc->waiting;
}

int hostcap_active(const struct hostcap *hc, uint64_t h)
{
    const struct host *x = find(hc, h);

    return x ? x->active : 0;
}
