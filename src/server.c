/* server.c - the daemon's event loop: one epoll loop serves every client
 * of the control socket (no thread per client); requests go to the writer
 * (enqueue, admin) or the reader (queries) and their replies come back
 * through a completion list and an eventfd, written in request order.
 * The connections themselves (budgets, timeouts) are conns.c, who may
 * connect and the users' memory gates cpeer.c; this file starts and
 * stops the threads and runs the loop. */
#include "server.h"
#include "conns.h"
#include "cron.h"
#include "ctlsock.h"
#include "deliver.h"
#include "log.h"
#include "reader.h"
#include "req.h"
#include "store.h"
#include "util.h"
#include "writer.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    const struct config *c;
    int ep;
    int lfd;
    int efd;                  /* completions and shutdown-done */
    int sfd;
    pthread_mutex_t mu;
    struct req *done_head;    /* completions, under mu */
    struct writer *w;
    struct reader *rd;
    struct deliver *d;
    struct cron jobs;         /* the one table of periodic jobs */
    int conns;                /* conns_init done */
    int shutting_down;
    int stopped;              /* under mu: the stopper thread finished */
    int fatal_status;         /* under mu: exit with this after flushing */
    sigset_t sigs;
} S;

/* ---- completions (any thread) ---- */

/* The reply port of every request: a finished one joins the completion
 * list and the event loop is woken to write it. */
static void complete(const struct req_port *port, struct req *r)
{
    uint64_t one = 1;
    int was_empty;

    (void)port;
    pthread_mutex_lock(&S.mu);
    was_empty = S.done_head == NULL;
    r->next = S.done_head;
    S.done_head = r;
    pthread_mutex_unlock(&S.mu);
    if (was_empty && write(S.efd, &one, sizeof one) < 0 && errno != EAGAIN)
        log_error("eventfd_write", "err=\"%s\"", strerror(errno));
}

static const struct req_port reply_port = {complete};

/* An unrecoverable storage error (the writer's callback): write the
 * replies already completed, then exit with status. */
static void fatal(void *ctx, int status)
{
    uint64_t one = 1;

    (void)ctx;
    pthread_mutex_lock(&S.mu);
    S.fatal_status = status;
    pthread_mutex_unlock(&S.mu);
    if (write(S.efd, &one, sizeof one) < 0)
        (void)0;
}

static void drain_completions(void)
{
    struct req *list, *r, *next, *rev = NULL;
    uint64_t v;

    /* S.efd < 0: start failed before making it; nothing can be pending */
    if (S.efd >= 0 && read(S.efd, &v, sizeof v) < 0 && errno != EAGAIN)
        log_error("eventfd_read", "err=\"%s\"", strerror(errno));
    pthread_mutex_lock(&S.mu);
    list = S.done_head;
    S.done_head = NULL;
    pthread_mutex_unlock(&S.mu);
    /* the list is LIFO; restore completion order */
    for (r = list; r; r = next) {
        next = r->next;
        r->next = rev;
        rev = r;
    }
    for (r = rev; r; r = next) {
        next = r->next;
        r->next = NULL;
        conns_completed(r);
    }
}

/* Flush what is answered, then leave without touching the database again. */
static void fatal_exit(int status)
{
    drain_completions();
    conns_flush_blocking();
    if (S.c && S.c->socket_path)
        unlink(S.c->socket_path);
    log_error("exiting", "status=%d reason=\"storage I/O error\"", status);
    _exit(status);
}

/* Stop the threads in flow order: the writer first (it stops claiming,
 * lets the delivery threads finish within the grace period and records
 * their results), then the reader. */
static void stop_threads(void)
{
    writer_stop(S.w, S.d);
    reader_stop(S.rd);
    S.rd = NULL;
}

static void *stopper_main(void *arg)
{
    uint64_t one = 1;

    (void)arg;
    stop_threads();
    pthread_mutex_lock(&S.mu);
    S.stopped = 1;
    pthread_mutex_unlock(&S.mu);
    if (write(S.efd, &one, sizeof one) < 0)
        (void)0;
    return NULL;
}

static void reload_config(const char *path)
{
    struct config nc;
    char err[512];

    if (config_init(&nc) < 0)
        return;
    if (config_load(&nc, path, err, sizeof err) < 0) {
        log_error("reload_failed", "err=\"%s\" note=\"keeping the running configuration\"", err);
        config_free(&nc);
        return;
    }
    log_info("reload", "file=%s endpoints=%zu note=\"endpoints (and [postgres] prune_endpoints) reloaded; other "
             "settings apply at restart\"", path, nc.n_endpoints);
    log_set_level((enum log_level)S.c->log_level);
    writer_reload(S.w, &nc);
    config_free(&nc);
}

