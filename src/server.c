/* server.c - the daemon's event loop: one epoll loop serves every client
 * of the control socket (no thread per client); requests go to the writer
 * (enqueue, admin) or the reader (queries) and their replies come back
 * through a completion list and an eventfd, written in request order. */
#include "server.h"
#include "cron.h"
#include "ctlsock.h"
#include "deliver.h"
#include "log.h"
#include "proto.h"
#include "reader.h"
#include "req.h"
#include "store.h"
#include "util.h"
#include "writer.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define MAX_PENDING_PER_CONN 4096   /* stop reading a pipelining client beyond this */
#define MAX_OUT_PER_CONN (8 << 20)

struct conn {
    int fd;
    uid_t uid;
    pid_t pid;
    int admin;
    struct buf in;
    struct buf out;
    size_t out_off;          /* bytes of out already sent: a large reply
                              * goes out in many sends, and moving the rest
                              * to the front after each would be quadratic */
    struct req *head, *tail;  /* reply FIFO, request order */
    size_t pending;           /* requests not yet written (incl. in threads) */
    int eof;                  /* peer finished sending */
    int dead;                 /* fd closed; freed when pending reaches 0 */
    int skipping;             /* inside an over-long line */
    int want_out;
    int reading;              /* EPOLLIN registered */
    struct conn *prev, *next; /* all live connections */
    struct conn *grave;       /* dead ones waiting to be freed */
};

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
    struct conn *conns;
    struct conn *grave;       /* freed at the end of a loop turn */
    size_t nconns;
    int shutting_down;
    int stopped;              /* under mu: the stopper thread finished */
    int fatal_status;         /* under mu: exit with this after flushing */
    struct proto_limits lim;
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

/* ---- connections ---- */

static void conn_free(struct conn *c)
{
    buf_free(&c->in);
    buf_free(&c->out);
    free(c);
}

/* Freed only between loop turns, so no caller holds a dangling pointer. */
static void conn_bury(struct conn *c)
{
    c->grave = S.grave;
    S.grave = c;
}

static void conn_reap(void)
{
    while (S.grave) {
        struct conn *c = S.grave;
        S.grave = c->grave;
        conn_free(c);
    }
}

/* A dead connection's finished replies that nobody will read; requests
 * still in a thread are dropped when they come back. */
static void conn_drop_finished(struct conn *c)
{
    struct req *r;

    while ((r = c->head) && r->done) {
        c->head = r->fifo;
        c->pending--;
        proto_req_free(&r->p);
        buf_free(&r->reply);
        free(r);
    }
    if (!c->head)
        c->tail = NULL;
    if (c->pending == 0)
        conn_bury(c);
}

