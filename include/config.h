/* config.h - the daemon's configuration: one INI file read into struct
 * config. The keys, their types, defaults and checks are the settings
 * table's (settings.h); endpoint sections are endpoint definitions
 * (epdef.h). */
#ifndef HOOKD_CONFIG_H
#define HOOKD_CONFIG_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "epdef.h"

#define CONFIG_MAX_ENDPOINTS 100000
#define CONFIG_MAX_ADMIN 32

enum cfg_check { CFG_CHECK_OFF = 0, CFG_CHECK_QUICK, CFG_CHECK_FULL, CFG_CHECK_AUTO };
enum cfg_backend { CFG_BACKEND_SQLITE = 0, CFG_BACKEND_POSTGRES };
enum cfg_sync { CFG_SYNC_OFF = 0, CFG_SYNC_NORMAL = 1, CFG_SYNC_FULL = 2, CFG_SYNC_EXTRA = 3 };

struct config {
    char *file;  /* path it was read from */
    /* [storage] */
    int backend;          /* enum cfg_backend */
    char *db_path;
    char *key_file;       /* "" : secret.key beside db_path (seal.h) */
    int synchronous;
    int check_at_start;   /* enum cfg_check */
    int64_t full_check_max;
    int64_t busy_timeout_ms;
    int64_t batch_max;
    /* [postgres] */
    char *pg_conninfo;
    char *pg_node_name;   /* "" in the file: the host name (config_load fills it in) */
    int64_t pg_lease_ms;
    int64_t pg_poll_ms;
    int64_t pg_prune_endpoints; /* config endpoints missing from this file are deleted
                                 * cluster-wide (otherwise another node's are kept) */
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
    int64_t max_clients_per_user;  /* non-admin connections of one uid */
    int64_t admin_reserve;         /* of max_clients, kept for admins */
    int64_t client_memory;         /* per connection: replies + requests answered */
    int64_t user_memory;           /* per non-admin uid, partial lines too */
    int64_t clients_memory;        /* all non-admin connections together */
    int64_t idle_timeout_ms;       /* 0: never */
    int64_t line_timeout_ms;
    int64_t send_timeout_ms;
    /* [delivery] */
    int64_t workers;
    char *allow_networks;
    char *ca_file;
    char *source_address;    /* local address connections leave from ("": the kernel's choice) */
    char *proxy;             /* HTTP CONNECT proxy of endpoints without their own (proxy.h; "": none) */
    int64_t shutdown_grace_ms;
    int64_t claim_batch;
    int64_t max_in_flight_total;
    int64_t claim_ahead;     /* bool: jobs claimed ahead of free slots (dispatch.c) */
    int64_t cache_bytes;     /* [storage] cache, per connection */
    int64_t max_host_connections;
    struct ep_settings dflt;  /* the global values of the overridable keys */
    /* [latency] */
    int64_t latency_window_ms;
    int64_t latency_samples;
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
    int64_t keep_payload_ms;   /* erase delivered payloads this long after delivery (0: keep them with the row) */
    int64_t cleanup_chunk;
    int64_t cleanup_interval_ms;
    int64_t checkpoint_interval_ms;
    /* [ops] */
    char *ops_endpoint;       /* "": no operational events */
    char *ops_event_types;
    unsigned ops_event_mask;  /* parsed from ops_event_types */
    int64_t ops_quiet_ms;
    char *ops_min_free;
    double ops_min_free_pct;  /* parsed from ops_min_free (-1: not given) */
    int64_t ops_min_free_bytes;
    int64_t ops_space_interval_ms;
    /* [history] */
    int64_t history_bucket_ms;
    int64_t history_keep_ms;
    /* [metrics] */
    char *metrics_file;
    int64_t metrics_interval_ms;
    /* [log] */
    int log_level;

    struct ep_def *endpoints;
    size_t n_endpoints;
    size_t endpoints_cap;     /* allocated */
};

/* Defaults only (no file). */
int config_init(struct config *c);
/* Read path over the defaults. On error: -1 and a message naming
 * file:line, key and value in err. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);
void config_free(struct config *c);
/* Print every setting (and endpoints, secrets masked) as INI. */
void config_dump(const struct config *c, FILE *out);

#endif
