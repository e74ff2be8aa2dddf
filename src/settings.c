/* settings.c - the one typed table of settings: every key of the INI
 * file with its type, bounds, default and help. Parsing, validation,
 * defaults, the per-endpoint overrides and check-config's output all
 * come from it. */
#include "settings.h"
#include "proxy.h"
#include "util.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum cfg_type { T_STR, T_INT, T_DUR, T_SIZE, T_BOOL, T_ENUM, T_RATE };

struct cfg_def {
    const char *section;
    const char *key;
    enum cfg_type type;
    size_t off;            /* into struct config, or struct ep_settings for "*" */
    int64_t min, max;      /* bounds in base units (ms, bytes, count) */
    const char *dflt;
    const char *help;
    const char *const *names;  /* T_ENUM: the values, NULL terminated */
};

static const char *const sync_names[] = {"off", "normal", "full", "extra", NULL};
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};
static const char *const check_names[] = {"off", "quick", "full", "auto", NULL};
static const char *const backend_names[] = {"sqlite", "postgres", NULL};

#define C(f) offsetof(struct config, f)
#define D(f) (offsetof(struct config, dflt) + offsetof(struct ep_settings, f))
#define DAY 86400000LL
#define HOUR 3600000LL

/* Section "delivery"/"breaker" entries whose offset lies inside dflt are
 * also the per-endpoint overridable keys (see ep_keys below). */
