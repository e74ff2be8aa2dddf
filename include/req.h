/* req.h - one client request on its way through the daemon.
 *
 * Ownership: the server allocates a req for every line it reads and keeps
 * it in the connection's reply FIFO. It hands the req to the writer or the
 * reader thread, which fills `reply` and calls server_complete(); from that
 * call on the req belongs to the server again, which writes the reply in
 * request order and frees the req. */
#ifndef HOOKD_REQ_H
#define HOOKD_REQ_H
#include <stdint.h>

#include "proto.h"
#include "util.h"

struct req {
    struct req *next;     /* link in a thread's inbox or the completion list */
    struct req *fifo;     /* link in the connection's reply FIFO (server) */
    void *conn;           /* the server's connection, opaque elsewhere */
    struct proto_req p;
    int done;             /* reply complete (server thread only) */
    struct buf reply;     /* one line, with its "\n" */
};

/* Hand a finished request back to the event loop (any thread). */
void server_complete(struct req *r);

/* An unrecoverable storage error: write the replies already completed,
 * then exit with status (any thread). */
void server_fatal(int status);

/* Reply with an error (replaces anything in reply). */
void req_error(struct req *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
