/* req.c - the reply port: requests go back to whoever sent them. */
#include "req.h"

#include <stdarg.h>
#include <stdio.h>

void req_complete(struct req *r)
{
    r->port->complete(r->port, r);
}

void req_complete_list(struct req *list)
{
    while (list) {
        struct req *next = list->next;
        req_complete(list);
        list = next;
    }
}

void req_error(struct req *r, const char *code, const char *fmt, ...)
{
    char msg[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    buf_reset(&r->reply);
    if (proto_reply_error(&r->reply, code, msg) < 0)
        buf_reset(&r->reply);
}
