/* cpeer.c - the control socket's local peers: one per uid with
 * connections, the bytes they hold against user_memory and
 * clients_memory, admission at accept, and the log lines of clients
 * refused, dropped or forbidden. Called by conns.c from the server's
 * event loop only. */
#include "cpeer.h"
#include "ctlsock.h"
#include "log.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cpeer {
    uid_t uid;
    int admin;                /* not held to the per-user limits */
    int closed;               /* over user_memory: none of its connections reads */
    size_t nconns;
    size_t bytes;
    struct cpeer *next;
};

static struct {
    const struct config *c;
    const struct climit *lim;
    int spare_fd;             /* given up to accept and refuse when out of descriptors */
    struct cpeer *peers;
    size_t nconns;
    size_t bytes;             /* held by non-admin connections */
    int closed;               /* over clients_memory: no non-admin connection reads */
    uint64_t refused[4], expired[4];   /* since the last log line (enum climit_*) */
    unsigned forbidden_logged;         /* forbidden lines logged since the last sweep */
    uint64_t forbidden_quiet;          /* and not logged */
} P;

int cpeer_init(const struct config *c, const struct climit *lim)
{
    memset(&P, 0, sizeof P);
    P.c = c;
    P.lim = lim;
    P.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return P.spare_fd < 0 ? -1 : 0;
}

void cpeer_free(void)
{
    if (P.spare_fd >= 0)
        close(P.spare_fd);
    P.spare_fd = -1;
}

static struct cpeer *peer_get(uid_t uid, int admin)
{
    struct cpeer *p;

    /* keyed by admin too: with admin_groups the same uid can connect
     * with a group that makes it an admin and with one that does not */
    for (p = P.peers; p; p = p->next)
        if (p->uid == uid && p->admin == admin)
            return p;
    if (!(p = calloc(1, sizeof *p)))
        return NULL;
    p->uid = uid;
    p->admin = admin;
    p->next = P.peers;
    P.peers = p;
    return p;
}

void cpeer_put(struct cpeer *p)
{
    struct cpeer **pp;

    if (p->nconns)
        return;
    for (pp = &P.peers; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    free(p);
}

void cpeer_refuse(int fd, enum climit_refusal why)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "{\"ok\":false,\"error\":{\"code\":\"" PERR_BUSY "\",\"message\":\"%s\"}}\n",
                     climit_refusal_text(why));

    if (n > 0 && send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        (void)0;
    close(fd);
    P.refused[why]++;
}

int cpeer_accept(int lfd, struct cpeer **peer, struct ucred *cred, int *admin)
{
    struct ucred cr;
    socklen_t crl = sizeof cr;
    struct cpeer *p;
    enum climit_refusal why;
    int adm, fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0) {
        if (errno == EINTR)
            return CPEER_AGAIN;
        if ((errno == EMFILE || errno == ENFILE) && P.spare_fd >= 0) {
            /* out of descriptors: the waiting client is told so
             * rather than left to spin the loop */
            close(P.spare_fd);
            fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                cpeer_refuse(fd, CLIMIT_FULL);
            P.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            return CPEER_AGAIN;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            log_warn("accept_failed", "err=\"%s\"", strerror(errno));
        return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0) {
        close(fd);
        return CPEER_AGAIN;
    }
    /* credentials first: the admins' slots and each user's share are
     * decided by who is asking */
    adm = ctlsock_peer_is_admin(P.c, cr.uid, cr.gid);
    if (!(p = peer_get(cr.uid, adm))) {
        close(fd);
        return CPEER_AGAIN;
    }
    why = climit_admit(P.lim, (int64_t)P.nconns, (int64_t)p->nconns, adm);
    if (why != CLIMIT_ADMIT) {
        cpeer_refuse(fd, why);
        cpeer_put(p);
        return CPEER_AGAIN;
    }
    *peer = p;
    *cred = cr;
    *admin = adm;
    return fd;
}

void cpeer_join(struct cpeer *p)
{
    P.nconns++;
    p->nconns++;
}

void cpeer_leave(struct cpeer *p, size_t counted)
{
    P.nconns--;
    p->bytes -= counted;
    if (!p->admin)
        P.bytes -= counted;
    p->nconns--;
    cpeer_put(p);
}

int cpeer_open(const struct cpeer *p)
{
    return !p->closed && (p->admin || !P.closed);
}

int cpeer_user_closed(const struct cpeer *p)
{
    return p->closed;
}

unsigned cpeer_account(struct cpeer *p, size_t before, size_t now)
{
    unsigned moved = 0;
    int closed;

    p->bytes = p->bytes - before + now;
    if (p->admin)
        return 0;   /* held to the per-connection budget only */
    P.bytes = P.bytes - before + now;
    closed = climit_gate(P.lim->user_memory, p->closed, p->bytes);
    if (closed != p->closed) {
        p->closed = closed;
        moved |= CPEER_USER_GATE;
    }
    closed = climit_gate(P.lim->clients_memory, P.closed, P.bytes);
    if (closed != P.closed) {
        P.closed = closed;
        if (closed)
            log_warn("clients_memory_full", "bytes=%zu clients=%zu note=\"non-admin connections are not read until "
                     "it drains\"", P.bytes, P.nconns);
        moved |= CPEER_ALL_GATE;
    }
    return moved;
}

void cpeer_expired(enum climit_expiry why)
{
    P.expired[why]++;
}

void cpeer_forbidden(const char *op, uid_t uid, pid_t pid)
{
    /* a client pipelining forbidden requests must not flood the log:
     * a few lines per sweep, the rest counted in the next one */
    if (P.forbidden_logged < 10) {
        P.forbidden_logged++;
        log_warn("forbidden", "op=%s uid=%u pid=%d", op, (unsigned)uid, (int)pid);
    } else {
        P.forbidden_quiet++;
    }
}

void cpeer_sweep_log(void)
{
    int i, any = 0;

    if (P.forbidden_quiet)
        log_warn("forbidden", "suppressed=%llu note=\"more admin requests from non-admin peers than are logged\"",
                 (unsigned long long)P.forbidden_quiet);
    P.forbidden_logged = 0;
    P.forbidden_quiet = 0;
    for (i = 0; i < 4; i++)
        any |= P.expired[i] || P.refused[i];
    if (!any)
        return;
    log_warn("clients_dropped",
             "idle=%llu partial_line=%llu not_reading=%llu refused_full=%llu refused_reserved=%llu refused_user=%llu "
             "clients=%zu",
             (unsigned long long)P.expired[CLIMIT_IDLE], (unsigned long long)P.expired[CLIMIT_LINE],
             (unsigned long long)P.expired[CLIMIT_SEND], (unsigned long long)P.refused[CLIMIT_FULL],
             (unsigned long long)P.refused[CLIMIT_RESERVED], (unsigned long long)P.refused[CLIMIT_USER], P.nconns);
    memset(P.expired, 0, sizeof P.expired);
    memset(P.refused, 0, sizeof P.refused);
}
