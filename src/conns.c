/* conns.c - the control socket's connections: each one's requests read
 * line by line within its budgets and handed to the writer or the reader,
 * its replies written in request order, each its share of the loop turn,
 * and the ones that overstayed (climit.h) closed. Who may connect and the
 * users' memory gates are cpeer.c's. Called from the server's event loop
 * only; the loop owns the epoll set and the threads. */
#include "conns.h"
#include "climit.h"
#include "cpeer.h"
#include "log.h"
#include "proto.h"
#include "reader.h"
#include "req.h"
#include "util.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK 65536
#define READS_PER_TURN 4        /* a connection's reads per loop turn: others get theirs */
#define LINES_PER_TURN 256      /* its request lines handled per loop turn */
#define HEAVY_BYTES_PER_TURN (256 << 10) /* read per turn from connections inside a long line */
#define LONG_LINE (64 << 10)    /* lines longer are parsed one per loop turn */
#define WRITER_RESERVE 512      /* bytes set aside for an enqueue's or admin op's reply */

struct conn {
    int fd;
    uid_t uid;
    pid_t pid;
    int admin;
    struct cpeer *peer;
    struct buf in;            /* a partial line, or lines held back by the budget */
    size_t in_scanned;        /* bytes at the front of in known to hold no newline */
    struct buf out;
    size_t out_off;          /* bytes of out already sent: a large reply
                              * goes out in many sends, and moving the rest
                              * to the front after each would be quadratic */
    struct req *head, *tail;  /* reply FIFO, request order */
    size_t pending;           /* requests not yet written (incl. in threads) */
    size_t held;              /* bytes of the requests in the FIFO (req.held) */
    size_t reserved;          /* bytes set aside for replies to come (req.reserve) */
    size_t counted;           /* bytes counted in the peer's (cpeer_account) */
    int eof;                  /* peer finished sending */
    int hup;                  /* peer gone */
    int dead;                 /* fd closed; freed when pending reaches 0 */
    int skipping;             /* inside an over-long line */
    int backlog;              /* in holds complete lines not yet handled */
    unsigned events;          /* asked of epoll */
    int registered;           /* in the epoll set */
    int queued;               /* on S.dirty */
    int long_queued;          /* on S.long_head: a long line waits for its turn */
    int64_t active_ms, line_ms, out_ms;   /* struct climit_conn */
    struct conn *prev, *next; /* all live connections */
    struct conn *dirty;       /* to be serviced at the end of the loop turn */
    struct conn *long_next;   /* S.long_head's order */
    struct conn *grave;       /* dead ones waiting to be freed */
};

static struct {
    const struct config *c;
    struct climit lim_conn;
    struct proto_limits lim;
    const struct req_port *port;   /* every request's way back */
    struct writer *w;
    struct reader *rd;
    int ep;
    struct conn *conns;
    struct conn *dirty;       /* connections to service this turn */
    struct conn *grave;       /* freed at the end of a loop turn */
    int64_t now;              /* monotonic ms of this loop turn */
    int long_lines;           /* lines over LONG_LINE handled this turn */
    struct conn *long_head, *long_tail;   /* waiting to handle a long line, in order */
    unsigned heavy_turn;      /* rotates who reads first inside long lines */
    int64_t sweep_every, next_sweep;
    int shutting_down;
} S;

/* ---- connections ---- */

/* Serviced at the end of this loop turn (once, however often marked). */
static void conn_mark(struct conn *c)
{
    if (c->queued || c->dead)
        return;
    c->queued = 1;
    c->dirty = S.dirty;
    S.dirty = c;
}

/* A long line held back for the turn's quota: first served next turn,
 * in the order they came, so none waits behind others for ever. */
static void conn_queue_long(struct conn *c)
{
    if (c->long_queued || c->dead)
        return;
    c->long_queued = 1;
    c->long_next = NULL;
    if (S.long_tail)
        S.long_tail->long_next = c;
    else
        S.long_head = c;
    S.long_tail = c;
}

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
    struct conn *keep = NULL;

    while (S.grave) {
        struct conn *c = S.grave;
        S.grave = c->grave;
        if (c->queued || c->long_queued) {
            /* still on a list of the next turn, which skips it and
             * lets it go: freed at the end of that turn */
            c->grave = keep;
            keep = c;
        } else {
            conn_free(c);
        }
    }
    S.grave = keep;
}

