/* deliver.c - delivery threads, each driving one libcurl multi handle.
 * Handles are never shared between threads; curl_global_init ran before
 * any thread started (server.c). */
#include "deliver.h"
#include "log.h"
#include "netpolicy.h"
#include "slotq.h"
#include "util.h"
#include "xfer.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dthread {
    struct deliver *d;
    pthread_t th;
    CURLM *multi;
    pthread_mutex_t mu;
    struct djob *inbox, **inbox_tail;   /* under mu */
    int stop;                           /* under mu */
    int64_t deadline_mono;              /* under mu */
    struct xfer *active;                /* thread only */
    struct xfer *spare;                 /* reusable easy handles */
    int nactive;
    int epfd;                           /* the transfers' sockets */
    struct slotq *hc;                   /* thread only: its share of each host */
    struct slotq *eps;                  /* thread only: transfers per endpoint, and
                                         * the jobs claimed ahead behind them */
    int wakefd;                         /* eventfd: new jobs or stop */
    int64_t timer_at;                   /* curl's timeout (mono ms), -1 none */
};

struct deliver {
    const struct config *c;
    struct netpolicy np;
    int n;          /* threads running; atomic (deliver_submit reads it) */
    int nalloc;     /* threads set up (to free) */
    struct dthread *t;
    deliver_done_fn done;
    void *ctx;
    /* The per-host limit is split into shares that add up to it, one per
     * thread that serves the host: a host's jobs go round robin to host_threads
     * threads (all of them unless the limit is smaller), each of which
     * counts its own transfers and keeps its own idle connections
     * (CURLMOPT_MAX_HOST_CONNECTIONS = the share). A shared count alone
     * capped the transfers but not the connections: every thread's
     * multi kept its own keep-alive pool, and with two threads one nginx
     * saw 512 connections under a limit of 256. */
    int host_threads;
    unsigned rr;                        /* atomic */
};

static struct xfer *xfer_get(struct dthread *t)
{
    struct xfer *x = t->spare;

    if (x)
        t->spare = x->next;
    else if (!(x = xfer_new(t->d->c, &t->d->np)))
        return NULL;
    x->next = x->prev = NULL;
    xfer_reset(x);
    return x;
}

static void xfer_put(struct dthread *t, struct xfer *x)
{
    x->job = NULL;
    x->next = t->spare;
    t->spare = x;
}

/* Returns 0 if started; otherwise the job is finished (failed) in place. */
static int start_transfer(struct dthread *t, struct djob *j, int counted)
{
    struct xfer *x = xfer_get(t);

    j->started_at = util_now_ms();
    if (!x) {
        xfer_fail(j, ERRC_INTERNAL, "out of memory");
        return -1;
    }
    x->counted = counted;
    if (xfer_prepare(x, j) < 0) {
        xfer_put(t, x);
        return -1;
    }
    if (curl_multi_add_handle(t->multi, x->easy) != CURLM_OK) {
        xfer_fail(j, ERRC_INTERNAL, "cannot start transfer");
        xfer_put(t, x);
        return -1;
    }
    x->prev = NULL;
    x->next = t->active;
    if (t->active)
        t->active->prev = x;
    t->active = x;
    t->nactive++;
    return 0;
}

static void unlink_active(struct dthread *t, struct xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        t->active = x->next;
    if (x->next)
        x->next->prev = x->prev;
    t->nactive--;
}

static void push(struct djob ***dtail, struct djob *j)
{
    j->next = NULL;
    **dtail = j;
    *dtail = &j->next;
}

static int ended_well(const struct djob *j)
{
    return j->attempted && outcome_classify_ok(j->http_status, j->errc, j->ep->has_ok ? &j->ep->ok : NULL) ==
                               OUTCOME_DELIVERED;
}

static void run_counted(struct dthread *t, struct djob *j, int counted, struct djob ***dtail);

/* j to its host's waiting line, or started now */
static void to_host(struct dthread *t, struct djob *j, struct djob ***dtail)
{
    int r = slotq_admit(t->hc, j->ep->host_hash, j);

    if (r != 1)
        run_counted(t, j, r == 0, dtail);   /* -1: out of memory, uncounted */
}

static int held(const struct ep_conf *e)
{
    return __atomic_load_n(&e->hold, __ATOMIC_RELAXED);
}

/* The endpoint was paused, changed or deleted since the job was claimed:
 * it must not start with this snapshot (ep_conf.halt). */
