/* slotq.c - transfer counts and waiting lines per key of a delivery
 * thread (see slotq.h). */
#include "slotq.h"
#include "deliver.h"

#include <stdlib.h>

struct key {
    struct key *next;          /* hash chain */
    uint64_t h;
    int active;
    struct djob *wait, **wtail;
};

struct slotq {
    int limit;
    size_t nb, n;               /* buckets (power of two), keys */
    struct key **b;
    size_t waiting;
};

static size_t bucket(uint64_t h, size_t nb)
{
    return (size_t)(h * 0x9E3779B97F4A7C15ull >> 20) & (nb - 1);
}

struct slotq *slotq_new(int limit)
{
    struct slotq *q = calloc(1, sizeof *q);

    if (!q)
        return NULL;
    q->limit = limit < 1 ? 1 : limit;
    q->nb = 64;
    if (!(q->b = calloc(q->nb, sizeof *q->b))) {
        free(q);
        return NULL;
    }
    return q;
}

void slotq_free(struct slotq *q)
{
    size_t i;

    if (!q)
        return;
    for (i = 0; i < q->nb; i++) {
        struct key *x = q->b[i], *next;
        for (; x; x = next) {
            next = x->next;
            free(x);
        }
    }
    free(q->b);
    free(q);
}

static struct key *find(const struct slotq *q, uint64_t h)
{
    struct key *x = q->b[bucket(h, q->nb)];

    while (x && x->h != h)
        x = x->next;
    return x;
}

static void grow(struct slotq *q)
{
    size_t nb = q->nb * 2, i;
    struct key **b = calloc(nb, sizeof *b);

    if (!b)
        return;  /* longer chains, still correct */
    for (i = 0; i < q->nb; i++) {
        struct key *x = q->b[i], *next;
        for (; x; x = next) {
            size_t k = bucket(x->h, nb);
            next = x->next;
            x->next = b[k];
            b[k] = x;
        }
    }
    free(q->b);
    q->b = b;
    q->nb = nb;
}

/* a key with nothing counted and nothing waiting is forgotten: the
 * table holds only keys with transfers, not every one ever seen */
static void forget(struct slotq *q, struct key *x)
{
    struct key **p = &q->b[bucket(x->h, q->nb)];

    while (*p != x)
        p = &(*p)->next;
    *p = x->next;
    free(x);
    q->n--;
}

static struct key *add(struct slotq *q, uint64_t h)
{
    struct key *x = calloc(1, sizeof *x);

    if (!x)
        return NULL;
    x->h = h;
    x->wtail = &x->wait;
    if (q->n + 1 > q->nb)
        grow(q);
    x->next = q->b[bucket(h, q->nb)];
    q->b[bucket(h, q->nb)] = x;
    q->n++;
    return x;
}

static void hold(struct slotq *q, struct key *x, struct djob *j)
{
    j->next = NULL;
    *x->wtail = j;
    x->wtail = &j->next;
    q->waiting++;
}

int slotq_admit(struct slotq *q, uint64_t h, struct djob *j)
{
    struct key *x = find(q, h);

    if (!x && !(x = add(q, h)))
        return -1;
    if (x->active < q->limit) {
        x->active++;
        return 0;
    }
    hold(q, x, j);
    return 1;
}

int slotq_park(struct slotq *q, uint64_t h, struct djob *j)
{
    struct key *x = find(q, h);

    if (!x || x->active <= 0)
        return -1;
    hold(q, x, j);
    return 0;
}

struct djob *slotq_release(struct slotq *q, uint64_t h)
{
    struct key *x = find(q, h);
    struct djob *j;

    if (!x)
        return NULL;  /* an uncounted (out of memory) transfer */
    if ((j = x->wait)) {
        if (!(x->wait = j->next))
            x->wtail = &x->wait;
        j->next = NULL;
        q->waiting--;
        return j;     /* takes over the slot that was released */
    }
    if (--x->active <= 0)
        forget(q, x);
    return NULL;
}

struct djob *slotq_take(struct slotq *q, uint64_t h)
{
    struct key *x = find(q, h);
    struct djob *out, *j;

    if (!x || !x->wait)
        return NULL;
    out = x->wait;
    for (j = out; j; j = j->next)
        q->waiting--;
    x->wait = NULL;
    x->wtail = &x->wait;
    if (x->active <= 0)
        forget(q, x);
    return out;
}

struct djob *slotq_drain(struct slotq *q)
{
    struct djob *out = NULL, **tail = &out;
    size_t i;

    for (i = 0; i < q->nb; i++) {
        struct key *x;
        for (x = q->b[i]; x; x = x->next) {
            if (!x->wait)
                continue;
            *tail = x->wait;
            tail = x->wtail;
            x->wait = NULL;
            x->wtail = &x->wait;
        }
    }
    q->waiting = 0;
    return out;
}

size_t slotq_waiting(const struct slotq *q)
{
    return q->waiting;
}

int slotq_active(const struct slotq *q, uint64_t h)
{
    const struct key *x = find(q, h);

    return x ? x->active : 0;
}