static const struct cfg_def cfg_table[] = {
    {"storage", "backend", T_ENUM, C(backend), 0, 1, "sqlite", "sqlite (the file below) or postgres ([postgres] conninfo)", backend_names},
    {"storage", "path", T_STR, C(db_path), 0, 0, "./var/hookd.db", "database file (WAL mode)", NULL},
    {"storage", "key_file", T_STR, C(key_file), 0, 0, "", "key sealing endpoint secrets in the database, hookd's alone, made at first start (empty: secret.key beside path)", NULL},
    {"storage", "synchronous", T_ENUM, C(synchronous), 0, 3, "full", "off|normal|full|extra; full survives power loss", sync_names},
    {"storage", "check_at_start", T_ENUM, C(check_at_start), 0, 3, "auto", "off|quick|full|auto: check before serving (auto: full up to full_check_max)", check_names},
    {"storage", "full_check_max", T_SIZE, C(full_check_max), 0, INT64_MAX, "512MiB", "auto: largest database that gets the full integrity_check", NULL},
    {"storage", "busy_timeout", T_DUR, C(busy_timeout_ms), 0, 60000, "5s", "wait for a lock before failing", NULL},
    {"storage", "cache", T_SIZE, C(cache_bytes), 64 << 10, 1LL << 32, "4MiB", "SQLite page cache of each of the two connections", NULL},
    {"storage", "batch_max", T_INT, C(batch_max), 1, 100000, "1000", "rows per group-commit transaction", NULL},

    {"postgres", "conninfo", T_STR, C(pg_conninfo), 0, 0, "", "libpq connection string or URI (backend = postgres; a password belongs in PGPASSFILE)", NULL},
    {"postgres", "node_name", T_STR, C(pg_node_name), 0, 0, "", "this node's name among the nodes sharing the database (empty: the host name)", NULL},
    {"postgres", "lease", T_DUR, C(pg_lease_ms), 2000, HOUR, "30s", "a node silent this long is dead: the others take over its rows in flight", NULL},
    {"postgres", "poll_interval", T_DUR, C(pg_poll_ms), 100, 60000, "2s", "look for other nodes' work this often even without a notification", NULL},
    {"postgres", "prune_endpoints", T_BOOL, C(pg_prune_endpoints), 0, 1, "no", "delete config endpoints missing from this file for the whole cluster, dead-lettering their queues (no: keep them)", NULL},

    {"server", "socket", T_STR, C(socket_path), 0, 0, "./var/run/hookd.sock", "control socket; its directory is created 0750", NULL},
    {"server", "group", T_STR, C(group), 0, 0, "", "group owning socket and directory (empty: hookd's)", NULL},
    {"server", "admin_uids", T_STR, C(admin_uids), 0, 0, "", "extra users (names or uids) allowed admin requests", NULL},
    {"server", "admin_groups", T_STR, C(admin_groups), 0, 0, "", "groups (names or gids) allowed admin requests", NULL},
    {"server", "max_payload", T_SIZE, C(max_payload), 16, 16 << 20, "256KiB", "largest payload accepted", NULL},
    {"server", "max_line", T_SIZE, C(max_line), 1024, 64 << 20, "1MiB", "longest request line (must exceed max_payload)", NULL},
    {"server", "max_clients", T_INT, C(max_clients), 1, 1000000, "10000", "concurrent socket clients", NULL},
    {"server", "max_clients_per_user", T_INT, C(max_clients_per_user), 1, 1000000, "256", "connections one non-admin user may hold", NULL},
    {"server", "admin_reserve", T_INT, C(admin_reserve), 0, 1000000, "16", "of max_clients, connections only admins may take (at most half)", NULL},
    {"server", "client_memory", T_SIZE, C(client_memory), 16 << 10, 1LL << 30, "1MiB", "per connection: unsent replies and requests being answered; reading stops there", NULL},
    {"server", "user_memory", T_SIZE, C(user_memory), 1 << 20, 1LL << 36, "16MiB", "per non-admin user, over its connections: the same and partial lines (at least 2 x max_line)", NULL},
    {"server", "clients_memory", T_SIZE, C(clients_memory), 1 << 20, 1LL << 38, "64MiB", "all non-admin connections together, the same bytes (at least user_memory)", NULL},
    {"server", "idle_timeout", T_DUR, C(idle_timeout_ms), 0, 30 * DAY, "10m", "close a connection silent this long with nothing pending (0: never)", NULL},
    {"server", "line_timeout", T_DUR, C(line_timeout_ms), 0, DAY, "30s", "close a connection whose request line is still incomplete after this (0: never)", NULL},
    {"server", "send_timeout", T_DUR, C(send_timeout_ms), 0, DAY, "30s", "close a connection whose replies have waited unread this long (0: never)", NULL},

    {"delivery", "workers", T_INT, C(workers), 0, 64, "0", "delivery threads; 0 = number of cores", NULL},
    {"delivery", "max_in_flight_per_endpoint", T_INT, D(max_in_flight), 1, 100000, "64", "most concurrent requests per endpoint (the adaptive limit stays under it)", NULL},
    {"delivery", "adaptive", T_BOOL, D(adaptive), 0, 1, "yes", "adapt each endpoint's concurrency (no: always max_in_flight)", NULL},
    {"delivery", "max_host_connections", T_INT, C(max_host_connections), 1, 100000, "256", "most connections to one host (scheme, name and port) from this node", NULL},
    {"delivery", "max_in_flight_total", T_INT, C(max_in_flight_total), 1, 1000000, "1024", "most requests in flight over all endpoints (bounds memory)", NULL},
    {"delivery", "claim_ahead", T_BOOL, C(claim_ahead), 0, 1, "yes", "claim a job ahead beside each request to a healthy endpoint with a backlog, to start when one succeeds", NULL},
    {"delivery", "timeout", T_DUR, D(timeout_ms), 1, 600000, "15s", "total time of one attempt", NULL},
    {"delivery", "connect_timeout", T_DUR, D(connect_timeout_ms), 1, 600000, "5s", "TCP + TLS connect time", NULL},
    {"delivery", "base_delay", T_DUR, D(base_delay_ms), 1, 30 * DAY, "30s", "backoff base: uniform(0, min(base*2^n, max))", NULL},
    {"delivery", "max_delay", T_DUR, D(max_delay_ms), 1, 30 * DAY, "1h", "backoff cap", NULL},
    {"delivery", "max_attempts", T_INT, D(max_attempts), 1, 1000, "5", "attempts before dead letter", NULL},
    {"delivery", "allow_networks", T_STR, C(allow_networks), 0, 0, "", "CIDRs deliveries may reach despite the SSRF guard", NULL},
    {"delivery", "ca_file", T_STR, C(ca_file), 0, 0, "", "CA bundle for HTTPS (empty: system default)", NULL},
    {"delivery", "source_address", T_STR, C(source_address), 0, 0, "", "local IP address deliveries connect from (empty: the kernel's choice)", NULL},
    {"delivery", "proxy", T_STR, C(proxy), 0, 0, "", "HTTP CONNECT proxy of endpoints without their own, http://[user:password@]host:port (empty: none)", NULL},
    {"delivery", "shutdown_grace", T_DUR, C(shutdown_grace_ms), 0, 600000, "10s", "on SIGTERM, time for transfers to finish", NULL},
    {"delivery", "claim_batch", T_INT, C(claim_batch), 1, 100000, "1024", "rows claimed per writer round", NULL},
    {"delivery", "rate", T_RATE, D(rate), 0, 0, "0", "default per-endpoint rate limits (e.g. 10/s or 100/m, 1000/h; 0 unlimited)", NULL},
    {"delivery", "burst", T_INT, D(burst), 0, 1000000, "0", "token bucket size (0: one second of rate)", NULL},

    {"breaker", "failure_threshold", T_INT, D(failure_threshold), 1, 1000000, "10", "consecutive failures that open the breaker", NULL},
    {"breaker", "cooldown", T_DUR, D(cooldown_ms), 1, 30 * DAY, "5m", "first open period", NULL},
    {"breaker", "max_cooldown", T_DUR, D(max_cooldown_ms), 1, 30 * DAY, "1h", "cap of the doubling open period", NULL},
    {"breaker", "disable_after", T_DUR, D(disable_after_ms), 0, 3650 * DAY, "72h", "no success this long while attempts fail: disable the endpoint (0 never)", NULL},

    {"latency", "window", T_DUR, C(latency_window_ms), 60000, 90 * DAY, "24h", "percentiles cover the samples of this window", NULL},
    {"latency", "samples", T_INT, C(latency_samples), 100, 1000000, "10000", "latency ring: samples kept per endpoint (the newest)", NULL},
    {"latency", "rollup_interval", T_DUR, C(rollup_interval_ms), 100, DAY, "60s", "p50/p95/p99 rollup period", NULL},
    {"latency", "slow_scan_interval", T_DUR, C(slow_scan_interval_ms), 100, DAY, "15m", "slow endpoint scan period", NULL},
    {"latency", "slow_p95", T_DUR, C(slow_p95_ms), 1, HOUR, "2000ms", "p95 above this is logged as slow", NULL},
    {"latency", "critical_p95", T_DUR, C(critical_p95_ms), 1, HOUR, "5000ms", "p95 above this halves the failure threshold", NULL},
    {"latency", "min_samples", T_INT, C(min_samples), 1, 1000000, "20", "samples needed before judging p95", NULL},

    {"health", "summary_interval", T_DUR, C(summary_interval_ms), 100, DAY, "5m", "health summary log period", NULL},
    {"health", "oldest_pending_alert", T_DUR, C(oldest_pending_alert_ms), 1000, 30 * DAY, "30m", "warn when the oldest pending is older", NULL},

    {"retention", "delivered", T_DUR, C(keep_delivered_ms), 60000, 3650 * DAY, "7d", "keep delivered rows this long", NULL},
    {"retention", "dead_letter", T_DUR, C(keep_dead_letter_ms), 60000, 3650 * DAY, "30d", "keep dead letters this long", NULL},
    {"retention", "payload", T_DUR, C(keep_payload_ms), 0, 3650 * DAY, "0", "erase payloads of delivered messages this long after delivery (0: with the row)", NULL},
    {"retention", "chunk", T_INT, C(cleanup_chunk), 10, 1000000, "250", "rows deleted per cleanup step", NULL},
    {"retention", "cleanup_interval", T_DUR, C(cleanup_interval_ms), 100, DAY, "60s", "retention and latency cleanup period", NULL},
    {"retention", "checkpoint_interval", T_DUR, C(checkpoint_interval_ms), 100, HOUR, "10s", "WAL checkpoint period", NULL},

    {"history", "bucket", T_DUR, C(history_bucket_ms), 1000, HOUR, "5m", "time series step of hookd report (counts and percentiles per endpoint)", NULL},
    {"history", "keep", T_DUR, C(history_keep_ms), 60000, 366 * DAY, "7d", "history rows kept this long", NULL},

    {"ops", "endpoint", T_STR, C(ops_endpoint), 0, 0, "", "endpoint that receives hookd's own events (empty: none)", NULL},
    {"ops", "event_types", T_STR, C(ops_event_types), 0, 0, "*", "events sent to it (* or a list, e.g. endpoint.disabled, storage.low_space)", NULL},
    {"ops", "quiet", T_DUR, C(ops_quiet_ms), 0, DAY, "10m", "a breaker changing again within this is summarised once", NULL},
    {"ops", "min_free", T_STR, C(ops_min_free), 0, 0, "10%, 1GiB", "storage.low_space under this free space (% and/or size: the smaller)", NULL},
    {"ops", "space_check_interval", T_DUR, C(ops_space_interval_ms), 100, HOUR, "60s", "free space check period", NULL},

    {"metrics", "file", T_STR, C(metrics_file), 0, 0, "", "Prometheus textfile (empty: off)", NULL},
    {"metrics", "interval", T_DUR, C(metrics_interval_ms), 1000, HOUR, "15s", "metrics file rewrite period", NULL},

    {"log", "level", T_ENUM, C(log_level), 0, 3, "info", "error|warn|info|debug", level_names},
};
#define CFG_N (sizeof cfg_table / sizeof cfg_table[0])

