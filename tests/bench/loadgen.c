/* loadgen.c - the benchmark client of hookd's control socket.
 *
 *   loadgen enqueue -s SOCK -e ENDPOINT [-E K] [-c 4] [-n 200000] [-w 1000] [-t TAG] [-W] [-T 300]
 *   loadgen enqueue -s SOCK -F TYPE ...
 *       N enqueues spread over C connections, each keeping up to W requests
 *       outstanding (pipelined). -E K: endpoints ENDPOINT0 .. ENDPOINT(K-1),
 *       round robin, instead of ENDPOINT itself. -F TYPE: fan-out enqueues
 *       of event type TYPE (no endpoint: every subscriber gets a row). Every reply must carry "ok":true. Time runs
 *       from the first send to the last ack. -W: then poll stats until the
 *       queue is empty (pending + in_flight == 0 and N rows settled).
 *   loadgen steady -s SOCK -e ENDPOINT [-r 1000] [-d 10] [-t TAG]
 *       Paced enqueues at R per second for D seconds on one connection
 *       (absolute schedule, no drift); reports send-to-ack latency.
 *       -R PORT: also run a minimal HTTP receiver (204, keep-alive) on
 *       127.0.0.1:PORT in a second thread, timestamping each request's
 *       arrival in microseconds by its webhook-id; the endpoint points at
 *       it, and send-to-arrival latency is reported exactly (one clock,
 *       one process) instead of from the database's millisecond columns.
 *   loadgen wait -s SOCK -n N [-T 300]
 *       Poll stats until N rows are settled (see -W).
 *   loadgen freeport
 *       Print a free TCP port on 127.0.0.1.
 *   loadgen fsync FILE [-n 300]
 *       The disk's commit floor: append 4 KiB and fdatasync, N times;
 *       p50/p99 in microseconds (synchronous=full pays one per commit).
 *   loadgen fsync FILE -r RATE -d SECONDS
 *       The durable-ack floor at a rate: requests due on an absolute
 *       schedule, committed by one loop that takes every request due so
 *       far, appends 4 KiB and fdatasyncs (ideal group commit, no other
 *       work). Latency runs from a request's due time to the end of the
 *       fdatasync that covered it: no server that acknowledges only
 *       durable writes can do better on this disk. stall_ms: time spent
 *       in fdatasyncs slower than 5 ms.
 *
 * Output: one line of key=value pairs on stdout (the driver parses it);
 * diagnostics on stderr. Single-threaded poll() loop: a client thread this
 * lean is never the bottleneck of a daemon that fsyncs every batch. */
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define OUT_HIGH (256 * 1024)
#define IN_CAP (1 << 20)

struct lc {
    int fd, idx;
    long quota, sent, acked, errors;
    char *ob;
    size_t olen, ooff, ocap;
    char *ib;
    size_t ilen;
};

static const char *opt_sock, *opt_ep, *opt_tag = "b", *opt_fanout;
static long opt_n = 200000, opt_window = 1000, opt_rate = 1000, opt_secs = 10, opt_timeout = 300;
static int opt_conns = 4, opt_wait, opt_rport;
static long opt_neps;           /* -E: round robin over this many endpoints */
static unsigned long ep_next;
static long errors_printed;

static void die(const char *m)
{
    fprintf(stderr, "loadgen: %s: %s\n", m, strerror(errno));
    exit(2);
}

static int connect_unix(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        die("socket");
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "loadgen: socket path too long: %s\n", path);
        exit(2);
    }
    strcpy(a.sun_path, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die(path);
    return fd;
}

static void lc_reserve(struct lc *c, size_t more)
{
    if (c->olen + more <= c->ocap)
        return;
    if (c->ooff) {
        memmove(c->ob, c->ob + c->ooff, c->olen - c->ooff);
        c->olen -= c->ooff;
        c->ooff = 0;
        if (c->olen + more <= c->ocap)
            return;
    }
    c->ocap = (c->olen + more) * 2;
    c->ob = realloc(c->ob, c->ocap);
    if (!c->ob)
        die("realloc");
}

