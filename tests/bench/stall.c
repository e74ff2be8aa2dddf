/* stall.c - how long can hookd's periodic jobs hold up acknowledgements
 * and deliveries? (make bench-stall; the driver is tests/bench/stall.sh)
 *
 *   stall gen DB ROWS_PER_ENDPOINT SPAN_S [OLD_ROWS]
 *       Fill the latency ring (endpoint_latency) of a stopped hookd's
 *       database: for every endpoint in the endpoints table,
 *       ROWS_PER_ENDPOINT samples in slots 0.. (at most the ring's size,
 *       [latency] samples) spread evenly over the last SPAN_S seconds,
 *       endpoints interleaved in time order as real traffic would write
 *       them, and the ring's next slot in endpoint_health. OLD_ROWS
 *       delivered messages 8 days old (at their first attempt), round robin
 *       over the endpoints: retention's backlog. One transaction.
 *   stall count DB WINDOW_S
 *       Print rows=N old=M (latency samples older than WINDOW_S seconds)
 *       expired=E (delivered rows older than 7 days).
 *   stall run -s SOCK -p PREFIX -n NEP -r RATE -d SECS -R PORT [-W WALFILE] [-T TIMELINE]
 *       Paced enqueues, RATE per second on one connection for SECS seconds,
 *       on an absolute schedule (pipelined: a stalled request does not hold
 *       back the sends after it, so every request that waits behind a stall
 *       measures it). Endpoints PREFIX000 .. PREFIX(NEP-1), round robin.
 *       Each ack latency is measured from the scheduled send time on
 *       CLOCK_MONOTONIC. A receiver thread on 127.0.0.1:PORT answers 204 and
 *       timestamps each request's arrival by its webhook-id (same clock):
 *       first-attempt delivery latency = arrival - scheduled send. A second
 *       connection sends `stats` every 100 ms (queries go to the reader
 *       thread, where the rollup runs). -W samples the WAL file size every
 *       100 ms. -T writes one line per second: the worst ack and delivery
 *       latency of the requests sent in that second.
 *       Output: one line of key=value pairs on stdout. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
    fprintf(stderr, "stall: %s: %s\n", what, strerror(errno));
    exit(2);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile of a sorted array */
static int64_t pct(const int64_t *v, size_t n, double p)
{
    size_t k;
    if (!n)
        return -1;
    k = (size_t)(p / 100.0 * (double)n);
    if (k >= n)
        k = n - 1;
    return v[k];
}

/* ---------------------------------------------------------------- gen */

#define RING_SLOTS 10000   /* [latency] samples, default */

static void sqlok(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "stall: %s: %s\n", what, sqlite3_errmsg(db));
        exit(2);
    }
}