/* Overridable keys in [endpoint.NAME]: the [delivery]/[breaker] entries that
 * live in dflt, renamed where the endpoint spelling is shorter. */
static const char *ep_key_name(const struct cfg_def *d)
{
    if (strcmp(d->key, "max_in_flight_per_endpoint") == 0)
        return "max_in_flight";
    return d->key;
}

static int is_ep_setting(const struct cfg_def *d)
{
    return d->off >= offsetof(struct config, dflt) &&
           d->off < offsetof(struct config, dflt) + sizeof(struct ep_settings);
}

/* "10/s", "600/m", "100/min, 1000/h", "0" (unlimited). A bare number is
 * per second. */
static int parse_rates(const char *v, struct ep_rates *out)
{
    struct ep_rates r = {0};
    const char *p = v;

    while (*p) {
        char *end;
        double n;
        int64_t per = 1000;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        n = strtod(p, &end);
        if (end == p || n < 0 || n > 1e9)
            return -1;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == '/') {
            size_t u = strcspn(++p, ", \t");
            if ((u == 1 && *p == 's') || (u == 3 && strncasecmp(p, "sec", 3) == 0))
                per = 1000;
            else if ((u == 1 && *p == 'm') || (u == 3 && strncasecmp(p, "min", 3) == 0))
                per = 60000;
            else if (u == 1 && *p == 'h')
                per = 3600000;
            else if (u == 1 && *p == 'd')
                per = 86400000;
            else
                return -1;
            p += u;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
        if (n == 0) {
            if (r.n || *p)   /* "0" means unlimited, alone */
                return -1;
            continue;
        }
        if (r.n == EP_RATES_MAX)
            return -1;
        r.r[r.n].count = n;
        r.r[r.n].per_ms = per;
        r.n++;
    }
    *out = r;
    return 0;
}

