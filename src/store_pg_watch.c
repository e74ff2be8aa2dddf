/* store_pg_watch.c - hearing the other nodes: LISTEN on a connection of
 * its own, in a thread of its own, so that a row enqueued on node A is
 * claimed by an idle node B within milliseconds, and an endpoint changed
 * on A (paused, resumed, a secret rotated, added, deleted) is changed on
 * B too. Notifications are lost while the connection is down: after every
 * (re)connect, and whenever poll_interval passes, the writer is told to
 * look at everything anyway (polling as the fallback). */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct store_watch {
    const struct config *c;
    store_watch_fn fn;
    void *ctx;
    pthread_t th;
    int pipe[2];          /* a byte on [1] stops the thread */
    PGconn *conn;
};

static int listen_on(struct store_watch *w)
{
    PGresult *r = PQexec(w->conn, "LISTEN hookd_due; LISTEN hookd_endpoints");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;

    PQclear(r);
    return ok ? 0 : -1;
}

static void drop(struct store_watch *w)
{
    PQfinish(w->conn);
    w->conn = NULL;
}

/* Wait up to ms for the stop byte; 1 when it came. */
static int stop_within(struct store_watch *w, int64_t ms)
{
    struct pollfd p = {w->pipe[0], POLLIN, 0};

    return poll(&p, 1, (int)ms) > 0;
}

static void deliver_notes(struct store_watch *w)
{
    PGnotify *n;

    while ((n = PQnotifies(w->conn)) != NULL) {
        int64_t id = n->extra ? strtoll(n->extra, NULL, 10) : 0;
        w->fn(w->ctx, strcmp(n->relname, "hookd_endpoints") == 0 ? STORE_WATCH_ENDPOINTS : STORE_WATCH_DUE,
              id > 0 ? id : 0);
        PQfreemem(n);
    }
}

static void *watch_main(void *arg)
{
    struct store_watch *w = arg;
    int64_t backoff = 250, next_poll = util_mono_ms() + w->c->pg_poll_ms;
    int down_logged = 0;

    for (;;) {
        struct pollfd p[2];
        int64_t wait;

        if (!w->conn || PQstatus(w->conn) != CONNECTION_OK) {
            if (w->conn)
                drop(w);
            w->conn = pg_connect(w->c);
            if (!w->conn || PQstatus(w->conn) != CONNECTION_OK || listen_on(w) < 0) {
                if (!down_logged)
                    log_warn("pg_listen_down", "note=\"other nodes' work is looked for every %lld ms\"",
                             (long long)backoff);
                down_logged = 1;
                drop(w);
                if (stop_within(w, backoff))
                    break;
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
                w->fn(w->ctx, STORE_WATCH_DUE, 0);
                continue;
            }
            if (down_logged)
                log_info("pg_listen_up", "note=\"listening again\"");
            down_logged = 0;
            backoff = 250;
            /* whatever was said while nobody listened */
            w->fn(w->ctx, STORE_WATCH_ENDPOINTS, 0);
            w->fn(w->ctx, STORE_WATCH_DUE, 0);
        }
        wait = next_poll - util_mono_ms();
        if (wait <= 0) {
            w->fn(w->ctx, STORE_WATCH_DUE, 0);
            next_poll = util_mono_ms() + w->c->pg_poll_ms;
            continue;
        }
        p[0] = (struct pollfd){w->pipe[0], POLLIN, 0};
        p[1] = (struct pollfd){PQsocket(w->conn), POLLIN, 0};
        if (poll(p, 2, (int)wait) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        if (p[1].revents) {
            if (!PQconsumeInput(w->conn)) {
                drop(w);
                continue;
            }
            deliver_notes(w);
        }
    }
    drop(w);
    return NULL;
}

int store_pg_watch_start(const struct config *c, store_watch_fn fn, void *ctx, struct store_watch **out, char *err,
                         size_t errlen)
{
    struct store_watch *w = calloc(1, sizeof *w);

    *out = NULL;
    if (!w || pipe(w->pipe) < 0) {
        snprintf(err, errlen, "listener: %s", w ? strerror(errno) : "out of memory");
        free(w);
        return -1;
    }
    w->c = c;
    w->fn = fn;
    w->ctx = ctx;
    if (pthread_create(&w->th, NULL, watch_main, w) != 0) {
        snprintf(err, errlen, "listener: cannot start its thread");
        close(w->pipe[0]);
        close(w->pipe[1]);
        free(w);
        return -1;
    }
    pthread_setname_np(w->th, "hookd-listen");
    *out = w;
    return 0;
}

void store_pg_watch_stop(struct store_watch *w)
{
    char b = 1;

    if (!w)
        return;
    if (write(w->pipe[1], &b, 1) < 0)
        (void)0;
    pthread_join(w->th, NULL);
    close(w->pipe[0]);
    close(w->pipe[1]);
    free(w);
}
