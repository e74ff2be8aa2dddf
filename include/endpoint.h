/* endpoint.h - endpoint snapshots shared with delivery threads, and the
 * JSON forms of a definition. */
#ifndef HOOKD_ENDPOINT_H
#define HOOKD_ENDPOINT_H
#include <stdint.h>

#include "config.h"
#include "outcome.h"
#include "sign.h"
#include "tpl.h"

struct cJSON;
struct filter;

/* Immutable once built; reference counted because a delivery thread may
 * still hold a job for an endpoint that was just changed or deleted. */
struct ep_conf {
    int refs;                 /* atomic */
    int64_t id;
    struct ep_def def;
    struct ep_settings eff;   /* effective settings (defaults applied) */
    uint64_t host_hash;       /* scheme://host:port of the URL: endpoints
                               * sharing it share max_host_connections */
    struct sign_key *keys;    /* nkeys, decoded from def.secrets */
    size_t nkeys;
    /* how requests are built (see ep_request): plain = the signed JSON
     * POST of a webhook to a URL without macros, the fast path */
    int plain;
    int body;                 /* enum ep_body, AUTO resolved */
    struct tpl url_tpl;
    struct tpl order_tpl;     /* nmacros 0: no ordering */
    struct filter *filter;    /* NULL: every message */
    int64_t delay_ms;         /* the delay key: rows wait this long first */
    struct tpl_map *maps;     /* nmaps */
    size_t nmaps;
    int has_ok;
    struct outcome_ok ok;     /* success_status */
    char *shown_url;          /* the URL with masked query values (attempt
                               * logs, listings) when it has no macro */
    int hold;                 /* atomic, the one field that changes: jobs
                               * claimed ahead must not start (paused, breaker
                               * not closed, a 429 hold, replaced or deleted); the writer
                               * sets it, delivery threads read it */
    int halt;                 /* atomic, set with hold when the snapshot may
                               * no longer be sent at all (paused, replaced
                               * or deleted): a job that has not started,
                               * even one holding a host slot, goes back
                               * untried (deliver.c checks it as the
                               * transfer starts) */
};

/* Build a snapshot (refs = 1). NULL on bad secrets or out of memory. */
struct ep_conf *ep_conf_new(int64_t id, const struct ep_def *def, const struct ep_settings *dflt);
struct ep_conf *ep_conf_ref(struct ep_conf *e);
void ep_conf_unref(struct ep_conf *e);

/* The stored form of a definition: secrets and headers as JSON arrays,
 * the overrides as a JSON object (cJSON_free the texts). NULL when out of
 * memory. */
char *ep_json_strings(char *const *v, size_t n);
/* The secrets array of d: its secrets, then its token (EP_TOKEN_TAG). */
char *ep_json_secrets(const struct ep_def *d);
char *ep_json_settings(const struct ep_settings *s);
/* The overrides and the request keys of a definition: its stored form. */
char *ep_json_overrides(const struct ep_def *d);
/* Free the three stored-form strings above (any may be NULL), the
 * secrets' bytes wiped first. */
void ep_json_release(char *secrets_json, char *headers_json, char *settings_json);
/* Rebuild a definition from its stored form (validated as on input). */
int ep_def_from_stored(struct ep_def *d, const char *name, const char *url, const char *secrets_json,
                       const char *headers_json, const char *event_types, const char *settings_json, int paused);

/* endpoint.put request body -> definition (validated). Accepts the INI
 * keys; "secret" and "header" may be strings or arrays of strings;
 * "event_types" a string or an array. */
int endpoint_def_from_json(const struct cJSON *body, struct ep_def *d, char *err, size_t errlen);

#endif