static void fmt_rates(const struct ep_rates *r, char *out, size_t n)
{
    size_t len = 0;
    int i;

    out[0] = '\0';
    if (r->n <= 0) {
        snprintf(out, n, "0");
        return;
    }
    for (i = 0; i < r->n && len < n; i++) {
        int64_t p = r->r[i].per_ms;
        const char *u = p == 86400000 ? "d" : p == 3600000 ? "h" : p == 60000 ? "m" : "s";
        len += (size_t)snprintf(out + len, n - len, "%s%g/%s", i ? ", " : "", r->r[i].count, u);
    }
}

/* Parse value per d into base (struct config or the ep_settings, offset
 * adjusted by the caller). */
static int set_value(const struct cfg_def *d, char *base, const char *v, char *err, size_t errlen)
{
    int64_t n = 0;
    int b, i;
    const char *what = "value";

    switch (d->type) {
    case T_STR: {
        char **slot = (char **)(base + d->off);
        char *dup = strdup(v);
        if (!dup) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        free(*slot);
        *slot = dup;
        return 0;
    }
    case T_INT:
        what = "integer";
        if (util_parse_int(v, &n) < 0)
            goto bad;
        break;
    case T_DUR:
        what = "duration (e.g. 500ms, 30s, 5m, 1h)";
        if (util_parse_duration_ms(v, &n) < 0)
            goto bad;
        break;
    case T_SIZE:
        what = "size (e.g. 512, 64KiB, 1MiB)";
        if (util_parse_size(v, &n) < 0)
            goto bad;
        break;
    case T_BOOL:
        what = "boolean (yes/no)";
        if (util_parse_bool(v, &b) < 0)
            goto bad;
        /* int64_t like the other overridable keys (-1: inherit) */
        *(int64_t *)(base + d->off) = b;
        return 0;
    case T_ENUM: {
        static char choices[128];
        for (i = 0; d->names[i]; i++)
            if (strcasecmp(v, d->names[i]) == 0) {
                *(int *)(base + d->off) = i;
                return 0;
            }
        choices[0] = '\0';
        for (i = 0; d->names[i]; i++)
            snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", i ? ", " : "one of ",
                     d->names[i]);
        what = choices;
        goto bad;
    }
    case T_RATE: {
        what = "rate (e.g. 10/s, 600/m, or 100/m, 1000/h; 0 unlimited)";
        if (parse_rates(v, (struct ep_rates *)(void *)(base + d->off)) < 0)
            goto bad;
        return 0;
    }
    }
    if (n < d->min || n > d->max) {
        char lo[32], hi[32];
        if (d->type == T_DUR) {
            util_fmt_duration(d->min, lo, sizeof lo);
            util_fmt_duration(d->max, hi, sizeof hi);
        } else {
            snprintf(lo, sizeof lo, "%lld", (long long)d->min);
            snprintf(hi, sizeof hi, "%lld", (long long)d->max);
        }
        snprintf(err, errlen, "out of range (%s..%s)", lo, hi);
        return -1;
    }
    *(int64_t *)(base + d->off) = n;
    return 0;
