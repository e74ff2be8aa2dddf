/* req.h - one client request on its way through the daemon, and the
 * reply port it goes back through.
 *
 * Ownership: the server allocates a req for every line it reads and keeps
 * it in the connection's reply FIFO. It hands the req to the writer or the
 * reader thread, which fills `reply` and calls req_complete(); from that
 * call on the req belongs to the port's owner (the server) again, which
 * writes the reply in request order and frees the req. The threads know
 * the port only through the request: no module calls back into the server. */
#ifndef HOOKD_REQ_H
#define HOOKD_REQ_H
#include <stdint.h>

#include "proto.h"
#include "util.h"

struct req;

struct req_port {
    /* any thread; the req is the port owner's again */
    void (*complete)(const struct req_port *port, struct req *r);
};

struct req {
    struct req *next;     /* link in a thread's inbox or the completion list */
    struct req *fifo;     /* link in the connection's reply FIFO (server) */
    void *conn;           /* the server's connection, opaque elsewhere */
    const struct req_port *port;
    struct proto_req p;
    int done;             /* reply complete (server thread only) */
    struct buf reply;     /* one line, with its "\n" */
    /* the server's accounting of its connection's budget (server thread) */
    size_t held;          /* bytes it holds: its line, then its reply */
    size_t reserve;       /* bytes set aside for a reply still to come */
};

/* Hand a finished request back through its port (any thread). */
void req_complete(struct req *r);
/* Complete every request of a list linked by `next`. */
void req_complete_list(struct req *list);

/* Reply with an error (replaces anything in reply). */
void req_error(struct req *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