static int nthreads_default(const struct config *c)
{
    long n = c->workers > 0 ? (long)c->workers : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

/* The writer store, the writer, the control socket, the reader, the
 * delivery pool and the writer's thread, in that order. */
static int start(const struct config *c, char *err, size_t errlen)
{
    struct epoll_event ev;
    struct store *st = NULL;

    cron_init(&S.jobs, util_mono_ms());
    if (store_open(c, STORE_WRITER, &st, err, errlen) < 0 || writer_create(&S.w, c, st, &S.jobs, err, errlen) < 0)
        return -1;
    if ((S.lfd = ctlsock_open(S.c, err, errlen)) < 0)
        return -1;
    S.ep = epoll_create1(EPOLL_CLOEXEC);
    S.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    S.sfd = signalfd(-1, &S.sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (S.ep < 0 || S.efd < 0 || S.sfd < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    ev.events = EPOLLIN;
    ev.data.ptr = &S.lfd;
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.lfd, &ev);
    ev.data.ptr = &S.efd;
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.efd, &ev);
    ev.data.ptr = &S.sfd;
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.sfd, &ev);
    if (reader_start(&S.rd, c, &S.jobs, writer_rollup, writer_event, S.w, err, errlen) < 0)
        return -1;
    if (deliver_start(&S.d, c, nthreads_default(c), writer_results, S.w) < 0) {
        snprintf(err, errlen, "cannot start delivery threads");
        return -1;
    }
    if (writer_start(S.w, S.d, fatal, NULL) < 0) {
        snprintf(err, errlen, "cannot start writer thread");
        deliver_stop(S.d, 0);
        return -1;
    }
    return 0;
}

static void on_signal(const char *config_path, pthread_t *stopper, int *stopper_started)
{
    struct signalfd_siginfo si;

    while (read(S.sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP) {
            reload_config(config_path);
            continue;
        }
        if (S.shutting_down)
            continue;
        log_info("stopping", "signal=%s", si.ssi_signo == SIGTERM ? "TERM" : "INT");
        S.shutting_down = 1;
        conns_shutting_down();
        epoll_ctl(S.ep, EPOLL_CTL_DEL, S.lfd, NULL);
        close(S.lfd);
        S.lfd = -1;
        unlink(S.c->socket_path);
        if (pthread_create(stopper, NULL, stopper_main, NULL) == 0)
            *stopper_started = 1;
        else
            stopper_main(NULL);
    }
}

/* Write what is finished and close every connection (blocking, best effort). */
static void flush_all(void)
{
    drain_completions();
    conns_close_all();
}

int server_run(struct config *c, const char *config_path)
{
    struct epoll_event evs[256];
    pthread_t stopper;
    char err[512];
    int rc = 1, i, n, stopper_started = 0, threads = 0;

    memset(&S, 0, sizeof S);
    S.c = c;
    S.lfd = S.efd = S.sfd = S.ep = -1;
    pthread_mutex_init(&S.mu, NULL);
    signal(SIGPIPE, SIG_IGN);
    {
        /* every client and every delivery connection is a descriptor:
         * the default soft limit of 1024 is too small for max_clients */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    sigemptyset(&S.sigs);
    sigaddset(&S.sigs, SIGTERM);
    sigaddset(&S.sigs, SIGINT);
    sigaddset(&S.sigs, SIGHUP);
    /* blocked before any thread starts, so only the signalfd sees them */
    pthread_sigmask(SIG_BLOCK, &S.sigs, NULL);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_error("start_failed", "err=\"curl_global_init failed\"");
        return 1;
    }
    if (start(c, err, sizeof err) < 0) {
        log_error("start_failed", "err=\"%s\"", err);
        goto out;
    }
    threads = 1;
    if (conns_init(c, S.ep, &reply_port, S.w, S.rd) < 0) {
        log_error("start_failed", "err=\"%s\"", strerror(errno));
        goto out;
    }
    S.conns = 1;
    log_info("started", "version=%s pid=%d socket=%s db=%s workers=%d synchronous=%d", HOOKD_VERSION, (int)getpid(),
             c->socket_path, c->db_path, nthreads_default(c), c->synchronous);

    for (;;) {
        struct epoll_event cev[256];
        int stopped, fatal_status, ncev = 0, accept_ready = 0;

        n = epoll_wait(S.ep, evs, 256, conns_wait_ms(util_mono_ms()));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("epoll_wait", "err=\"%s\" action=\"stopping\"", strerror(errno));
            break;
        }
        conns_begin(util_mono_ms());
        /* the acks first: the connections' turn follows */
        for (i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &S.lfd)
                accept_ready = 1;
            else if (p == &S.efd)
                drain_completions();
            else if (p == &S.sfd)
                on_signal(config_path, &stopper, &stopper_started);
            else
                cev[ncev++] = evs[i];
        }
        conns_events(cev, ncev, accept_ready ? S.lfd : -1);
        conns_end();
        pthread_mutex_lock(&S.mu);
        stopped = S.stopped;
        fatal_status = S.fatal_status;
        pthread_mutex_unlock(&S.mu);
        if (fatal_status)
            fatal_exit(fatal_status);
        if (stopped) {
            rc = 0;
            break;
        }
    }
out:
    /* every way out stops the threads before what they use is freed: the
     * stopper ran (or runs) it, or it runs here */
    S.shutting_down = 1;
    conns_shutting_down();
    if (stopper_started)
        pthread_join(stopper, NULL);
    else if (threads && !S.stopped)
        stop_threads();
    else if (S.rd)
        reader_stop(S.rd);
    flush_all();
    if (rc == 0)
        log_info("stopped", "status=clean");
    if (S.d)
        deliver_free(S.d);
    writer_free(S.w);   /* closes the store, releasing the lock last */
    if (S.lfd >= 0) {
        close(S.lfd);
        unlink(c->socket_path);
    }
    if (S.ep >= 0)
        close(S.ep);
    if (S.efd >= 0)
        close(S.efd);
    if (S.sfd >= 0)
        close(S.sfd);
    if (S.conns)
        conns_free();
    curl_global_cleanup();
    return rc;
}
