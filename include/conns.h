/* conns.h - the control socket's connections (see conns.c): read within
 * their budgets, requests handed to the writer or the reader, replies
 * written in request order, timeouts by climit.h; admission and the
 * users' memory gates by cpeer.h.
 *
 * Driven by the server's event loop, one turn at a time:
 *     wait = conns_wait_ms(now); epoll_wait(...);
 *     conns_begin(now);
 *     ... the server's own events; conns_completed(r) for each request
 *         back from a thread ...
 *     conns_events(the connections' events, listener or -1);
 *     conns_end();
 * A connection is in the loop's epoll set with data.ptr pointing to it;
 * every other pointer there is the server's. Not thread safe: the loop's
 * thread only. */
#ifndef HOOKD_CONNS_H
#define HOOKD_CONNS_H
#include <stdint.h>
#include <sys/epoll.h>

#include "config.h"

#define CONNS_MAX_EVENTS 256   /* events handed to one conns_events call */

struct req;
struct req_port;
struct writer;
struct reader;

/* c's [server] limits; ep the loop's epoll set; every request goes back
 * through port; w and rd take them (they and c outlive the connections).
 * 0, or -1 with errno. */
int conns_init(const struct config *c, int ep, const struct req_port *port, struct writer *w,
               struct reader *rd);
void conns_free(void);

/* From now on every request is answered shutting_down. */
void conns_shutting_down(void);

/* How long the loop may wait for events (ms): 0 while connections have
 * work left over from the last turn. */
int conns_wait_ms(int64_t now);
void conns_begin(int64_t now);
/* A request back from a thread (its reply complete): written at once. */
void conns_completed(struct req *r);
/* The turn's events of connections (at most CONNS_MAX_EVENTS); lfd >= 0:
 * the listening socket is readable, accept from it. */
void conns_events(const struct epoll_event *evs, int n, int lfd);
void conns_end(void);

/* A fatal error: write what is answered, blocking; nothing else runs. */
void conns_flush_blocking(void);
/* Shutdown: write what is answered and close every connection. */
void conns_close_all(void);

#endif