static int halted(const struct ep_conf *e)
{
    return __atomic_load_n(&e->halt, __ATOMIC_RELAXED);
}

static void untried(struct djob *j, struct djob ***dtail)
{
    j->attempted = 0;
    push(dtail, j);
}

/* j, a transfer counted for its endpoint, is over (done, or failed before
 * it started). After a success a job claimed ahead for the endpoint takes
 * its place at once, without waiting for the writer's next round; after
 * anything else those jobs go back untried, so the breaker and the
 * adaptive limit judge the failure before another request leaves. So do
 * they when the writer holds the endpoint (paused, breaker not closed, a
 * 429 hold, changed or deleted). */
static void ep_ended(struct dthread *t, struct djob *j, struct djob ***dtail)
{
    uint64_t key = (uint64_t)j->ep->id;
    struct djob *n, *next;

    if (!j->ep_counted)
        return;
    if (!ended_well(j) || held(j->ep)) {
        for (n = slotq_take(t->eps, key); n; n = next) {
            next = n->next;
            untried(n, dtail);
        }
    }
    /* one that took the place but may not start hands it to the next */
    while ((n = slotq_release(t->eps, key)) && held(n->ep))
        untried(n, dtail);
    if (!n)
        return;
    j->handed = 1;
    n->took_slot = 1;
    n->ep_counted = 1;
    to_host(t, n, dtail);
}

/* Start j, which holds a host slot when counted; a job that cannot start
 * is finished, and its slot goes to the next one waiting for the host.
 * The endpoint is looked at once more here, as the transfer starts: a
 * job may have waited long for a host slot, and a pause, a new
 * definition or a delete since its claim sends it back untried (the
 * writer claims it again with the current snapshot, or not at all). */
static void run_counted(struct dthread *t, struct djob *j, int counted, struct djob ***dtail)
{
    struct djob *next;

    while (j) {
        uint64_t h = j->ep->host_hash;
        if (halted(j->ep))
            j->attempted = 0;
        else if (start_transfer(t, j, counted) == 0)
            return;
        push(dtail, j);
        next = counted ? slotq_release(t->hc, h) : NULL;
        ep_ended(t, j, dtail);
        j = next;
    }
}

static void launch(struct dthread *t, struct djob *j, struct djob ***dtail)
{
    if (j->ahead) {
        /* back untried when held, or when nothing of its endpoint runs
         * here for it to follow */
        if (held(j->ep) || slotq_park(t->eps, (uint64_t)j->ep->id, j) < 0)
            untried(j, dtail);
        return;
    }
    if (halted(j->ep)) {
        untried(j, dtail);
        return;
    }
    j->ep_counted = slotq_admit(t->eps, (uint64_t)j->ep->id, j) == 0;
    to_host(t, j, dtail);
}

static void finish_transfer(struct dthread *t, struct xfer *x, CURLcode rc)
{
    xfer_result(x, rc);
    curl_multi_remove_handle(t->multi, x->easy);
    unlink_active(t, x);
    xfer_put(t, x);
}

/* curl_multi_socket_action keeps the per-wakeup cost proportional to the
 * sockets that are ready, not to the transfers in flight. */
static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct dthread *t = userp;
    struct epoll_event ev = {0};

    (void)e;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(t->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    ev.data.fd = s;
    if (!socketp) {
        curl_multi_assign(t->multi, s, t);
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, s, &ev) == 0 || errno != EEXIST)
            return 0;
    }
    epoll_ctl(t->epfd, EPOLL_CTL_MOD, s, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    struct dthread *t = userp;

    (void)m;
    t->timer_at = timeout_ms < 0 ? -1 : util_mono_ms() + timeout_ms;
    return 0;
}

static void collect_done(struct dthread *t, struct djob ***dtail)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(t->multi, &left))) {
        struct xfer *x = NULL;
        struct djob *j;
        if (m->msg != CURLMSG_DONE)
            continue;
        int counted;
        uint64_t h;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        j = x->job;
        counted = x->counted;
        h = j->ep->host_hash;
        finish_transfer(t, x, m->data.result);
        push(dtail, j);
        if (counted)
            run_counted(t, slotq_release(t->hc, h), 1, dtail);
        ep_ended(t, j, dtail);
    }
}

