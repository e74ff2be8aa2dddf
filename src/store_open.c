/* store_open.c - opening the configured storage backend. */
#include "store.h"
#include "store_pg.h"
#include "store_sqlite.h"

#include <stdio.h>

/* The writer makes the key when it is missing and cannot go on without
 * it; a reader does without (only exporting needs it), remembering why. */
static int open_key(const struct config *c, enum store_role role, struct store *s, char *err, size_t errlen)
{
    char path[4096], why[512];

    seal_key_path(c->key_file, c->db_path, path, sizeof path);
    if (seal_key_load(&s->seal, path, role == STORE_WRITER, why, sizeof why) == 0 || role != STORE_WRITER)
        return 0;
    snprintf(err, errlen, "%s", why);
    s->ops->close(s);
    return -1;
}

int store_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen)
{
    int rc;

    if (c->backend != CFG_BACKEND_POSTGRES) {
        rc = store_sqlite_open(c, role, out, err, errlen);
    } else {
#ifdef HOOKD_WITH_PG
        rc = store_pg_open(c, role, out, err, errlen);
#else
        *out = NULL;
        snprintf(err, errlen, "[storage] backend = postgres: this hookd was built without PostgreSQL support");
        return -1;
#endif
    }
    if (rc == 0 && open_key(c, role, *out, err, errlen) < 0) {
        *out = NULL;
        return -1;
    }
    return rc;
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