bad:
    snprintf(err, errlen, "not a valid %s", what);
    return -1;
}

static const struct cfg_def *find_def(const char *section, const char *key)
{
    size_t i;

    for (i = 0; i < CFG_N; i++)
        if (strcmp(cfg_table[i].section, section) == 0 && strcmp(cfg_table[i].key, key) == 0)
            return &cfg_table[i];
    return NULL;
}

static const struct cfg_def *find_ep_def(const char *key)
{
    size_t i;

    for (i = 0; i < CFG_N; i++)
        if (is_ep_setting(&cfg_table[i]) && strcmp(ep_key_name(&cfg_table[i]), key) == 0)
            return &cfg_table[i];
    return NULL;
}

void settings_unset(struct ep_settings *s)
{
    s->max_attempts = s->timeout_ms = s->connect_timeout_ms = s->adaptive = -1;
    s->base_delay_ms = s->max_delay_ms = s->max_in_flight = -1;
    s->failure_threshold = s->cooldown_ms = s->max_cooldown_ms = -1;
    s->rate.n = -1;
    s->burst = -1;
    s->disable_after_ms = -1;
}

struct ep_settings ep_settings_effective(const struct ep_settings *ep, const struct ep_settings *dflt)
{
    struct ep_settings r = *dflt;

#define INH(f) if (ep->f >= 0) r.f = ep->f
    INH(max_attempts);
    INH(adaptive);
    INH(timeout_ms);
    INH(connect_timeout_ms);
    INH(base_delay_ms);
    INH(max_delay_ms);
    INH(max_in_flight);
    INH(failure_threshold);
    INH(cooldown_ms);
    INH(max_cooldown_ms);
    if (ep->rate.n >= 0)
        r.rate = ep->rate;
    INH(burst);
    INH(disable_after_ms);
#undef INH
    return r;
}

static void fmt_value(const struct cfg_def *d, const char *base, char *out, size_t n)
{
    switch (d->type) {
    case T_STR: {
        const char *s = *(char *const *)(base + d->off);
        snprintf(out, n, "%s", s ? s : "");
        break;
    }
    case T_INT:
    case T_SIZE:
        snprintf(out, n, "%lld", (long long)*(const int64_t *)(base + d->off));
        break;
    case T_DUR:
        util_fmt_duration(*(const int64_t *)(base + d->off), out, n);
        break;
    case T_BOOL:
        snprintf(out, n, "%s", *(const int64_t *)(base + d->off) ? "yes" : "no");
        break;
    case T_ENUM:
        snprintf(out, n, "%s", d->names[*(const int *)(base + d->off)]);
        break;
    case T_RATE:
        fmt_rates((const struct ep_rates *)(const void *)(base + d->off), out, n);
        break;
    }
}

void ep_settings_each(const struct ep_settings *s, void (*fn)(void *ctx, const char *key, const char *val),
                      void *ctx)
{
    const char *base = (const char *)s - offsetof(struct config, dflt);
    char v[64];
    size_t i;

    for (i = 0; i < CFG_N; i++) {
        const struct cfg_def *d = &cfg_table[i];
        if (!is_ep_setting(d))
            continue;
        if (d->type == T_RATE ? ((const struct ep_rates *)(const void *)(base + d->off))->n < 0
                              : *(const int64_t *)(base + d->off) < 0)
            continue;
        fmt_value(d, base, v, sizeof v);
        fn(ctx, ep_key_name(d), v);
    }
}


