/* netshare.c - TLS session and DNS caches shared across delivery
 * threads, one libcurl share per host bucket (see netshare.h). */
#include "netshare.h"

#include <pthread.h>
#include <stdlib.h>

/* 8 sessions each: 4096 buckets keep 10,000 hosts' sessions with few
 * evictions (about 2.4 hosts a bucket); a share costs ~2 KiB and is only
 * made for a bucket in use */
#define NETSHARE_BUCKETS 4096

struct bucket {
    CURLSH *sh;
    /* one lock per kind of data, so a DNS lookup never waits for a
     * session store of another host in the bucket */
    pthread_mutex_t mu[CURL_LOCK_DATA_LAST];
};

struct netshare {
    pthread_mutex_t make;                 /* creating buckets */
    struct bucket *b[NETSHARE_BUCKETS];   /* atomic: made once, then read */
};

static void lock_cb(CURL *h, curl_lock_data data, curl_lock_access a, void *u)
{
    struct bucket *b = u;

    (void)h;
    (void)a;
    if ((unsigned)data < CURL_LOCK_DATA_LAST)
        pthread_mutex_lock(&b->mu[data]);
}

static void unlock_cb(CURL *h, curl_lock_data data, void *u)
{
    struct bucket *b = u;

    (void)h;
    if ((unsigned)data < CURL_LOCK_DATA_LAST)
        pthread_mutex_unlock(&b->mu[data]);
}

static void bucket_free(struct bucket *b)
{
    int i;

    if (!b)
        return;
    if (b->sh)
        curl_share_cleanup(b->sh);
    for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&b->mu[i]);
    free(b);
}

static struct bucket *bucket_new(void)
{
    struct bucket *b = calloc(1, sizeof *b);
    int i;

    if (!b)
        return NULL;
    for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&b->mu[i], NULL);
    b->sh = curl_share_init();
    if (!b->sh || curl_share_setopt(b->sh, CURLSHOPT_LOCKFUNC, lock_cb) != CURLSHE_OK ||
        curl_share_setopt(b->sh, CURLSHOPT_UNLOCKFUNC, unlock_cb) != CURLSHE_OK ||
        curl_share_setopt(b->sh, CURLSHOPT_USERDATA, b) != CURLSHE_OK ||
        curl_share_setopt(b->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK ||
        curl_share_setopt(b->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK) {
        bucket_free(b);
        return NULL;
    }
    return b;
}

struct netshare *netshare_new(void)
{
    struct netshare *ns = calloc(1, sizeof *ns);

    if (ns)
        pthread_mutex_init(&ns->make, NULL);
    return ns;
}

CURLSH *netshare_for(struct netshare *ns, uint64_t host_hash)
{
    struct bucket **slot = &ns->b[host_hash % NETSHARE_BUCKETS];
    struct bucket *b = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    if (b)
        return b->sh;
    pthread_mutex_lock(&ns->make);
    b = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!b && (b = bucket_new()))
        __atomic_store_n(slot, b, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ns->make);
    return b ? b->sh : NULL;
}

void netshare_free(struct netshare *ns)
{
    size_t i;

    if (!ns)
        return;
    for (i = 0; i < NETSHARE_BUCKETS; i++)
        bucket_free(ns->b[i]);
    pthread_mutex_destroy(&ns->make);
    free(ns);
}