static int run_gen(const char *path, long per_ep, long span_s, long old_rows)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t *ids = NULL, now = wall_ms(), t0 = mono_us();
    size_t n = 0, cap = 0;
    long long total, i;

    sqlok(NULL, sqlite3_open(path, &db), "open");
    /* hookd is stopped: leave WAL for a rollback journal while loading (a
     * 1 GB transaction would otherwise land in the -wal file first) */
    sqlok(db, sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; PRAGMA cache_size=-1000000;",
                           NULL, NULL, NULL), "pragmas");
    sqlok(db, sqlite3_prepare_v2(db, "SELECT id FROM endpoints ORDER BY id", -1, &st, NULL), "select");
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 128;
            ids = realloc(ids, cap * sizeof *ids);
            if (!ids)
                die("realloc");
        }
        ids[n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (!n) {
        fprintf(stderr, "stall: no endpoints in %s\n", path);
        return 2;
    }
    if (per_ep > RING_SLOTS) {
        fprintf(stderr, "stall: at most %d samples per endpoint (the ring's default size)\n", RING_SLOTS);
        return 2;
    }
    total = (long long)per_ep * (long long)n;
    sqlok(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
    sqlok(db, sqlite3_prepare_v2(db,
                                 "INSERT INTO endpoint_latency (endpoint_id, slot, message_id, response_ms, status_code, "
                                 "measured_at) VALUES (?1, ?4, NULL, ?2, 200, ?3)",
                                 -1, &st, NULL), "insert");
    for (i = 0; i < total; i++) {
        /* oldest first; endpoints interleaved */
        int64_t at = now - (int64_t)span_s * 1000 + (int64_t)((double)i * (double)span_s * 1000.0 / (double)total);
        uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull;
        sqlite3_bind_int64(st, 1, ids[i % (long long)n]);
        sqlite3_bind_int64(st, 2, 20 + (int64_t)((h >> 40) % 980));
        sqlite3_bind_int64(st, 3, at);
        sqlite3_bind_int64(st, 4, i / (long long)n);
        if (sqlite3_step(st) != SQLITE_DONE)
            sqlok(db, SQLITE_ERROR, "step");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    /* the ring's next slot, so hookd overwrites the oldest sample first */
    sqlok(db, sqlite3_prepare_v2(db, "INSERT INTO endpoint_health (endpoint_id, endpoint_url, ring_next) "
                                     "SELECT id, url, ?2 FROM endpoints WHERE id = ?1 ON CONFLICT (endpoint_id) "
                                     "DO UPDATE SET ring_next = excluded.ring_next", -1, &st, NULL), "health");
    for (i = 0; i < (long long)n; i++) {
        sqlite3_bind_int64(st, 1, ids[i]);
        sqlite3_bind_int64(st, 2, per_ep % RING_SLOTS);
        if (sqlite3_step(st) != SQLITE_DONE)
            sqlok(db, SQLITE_ERROR, "health step");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (old_rows > 0) {
        /* delivered at their first attempt, as hookd keeps them since
         * schema 10: the attempt in the row, no log row */
        int64_t t = now - 8 * 86400000LL;
        sqlok(db, sqlite3_prepare_v2(db, "INSERT INTO webhook_queue (endpoint_id, event_id, payload, status, "
                                         "attempt_count, created_at, next_attempt_at, delivered_at, last_status_code, "
                                         "last_response_ms, first_method, first_url) VALUES (?1, ?2, '{\"old\":true,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}', "
                                         "'delivered', 1, ?3, ?3, ?3, 204, 1, 'POST', 'http://127.0.0.1/hook')", -1, &st, NULL), "old insert");
        for (i = 0; i < old_rows; i++) {
            char ev[48];
            snprintf(ev, sizeof ev, "old-%lld", i);
            sqlite3_bind_int64(st, 1, ids[i % (long long)n]);
            sqlite3_bind_text(st, 2, ev, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 3, t + i / 1000);
            if (sqlite3_step(st) != SQLITE_DONE)
                sqlok(db, SQLITE_ERROR, "old step");
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    sqlok(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
    sqlok(db, sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), "wal");
    sqlite3_close(db);
    printf("endpoints=%zu rows=%lld old_rows=%ld gen_s=%.1f\n", n, total, old_rows, (double)(mono_us() - t0) / 1e6);
    free(ids);
    return 0;
}

static int run_count(const char *path, long window_s)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    long long rows, old, expired;

    sqlok(NULL, sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), "open");
    sqlite3_busy_timeout(db, 10000);
    sqlok(db, sqlite3_prepare_v2(db, "SELECT count(*), (SELECT count(*) FROM endpoint_latency WHERE measured_at < ?1), "
                                     "(SELECT count(*) FROM webhook_queue WHERE status = 'delivered' AND delivered_at < ?2) "
                                     "FROM endpoint_latency", -1, &st, NULL), "count");
    sqlite3_bind_int64(st, 1, wall_ms() - (int64_t)window_s * 1000);
    sqlite3_bind_int64(st, 2, wall_ms() - 7 * 86400000LL);
    sqlok(db, sqlite3_step(st), "step");
    rows = sqlite3_column_int64(st, 0);
    old = sqlite3_column_int64(st, 1);
    expired = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);
    sqlite3_close(db);
    printf("rows=%lld old=%lld expired=%lld\n", rows, old, expired);
    return 0;
}

/* ---------------------------------------------------------------- run */

static const char *o_sock, *o_prefix = "e", *o_wal, *o_timeline;
static long o_nep = 100, o_rate = 1000, o_secs = 30;
static int o_port;

static int64_t *sched_us;     /* scheduled send time of request i */
static int64_t *ack_us;       /* ack latency of request i (-1: none) */
static int64_t *arrive_us;    /* arrival time at the receiver (0: none) */
static long n_req;
static volatile int stop_all;
static long dup_arrivals, bad_arrivals;

/* ---- the receiver ---- */

struct rconn {
    int fd;
    char buf[16384];
    size_t len;
};

static void note_arrival(const char *id, size_t len)
{
    /* ids are "stall-<n>" */
    char tmp[64];
    long k;
    if (len < 7 || len >= sizeof tmp || memcmp(id, "stall-", 6) != 0) {
        __atomic_fetch_add(&bad_arrivals, 1, __ATOMIC_RELAXED);
        return;
    }
    memcpy(tmp, id + 6, len - 6);
    tmp[len - 6] = '\0';
    k = strtol(tmp, NULL, 10);
    if (k < 0 || k >= n_req) {
        __atomic_fetch_add(&bad_arrivals, 1, __ATOMIC_RELAXED);
        return;
    }
    if (arrive_us[k])
        __atomic_fetch_add(&dup_arrivals, 1, __ATOMIC_RELAXED);
    else
        arrive_us[k] = mono_us();
}

/* Parse as many complete requests as the buffer holds; answer each. */
static int rconn_feed(struct rconn *c)
{
    for (;;) {
        char *end = memmem(c->buf, c->len, "\r\n\r\n", 4), *p, *hdr_end;
        size_t head, body = 0, total;
        if (!end)
            return c->len == sizeof c->buf ? -1 : 0;
        head = (size_t)(end - c->buf) + 4;
        hdr_end = end;
        for (p = c->buf; p < hdr_end;) {
            char *eol = memmem(p, (size_t)(hdr_end - p) + 2, "\r\n", 2);
            size_t l = eol ? (size_t)(eol - p) : (size_t)(hdr_end - p);
            if (l > 15 && strncasecmp(p, "content-length:", 15) == 0)
                body = strtoul(p + 15, NULL, 10);
            else if (l > 11 && strncasecmp(p, "webhook-id:", 11) == 0) {
                char *v = p + 11;
                while (*v == ' ')
                    v++;
                note_arrival(v, (size_t)(p + l - v));
            }
            p += l + 2;
        }
        total = head + body;
        if (total > sizeof c->buf)
            return -1;
        if (c->len < total)
            return 0;
        static const char rep[] = "HTTP/1.1 204 No Content\r\n\r\n";
        if (write(c->fd, rep, sizeof rep - 1) != (ssize_t)(sizeof rep - 1))
            return -1;
        memmove(c->buf, c->buf + total, c->len - total);
        c->len -= total;
    }
}

static void *receiver_main(void *arg)
{
    int lfd = (int)(intptr_t)arg, ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}, evs[64];

    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        die("epoll");
    while (!stop_all) {
        int n = epoll_wait(ep, evs, 64, 100), i;
        for (i = 0; i < n; i++) {
            struct rconn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    int one = 1;
                    struct rconn *nc = calloc(1, sizeof *nc);
                    if (!nc)
                        die("calloc");
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    nc->fd = fd;
                    ev.events = EPOLLIN;
                    ev.data.ptr = nc;
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            for (;;) {
                ssize_t k = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
                if (k > 0) {
                    c->len += (size_t)k;
                    if (rconn_feed(c) < 0)
                        goto drop;
                    continue;
                }
                if (k < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
            drop:
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
                break;
            }
        }
    }
    return NULL;
}

static int listen_port(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 1024) < 0)
        die("bind/listen");
    return fd;
}

