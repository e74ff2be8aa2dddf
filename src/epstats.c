/* epstats.c - per-endpoint attempt counts over the last seconds. */
#include "epstats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int64_t bucket_sec(int64_t now_ms)
{
    return now_ms >= 0 ? now_ms / 1000 : -((-now_ms + 999) / 1000);
}

void epwin_add(struct epwin *w, int ok, int64_t now_ms)
{
    int64_t s = bucket_sec(now_ms);
    int i = (int)(((s % EPSTATS_SECS) + EPSTATS_SECS) % EPSTATS_SECS);

    if (w->sec[i] != s) {
        w->sec[i] = s;
        w->ok[i] = w->fail[i] = 0;
    }
    if (ok)
        w->ok[i]++;
    else
        w->fail[i]++;
}

void epwin_sum(const struct epwin *w, int64_t now_ms, uint32_t *ok, uint32_t *fail)
{
    int64_t s = bucket_sec(now_ms);
    int i;

    *ok = *fail = 0;
    for (i = 0; i < EPSTATS_SECS; i++)
        if (w->sec[i] > s - EPSTATS_SECS && w->sec[i] <= s) {
            *ok += w->ok[i];
            *fail += w->fail[i];
        }
}

/* open addressing on the endpoint id; ids are never removed (a deleted
 * endpoint's window simply stops changing: ids are not reused) */
struct slot {
    int64_t id;   /* 0: empty */
    struct epwin w;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot *tab;
static size_t cap, used;

static size_t home(int64_t id, size_t n)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 32) & (n - 1);
}

static struct slot *find(int64_t id, int insert)
{
    size_t i;

    if (!tab) {
        if (!insert)
            return NULL;
    } else {
        for (i = home(id, cap);; i = (i + 1) & (cap - 1)) {
            if (tab[i].id == id)
                return &tab[i];
            if (tab[i].id == 0)
                break;
        }
        if (!insert)
            return NULL;
    }
    if ((used + 1) * 2 > cap) {
        size_t nc = cap ? cap * 2 : 64, k;
        struct slot *nt = calloc(nc, sizeof *nt);
        if (!nt)
            return NULL;   /* out of memory: this attempt goes uncounted */
        for (k = 0; k < cap; k++)
            if (tab[k].id) {
                size_t j = home(tab[k].id, nc);
                while (nt[j].id)
                    j = (j + 1) & (nc - 1);
                nt[j] = tab[k];
            }
        free(tab);
        tab = nt;
        cap = nc;
    }
    for (i = home(id, cap); tab[i].id; i = (i + 1) & (cap - 1))
        ;
    tab[i].id = id;
    used++;
    return &tab[i];
}

void epstats_note(int64_t endpoint_id, int ok, int64_t now_ms)
{
    struct slot *s;

    if (endpoint_id <= 0)
        return;
    pthread_mutex_lock(&mu);
    if ((s = find(endpoint_id, 1)))
        epwin_add(&s->w, ok, now_ms);
    pthread_mutex_unlock(&mu);
}

void epstats_get(int64_t endpoint_id, int64_t now_ms, uint32_t *ok, uint32_t *fail)
{
    struct slot *s;

    *ok = *fail = 0;
    pthread_mutex_lock(&mu);
    if ((s = find(endpoint_id, 0)))
        epwin_sum(&s->w, now_ms, ok, fail);
    pthread_mutex_unlock(&mu);
}
