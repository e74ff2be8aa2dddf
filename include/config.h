/* config.h - the one typed settings table: INI parsing, validation,
 * defaults and check-config all come from it. */
#ifndef HOOKD_CONFIG_H
#define HOOKD_CONFIG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sign.h"

#define CONFIG_MAX_ENDPOINTS 4096
#define CONFIG_MAX_ADMIN 32
#define ENDPOINT_NAME_MAX 64
#define ENDPOINT_MAX_HEADERS 32
#define ENDPOINT_HEADER_MAX 1024
#define ENDPOINT_TYPES_MAX 2048

enum cfg_check { CFG_CHECK_OFF = 0, CFG_CHECK_QUICK, CFG_CHECK_FULL, CFG_CHECK_AUTO };
enum cfg_sync { CFG_SYNC_OFF = 0, CFG_SYNC_NORMAL = 1, CFG_SYNC_FULL = 2, CFG_SYNC_EXTRA = 3 };

/* A rate limit: at most count requests per per_ms (a token bucket each;
 * several windows, e.g. "100/m, 1000/h", all have to allow a request). */
#define EP_RATES_MAX 4
struct ep_rate {
    double count;
    int64_t per_ms;
};
struct ep_rates {
    int n;                  /* -1 inherit, 0 unlimited */
    struct ep_rate r[EP_RATES_MAX];
};

/* Per-endpoint overridable settings; -1 (rates: n = -1) means "inherit". */
struct ep_settings {
    int64_t max_attempts;
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    int64_t base_delay_ms;
    int64_t max_delay_ms;
    int64_t max_in_flight;
    int64_t failure_threshold;
    int64_t cooldown_ms;
    int64_t max_cooldown_ms;
    struct ep_rates rate;
    int64_t burst;
};

/* One endpoint as declared (INI section, endpoint.put, or the database). */
struct ep_def {
    char name[ENDPOINT_NAME_MAX + 1];
    char *url;
    char *secrets[SIGN_MAX_SECRETS];   /* newest first */
    size_t nsecrets;
    char *headers[ENDPOINT_MAX_HEADERS];  /* "Name: value" */
    size_t nheaders;
    char *event_types;  /* normalised "a,b,c"; "*" = every type; NULL = none */
    int paused;
    struct ep_settings s;
};

struct config {
    char *file;  /* path it was read from */
    /* [storage] */
    char *db_path;
    int synchronous;
    int check_at_start;   /* enum cfg_check */
    int64_t full_check_max;
    int64_t busy_timeout_ms;
    int64_t batch_max;
    /* [server] */
    char *socket_path;
    char *group;
    char *admin_uids;     /* as written; parsed below */
    char *admin_groups;
    uid_t admin_uid[CONFIG_MAX_ADMIN];
    size_t n_admin_uid;
    gid_t admin_gid[CONFIG_MAX_ADMIN];
    size_t n_admin_gid;
    int64_t max_payload;
    int64_t max_line;
    int64_t max_clients;
    /* [delivery] */
    int64_t workers;
    char *allow_networks;
    char *ca_file;
    int64_t shutdown_grace_ms;
    int64_t claim_batch;
    struct ep_settings dflt;  /* the global values of the overridable keys */
    /* [latency] */
    int64_t latency_window_ms;
    int64_t rollup_interval_ms;
    int64_t slow_scan_interval_ms;
    int64_t slow_p95_ms;
    int64_t critical_p95_ms;
    int64_t min_samples;
    /* [health] */
    int64_t summary_interval_ms;
    int64_t oldest_pending_alert_ms;
    /* [retention] */
    int64_t keep_delivered_ms;
    int64_t keep_dead_letter_ms;
    int64_t cleanup_chunk;
    int64_t cleanup_interval_ms;
    int64_t checkpoint_interval_ms;
    /* [metrics] */
    char *metrics_file;
    int64_t metrics_interval_ms;
    /* [log] */
    int log_level;

    struct ep_def *endpoints;
    size_t n_endpoints;
};

/* Defaults only (no file). */
int config_init(struct config *c);
/* Read path over the defaults. On error: -1 and a message naming
 * file:line, key and value in err. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);
void config_free(struct config *c);
/* Print every setting (and endpoints, secrets masked) as INI. */
void config_dump(const struct config *c, FILE *out);

/* Endpoint definitions share the table machinery with the INI loader. */
void ep_def_init(struct ep_def *d);
void ep_def_free(struct ep_def *d);
int ep_def_copy(struct ep_def *dst, const struct ep_def *src);
/* Set one key ("url", "secret", "header", "event_types", "max_attempts",
 * "timeout", "rate", ...). Repeatable keys (secret, header) append.
 * Returns 0, or -1 with a reason in err (never echoing a secret). */
int ep_def_set(struct ep_def *d, const char *key, const char *value, char *err, size_t errlen);
/* After all keys: url present, secrets decodable, ... */
int ep_def_validate(const struct ep_def *d, char *err, size_t errlen);
int ep_name_valid(const char *name);
/* Effective value of an overridable setting. */
struct ep_settings ep_settings_effective(const struct ep_settings *ep, const struct ep_settings *dflt);
/* Does the endpoint subscribe to event_type? */
int ep_def_wants(const struct ep_def *d, const char *event_type);
/* For each overridable key that is set: fn(key, value-as-string). */
void ep_settings_each(const struct ep_settings *s, void (*fn)(void *ctx, const char *key, const char *val), void *ctx);

#endif