static void req_release(struct req *r)
{
    proto_req_free(&r->p);
    buf_free(&r->reply);
    free(r);
}

/* A dead connection's finished replies that nobody will read; requests
 * still in a thread are dropped when they come back. */
static void conn_drop_finished(struct conn *c)
{
    struct req *r;

    while ((r = c->head) && r->done) {
        c->head = r->fifo;
        c->pending--;
        req_release(r);
    }
    if (!c->head)
        c->tail = NULL;
    if (c->pending == 0)
        conn_bury(c);
}

static int conn_over_budget(const struct conn *c)
{
    return (c->out.len - c->out_off) + c->held + c->reserved >= S.lim_conn.client_memory;
}

/* May the connection take in more: read, or handle a line it holds? */
static int conn_open(const struct conn *c)
{
    return !c->dead && !c->eof && !conn_over_budget(c) && cpeer_open(c->peer);
}

static void conn_update_events(struct conn *c)
{
    struct epoll_event ev = {0};
    int reading;

    if (c->dead)
        return;
    reading = conn_open(c) && !c->backlog && !c->hup;
    ev.events = (reading ? EPOLLIN | EPOLLRDHUP : 0) | (c->out.len > c->out_off ? EPOLLOUT : 0);
    if (c->hup && !ev.events) {
        /* a peer that hung up is reported whatever the mask: while it is
         * not read it leaves the set, or the loop would spin on it */
        if (c->registered)
            epoll_ctl(S.ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->registered = 0;
        c->events = 0;
        return;
    }
    if (c->registered && ev.events == c->events)
        return;
    ev.data.ptr = c;
    if (epoll_ctl(S.ep, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        log_error("epoll_ctl", "err=\"%s\"", strerror(errno));
        return;
    }
    c->registered = 1;
    c->events = ev.events;
}

/* Bring the uid's count of bytes up to date; the connections behind a
 * gate that moved stop reading, or read and handle what they hold. */
static void conn_account(struct conn *c)
{
    struct cpeer *p = c->peer;
    size_t now;
    unsigned moved;
    struct conn *o;

    if (c->dead)
        return;
    now = c->in.len + (c->out.len - c->out_off) + c->held;
    moved = cpeer_account(p, c->counted, now);
    c->counted = now;
    /* S.conns is newest first, as a peer's own list was: its connections
     * are marked in the order they always were */
    if (moved & CPEER_USER_GATE)
        for (o = S.conns; o; o = o->next)
            if (o->peer == p)
                conn_mark(o);
    if (moved & CPEER_ALL_GATE)
        for (o = S.conns; o; o = o->next)
            if (!o->admin)
                conn_mark(o);
}

static void conn_close(struct conn *c)
{
    if (c->dead)
        return;
    if (c->registered)
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
    cpeer_leave(c->peer, c->counted);
    c->counted = 0;
    c->peer = NULL;
    buf_free(&c->in);
    buf_free(&c->out);
    conn_drop_finished(c);
}

/* A request's reply is complete: it holds the reply's bytes from now on
 * instead of its line's and the bytes set aside. */
static void req_settle(struct conn *c, struct req *r)
{
    r->done = 1;
    c->held = c->held - r->held + r->reply.len;
    r->held = r->reply.len;
    c->reserved -= r->reserve;
    r->reserve = 0;
}

/* Move finished replies from the FIFO head to the output buffer, write
 * what the socket takes. */
static void conn_flush(struct conn *c)
{
    struct req *r;
    ssize_t n;
    size_t before;

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
        c->held -= r->held;
        req_release(r);
    }
    before = c->out_off;
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
    if (c->out_off > before)
        c->active_ms = S.now;
    if (c->out_off == c->out.len) {
        /* a large reply's memory is not kept for the connection's life */
        if (c->out.cap > ((size_t)1 << 20))
            buf_free(&c->out);
        else
            buf_reset(&c->out);
        c->out_off = 0;
        c->out_ms = 0;
    } else if (!c->out_ms) {
        c->out_ms = S.now;   /* the client has not read everything */
    }
}

static struct req *req_new(struct conn *c)
{
    struct req *r = calloc(1, sizeof *r);

    if (!r)
        return NULL;
    r->conn = c;
    r->port = S.port;
    if (c->tail)
        c->tail->fifo = r;
    else
        c->head = r;
    c->tail = r;
    c->pending++;
    return r;
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
    /* the parsed request holds at most about its line's bytes */
    r->held = len;
    c->held += len;
    if (proto_parse(line, len, &S.lim, &r->p, &err) < 0) {
        req_error(r, err.code, "%s", err.message);
        req_settle(c, r);
        return;
    }
    if (S.shutting_down) {
        req_error(r, PERR_SHUTTING_DOWN, "hookd is shutting down");
        req_settle(c, r);
        return;
    }
    if (r->p.admin_only && !c->admin) {
        cpeer_forbidden(proto_op_name(r->p.op), c->uid, c->pid);
        req_error(r, PERR_FORBIDDEN, "op '%s' needs an admin peer (uid 0, hookd's uid, or [server] admin_uids/admin_groups)",
                  proto_op_name(r->p.op));
        req_settle(c, r);
        return;
    }
    switch (r->p.op) {
    case OP_PING:
        buf_puts(&r->reply, "{\"ok\":true,\"pong\":true,\"version\":\"" HOOKD_VERSION "\"}\n");
        req_settle(c, r);
        return;
    case OP_ENQUEUE:
    case OP_ENDPOINT_PUT:
    case OP_ENDPOINT_DELETE:
    case OP_REQUEUE:
    case OP_PURGE:
    case OP_ERASE:
    case OP_PAUSE:
    case OP_RESUME:
        r->reserve = WRITER_RESERVE;
        c->reserved += r->reserve;
        writer_submit(S.w, r);
        return;
    default:
        /* a query's reply grows with what it lists (endpoint.list with
         * the endpoints): it takes the whole budget until it is back,
         * so a connection has one query at a time in a thread */
        r->reserve = S.lim_conn.client_memory;
        c->reserved += r->reserve;
        reader_submit(S.rd, r);
        return;
    }
}

/* Handle the complete lines at the front of c->in while the connection
 * may take them in (at most LINES_PER_TURN), drop the ones handled, and
 * keep the rest: lines held back (backlog) and the partial line. */
static void conn_lines(struct conn *c)
{
    size_t start = 0, lines = 0;
    const char *nl;

    c->backlog = 0;
    for (;;) {
        size_t from = start ? start : c->in_scanned;
        nl = c->in.len > from ? memchr(c->in.p + from, '\n', c->in.len - from) : NULL;
        if (!nl) {
            c->in_scanned = c->in.len - start;
            break;
        }
        if (!conn_open(c) || lines == LINES_PER_TURN ||
            ((size_t)(nl - (c->in.p + start)) > LONG_LINE && S.long_lines && !c->skipping)) {
            /* held back: over a budget, or its share of this turn used */
            c->backlog = !c->dead;
            c->in_scanned = 0;
            if (lines == LINES_PER_TURN)
                conn_mark(c);
            else if (conn_open(c))
                conn_queue_long(c);
            break;
        }
        if ((size_t)(nl - (c->in.p + start)) > LONG_LINE && !c->skipping)
            S.long_lines++;   /* a few ms of parsing: one such line per turn */
        if (c->skipping)
            c->skipping = 0;
        else
            handle_line(c, c->in.p + start, (size_t)(nl - (c->in.p + start)));
        start = (size_t)(nl - c->in.p) + 1;
        lines++;
    }
    if (c->dead)
        return;
    if (!c->backlog && !c->skipping && c->in.len - start > (size_t)S.c->max_line) {
        struct req *r = req_new(c);
        if (r) {
            req_error(r, PERR_LINE_TOO_LONG, "request line longer than %lld bytes; skipped to the next newline",
                      (long long)S.c->max_line);
            req_settle(c, r);
        }
        c->skipping = 1;
    }
    if (c->skipping && !c->backlog) {
        start = c->in.len;   /* an over-long line is dropped as it comes */
        c->in_scanned = 0;
    }
    buf_consume(&c->in, start);
    /* the buffer of a long line is not kept for the connection's life,
     * nor while a short partial line follows it */
    if (c->in.cap > 2 * READ_CHUNK + 1 && c->in.len < c->in.cap / 4) {
        if (c->in.len == 0) {
            buf_free(&c->in);
        } else {
            char *np = realloc(c->in.p, c->in.len + READ_CHUNK + 1);
            if (np) {
                c->in.p = np;
                c->in.cap = c->in.len + READ_CHUNK + 1;
            }
        }
    }
    /* a line is timed from its first byte: a new one starts after each
     * complete one */
    if ((c->in.len == 0 && !c->skipping) || c->backlog)
        c->line_ms = 0;
    else if (lines || !c->line_ms)
        c->line_ms = S.now;
}

/* Read at most `rounds` chunks; returns the bytes read. */
static size_t conn_read(struct conn *c, int rounds)
{
    int round;
    size_t got = 0;

    for (round = 0; round < rounds && conn_open(c) && !c->backlog; round++) {
        ssize_t n;

        if (buf_reserve(&c->in, READ_CHUNK) < 0) {
            conn_close(c);
            return got;
        }
        n = recv(c->fd, c->in.p + c->in.len, READ_CHUNK, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(c);
            return got;
        }
        if (n == 0) {
            c->eof = 1;  /* half-closed: answer what was asked, then close */
            c->in.len = 0;
            c->in_scanned = 0;
            c->line_ms = 0;
            return got;
        }
        got += (size_t)n;
        c->in.len += (size_t)n;
        c->in.p[c->in.len] = '\0';
        c->active_ms = S.now;
        conn_lines(c);
        conn_account(c);
    }
    return got;
}

/* After whatever happened to it this turn: write, handle what it holds
 * if it may, close it when it is finished, and read only while under its
 * budgets. */
static void conn_service(struct conn *c)
{
    conn_flush(c);
    if (!c->dead && c->backlog && conn_open(c)) {
        conn_lines(c);
        conn_flush(c);
    }
    if (c->dead)
        return;
    if (c->eof && c->pending == 0 && c->out.len == 0) {
        conn_close(c);
        return;
    }
    if (c->hup && !conn_open(c) && !c->backlog) {
        conn_close(c);   /* gone, and nothing more will be taken from it */
        return;
    }
    conn_account(c);
    conn_update_events(c);
}

static void do_accept(int lfd)
{
    int i;

    /* a bounded number per turn: a flood of connections waits its turn */
    for (i = 0; i < 64; i++) {
        struct ucred cr;
        struct epoll_event ev = {0};
        struct conn *c;
        struct cpeer *p;
        int admin, fd = cpeer_accept(lfd, &p, &cr, &admin);

        if (fd == CPEER_AGAIN)
            continue;
        if (fd < 0)
            return;
        if (!(c = calloc(1, sizeof *c))) {
            cpeer_refuse(fd, CLIMIT_FULL);
            cpeer_put(p);
            continue;
        }
        c->fd = fd;
        c->uid = cr.uid;
        c->pid = cr.pid;
        c->admin = admin;
        c->peer = p;
        c->active_ms = S.now;
        ev.events = c->events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = c;
        if (epoll_ctl(S.ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
            cpeer_put(p);
            continue;
        }
        c->registered = 1;
        c->next = S.conns;
        if (S.conns)
            S.conns->prev = c;
        S.conns = c;
        cpeer_join(p);
        if (cpeer_user_closed(p))
            conn_mark(c);   /* its user is over budget: not read for now */
    }
}

/* Close the connections that overstayed; one log line for all of them
 * and for the refused ones since the last. */
static void sweep(void)
{
    struct conn *c, *next;

    for (c = S.conns; c; c = next) {
        struct climit_conn t = {c->active_ms, c->line_ms, c->out_ms,
                                c->pending || c->out.len || c->in.len || c->skipping};
        enum climit_expiry e = climit_expired(&S.lim_conn, &t, S.now);
        next = c->next;
        if (e != CLIMIT_LIVE) {
            cpeer_expired(e);
            conn_close(c);
        }
    }
    cpeer_sweep_log();
}

/* A request came back from a thread (through the server's completion
 * list): its connection writes the reply, or drops it if gone. */
void conns_completed(struct req *r)
{
    struct conn *c = r->conn;

    req_settle(c, r);
    if (c->dead) {
        conn_drop_finished(c);  /* its client is gone */
        return;
    }
    conn_flush(c);   /* the ack goes now, not after the turn's other work */
    conn_mark(c);
}

int conns_init(const struct config *c, int ep, const struct req_port *port, struct writer *w, struct reader *rd)
{
    memset(&S, 0, sizeof S);
    S.c = c;
    climit_init(&S.lim_conn, c);
    S.lim.max_payload = (size_t)c->max_payload;
    S.port = port;
    S.w = w;
    S.rd = rd;
    S.ep = ep;
    /* without timeouts the sweep still logs the refused clients */
    S.sweep_every = climit_sweep_ms(&S.lim_conn);
    if (S.sweep_every < 0)
        S.sweep_every = 1000;
    S.now = util_mono_ms();
    S.next_sweep = S.now + S.sweep_every;
    return cpeer_init(c, &S.lim_conn);
}

void conns_free(void)
{
    cpeer_free();
}

void conns_shutting_down(void)
{
    S.shutting_down = 1;
}

int conns_wait_ms(int64_t now)
{
    /* connections with work left from the last turn go on at once;
     * otherwise sleep until the next look for overstaying ones */
    if (S.dirty || S.long_head)
        return 0;
    return (int)(S.next_sweep > now ? S.next_sweep - now : 0);
}

void conns_begin(int64_t now)
{
    S.now = now;
    S.long_lines = 0;
}

void conns_events(const struct epoll_event *evs, int n, int lfd)
{
    struct conn *heavy[CONNS_MAX_EVENTS], *cn, *next;
    int i, nheavy = 0;

    /* the long lines held back last turn go first, oldest first */
    cn = S.long_head;
    S.long_head = S.long_tail = NULL;
    for (; cn; cn = next) {
        next = cn->long_next;
        cn->long_queued = 0;
        cn->long_next = NULL;
        if (!cn->dead)
            conn_service(cn);
    }
    /* Then short requests (the server has written the acks that came
     * back): the connections with no partial line, then new connections,
     * then the ones in the middle of a long line, within a byte budget
     * per turn and in turns, so that no client's long lines hold up the
     * others' short ones. */
    for (i = 0; i < n && i < CONNS_MAX_EVENTS; i++) {
        cn = evs[i].data.ptr;
        if (cn->dead)
            continue;
        if (evs[i].events & EPOLLERR) {
            conn_close(cn);
            continue;
        }
        if (evs[i].events & EPOLLHUP)
            cn->hup = 1;
        if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) && (cn->in.len || cn->skipping)) {
            heavy[nheavy++] = cn;
            continue;
        }
        if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))
            conn_read(cn, READS_PER_TURN);
        conn_mark(cn);
    }
    if (lfd >= 0)
        do_accept(lfd);
    if (nheavy) {
        size_t budget = HEAVY_BYTES_PER_TURN;
        int k;
        S.heavy_turn++;
        for (k = 0; k < nheavy; k++) {
            cn = heavy[(k + S.heavy_turn) % (unsigned)nheavy];
            if (!cn->dead && budget > 0) {
                size_t got = conn_read(cn, budget >= READS_PER_TURN * READ_CHUNK ? READS_PER_TURN
                                                                                : (int)(budget / READ_CHUNK) + 1);
                budget = got >= budget ? 0 : budget - got;
            }
            conn_mark(cn);   /* the rest: still readable, next turn */
        }
    }
}