static void conn_close(struct conn *c)
{
    if (c->dead)
        return;
    epoll_ctl(S.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->dead = 1;
    if (c->prev)
        c->prev->next = c->next;
    else
        S.conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    S.nconns--;
    conn_drop_finished(c);
}

static void conn_update_events(struct conn *c)
{
    struct epoll_event ev = {0};

    if (c->dead)
        return;
    c->reading = !c->eof && c->pending < MAX_PENDING_PER_CONN && c->out.len - c->out_off < MAX_OUT_PER_CONN;
    ev.events = (c->reading ? EPOLLIN : 0) | (c->want_out ? EPOLLOUT : 0) | EPOLLRDHUP;
    ev.data.ptr = c;
    epoll_ctl(S.ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Move finished replies from the FIFO head to the output buffer, write
 * what the socket takes. */
static void conn_flush(struct conn *c)
{
    struct req *r;
    ssize_t n;

    if (c->dead)
        return;
    while ((r = c->head) && r->done) {
        if (c->out_off == c->out.len && !c->out.failed) {
            /* nothing waits: the reply becomes the output, uncopied */
            buf_free(&c->out);
            c->out = r->reply;
            c->out_off = 0;
            memset(&r->reply, 0, sizeof r->reply);
        } else {
            if (c->out_off >= c->out.len / 2) {
                buf_consume(&c->out, c->out_off);   /* once per half: amortised */
                c->out_off = 0;
            }
            if (buf_append(&c->out, r->reply.p ? r->reply.p : "", r->reply.len) < 0) {
                conn_close(c);
                return;
            }
        }
        c->head = r->fifo;
        if (!c->head)
            c->tail = NULL;
        c->pending--;
        proto_req_free(&r->p);
        buf_free(&r->reply);
        free(r);
    }
    while (c->out.len > c->out_off) {
        n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            conn_close(c);
            return;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out.len) {
        /* a large reply's memory is not kept for the connection's life */
        if (c->out.cap > ((size_t)1 << 20))
            buf_free(&c->out);
        else
            buf_reset(&c->out);
        c->out_off = 0;
    }
    c->want_out = c->out.len > 0;
    if (c->eof && c->pending == 0 && c->out.len == 0) {
        conn_close(c);
        return;
    }
    conn_update_events(c);
}

static struct req *req_new(struct conn *c)
{
    struct req *r = calloc(1, sizeof *r);

    if (!r)
        return NULL;
    r->conn = c;
    r->port = &reply_port;
    if (c->tail)
        c->tail->fifo = r;
    else
        c->head = r;
    c->tail = r;
    c->pending++;
    return r;
}

static void req_finish_local(struct req *r)
{
    r->done = 1;
}

static void handle_line(struct conn *c, const char *line, size_t len)
{
    struct proto_err err;
    struct req *r;

    while (len && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return;
    r = req_new(c);
    if (!r) {
        log_error("oom", "where=req_new");
        return;
    }
    if (proto_parse(line, len, &S.lim, &r->p, &err) < 0) {
        req_error(r, err.code, "%s", err.message);
        req_finish_local(r);
        return;
    }
    if (S.shutting_down) {
        req_error(r, PERR_SHUTTING_DOWN, "hookd is shutting down");
        req_finish_local(r);
        return;
    }
    if (r->p.admin_only && !c->admin) {
        log_warn("forbidden", "op=%s uid=%u pid=%d", proto_op_name(r->p.op), (unsigned)c->uid, (int)c->pid);
        req_error(r, PERR_FORBIDDEN, "op '%s' needs an admin peer (uid 0, hookd's uid, or [server] admin_uids/admin_groups)",
                  proto_op_name(r->p.op));
        req_finish_local(r);
        return;
    }
    switch (r->p.op) {
    case OP_PING:
        buf_puts(&r->reply, "{\"ok\":true,\"pong\":true,\"version\":\"" HOOKD_VERSION "\"}\n");
        req_finish_local(r);
        return;
    case OP_ENQUEUE:
    case OP_ENDPOINT_PUT:
    case OP_ENDPOINT_DELETE:
    case OP_REQUEUE:
    case OP_PURGE:
    case OP_ERASE:
    case OP_PAUSE:
    case OP_RESUME:
        writer_submit(S.w, r);
        return;
    default:
        reader_submit(S.rd, r);
        return;
    }
}

static void conn_read(struct conn *c)
{
    for (;;) {
        ssize_t n;
        size_t start, i;

        if (c->dead || !c->reading)
            return;
        if (buf_reserve(&c->in, READ_CHUNK) < 0) {
            conn_close(c);
            return;
        }
        n = recv(c->fd, c->in.p + c->in.len, READ_CHUNK, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(c);
            return;
        }
        if (n == 0) {
            c->eof = 1;  /* half-closed: answer what was asked, then close */
            c->in.len = 0;
            return;
        }
        c->in.len += (size_t)n;
        start = 0;
        for (i = c->in.len - (size_t)n; i < c->in.len; i++) {
            if (c->in.p[i] != '\n')
                continue;
            if (c->skipping)
                c->skipping = 0;
            else
                handle_line(c, c->in.p + start, i - start);
            start = i + 1;
        }
        buf_consume(&c->in, start);
        if (!c->skipping && c->in.len > (size_t)S.c->max_line) {
            struct req *r = req_new(c);
            if (r) {
                req_error(r, PERR_LINE_TOO_LONG, "request line longer than %lld bytes; skipped to the next newline",
                          (long long)S.c->max_line);
                req_finish_local(r);
            }
            c->skipping = 1;
        }
        if (c->skipping)
            c->in.len = 0;
        if (c->pending >= MAX_PENDING_PER_CONN)
            return;
    }
}

static void do_accept(void)
{
    for (;;) {
        struct ucred cr;
        socklen_t crl = sizeof cr;
        struct epoll_event ev = {0};
        struct conn *c;
        int fd = accept4(S.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                log_warn("accept_failed", "err=\"%s\"", strerror(errno));
            return;
        }
        if ((int64_t)S.nconns >= S.c->max_clients) {
            static const char msg[] = "{\"ok\":false,\"error\":{\"code\":\"busy\",\"message\":\"too many clients\"}}\n";
            if (send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                (void)0;
            close(fd);
            continue;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0) {
            close(fd);
            continue;
        }
        c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->uid = cr.uid;
        c->pid = cr.pid;
        c->admin = ctlsock_peer_is_admin(S.c, cr.uid, cr.gid);
        c->reading = 1;
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = c;
        if (epoll_ctl(S.ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = S.conns;
        if (S.conns)
            S.conns->prev = c;
        S.conns = c;
        S.nconns++;
    }
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
        struct conn *c = r->conn;
        next = r->next;
        r->next = NULL;
        r->done = 1;
        if (c->dead)
            conn_drop_finished(c);  /* its client is gone */
    }
}

/* Flush what is answered, then leave without touching the database again. */
static void fatal_exit(int status)
{
    struct conn *cn;

    drain_completions();
    for (cn = S.conns; cn; cn = cn->next) {
        int fl = fcntl(cn->fd, F_GETFL);
        fcntl(cn->fd, F_SETFL, fl & ~O_NONBLOCK);
        conn_flush(cn);
    }
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
    log_info("reload", "file=%s endpoints=%zu note=\"endpoints reloaded; other settings apply at restart\"", path,
             nc.n_endpoints);
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
    while (S.conns) {
        struct conn *cn = S.conns;
        int fl = fcntl(cn->fd, F_GETFL);
        fcntl(cn->fd, F_SETFL, fl & ~O_NONBLOCK);
        conn_flush(cn);
        if (!cn->dead)
            conn_close(cn);
    }
    conn_reap();
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
    S.lim.max_payload = (size_t)c->max_payload;
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
    log_info("started", "version=%s pid=%d socket=%s db=%s workers=%d synchronous=%d", HOOKD_VERSION, (int)getpid(),
             c->socket_path, c->db_path, nthreads_default(c), c->synchronous);

    for (;;) {
        int stopped, fatal_status;
        n = epoll_wait(S.ep, evs, 256, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("epoll_wait", "err=\"%s\" action=\"stopping\"", strerror(errno));
            break;
        }
        for (i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &S.lfd) {
                do_accept();
            } else if (p == &S.efd) {
                drain_completions();
            } else if (p == &S.sfd) {
                on_signal(config_path, &stopper, &stopper_started);
            } else {
                struct conn *cn = p;
                if (evs[i].events & (EPOLLERR)) {
                    conn_close(cn);
                    continue;
                }
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))
                    conn_read(cn);
                if (!cn->dead)
                    conn_flush(cn);
            }
        }
        /* replies that became ready */
        {
            struct conn *cn, *next;
            for (cn = S.conns; cn; cn = next) {
                next = cn->next;
                if (cn->head && cn->head->done)
                    conn_flush(cn);
                else if (cn->eof && cn->pending == 0 && cn->out.len == 0)
                    conn_close(cn);
            }
        }
        conn_reap();
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
    curl_global_cleanup();
    return rc;
}