static void lc_append_enqueue(struct lc *c, long i)
{
    char id[96], pl[256], ep[128];
    int n;

    bench_event_id(id, sizeof id, opt_tag, c->idx, i);
    bench_payload(pl, sizeof pl, i);
    if (opt_fanout)
        ep[0] = '\0';
    else if (opt_neps > 0)
        snprintf(ep, sizeof ep, "%s%lu", opt_ep, ep_next++ % (unsigned long)opt_neps);
    else
        snprintf(ep, sizeof ep, "%s", opt_ep);
    lc_reserve(c, 512);
    if (opt_fanout)
        n = snprintf(c->ob + c->olen, c->ocap - c->olen,
                     "{\"op\":\"enqueue\",\"event_type\":\"%s\",\"event_id\":\"%s\",\"payload\":%s}\n", opt_fanout,
                     id, pl);
    else
        n = snprintf(c->ob + c->olen, c->ocap - c->olen,
                     "{\"op\":\"enqueue\",\"endpoint\":\"%s\",\"event_id\":\"%s\",\"payload\":%s}\n", ep, id, pl);
    c->olen += (size_t)n;
    c->sent++;
}

/* 0 ok, -1 peer gone */
static int lc_flush(struct lc *c)
{
    while (c->ooff < c->olen) {
        ssize_t n = send(c->fd, c->ob + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        c->ooff += (size_t)n;
    }
    c->ooff = c->olen = 0;
    return 0;
}

/* Read what is there; call on_line for each complete line. -1: EOF/error */
static int lc_read(struct lc *c, void (*on_line)(struct lc *, char *, size_t))
{
    for (;;) {
        ssize_t n;
        size_t start = 0, i;

        if (c->ilen == IN_CAP) {
            fprintf(stderr, "loadgen: reply line longer than %d bytes\n", IN_CAP);
            exit(2);
        }
        n = recv(c->fd, c->ib + c->ilen, IN_CAP - c->ilen, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        if (n == 0)
            return -1;
        for (i = c->ilen; i < c->ilen + (size_t)n; i++)
            if (c->ib[i] == '\n') {
                c->ib[i] = '\0';
                on_line(c, c->ib + start, i - start);
                start = i + 1;
            }
        c->ilen += (size_t)n;
        memmove(c->ib, c->ib + start, c->ilen - start);
        c->ilen -= start;
    }
}

static int64_t *ack_lat_us, *send_at_us;

static void on_ack(struct lc *c, char *line, size_t len)
{
    (void)len;
    if (!strstr(line, "\"ok\":true")) {
        c->errors++;
        if (errors_printed++ < 5)
            fprintf(stderr, "loadgen: error reply: %.300s\n", line);
    }
    if (ack_lat_us && c->acked < c->sent)
        ack_lat_us[c->acked] = bench_mono_us() - send_at_us[c->acked];
    c->acked++;
}

static struct lc *open_conns(int n)
{
    struct lc *v = calloc((size_t)n, sizeof *v);
    int i;

    if (!v)
        die("calloc");
    for (i = 0; i < n; i++) {
        v[i].fd = connect_unix(opt_sock);
        v[i].idx = i;
        v[i].ib = malloc(IN_CAP);
        if (!v[i].ib)
            die("malloc");
    }
    return v;
}

/* ---- stats polling ---- */

static long long json_num(const char *s, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(s, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Blocking request/reply on a dedicated connection. */
static int stats_once(int fd, char *buf, size_t cap)
{
    static const char q[] = "{\"op\":\"stats\"}\n";
    size_t len = 0;

    if (send(fd, q, sizeof q - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof q - 1))
        return -1;
    for (;;) {
        ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if (memchr(buf, '\n', len))
            return 0;
        if (len == cap - 1)
            return -1;
    }
}

/* Poll until pending + in_flight == 0 and delivered + dead + retrying >= n.
 * Prints its key=value pairs (no newline); returns 0, 1 on timeout, 2 if
 * the daemon cannot answer stats. */
static int wait_settled(long n, int64_t t0_us, long timeout_s)
{
    char buf[65536];
    int fd = connect_unix(opt_sock);
    int64_t deadline = bench_mono_us() + (int64_t)timeout_s * 1000000;
    long long pend = -1, infl = -1, deliv = -1, dead = -1, retry = -1;
    int rc = 1;

    while (bench_mono_us() < deadline) {
        if (stats_once(fd, buf, sizeof buf) < 0 || !strstr(buf, "\"ok\":true")) {
            fprintf(stderr, "loadgen: stats failed: %.300s\n", buf);
            rc = 2;
            break;
        }
        pend = json_num(buf, "pending");
        infl = json_num(buf, "in_flight");
        deliv = json_num(buf, "delivered_last_hour");
        dead = json_num(buf, "dead_letter");
        retry = json_num(buf, "awaiting_retry");
        if (pend == 0 && infl == 0 && deliv + dead + retry >= n) {
            rc = 0;
            break;
        }
        /* 1 s: a stats call costs the daemon tens of ms on a big table
         * (see README); the rate comes from the database's timestamps, so
         * polling slowly only delays noticing the end */
        usleep(1000000);
    }
    printf(" settled=%s settled_s=%.3f delivered=%lld dead_letter=%lld awaiting_retry=%lld pending=%lld in_flight=%lld",
           rc == 0 ? "yes" : "no", (double)(bench_mono_us() - t0_us) / 1e6, deliv, dead, retry, pend, infl);
    close(fd);
    return rc;
}

/* ---- modes ---- */

static int run_enqueue(void)
{
    struct lc *v = open_conns(opt_conns);
    struct pollfd *pf = calloc((size_t)opt_conns, sizeof *pf);
    long total_acked = 0, total_err = 0;
    int64_t t0, t1, first_wall_ms;
    int i, rc = 0;

    if (!pf)
        die("calloc");
    for (i = 0; i < opt_conns; i++)
        v[i].quota = opt_n / opt_conns + (i < opt_n % opt_conns);
    first_wall_ms = bench_wall_us() / 1000;
    t0 = bench_mono_us();
    for (;;) {
        int live = 0;
        for (i = 0; i < opt_conns; i++) {
            struct lc *c = &v[i];
            while (c->sent < c->quota && c->sent - c->acked < opt_window && c->olen - c->ooff < OUT_HIGH)
                lc_append_enqueue(c, c->sent);
            if (lc_flush(c) < 0) {
                fprintf(stderr, "loadgen: connection %d closed by hookd\n", i);
                return 2;
            }
            pf[i].fd = c->fd;
            pf[i].events = POLLIN | (c->olen > c->ooff ? POLLOUT : 0);
            pf[i].revents = 0;
            if (c->acked < c->quota)
                live++;
        }
        if (!live)
            break;
        if (poll(pf, (nfds_t)opt_conns, 30000) <= 0) {
            fprintf(stderr, "loadgen: no reply for 30 s\n");
            return 2;
        }
        for (i = 0; i < opt_conns; i++)
            if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && lc_read(&v[i], on_ack) < 0 &&
                v[i].acked < v[i].quota) {
                fprintf(stderr, "loadgen: connection %d closed by hookd\n", i);
                return 2;
            }
    }
    t1 = bench_mono_us();
    for (i = 0; i < opt_conns; i++) {
        total_acked += v[i].acked;
        total_err += v[i].errors;
    }
    printf("first_send_ms=%lld acks=%ld errors=%ld enqueue_s=%.3f enqueue_rate=%.0f", (long long)first_wall_ms,
           total_acked, total_err, (double)(t1 - t0) / 1e6, (double)total_acked / ((double)(t1 - t0) / 1e6));
    fflush(stdout);
    if (opt_wait)
        rc = wait_settled(opt_n, t0, opt_timeout);
    printf("\n");
    for (i = 0; i < opt_conns; i++)
        close(v[i].fd);
    return total_err ? 1 : rc;
}

/* ---- the timestamping receiver (steady -R) ---- */

struct rconn {
    int fd;
    size_t len;
    char buf[65536];
};

static int64_t *arrive_us;
static long arrive_n, arrive_bad;
static int recv_lfd;

static int recv_listen(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 1024) < 0)
        die("receiver bind/listen");
    return fd;
}

/* Parse complete requests in c->buf; answer each with 204. -1: close. */
static int recv_parse(struct rconn *c, int64_t now, long total)
{
    static const char resp[] = "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n";
    size_t off = 0;

    for (;;) {
        char *base = c->buf + off, *end, *p;
        size_t have = c->len - off, hdr, need;
        long cl = 0;

        end = memmem(base, have, "\r\n\r\n", 4);
        if (!end)
            break;
        hdr = (size_t)(end - base) + 4;
        *end = '\0';
        if ((p = strcasestr(base, "\ncontent-length:")))
            cl = strtol(p + 16, NULL, 10);
        need = hdr + (size_t)cl;
        if (need > sizeof c->buf)
            return -1;
        if (have < need) {
            *end = '\r';
            break;
        }
        if ((p = strcasestr(base, "\nwebhook-id:"))) {
            char *eol = strchr(p + 1, '\n'), *dash;
            if (eol)
                *eol = '\0';
            dash = strrchr(p, '-');
            if (dash) {
                long seq = strtol(dash + 1, NULL, 10);
                if (seq >= 0 && seq < total && arrive_us[seq] == 0) {
                    arrive_us[seq] = now;
                    __atomic_add_fetch(&arrive_n, 1, __ATOMIC_RELEASE);
                }
            }
        } else {
            arrive_bad++;
        }
        if (send(c->fd, resp, sizeof resp - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof resp - 1))
            return -1;
        off += need;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    return 0;
}

static void *receiver_main(void *arg)
{
    long total = *(long *)arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}, evs[64];

    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, recv_lfd, &ev) < 0)
        die("epoll");
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1), i;
        int64_t now = bench_mono_us();
        for (i = 0; i < n; i++) {
            struct rconn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(recv_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct rconn *nc = calloc(1, sizeof *nc);
                    struct epoll_event cev = {.events = EPOLLIN};
                    if (!nc)
                        die("calloc");
                    nc->fd = fd;
                    cev.data.ptr = nc;
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            for (;;) {
                ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
                if (r > 0) {
                    c->len += (size_t)r;
                    if (recv_parse(c, now, total) < 0)
                        r = 0;
                    else
                        continue;
                }
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                if (r < 0 && errno == EINTR)
                    continue;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
                break;
            }
        }
    }
    return NULL;
}