static void *dthread_main(void *arg)
{
    struct dthread *t = arg;
    struct deliver *d = t->d;
    struct epoll_event evs[256];

    for (;;) {
        struct djob *in, *done = NULL, **dtail = &done, *j, *next;
        int running = 0, stop, n, i, wait_ms;
        int64_t deadline, now;

        pthread_mutex_lock(&t->mu);
        in = t->inbox;
        t->inbox = NULL;
        t->inbox_tail = &t->inbox;
        stop = t->stop;
        deadline = t->deadline_mono;
        pthread_mutex_unlock(&t->mu);

        if (stop) {
            /* nothing new starts: what waits for a host slot, or behind
             * a transfer of its endpoint, goes back */
            for (j = slotq_drain(t->hc); j; j = next) {
                next = j->next;
                untried(j, &dtail);
            }
            for (j = slotq_drain(t->eps); j; j = next) {
                next = j->next;
                untried(j, &dtail);
            }
        }
        for (j = in; j; j = next) {
            next = j->next;
            j->next = NULL;
            if (stop) {
                untried(j, &dtail);  /* not started: back to the queue untouched */
            } else {
                launch(t, j, &dtail);
            }
        }
        if (stop && util_mono_ms() >= deadline) {
            /* grace is over: abort what is left; those rows go back */
            while (t->active) {
                struct xfer *x = t->active;
                untried(x->job, &dtail);
                curl_multi_remove_handle(t->multi, x->easy);
                unlink_active(t, x);
                xfer_put(t, x);
            }
        }
        if (done) {
            d->done(d->ctx, done);
            done = NULL;
            dtail = &done;
        }
        if (stop && !t->active) {
            pthread_mutex_lock(&t->mu);
            int empty = t->inbox == NULL;
            pthread_mutex_unlock(&t->mu);
            if (empty)
                break;
        }
        now = util_mono_ms();
        wait_ms = 1000;
        if (t->timer_at >= 0)
            wait_ms = t->timer_at <= now ? 0 : (t->timer_at - now < 1000 ? (int)(t->timer_at - now) : 1000);
        if (stop && deadline - now < wait_ms)
            wait_ms = deadline <= now ? 0 : (int)(deadline - now);
        n = epoll_wait(t->epfd, evs, 256, wait_ms);
        for (i = 0; i < n; i++) {
            int fd = evs[i].data.fd, flags = 0;
            if (fd == t->wakefd) {
                uint64_t v;
                if (read(t->wakefd, &v, sizeof v) < 0)
                    (void)0;
                continue;
            }
            if (evs[i].events & EPOLLIN)
                flags |= CURL_CSELECT_IN;
            if (evs[i].events & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
            if (evs[i].events & (EPOLLERR | EPOLLHUP))
                flags |= CURL_CSELECT_ERR;
            curl_multi_socket_action(t->multi, fd, flags, &running);
        }
        if (t->timer_at >= 0 && util_mono_ms() >= t->timer_at) {
            t->timer_at = -1;
            curl_multi_socket_action(t->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        collect_done(t, &dtail);
        if (done)
            d->done(d->ctx, done);
    }
    return NULL;
}

static void wake(struct dthread *t)
{
    uint64_t one = 1;

    if (write(t->wakefd, &one, sizeof one) < 0)
        (void)0;  /* EAGAIN: the counter is already non-zero, a wakeup is pending */
}

int deliver_start(struct deliver **out, const struct config *c, int nthreads, deliver_done_fn done, void *ctx)
{
    struct deliver *d = calloc(1, sizeof *d);
    char err[256];
    int i, share;

    if (!d || nthreads < 1) {
        free(d);
        return -1;
    }
    d->c = c;
    d->done = done;
    d->ctx = ctx;
    if (netpolicy_parse(&d->np, c->allow_networks, err, sizeof err) < 0) {
        log_error("deliver_start", "err=\"allow_networks: %s\"", err);
        free(d);
        return -1;
    }
    d->t = calloc((size_t)nthreads, sizeof *d->t);
    if (!d->t) {
        free(d);
        return -1;
    }
    d->host_threads = (int)(c->max_host_connections < nthreads ? c->max_host_connections : nthreads);
    for (i = 0; i < nthreads; i++) {
        struct dthread *t = &d->t[i];
        /* the shares add up to the limit: a host either uses every thread
         * or (limit < threads) as many threads as the limit, one each */
        share = (int)(c->max_host_connections / d->host_threads) +
                (i < (int)(c->max_host_connections % d->host_threads));
        t->d = d;
        t->inbox_tail = &t->inbox;
        pthread_mutex_init(&t->mu, NULL);
        d->nalloc++;
        t->timer_at = -1;
        t->epfd = epoll_create1(EPOLL_CLOEXEC);
        t->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        t->multi = curl_multi_init();
        t->hc = slotq_new(share);
        t->eps = slotq_new(INT32_MAX);   /* counts only: the writer limits */
        if (!t->multi || !t->hc || !t->eps || t->epfd < 0 || t->wakefd < 0)
            goto fail;
        {
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = t->wakefd};
            epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->wakefd, &ev);
        }
        curl_multi_setopt(t->multi, CURLMOPT_MAXCONNECTS, 1024L);
        /* slotq keeps transfers under this; curl's limit is the backstop
         * (its queue would count the wait toward the transfer's timeout) */
        curl_multi_setopt(t->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)share);
        curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
        curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
        if (pthread_create(&t->th, NULL, dthread_main, t) == 0) {
            char name[16];
            snprintf(name, sizeof name, "hookd-deliv%d", i % 100);
            pthread_setname_np(t->th, name);  /* top -H, perf, gdb */
        } else {
            curl_multi_cleanup(t->multi);
            t->multi = NULL;
            goto fail;
        }
        __atomic_store_n(&d->n, d->n + 1, __ATOMIC_RELEASE);
    }
    *out = d;
    return 0;
fail:
    deliver_stop(d, 0);
    deliver_free(d);
    return -1;
}

