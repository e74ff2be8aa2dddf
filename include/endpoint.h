/* endpoint.h - endpoint snapshots shared with delivery threads, and the
 * JSON forms of a definition. */
#ifndef HOOKD_ENDPOINT_H
#define HOOKD_ENDPOINT_H
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
    uint64_t host_hash;       /* scheme://host:port of the URL: endpoints
                               * sharing it share max_host_connections */
    struct sign_key keys[SIGN_MAX_SECRETS];
    size_t nkeys;
};

/* Build a snapshot (refs = 1). NULL on bad secrets or out of memory. */
struct ep_conf *ep_conf_new(int64_t id, const struct ep_def *def, const struct ep_settings *dflt);
struct ep_conf *ep_conf_ref(struct ep_conf *e);
void ep_conf_unref(struct ep_conf *e);

/* The stored form of a definition: secrets and headers as JSON arrays,
 * the overrides as a JSON object (cJSON_free the texts). NULL when out of
 * memory. */
char *ep_json_strings(char *const *v, size_t n);
char *ep_json_settings(const struct ep_settings *s);
/* Rebuild a definition from its stored form (validated as on input). */
int ep_def_from_stored(struct ep_def *d, const char *name, const char *url, const char *secrets_json,
                       const char *headers_json, const char *event_types, const char *settings_json, int paused);

/* endpoint.put request body -> definition (validated). Accepts the INI
 * keys; "secret" and "header" may be strings or arrays of strings;
 * "event_types" a string or an array. */
int endpoint_def_from_json(const struct cJSON *body, struct ep_def *d, char *err, size_t errlen);

#endif