static int run_steady(void)
{
    struct lc *c = open_conns(1);
    long total = opt_rate * opt_secs;
    int64_t t0, first_wall_ms, end_deadline;
    struct pollfd pf;
    double per_us = 1e6 / (double)opt_rate;

    send_at_us = calloc((size_t)total, sizeof *send_at_us);
    ack_lat_us = calloc((size_t)total, sizeof *ack_lat_us);
    if (!send_at_us || !ack_lat_us)
        die("calloc");
    if (opt_rport) {
        static long tot;
        pthread_t th;
        tot = total;
        arrive_us = calloc((size_t)total, sizeof *arrive_us);
        if (!arrive_us)
            die("calloc");
        recv_lfd = recv_listen(opt_rport);
        if (pthread_create(&th, NULL, receiver_main, &tot) != 0)
            die("pthread_create");
    }
    c->quota = total;
    first_wall_ms = bench_wall_us() / 1000;
    t0 = bench_mono_us();
    end_deadline = t0 + (int64_t)opt_secs * 1000000 + 30000000;
    while (c->acked < total) {
        int64_t now = bench_mono_us(), next_at;
        int timeout_ms;
        while (c->sent < total && (double)(now - t0) >= (double)c->sent * per_us) {
            send_at_us[c->sent] = now;
            lc_append_enqueue(c, c->sent);
        }
        if (lc_flush(c) < 0) {
            fprintf(stderr, "loadgen: connection closed by hookd\n");
            return 2;
        }
        if (now > end_deadline) {
            fprintf(stderr, "loadgen: %ld replies missing after 30 s\n", total - c->acked);
            return 2;
        }
        next_at = c->sent < total ? t0 + (int64_t)((double)c->sent * per_us) : now + 100000;
        pf.fd = c->fd;
        pf.events = POLLIN | (c->olen > c->ooff ? POLLOUT : 0);
        pf.revents = 0;
        {
            struct timespec ts;
            int64_t wait_us = next_at - now;
            if (wait_us < 0)
                wait_us = 0;
            ts.tv_sec = wait_us / 1000000;
            ts.tv_nsec = (wait_us % 1000000) * 1000;
            timeout_ms = ppoll(&pf, 1, &ts, NULL);
        }
        if (timeout_ms > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR)) && lc_read(c, on_ack) < 0 &&
            c->acked < total) {
            fprintf(stderr, "loadgen: connection closed by hookd\n");
            return 2;
        }
    }
    {
        int64_t t1 = bench_mono_us();
        qsort(ack_lat_us, (size_t)total, sizeof *ack_lat_us, bench_cmp_i64);
        printf("first_send_ms=%lld sent=%ld acks=%ld errors=%ld steady_s=%.3f steady_rate=%.0f "
               "ack_p50_us=%lld ack_p99_us=%lld ack_max_us=%lld",
               (long long)first_wall_ms, c->sent, c->acked, c->errors, (double)(t1 - t0) / 1e6,
               (double)c->acked / ((double)(t1 - t0) / 1e6), (long long)bench_pct(ack_lat_us, (size_t)total, 50),
               (long long)bench_pct(ack_lat_us, (size_t)total, 99), (long long)ack_lat_us[total - 1]);
    }
    if (opt_rport) {
        /* every message must reach the receiver; then send -> arrival */
        int64_t deadline = bench_mono_us() + 30000000;
        long got, i, k = 0;
        int64_t *d;
        while ((got = __atomic_load_n(&arrive_n, __ATOMIC_ACQUIRE)) < total && bench_mono_us() < deadline)
            usleep(10000);
        d = calloc((size_t)total, sizeof *d);
        if (!d)
            die("calloc");
        for (i = 0; i < total; i++)
            if (__atomic_load_n(&arrive_us[i], __ATOMIC_ACQUIRE))
                d[k++] = arrive_us[i] - send_at_us[i];
        qsort(d, (size_t)k, sizeof *d, bench_cmp_i64);
        printf(" arrived=%ld arrive_p50_us=%lld arrive_p99_us=%lld arrive_max_us=%lld", k,
               (long long)bench_pct(d, (size_t)k, 50), (long long)bench_pct(d, (size_t)k, 99),
               k ? (long long)d[k - 1] : -1LL);
        if (got < total) {
            printf("\n");
            fprintf(stderr, "loadgen: only %ld of %ld requests reached the receiver\n", got, total);
            return 1;
        }
    }
    printf("\n");
    return c->errors ? 1 : 0;
}