void conns_end(void)
{
    struct conn *cn, *next;

    /* every connection something happened to: replies that became
     * ready, lines held back, budgets that changed */
    cn = S.dirty;
    S.dirty = NULL;
    for (; cn; cn = next) {
        next = cn->dirty;
        cn->queued = 0;
        cn->dirty = NULL;
        if (!cn->dead)
            conn_service(cn);
    }
    if (S.now >= S.next_sweep) {
        sweep();
        S.next_sweep = S.now + S.sweep_every;
    }
    conn_reap();
}

/* Flush what is answered, blocking (a fatal error: nothing else runs). */
void conns_flush_blocking(void)
{
    struct conn *cn;

    for (cn = S.conns; cn; cn = cn->next) {
        int fl = fcntl(cn->fd, F_GETFL);
        fcntl(cn->fd, F_SETFL, fl & ~O_NONBLOCK);
        conn_flush(cn);
    }
}

/* Write what is finished and close every connection (blocking, best effort). */
void conns_close_all(void)
{
    while (S.conns) {
        struct conn *cn = S.conns;
        int fl = fcntl(cn->fd, F_GETFL);
        fcntl(cn->fd, F_SETFL, fl & ~O_NONBLOCK);
        conn_flush(cn);
        if (!cn->dead)
            conn_close(cn);
    }
    /* no turn follows: the lists let go of what they hold */
    while (S.dirty) {
        S.dirty->queued = 0;
        S.dirty = S.dirty->dirty;
    }
    while (S.long_head) {
        S.long_head->long_queued = 0;
        S.long_head = S.long_head->long_next;
    }
    S.long_tail = NULL;
    conn_reap();
}

