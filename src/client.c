/* client.c - the client side of the control socket. */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---------- transport ---------- */

static int remaining_ms(int64_t deadline)
{
    int64_t left = deadline - util_mono_ms();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Returns 1 ready, 0 timed out, -1 error (errno). */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = ev};
    int r;

    for (;;) {
        r = poll(&pfd, 1, remaining_ms(deadline));
        if (r >= 0)
            return r > 0;
        if (errno != EINTR)
            return -1;
    }
}

static int do_connect(const char *path, int64_t deadline, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    /* A non-blocking AF_UNIX connect either completes or fails with
     * EAGAIN when the listen backlog is full: retry until the deadline. */
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN && remaining_ms(deadline) > 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        snprintf(err, errlen, "cannot connect to %s: %s%s", path, strerror(e),
                 e == ENOENT || e == ECONNREFUSED ? " (is hookd running?)" : "");
        close(fd);
        return -1;
    }
    return fd;
}

int client_transact(const char *path, const struct buf *req, int64_t timeout_ms, struct buf *reply,
                    char *err, size_t errlen)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    char tdur[32];
    size_t off = 0, scanned = 0;
    int fd, rc = -1, r;

    util_fmt_duration(timeout_ms, tdur, sizeof tdur);
    fd = do_connect(path, deadline, err, errlen);
    if (fd < 0)
        return -1;
    while (off < req->len) {
        ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            r = wait_fd(fd, POLLOUT, deadline);
            if (r > 0)
                continue;
            if (r == 0)
                snprintf(err, errlen, "%s: daemon did not take the request within %s", path, tdur);
            else
                snprintf(err, errlen, "%s: poll: %s", path, strerror(errno));
            goto out;
        }
        snprintf(err, errlen, "%s: write: %s", path, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t n;
        char *nl;

        if (buf_reserve(reply, 65536) < 0) {
            snprintf(err, errlen, "out of memory reading the reply");
            goto out;
        }
        n = read(fd, reply->p + reply->len, reply->cap - reply->len - 1);
        if (n > 0) {
            reply->len += (size_t)n;
            reply->p[reply->len] = '\0';
            nl = memchr(reply->p + scanned, '\n', reply->len - scanned);
            if (nl) {
                reply->len = (size_t)(nl - reply->p);
                reply->p[reply->len] = '\0';
                break;
            }
            scanned = reply->len;
            if (reply->len > MAX_REPLY) {
                snprintf(err, errlen, "%s: reply larger than %zu MiB", path, MAX_REPLY >> 20);
                goto out;
            }
            continue;
        }
        if (n == 0) {
            snprintf(err, errlen, "%s: daemon closed the connection without a reply", path);
            goto out;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            r = wait_fd(fd, POLLIN, deadline);
            if (r > 0)
                continue;
            if (r == 0)
                snprintf(err, errlen, "%s: no reply within %s", path, tdur);
            else
                snprintf(err, errlen, "%s: poll: %s", path, strerror(errno));
            goto out;
        }
        snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

/* ---------- configuration ---------- */

const char *client_default_config(void)
{
    const char *e = getenv("HOOKD_CONFIG");
    return e && *e ? e : DEFAULT_CONFIG;
}

int client_load_config(struct config *cfg, const char *path)
{
    char err[512];

    if (config_init(cfg) < 0) {
        fprintf(stderr, "hookd: out of memory\n");
        return -1;
    }
    if (config_load(cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        config_free(cfg);
        return -1;
    }
    return 0;
}

int client_resolve_socket(const struct args *a, char *out, size_t n)
{
    const char *env = getenv("HOOKD_SOCKET"), *path = a->val[O_CONFIG], *cenv = getenv("HOOKD_CONFIG");
    struct config cfg;

    if (a->val[O_SOCKET]) {
        util_strlcpy(out, a->val[O_SOCKET], n);
        return 0;
    }
    if (env && *env) {
        util_strlcpy(out, env, n);
        return 0;
    }
    /* The system config holds secrets and is the daemon's alone: a client
     * reads a config only when told to (-c, HOOKD_CONFIG), otherwise it
     * uses the packaged socket path. */
    if (!path && cenv && *cenv)
        path = cenv;
    if (!path) {
        util_strlcpy(out, FALLBACK_SOCKET, n);
        return 0;
    }
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "hookd: %s: cannot open: %s (client commands need no config: without -c they use %s; "
                        "or -s PATH, HOOKD_SOCKET)\n", path, strerror(errno), FALLBACK_SOCKET);
        return -1;
    }
    if (client_load_config(&cfg, path) < 0)
        return -1;
    util_strlcpy(out, cfg.socket_path, n);
    config_free(&cfg);
    return 0;
}

int client_daemon_answers(const struct config *cfg)
{
    struct buf req = {0}, reply = {0};
    char err[256];
    int ok;

    buf_puts(&req, "{\"op\":\"ping\"}\n");
    ok = !req.failed && cfg->socket_path &&
         client_transact(cfg->socket_path, &req, 1000, &reply, err, sizeof err) == 0;
    buf_free(&req);
    buf_free(&reply);
    return ok;
}
