/* store_open.c - opening the configured storage backend. */
#include "store.h"
#include "store_pg.h"
#include "store_sqlite.h"

#include <stdio.h>

int store_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen)
{
    if (c->backend != CFG_BACKEND_POSTGRES)
        return store_sqlite_open(c, role, out, err, errlen);
#ifdef HOOKD_WITH_PG
    return store_pg_open(c, role, out, err, errlen);
#else
    *out = NULL;
    snprintf(err, errlen, "[storage] backend = postgres: this hookd was built without PostgreSQL support");
    return -1;
#endif
}

int store_ping(const struct config *c, char *msg, size_t len)
{
    *msg = '\0';
    if (c->backend != CFG_BACKEND_POSTGRES)
        return 0;   /* the file is checked when hookd opens it */
#ifdef HOOKD_WITH_PG
    return store_pg_ping(c, msg, len);
#else
    snprintf(msg, len, "[storage] backend = postgres: this hookd was built without PostgreSQL support");
    return -1;
#endif
}

int store_schema_print(enum cfg_backend b, FILE *out, char *err, size_t errlen)
{
    if (b != CFG_BACKEND_POSTGRES) {
        snprintf(err, errlen, "the sqlite backend applies its schema itself (schema/*.sql, PRAGMA user_version)");
        return -1;
    }
#ifdef HOOKD_WITH_PG
    store_pg_schema_print(out);
    return 0;
#else
    (void)out;
    snprintf(err, errlen, "this hookd was built without PostgreSQL support");
    return -1;
#endif
}

int store_watch_start(const struct config *c, store_watch_fn fn, void *ctx, struct store_watch **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    if (c->backend != CFG_BACKEND_POSTGRES)
        return 0;   /* one process owns the file: nothing to watch */
#ifdef HOOKD_WITH_PG
    return store_pg_watch_start(c, fn, ctx, out, err, errlen);
#else
    (void)fn;
    (void)ctx;
    snprintf(err, errlen, "this hookd was built without PostgreSQL support");
    return -1;
#endif
}

void store_watch_stop(struct store_watch *w)
{
#ifdef HOOKD_WITH_PG
    store_pg_watch_stop(w);
#else
    (void)w;
#endif
}