/* ---- the client ---- */

static int connect_unix(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        die("socket");
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "stall: socket path too long\n");
        exit(2);
    }
    strcpy(a.sun_path, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die(path);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

struct line_conn {
    int fd;
    char *ib;
    size_t ilen, icap;
    char ob[1 << 16];
    size_t olen;
};

/* read what is there; call fn per complete line */
static int lc_read(struct line_conn *c, void (*fn)(const char *, size_t, void *), void *arg)
{
    for (;;) {
        ssize_t k;
        if (c->icap - c->ilen < 65536) {
            c->icap = c->icap ? c->icap * 2 : 1 << 20;
            c->ib = realloc(c->ib, c->icap);
            if (!c->ib)
                die("realloc");
        }
        k = read(c->fd, c->ib + c->ilen, c->icap - c->ilen);
        if (k > 0) {
            size_t off = 0;
            char *nl;
            c->ilen += (size_t)k;
            while ((nl = memchr(c->ib + off, '\n', c->ilen - off))) {
                fn(c->ib + off, (size_t)(nl - (c->ib + off)), arg);
                off = (size_t)(nl - c->ib) + 1;
            }
            memmove(c->ib, c->ib + off, c->ilen - off);
            c->ilen -= off;
            continue;
        }
        if (k == 0)
            return -1;
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        return -1;
    }
}

static int lc_flush(struct line_conn *c)
{
    while (c->olen) {
        ssize_t k = write(c->fd, c->ob, c->olen);
        if (k < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            return -1;
        }
        memmove(c->ob, c->ob + k, c->olen - (size_t)k);
        c->olen -= (size_t)k;
    }
    return 0;
}

static long acked, errors;

static void on_ack(const char *line, size_t len, void *arg)
{
    int64_t now = mono_us();
    (void)arg;
    if (acked >= n_req)
        return;
    if (!memmem(line, len, "\"ok\":true", 9)) {
        if (errors < 5)
            fprintf(stderr, "stall: error reply: %.*s\n", (int)(len > 300 ? 300 : len), line);
        errors++;
    }
    ack_us[acked] = now - sched_us[acked];
    acked++;
}

static int64_t *stats_lat;
static long stats_n, stats_cap;
static int64_t stats_sent_at;

static void on_stats(const char *line, size_t len, void *arg)
{
    (void)line;
    (void)len;
    (void)arg;
    if (!stats_sent_at)
        return;
    if (stats_n == stats_cap) {
        stats_cap = stats_cap ? stats_cap * 2 : 1024;
        stats_lat = realloc(stats_lat, (size_t)stats_cap * sizeof *stats_lat);
        if (!stats_lat)
            die("realloc");
    }
    stats_lat[stats_n++] = mono_us() - stats_sent_at;
    stats_sent_at = 0;
}

static int run_run(void)
{
    struct line_conn c = {0}, s = {0};
    pthread_t rth;
    int lfd;
    long sent = 0, i;
    int64_t t0, period_us, next_stats, wal_max = 0, next_wal, end_us, deadline;
    int64_t *tmp;
    long arrived = 0;

    if (!o_sock || !o_port) {
        fprintf(stderr, "stall run: -s SOCK and -R PORT are required\n");
        return 2;
    }
    n_req = o_rate * o_secs;
    sched_us = calloc((size_t)n_req, sizeof *sched_us);
    ack_us = calloc((size_t)n_req, sizeof *ack_us);
    arrive_us = calloc((size_t)n_req, sizeof *arrive_us);
    tmp = calloc((size_t)n_req, sizeof *tmp);
    if (!sched_us || !ack_us || !arrive_us || !tmp)
        die("calloc");
    lfd = listen_port(o_port);
    if (pthread_create(&rth, NULL, receiver_main, (void *)(intptr_t)lfd) != 0)
        die("pthread_create");
    c.fd = connect_unix(o_sock);
    s.fd = connect_unix(o_sock);
    period_us = 1000000 / o_rate;
    t0 = mono_us() + 10000;
    next_stats = t0;
    next_wal = t0;
    end_us = t0 + (int64_t)n_req * period_us;
    deadline = end_us + 60 * 1000000LL;   /* acks and deliveries: at most a minute more */
    for (;;) {
        struct pollfd pf[2];
        int64_t now = mono_us(), wait;
        while (sent < n_req && t0 + sent * period_us <= now) {
            char one[256];
            int k;
            k = snprintf(one, sizeof one,
                         "{\"op\":\"enqueue\",\"endpoint\":\"%s%03ld\",\"event_id\":\"stall-%ld\","
                         "\"payload\":{\"n\":%ld,\"click_id\":\"c_%ld\",\"amount\":42}}\n",
                         o_prefix, sent % o_nep, sent, sent, sent);
            if (c.olen + (size_t)k > sizeof c.ob)
                break;   /* the daemon is not reading: keep the schedule, send when it does */
            memcpy(c.ob + c.olen, one, (size_t)k);
            c.olen += (size_t)k;
            sched_us[sent] = t0 + sent * period_us;
            sent++;
        }
        if (lc_flush(&c) < 0)
            die("write");
        if (now >= next_stats && now < end_us) {
            if (!stats_sent_at) {
                static const char q[] = "{\"op\":\"stats\"}\n";
                memcpy(s.ob + s.olen, q, sizeof q - 1);
                s.olen += sizeof q - 1;
                stats_sent_at = now;
            }
            next_stats += 100000;
        }
        if (lc_flush(&s) < 0)
            die("write stats");
        if (o_wal && now >= next_wal) {
            struct stat sb;
            if (stat(o_wal, &sb) == 0 && sb.st_size > wal_max)
                wal_max = sb.st_size;
            next_wal += 100000;
        }
        if (sent == n_req && acked == n_req)
            break;
        if (now > deadline)
            break;
        wait = sent < n_req ? t0 + sent * period_us - now : 10000;
        if (wait > 10000)
            wait = 10000;
        if (wait < 0)
            wait = 0;
        pf[0].fd = c.fd;
        pf[0].events = POLLIN | (c.olen ? POLLOUT : 0);
        pf[1].fd = s.fd;
        pf[1].events = POLLIN | (s.olen ? POLLOUT : 0);
        {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait * 1000};
            if (ppoll(pf, 2, &ts, NULL) < 0 && errno != EINTR)
                die("ppoll");
        }
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && lc_read(&c, on_ack, NULL) < 0)
            die("hookd closed the connection");
        if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) && lc_read(&s, on_stats, NULL) < 0)
            die("hookd closed the stats connection");
    }
    /* wait for the deliveries (bounded) */
    while (mono_us() < deadline) {
        arrived = 0;
        for (i = 0; i < n_req; i++)
            arrived += arrive_us[i] != 0;
        if (arrived == n_req)
            break;
        usleep(50000);
    }
    stop_all = 1;
    pthread_join(rth, NULL);

    /* timeline: per second of schedule, worst ack and delivery latency */
    if (o_timeline) {
        FILE *f = fopen(o_timeline, "w");
        long per = o_rate, sec;
        if (!f)
            die(o_timeline);
        fprintf(f, "second worst_ack_ms worst_delivery_ms\n");
        for (sec = 0; sec * per < n_req; sec++) {
            int64_t wa = -1, wd = -1;
            for (i = sec * per; i < (sec + 1) * per && i < n_req; i++) {
                if (i < acked && ack_us[i] > wa)
                    wa = ack_us[i];
                if (arrive_us[i] && arrive_us[i] - sched_us[i] > wd)
                    wd = arrive_us[i] - sched_us[i];
            }
            fprintf(f, "%ld %.1f %.1f\n", sec, (double)wa / 1000.0, (double)wd / 1000.0);
        }
        fclose(f);
    }
    {
        long worst_i = 0;
        for (i = 0; i < acked; i++)
            if (ack_us[i] > ack_us[worst_i])
                worst_i = i;
        memcpy(tmp, ack_us, (size_t)acked * sizeof *tmp);
        qsort(tmp, (size_t)acked, sizeof *tmp, cmp_i64);
        printf("sent=%ld acks=%ld errors=%ld ack_p50_us=%lld ack_p99_us=%lld ack_p999_us=%lld ack_max_us=%lld "
               "ack_worst_at_s=%.1f",
               sent, acked, errors, (long long)pct(tmp, (size_t)acked, 50), (long long)pct(tmp, (size_t)acked, 99),
               (long long)pct(tmp, (size_t)acked, 99.9), (long long)(acked ? tmp[acked - 1] : -1),
               (double)(sched_us[worst_i] - t0) / 1e6);
        arrived = 0;
        for (i = 0; i < n_req; i++)
            if (arrive_us[i] && sched_us[i])
                tmp[arrived++] = arrive_us[i] - sched_us[i];
        qsort(tmp, (size_t)arrived, sizeof *tmp, cmp_i64);
        printf(" arrived=%ld dup_arrivals=%ld bad_arrivals=%ld deliver_p50_us=%lld deliver_p99_us=%lld "
               "deliver_p999_us=%lld deliver_max_us=%lld",
               arrived, dup_arrivals, bad_arrivals, (long long)pct(tmp, (size_t)arrived, 50),
               (long long)pct(tmp, (size_t)arrived, 99), (long long)pct(tmp, (size_t)arrived, 99.9),
               (long long)(arrived ? tmp[arrived - 1] : -1));
        qsort(stats_lat, (size_t)stats_n, sizeof *stats_lat, cmp_i64);
        printf(" stats_queries=%ld stats_p50_us=%lld stats_p99_us=%lld stats_max_us=%lld", stats_n,
               (long long)pct(stats_lat, (size_t)stats_n, 50), (long long)pct(stats_lat, (size_t)stats_n, 99),
               (long long)(stats_n ? stats_lat[stats_n - 1] : -1));
        if (o_wal)
            printf(" wal_max_bytes=%lld", (long long)wal_max);
        printf("\n");
    }
    return acked == n_req && errors == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int opt;

    signal(SIGPIPE, SIG_IGN);
    if (argc >= 5 && strcmp(argv[1], "gen") == 0)
        return run_gen(argv[2], atol(argv[3]), atol(argv[4]), argc >= 6 ? atol(argv[5]) : 0);
    if (argc >= 4 && strcmp(argv[1], "count") == 0)
        return run_count(argv[2], atol(argv[3]));
    if (argc >= 2 && strcmp(argv[1], "run") == 0) {
        optind = 2;
        while ((opt = getopt(argc, argv, "s:p:n:r:d:R:W:T:")) != -1) {
            switch (opt) {
            case 's': o_sock = optarg; break;
            case 'p': o_prefix = optarg; break;
            case 'n': o_nep = atol(optarg); break;
            case 'r': o_rate = atol(optarg); break;
            case 'd': o_secs = atol(optarg); break;
            case 'R': o_port = atoi(optarg); break;
            case 'W': o_wal = optarg; break;
            case 'T': o_timeline = optarg; break;
            default: goto usage;
            }
        }
        if (o_rate < 1 || o_rate > 1000000 || o_secs < 1 || o_nep < 1)
            goto usage;
        return run_run();
    }
usage:
    fprintf(stderr, "usage: stall gen DB ROWS_PER_ENDPOINT SPAN_S | stall count DB WINDOW_S |\n"
                    "       stall run -s SOCK -R PORT [-p PREFIX] [-n NEP] [-r RATE] [-d SECS] [-W WAL] [-T FILE]\n");
    return 2;
}