int settings_defaults(struct config *c)
{
    char err[128];
    size_t i;

    for (i = 0; i < CFG_N; i++)
        if (set_value(&cfg_table[i], (char *)c, cfg_table[i].dflt, err, sizeof err) < 0)
            return -1;
    return 0;
}

void settings_free(struct config *c)
{
    size_t i;

    for (i = 0; i < CFG_N; i++)
        if (cfg_table[i].type == T_STR) {
            char **slot = (char **)((char *)c + cfg_table[i].off);
            free(*slot);
            *slot = NULL;
        }
}

int settings_set(struct config *c, const char *section, const char *key, const char *value, char *err,
                 size_t errlen)
{
    const struct cfg_def *d = find_def(section, key);
    size_t i;

    if (!d) {
        for (i = 0; i < CFG_N; i++)
            if (strcmp(cfg_table[i].section, section) == 0)
                break;
        snprintf(err, errlen, "%s", i == CFG_N ? "unknown section" : "unknown key");
        return -2;
    }
    return set_value(d, (char *)c, value, err, errlen);
}

int settings_set_ep(struct ep_settings *s, const char *key, const char *value, char *err, size_t errlen)
{
    const struct cfg_def *d = find_ep_def(key);

    if (!d) {
        snprintf(err, errlen, "unknown key");
        return -2;
    }
    return set_value(d, (char *)s - offsetof(struct config, dflt), value, err, errlen);
}

/* A proxy's credentials are never printed (from the value itself: v
 * may have cut it short) */
static void mask_proxy(const char *value, char *v, size_t n)
{
    struct proxy_url p;
    char err[160];

    if (proxy_parse(value, &p, err, sizeof err) == 0)
        util_strlcpy(v, p.shown, n);
    else
        util_strlcpy(v, "(invalid)", n);
    explicit_bzero(&p, sizeof p);
}

/* A password written into the connection string is never printed: the
 * value of password=... and the password of a URI's user:password@. */
static void mask_conninfo(char *v)
{
    char *p = strstr(v, "://"), *at, *colon, *end;

    if (p && (at = strchr(p + 3, '@')) && (colon = memchr(p + 3, ':', (size_t)(at - p - 3)))) {
        memmove(colon + 4, at, strlen(at) + 1);
        memcpy(colon + 1, "***", 3);
    }
    for (p = v; (p = strstr(p, "password")) != NULL; p++) {
        char *q = p + 8;
        /* the rest of the key (a misspelt one too: better masked), blanks */
        while (*q && *q != '=' && *q != ' ' && *q != '&')
            q++;
        while (*q == ' ')
            q++;
        if (*q != '=')
            continue;
        q++;
        while (*q == ' ')
            q++;
        end = q;
        if (*end == '\'') {
            for (end++; *end && *end != '\''; end++)
                if (*end == '\\' && end[1])
                    end++;
            if (*end)
                end++;
        } else {
            while (*end && *end != ' ' && *end != '&')
                end++;
        }
        memmove(q + 3, end, strlen(end) + 1);
        memcpy(q, "***", 3);
    }
}

void settings_dump(const struct config *c, FILE *out)
{
    const char *sec = "";
    char v[256];
    size_t i;

    for (i = 0; i < CFG_N; i++) {
        const struct cfg_def *d = &cfg_table[i];
        if (strcmp(sec, d->section) != 0) {
            fprintf(out, "\n[%s]\n", d->section);
            sec = d->section;
        }
        fmt_value(d, (const char *)c, v, sizeof v);
        if (d->off == C(pg_conninfo))
            mask_conninfo(v);
        if (d->off == C(proxy) && *c->proxy)
            mask_proxy(c->proxy, v, sizeof v);
        fprintf(out, "%s = %s%*s; %s (default %s)\n", d->key, v,
                (int)(strlen(v) < 24 ? 24 - strlen(v) : 1), "", d->help, d->dflt);
    }
    /* fmt_value wrote a proxy's or connection string's password into v
     * before it was masked: leave none of it on the stack */
    explicit_bzero(v, sizeof v);
}