static int run_freeport(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        die("freeport");
    printf("%d\n", ntohs(a.sin_port));
    close(fd);
    return 0;
}

static int run_fsync(const char *path)
{
    static char block[4096];
    int64_t *v = calloc((size_t)opt_n, sizeof *v);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    long i;

    if (!v || fd < 0)
        die(path);
    for (i = 0; i < opt_n; i++) {
        int64_t t;
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            die("write");
        t = bench_mono_us();
        if (fdatasync(fd) < 0)
            die("fdatasync");
        v[i] = bench_mono_us() - t;
    }
    close(fd);
    unlink(path);
    qsort(v, (size_t)opt_n, sizeof *v, bench_cmp_i64);
    printf("fsyncs=%ld fsync_p50_us=%lld fsync_p99_us=%lld fsync_max_us=%lld\n", opt_n,
           (long long)bench_pct(v, (size_t)opt_n, 50), (long long)bench_pct(v, (size_t)opt_n, 99),
           (long long)v[opt_n - 1]);
    return 0;
}

static int run_fsync_paced(const char *path)
{
    static char block[4096];
    long total = opt_rate * opt_secs, done = 0, nsync = 0;
    int64_t *v = calloc((size_t)total, sizeof *v), t0, stall_us = 0;
    double per_us = 1e6 / (double)opt_rate;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (!v || fd < 0)
        die(path);
    t0 = bench_mono_us();
    while (done < total) {
        int64_t now = bench_mono_us(), due = t0 + (int64_t)((double)done * per_us), end, t;
        long upto;
        if (due > now) {
            struct timespec ts = {(time_t)((due - now) / 1000000), (long)((due - now) % 1000000) * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        /* every request due by now rides on this commit */
        upto = (long)((double)(now - t0) / per_us) + 1;
        if (upto > total)
            upto = total;
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            die("write");
        t = bench_mono_us();
        if (fdatasync(fd) < 0)
            die("fdatasync");
        end = bench_mono_us();
        nsync++;
        if (end - t > 5000)
            stall_us += end - t;
        for (; done < upto; done++)
            v[done] = end - (t0 + (int64_t)((double)done * per_us));
        if (nsync % 4096 == 0 && ftruncate(fd, 0) < 0)
            die("ftruncate");   /* bounded file, like a checkpointed log */
    }
    close(fd);
    unlink(path);
    qsort(v, (size_t)total, sizeof *v, bench_cmp_i64);
    printf("floor_rate=%ld requests=%ld fsyncs=%ld floor_p50_us=%lld floor_p99_us=%lld floor_max_us=%lld "
           "stall_ms=%lld\n", opt_rate, total, nsync, (long long)bench_pct(v, (size_t)total, 50),
           (long long)bench_pct(v, (size_t)total, 99), (long long)v[total - 1], (long long)(stall_us / 1000));
    free(v);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: loadgen enqueue|steady|wait|freeport|fsync FILE [-s SOCK] [-e ENDPOINT] [-c CONNS] [-n N] "
                    "[-w WINDOW] [-t TAG] [-W] [-T TIMEOUT_S] [-r RATE] [-d SECONDS] [-R PORT]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode;
    int o, rate_given = 0;

    if (argc < 2)
        usage();
    mode = argv[1];
    signal(SIGPIPE, SIG_IGN);
    optind = 2;
    while ((o = getopt(argc, argv, "s:e:E:F:c:n:w:t:WT:r:d:R:")) != -1) {
        switch (o) {
        case 's': opt_sock = optarg; break;
        case 'e': opt_ep = optarg; break;
        case 'E': opt_neps = atol(optarg); break;
        case 'F': opt_fanout = optarg; break;
        case 'c': opt_conns = atoi(optarg); break;
        case 'n': opt_n = atol(optarg); break;
        case 'w': opt_window = atol(optarg); break;
        case 't': opt_tag = optarg; break;
        case 'W': opt_wait = 1; break;
        case 'T': opt_timeout = atol(optarg); break;
        case 'r': opt_rate = atol(optarg); rate_given = 1; break;
        case 'd': opt_secs = atol(optarg); break;
        case 'R': opt_rport = atoi(optarg); break;
        default: usage();
        }
    }
    if (strcmp(mode, "freeport") == 0)
        return run_freeport();
    if (strcmp(mode, "fsync") == 0) {
        if (optind >= argc)
            usage();
        if (rate_given)
            return run_fsync_paced(argv[optind]);
        if (opt_n == 200000)
            opt_n = 300;
        return run_fsync(argv[optind]);
    }
    if (!opt_sock || opt_conns < 1 || opt_n < 1 || opt_window < 1 || opt_rate < 1 || opt_secs < 1)
        usage();
    if (strcmp(mode, "wait") == 0) {
        int rc = wait_settled(opt_n, bench_mono_us(), opt_timeout);
        printf("\n");
        return rc;
    }
    if (!opt_ep && !(opt_fanout && strcmp(mode, "enqueue") == 0))
        usage();
    if (strcmp(mode, "enqueue") == 0)
        return run_enqueue();
    if (strcmp(mode, "steady") == 0)
        return run_steady();
    usage();
    return 2;
}
