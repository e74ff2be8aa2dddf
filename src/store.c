/* store.c - what every storage backend and its users share: error kinds
 * and codes, status names. */
#include "store.h"
#include "proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[MSG__COUNT] = {
    [MSG_PENDING] = "pending",
    [MSG_FAILED] = "failed",
    [MSG_IN_FLIGHT] = "in_flight",
    [MSG_DELIVERED] = "delivered",
    [MSG_DEAD_LETTER] = "dead_letter",
};

const char *msg_status_name(enum msg_status s)
{
    return (unsigned)s < MSG__COUNT ? status_names[s] : "unknown";
}

int msg_status_parse(const char *s, enum msg_status *out)
{
    int i;

    for (i = 0; s && i < MSG__COUNT; i++)
        if (strcmp(s, status_names[i]) == 0) {
            *out = (enum msg_status)i;
            return 0;
        }
    return -1;
}

const char *store_error_code(enum store_errc e)
{
    switch (e) {
    case STORE_E_FULL:
        return PERR_STORAGE_FULL;
    case STORE_E_UNAVAILABLE:
        return PERR_STORAGE_UNAVAILABLE;
    case STORE_E_NOMEM:
        return PERR_INTERNAL;
    default:
        return PERR_STORAGE_ERROR;
    }
}

int store_error_fatal(enum store_errc e)
{
    return e == STORE_E_IO;
}

int store_checkpoint_if_due(struct store *s)
{
    if (!s->ops->checkpoint_due || !s->ops->checkpoint_due(s))
        return 0;
    return s->ops->checkpoint(s, 0);
}

int store_fail(struct store *s, enum store_errc e, const char *fmt, ...)
{
    va_list ap;

    s->errc = e;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
    return -1;
}
