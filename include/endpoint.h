/* endpoint.h - endpoint snapshots shared with delivery threads, and their
 * persistence in the endpoints table. */
#ifndef HOOKD_ENDPOINT_H
#define HOOKD_ENDPOINT_H
#include <sqlite3.h>
#include <stdint.h>

#include "config.h"
#include "sign.h"

struct cJSON;

/* Immutable once built; reference counted because a delivery thread may
 * still hold a job for an endpoint that was just changed or deleted. */
struct ep_conf {
    int refs;                 /* atomic */
    int64_t id;
    struct ep_def def;
    struct ep_settings eff;   /* effective settings (defaults applied) */
    struct sign_key keys[SIGN_MAX_SECRETS];
    size_t nkeys;
};

/* Build a snapshot (refs = 1). NULL on bad secrets or out of memory. */
struct ep_conf *ep_conf_new(int64_t id, const struct ep_def *def, const struct ep_settings *dflt);
struct ep_conf *ep_conf_ref(struct ep_conf *e);
void ep_conf_unref(struct ep_conf *e);

/* One stored endpoint. */
struct ep_stored {
    int64_t id;
    int from_config;
    struct ep_def def;
};

/* Load every endpoint. *out is an array the caller frees with
 * endpoint_stored_free. */
int endpoint_db_load(sqlite3 *db, struct ep_stored **out, size_t *n);
void endpoint_stored_free(struct ep_stored *v, size_t n);
/* Insert or update by name (inside the caller's transaction). */
int endpoint_db_put(sqlite3 *db, const struct ep_def *d, int from_config, int64_t now,
                    int64_t *id, int *created);
/* Delete an endpoint; its undelivered messages become dead letters with
 * last_error "endpoint deleted". *dead gets their count. */
int endpoint_db_delete(sqlite3 *db, int64_t id, int64_t now, int64_t *dead);
int endpoint_db_set_paused(sqlite3 *db, int64_t id, int paused, int64_t now);

/* endpoint.put request body -> definition (validated). Accepts the INI
 * keys; "secret" and "header" may be strings or arrays of strings;
 * "event_types" a string or an array. */
int endpoint_def_from_json(const struct cJSON *body, struct ep_def *d, char *err, size_t errlen);

#endif