void deliver_submit(struct deliver *d, struct djob *list)
{
    struct djob *heads[64] = {0}, **tails[64];
    int n = __atomic_load_n(&d->n, __ATOMIC_ACQUIRE), m, i;

    if (n == 0) {
        /* the pool is stopped: hand the jobs straight back, untried */
        struct djob *j;
        for (j = list; j; j = j->next)
            j->attempted = 0;
        if (list)
            d->done(d->ctx, list);
        return;
    }
    if (n > 64)
        n = 64;
    m = d->host_threads < n ? d->host_threads : n;
    for (i = 0; i < n; i++)
        tails[i] = &heads[i];
    /* spread jobs over the threads one by one, so a single busy host
     * still uses every core (measured on 2 cores, 100k messages to one
     * nginx: 17.3k/s against 12-15k/s with each host pinned to one
     * thread); then one lock and one wakeup per thread. A host goes to
     * m threads starting at its hash: all of them unless its limit is
     * below the thread count, each holding its share of the limit. */
    while (list) {
        struct djob *j = list;
        unsigned r = __atomic_fetch_add(&d->rr, 1, __ATOMIC_RELAXED) % (unsigned)m;
        unsigned k = (unsigned)((j->ep->host_hash + r) % (uint64_t)n);
        list = j->next;
        j->next = NULL;
        *tails[k] = j;
        tails[k] = &j->next;
    }
    for (i = 0; i < n; i++) {
        struct dthread *t = &d->t[i];
        if (!heads[i])
            continue;
        pthread_mutex_lock(&t->mu);
        *t->inbox_tail = heads[i];
        t->inbox_tail = tails[i];
        pthread_mutex_unlock(&t->mu);
        wake(t);
    }
}

void deliver_stop(struct deliver *d, int64_t grace_ms)
{
    int i;

    for (i = 0; i < d->n; i++) {
        struct dthread *t = &d->t[i];
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        t->deadline_mono = util_mono_ms() + grace_ms;
        pthread_mutex_unlock(&t->mu);
        wake(t);
    }
    for (i = 0; i < d->n; i++)
        pthread_join(d->t[i].th, NULL);
    /* deliver_submit reads n without the threads' locks */
    __atomic_store_n(&d->n, 0, __ATOMIC_RELEASE);
}

void deliver_free(struct deliver *d)
{
    int i;

    if (!d)
        return;
    for (i = 0; i < d->nalloc; i++) {
        struct dthread *t = &d->t[i];
        struct xfer *x = t->spare, *next;
        for (; x; x = next) {
            next = x->next;
            xfer_destroy(x);
        }
        if (t->multi)
            curl_multi_cleanup(t->multi);
        if (t->epfd >= 0)
            close(t->epfd);
        if (t->wakefd >= 0)
            close(t->wakefd);
        slotq_free(t->hc);
        slotq_free(t->eps);
        pthread_mutex_destroy(&t->mu);
    }
    free(d->t);
    free(d);
}
