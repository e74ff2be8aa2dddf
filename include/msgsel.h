/* msgsel.h - which messages a search, a redrive or an erase means: the
 * selector's members parsed out of a request (pure), matched against a
 * row and its payload (pure), and the bounded walk over a store that
 * finds them (the reader's messages op and the writer's requeue, purge
 * and erase share it).
 *
 * Bounds. A walk reads rows newest first, at most MSGSEL_SCAN_MAX of
 * them (or only the rows of one event id, from its index), and stops at
 * the first row created before `since`: a search never holds its thread
 * longer than that, and says where to go on (next) when it stopped early.
 * With `until` it starts at the window's end; one endpoint's walk has the
 * store read spans of ids and hand over only that endpoint's rows, bound
 * by ids covered instead (msgsel.c). */
#ifndef HOOKD_MSGSEL_H
#define HOOKD_MSGSEL_H
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct cJSON;

#define MSGSEL_WHERE_MAX 8          /* --where conditions per request */
#define MSGSEL_PATH_MAX 200         /* bytes of a dotted path, and of a value */
#define MSGSEL_LIMIT_DEFAULT 100
#define MSGSEL_LIMIT_MAX 10000
#define MSGSEL_SCAN_MAX 100000      /* rows one walk reads */
#define MSGSEL_SCAN_WRITER 20000    /* ... when the writer walks (requeue, purge, erase) */

struct msgsel_where {
    char *path;
    char *value;
};

struct msgsel {
    int64_t id;                  /* 0: any */
    char *endpoint;              /* name; NULL: any */
    char *event_id, *type, *error_class;   /* NULL: any; type is a glob (* ?) */
    unsigned statuses;           /* MSG_BIT()s; 0: any */
    int64_t since, until;        /* created_at >= since, < until (0: no bound) */
    struct msgsel_where where[MSGSEL_WHERE_MAX];
    size_t nwhere;
    int64_t limit;               /* 0: not given */
    int64_t after;               /* keyset: ids below this one (0: from the newest) */
    int dry_run;
    int skip_erased;             /* set by the caller: erased rows do not match */
    int64_t scan_max;            /* set by the caller: rows a walk reads (0: MSGSEL_SCAN_MAX) */
    int given;                   /* a member beyond id/endpoint/since/statuses was given */
};

/* Parse the selector members of a request object; `fields` lists those
 * the op accepts (proto.c checked the names). 0, or -1 with err. */
int msgsel_parse(const struct cJSON *o, struct msgsel *s, char *err, size_t errlen);
void msgsel_free(struct msgsel *s);

/* A "FIELD=VALUE" condition: 0, or -1 with err (the CLI and the parser). */
int msgsel_where_split(const char *text, size_t *eq, char *err, size_t errlen);

/* Does the row (and its payload: NULL when not read) match? Pure. The
 * endpoint is matched by name (a row whose endpoint is gone has none). */
int msgsel_match(const struct msgsel *s, const struct store_message *m, const char *payload, size_t len);

/* Does text match the glob (only * and ? are special)? Pure. */
int msgsel_glob(const char *pat, const char *text);

struct msgsel_walk {
    int64_t scanned;             /* rows read */
    int64_t matched;             /* rows handed to fn */
    int64_t next;                /* go on with after = next (0: nothing left) */
};

/* Walk the store for s's rows, newest first, handing at most max of them
 * to fn (a non-zero return stops the walk: 1 as done, -1 out of memory).
 * out->next is set when more may match: the walk found a match past max
 * (next: the last row handed over) or read its bound of rows (next: the
 * last row read). 0, or -1 with the store's error. */
int msgsel_walk(struct store *st, const struct msgsel *s, int64_t max,
                int (*fn)(void *ctx, const struct store_message *m), void *ctx, struct msgsel_walk *out);

#endif
