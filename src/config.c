/* config.c - one typed table drives INI parsing, validation, defaults and
 * check-config output. Endpoint sections reuse the same setters. */
#include "config.h"
#include "log.h"
#include "netpolicy.h"
#include "util.h"

#include <ctype.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

#define C(f) offsetof(struct config, f)
#define D(f) (offsetof(struct config, dflt) + offsetof(struct ep_settings, f))
#define DAY 86400000LL
#define HOUR 3600000LL

/* Section "delivery"/"breaker" entries whose offset lies inside dflt are
 * also the per-endpoint overridable keys (see ep_keys below). */
static const struct cfg_def cfg_table[] = {
    {"storage", "path", T_STR, C(db_path), 0, 0, "./var/hookd.db", "database file (WAL mode)", NULL},
    {"storage", "synchronous", T_ENUM, C(synchronous), 0, 3, "full", "off|normal|full|extra; full survives power loss", sync_names},
    {"storage", "check_at_start", T_ENUM, C(check_at_start), 0, 3, "auto", "off|quick|full|auto: check before serving (auto: full up to full_check_max)", check_names},
    {"storage", "full_check_max", T_SIZE, C(full_check_max), 0, INT64_MAX, "512MiB", "auto: largest database that gets the full integrity_check", NULL},
    {"storage", "busy_timeout", T_DUR, C(busy_timeout_ms), 0, 60000, "5s", "wait for a lock before failing", NULL},
    {"storage", "batch_max", T_INT, C(batch_max), 1, 100000, "1000", "rows per group-commit transaction", NULL},

    {"server", "socket", T_STR, C(socket_path), 0, 0, "./var/run/hookd.sock", "control socket; its directory is created 0750", NULL},
    {"server", "group", T_STR, C(group), 0, 0, "", "group owning socket and directory (empty: hookd's)", NULL},
    {"server", "admin_uids", T_STR, C(admin_uids), 0, 0, "", "extra users (names or uids) allowed admin requests", NULL},
    {"server", "admin_groups", T_STR, C(admin_groups), 0, 0, "", "groups (names or gids) allowed admin requests", NULL},
    {"server", "max_payload", T_SIZE, C(max_payload), 16, 16 << 20, "256KiB", "largest payload accepted", NULL},
    {"server", "max_line", T_SIZE, C(max_line), 1024, 64 << 20, "1MiB", "longest request line (must exceed max_payload)", NULL},
    {"server", "max_clients", T_INT, C(max_clients), 1, 1000000, "10000", "concurrent socket clients", NULL},

    {"delivery", "workers", T_INT, C(workers), 0, 64, "0", "delivery threads; 0 = number of cores", NULL},
    {"delivery", "max_in_flight_per_endpoint", T_INT, D(max_in_flight), 1, 100000, "32", "concurrent requests per endpoint", NULL},
    {"delivery", "timeout", T_DUR, D(timeout_ms), 1, 600000, "15s", "total time of one attempt", NULL},
    {"delivery", "connect_timeout", T_DUR, D(connect_timeout_ms), 1, 600000, "5s", "TCP + TLS connect time", NULL},
    {"delivery", "base_delay", T_DUR, D(base_delay_ms), 1, 30 * DAY, "30s", "backoff base: uniform(0, min(base*2^n, max))", NULL},
    {"delivery", "max_delay", T_DUR, D(max_delay_ms), 1, 30 * DAY, "1h", "backoff cap", NULL},
    {"delivery", "max_attempts", T_INT, D(max_attempts), 1, 1000, "5", "attempts before dead letter", NULL},
    {"delivery", "allow_networks", T_STR, C(allow_networks), 0, 0, "", "CIDRs deliveries may reach despite the SSRF guard", NULL},
    {"delivery", "ca_file", T_STR, C(ca_file), 0, 0, "", "CA bundle for HTTPS (empty: system default)", NULL},
    {"delivery", "shutdown_grace", T_DUR, C(shutdown_grace_ms), 0, 600000, "10s", "on SIGTERM, time for transfers to finish", NULL},
    {"delivery", "claim_batch", T_INT, C(claim_batch), 1, 100000, "1024", "rows claimed per writer round", NULL},
    {"delivery", "rate", T_RATE, D(rate), 0, 0, "0", "default per-endpoint rate limits (e.g. 10/s or 100/m, 1000/h; 0 unlimited)", NULL},
    {"delivery", "burst", T_INT, D(burst), 0, 1000000, "0", "token bucket size (0: one second of rate)", NULL},

    {"breaker", "failure_threshold", T_INT, D(failure_threshold), 1, 1000000, "10", "consecutive failures that open the breaker", NULL},
    {"breaker", "cooldown", T_DUR, D(cooldown_ms), 1, 30 * DAY, "5m", "first open period", NULL},
    {"breaker", "max_cooldown", T_DUR, D(max_cooldown_ms), 1, 30 * DAY, "1h", "cap of the doubling open period", NULL},

    {"latency", "window", T_DUR, C(latency_window_ms), 60000, 90 * DAY, "24h", "latency ring buffer window", NULL},
    {"latency", "rollup_interval", T_DUR, C(rollup_interval_ms), 100, DAY, "60s", "p50/p95/p99 rollup period", NULL},
    {"latency", "slow_scan_interval", T_DUR, C(slow_scan_interval_ms), 100, DAY, "15m", "slow endpoint scan period", NULL},
    {"latency", "slow_p95", T_DUR, C(slow_p95_ms), 1, HOUR, "2000ms", "p95 above this is logged as slow", NULL},
    {"latency", "critical_p95", T_DUR, C(critical_p95_ms), 1, HOUR, "5000ms", "p95 above this halves the failure threshold", NULL},
    {"latency", "min_samples", T_INT, C(min_samples), 1, 1000000, "20", "samples needed before judging p95", NULL},

    {"health", "summary_interval", T_DUR, C(summary_interval_ms), 100, DAY, "5m", "health summary log period", NULL},
    {"health", "oldest_pending_alert", T_DUR, C(oldest_pending_alert_ms), 1000, 30 * DAY, "30m", "warn when the oldest pending is older", NULL},

    {"retention", "delivered", T_DUR, C(keep_delivered_ms), 60000, 3650 * DAY, "7d", "keep delivered rows this long", NULL},
    {"retention", "dead_letter", T_DUR, C(keep_dead_letter_ms), 60000, 3650 * DAY, "30d", "keep dead letters this long", NULL},
    {"retention", "chunk", T_INT, C(cleanup_chunk), 10, 1000000, "250", "rows deleted per cleanup step", NULL},
    {"retention", "cleanup_interval", T_DUR, C(cleanup_interval_ms), 100, DAY, "60s", "retention and latency cleanup period", NULL},
    {"retention", "checkpoint_interval", T_DUR, C(checkpoint_interval_ms), 100, HOUR, "10s", "WAL checkpoint period", NULL},

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
        *(int *)(base + d->off) = b;
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

static void settings_unset(struct ep_settings *s)
{
    s->max_attempts = s->timeout_ms = s->connect_timeout_ms = -1;
    s->base_delay_ms = s->max_delay_ms = s->max_in_flight = -1;
    s->failure_threshold = s->cooldown_ms = s->max_cooldown_ms = -1;
    s->rate.n = -1;
    s->burst = -1;
}

int config_init(struct config *c)
{
    char err[128];
    size_t i;

    memset(c, 0, sizeof *c);
    for (i = 0; i < CFG_N; i++)
        if (set_value(&cfg_table[i], (char *)c, cfg_table[i].dflt, err, sizeof err) < 0) {
            config_free(c);
            return -1;
        }
    return 0;
}

void config_free(struct config *c)
{
    size_t i;

    for (i = 0; i < CFG_N; i++)
        if (cfg_table[i].type == T_STR) {
            char **slot = (char **)((char *)c + cfg_table[i].off);
            free(*slot);
            *slot = NULL;
        }
    for (i = 0; i < c->n_endpoints; i++)
        ep_def_free(&c->endpoints[i]);
    free(c->endpoints);
    free(c->file);
    memset(c, 0, sizeof *c);
}

/* ---- endpoint definitions ---- */

void ep_def_init(struct ep_def *d)
{
    memset(d, 0, sizeof *d);
    settings_unset(&d->s);
}

void ep_def_free(struct ep_def *d)
{
    size_t i;

    free(d->url);
    for (i = 0; i < d->nsecrets; i++) {
        /* secrets do not outlive their use in freed heap memory */
        explicit_bzero(d->secrets[i], strlen(d->secrets[i]));
        free(d->secrets[i]);
    }
    for (i = 0; i < d->nheaders; i++)
        free(d->headers[i]);
    free(d->event_types);
    ep_def_init(d);
}

int ep_def_copy(struct ep_def *dst, const struct ep_def *src)
{
    size_t i;

    ep_def_init(dst);
    memcpy(dst->name, src->name, sizeof dst->name);
    dst->s = src->s;
    dst->paused = src->paused;
    if (src->url && !(dst->url = strdup(src->url)))
        goto fail;
    if (src->event_types && !(dst->event_types = strdup(src->event_types)))
        goto fail;
    for (i = 0; i < src->nsecrets; i++) {
        if (!(dst->secrets[i] = strdup(src->secrets[i])))
            goto fail;
        dst->nsecrets++;
    }
    for (i = 0; i < src->nheaders; i++) {
        if (!(dst->headers[i] = strdup(src->headers[i])))
            goto fail;
        dst->nheaders++;
    }
    return 0;
fail:
    ep_def_free(dst);
    return -1;
}

int ep_name_valid(const char *name)
{
    size_t n = strlen(name), i;

    if (n == 0 || n > ENDPOINT_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '-' && ch != '_' && ch != '.')
            return 0;
    }
    return 1;
}

static int header_valid(const char *h, char *err, size_t errlen)
{
    const char *colon = strchr(h, ':');
    const char *p;
    static const char *const reserved[] = {"content-type", "content-length", "user-agent",
                                           "webhook-id", "webhook-timestamp", "webhook-signature",
                                           "host", "transfer-encoding", "expect", "connection", NULL};
    size_t i, nlen;

    if (strlen(h) > ENDPOINT_HEADER_MAX) {
        snprintf(err, errlen, "header too long (max %d bytes)", ENDPOINT_HEADER_MAX);
        return -1;
    }
    if (!colon || colon == h) {
        snprintf(err, errlen, "header must be 'Name: value'");
        return -1;
    }
    for (p = h; p < colon; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') {
            snprintf(err, errlen, "header name has an invalid character");
            return -1;
        }
    for (p = colon + 1; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t') {
            snprintf(err, errlen, "header value has a control character");
            return -1;
        }
    nlen = (size_t)(colon - h);
    for (i = 0; reserved[i]; i++)
        if (strlen(reserved[i]) == nlen && strncasecmp(h, reserved[i], nlen) == 0) {
            snprintf(err, errlen, "header %.*s is set by hookd", (int)nlen, h);
            return -1;
        }
    return 0;
}

/* "a, b ,c" -> "a,b,c"; types are [A-Za-z0-9._:-]+ or "*" */
static int normalise_types(const char *v, char **out, char *err, size_t errlen)
{
    struct buf b = {0};
    const char *p = v;

    while (*p) {
        const char *s, *e;
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        s = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        e = p;
        for (const char *q = s; q < e; q++)
            if (!isalnum((unsigned char)*q) && !strchr("._:-*", *q)) {
                snprintf(err, errlen, "event type has an invalid character");
                buf_free(&b);
                return -1;
            }
        if ((b.len && buf_puts(&b, ",") < 0) || buf_append(&b, s, (size_t)(e - s)) < 0) {
            snprintf(err, errlen, "out of memory");
            buf_free(&b);
            return -1;
        }
    }
    if (b.len > ENDPOINT_TYPES_MAX) {
        snprintf(err, errlen, "event_types too long");
        buf_free(&b);
        return -1;
    }
    *out = b.p; /* NULL when empty */
    return 0;
}

int ep_def_set(struct ep_def *d, const char *key, const char *value, char *err, size_t errlen)
{
    const struct cfg_def *def;

    if (strcmp(key, "url") == 0) {
        char *u;
        if (netpolicy_url_check(value, err, errlen) < 0)
            return -1;
        if (!(u = strdup(value)))
            goto oom;
        free(d->url);
        d->url = u;
        return 0;
    }
    if (strcmp(key, "secret") == 0) {
        struct sign_key k;
        /* several secrets may share one line, blank separated */
        char *copy = strdup(value), *tok, *save = NULL;
        if (!copy)
            goto oom;
        for (tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
            if (d->nsecrets >= SIGN_MAX_SECRETS) {
                snprintf(err, errlen, "too many secrets (max %d)", SIGN_MAX_SECRETS);
                goto bad_secret;
            }
            if (sign_key_decode(tok, &k, err, errlen) < 0)
                goto bad_secret;
            explicit_bzero(&k, sizeof k);
            if (!(d->secrets[d->nsecrets] = strdup(tok)))
                goto bad_secret;
            d->nsecrets++;
        }
        explicit_bzero(copy, strlen(value));
        free(copy);
        return 0;
    bad_secret:
        explicit_bzero(copy, strlen(value));
        free(copy);
        return -1;
    }
    if (strcmp(key, "header") == 0) {
        if (d->nheaders >= ENDPOINT_MAX_HEADERS) {
            snprintf(err, errlen, "too many headers (max %d)", ENDPOINT_MAX_HEADERS);
            return -1;
        }
        if (header_valid(value, err, errlen) < 0)
            return -1;
        if (!(d->headers[d->nheaders] = strdup(value)))
            goto oom;
        d->nheaders++;
        return 0;
    }
    if (strcmp(key, "event_types") == 0) {
        char *t;
        if (normalise_types(value, &t, err, errlen) < 0)
            return -1;
        free(d->event_types);
        d->event_types = t;
        return 0;
    }
    if (strcmp(key, "paused") == 0) {
        if (util_parse_bool(value, &d->paused) < 0) {
            snprintf(err, errlen, "not a valid boolean (yes/no)");
            return -1;
        }
        return 0;
    }
    def = find_ep_def(key);
    if (!def) {
        snprintf(err, errlen, "unknown key");
        return -1;
    }
    return set_value(def, (char *)&d->s - offsetof(struct config, dflt), value, err, errlen);
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

int ep_def_validate(const struct ep_def *d, char *err, size_t errlen)
{
    if (!ep_name_valid(d->name)) {
        snprintf(err, errlen, "endpoint name must be 1-%d of [A-Za-z0-9._-]", ENDPOINT_NAME_MAX);
        return -1;
    }
    if (!d->url) {
        snprintf(err, errlen, "endpoint %s has no url", d->name);
        return -1;
    }
    if (d->s.base_delay_ms > 0 && d->s.max_delay_ms > 0 && d->s.base_delay_ms > d->s.max_delay_ms) {
        snprintf(err, errlen, "endpoint %s: base_delay exceeds max_delay", d->name);
        return -1;
    }
    return 0;
}

struct ep_settings ep_settings_effective(const struct ep_settings *ep, const struct ep_settings *dflt)
{
    struct ep_settings r = *dflt;

#define INH(f) if (ep->f >= 0) r.f = ep->f
    INH(max_attempts);
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
#undef INH
    return r;
}

int ep_def_wants(const struct ep_def *d, const char *type)
{
    const char *p = d->event_types;
    size_t tl = strlen(type);

    if (!p)
        return 0;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if ((l == 1 && *p == '*') || (l == tl && memcmp(p, type, l) == 0))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
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
        snprintf(out, n, "%s", *(const int *)(base + d->off) ? "yes" : "no");
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

/* ---- INI loading ---- */

struct load_ctx {
    struct config *c;
    const char *path;
    char *err;
    size_t errlen;
    int failed;
    struct ep_def *cur;      /* endpoint section being read */
};

static int fail_at(struct load_ctx *x, int line, const char *section, const char *key,
                   const char *value, const char *why)
{
    /* an indented "secret = ..." line is a continuation of the previous
     * key for inih: hide anything that looks like a secret, whatever key */
    int secret = (key && strcmp(key, "secret") == 0) || (value && strstr(value, "whsec_")) ||
                 (key && strstr(key, "whsec_"));

    if (!x->failed)
        snprintf(x->err, x->errlen, "%s:%d: [%s] %s = '%s': %s", x->path, line, section,
                 key ? key : "", secret ? "(hidden)" : (value ? value : ""), why);
    x->failed = 1;
    return 0;
}

static struct ep_def *endpoint_section(struct load_ctx *x, const char *name)
{
    struct config *c = x->c;
    struct ep_def *n;
    size_t i;

    for (i = 0; i < c->n_endpoints; i++)
        if (strcmp(c->endpoints[i].name, name) == 0)
            return &c->endpoints[i];
    if (c->n_endpoints >= CONFIG_MAX_ENDPOINTS)
        return NULL;
    n = realloc(c->endpoints, (c->n_endpoints + 1) * sizeof *n);
    if (!n)
        return NULL;
    c->endpoints = n;
    ep_def_init(&n[c->n_endpoints]);
    util_strlcpy(n[c->n_endpoints].name, name, sizeof n[c->n_endpoints].name);
    return &n[c->n_endpoints++];
}

static int config_ini_line(void *user, const char *section, const char *key, const char *value, int line)
{
    struct load_ctx *x = user;
    char why[256];
    const struct cfg_def *d;

    if (x->failed)
        return 0;
    if (strncmp(section, "endpoint.", 9) == 0) {
        struct ep_def *e;
        if (!ep_name_valid(section + 9))
            return fail_at(x, line, section, key, value,
                           "endpoint name must be 1-64 of [A-Za-z0-9._-]");
        e = endpoint_section(x, section + 9);
        if (!e)
            return fail_at(x, line, section, key, value, "too many endpoints or out of memory");
        if (!key) /* section header alone */
            return 1;
        if (ep_def_set(e, key, value, why, sizeof why) < 0)
            return fail_at(x, line, section, key, value, why);
        return 1;
    }
    if (!key)
        return 1;
    d = find_def(section, key);
    if (!d) {
        size_t i;
        for (i = 0; i < CFG_N; i++)
            if (strcmp(cfg_table[i].section, section) == 0)
                break;
        return fail_at(x, line, section, key, value, i == CFG_N ? "unknown section" : "unknown key");
    }
    if (set_value(d, (char *)x->c, value, why, sizeof why) < 0)
        return fail_at(x, line, section, key, value, why);
    return 1;
}

static int parse_id_list(const char *list, int groups, struct config *c, char *err, size_t errlen)
{
    char *copy = strdup(list ? list : ""), *tok, *save = NULL;
    int rc = -1;

    if (!copy)
        return -1;
    for (tok = strtok_r(copy, " ,\t", &save); tok; tok = strtok_r(NULL, " ,\t", &save)) {
        int64_t n;
        if ((groups ? c->n_admin_gid : c->n_admin_uid) >= CONFIG_MAX_ADMIN) {
            snprintf(err, errlen, "too many admin %s (max %d)", groups ? "groups" : "uids", CONFIG_MAX_ADMIN);
            goto out;
        }
        if (util_parse_int(tok, &n) == 0 && n >= 0) {
            /* numeric id */
        } else if (groups) {
            struct group *g = getgrnam(tok);
            if (!g) {
                snprintf(err, errlen, "[server] admin_groups: unknown group '%s'", tok);
                goto out;
            }
            n = g->gr_gid;
        } else {
            struct passwd *p = getpwnam(tok);
            if (!p) {
                snprintf(err, errlen, "[server] admin_uids: unknown user '%s'", tok);
                goto out;
            }
            n = p->pw_uid;
        }
        if (groups)
            c->admin_gid[c->n_admin_gid++] = (gid_t)n;
        else
            c->admin_uid[c->n_admin_uid++] = (uid_t)n;
    }
    rc = 0;
out:
    free(copy);
    return rc;
}

/* inih reads at most INI_MAX_LINE - 1 bytes per line and parses the rest
 * as a line of its own: a long URL would be cut and its tail (perhaps part
 * of a secret) taken for a key. Refuse such files up front, clearly. */
static int check_line_lengths(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    int line = 1, ch;
    long len = 0;

    if (!f)
        return 0;  /* ini_parse reports it */
    while ((ch = getc(f)) != EOF) {
        if (ch == '\n') {
            line++;
            len = 0;
            continue;
        }
        if (++len == INI_MAX_LINE - 1 + 1) {
            fclose(f);
            snprintf(err, errlen,
                     "%s:%d: line longer than %d bytes (the INI reader's limit); "
                     "define an endpoint with a longer URL over the socket (hookd endpoint-put)",
                     path, line, INI_MAX_LINE - 1);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
    struct load_ctx x = {c, path, err, errlen, 0, NULL};
    struct netpolicy np;
    int rc;
    size_t i;

    free(c->file);
    c->file = strdup(path);
    if (check_line_lengths(path, err, errlen) < 0)
        return -1;
    rc = ini_parse(path, config_ini_line, &x);
    if (rc == -1) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    if (rc == -2) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (x.failed)
        return -1;
    if (rc > 0) {
        snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path, rc);
        return -1;
    }
    /* cross-field checks */
    if (c->dflt.base_delay_ms > c->dflt.max_delay_ms) {
        snprintf(err, errlen, "%s: [delivery] base_delay exceeds max_delay", path);
        return -1;
    }
    if (c->max_line <= c->max_payload) {
        snprintf(err, errlen, "%s: [server] max_line must be larger than max_payload", path);
        return -1;
    }
    if (!*c->db_path || !*c->socket_path) {
        snprintf(err, errlen, "%s: [storage] path and [server] socket must not be empty", path);
        return -1;
    }
    if (strlen(c->socket_path) >= 100) {
        snprintf(err, errlen, "%s: [server] socket path too long (max 99 bytes)", path);
        return -1;
    }
    if (netpolicy_parse(&np, c->allow_networks, err, errlen) < 0) {
        char tmp[256];
        util_strlcpy(tmp, err, sizeof tmp);
        snprintf(err, errlen, "%s: [delivery] allow_networks: %s", path, tmp);
        return -1;
    }
    if (*c->group && !getgrnam(c->group)) {
        snprintf(err, errlen, "%s: [server] group: unknown group '%s'", path, c->group);
        return -1;
    }
    c->n_admin_uid = c->n_admin_gid = 0;
    if (parse_id_list(c->admin_uids, 0, c, err, errlen) < 0 ||
        parse_id_list(c->admin_groups, 1, c, err, errlen) < 0)
        return -1;
    for (i = 0; i < c->n_endpoints; i++) {
        char why[256];
        if (ep_def_validate(&c->endpoints[i], why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: [endpoint.%s]: %s", path, c->endpoints[i].name, why);
            return -1;
        }
    }
    log_set_level((enum log_level)c->log_level);
    return 0;
}

static void dump_kv(void *ctx, const char *key, const char *val)
{
    fprintf((FILE *)ctx, "%s = %s\n", key, val);
}

void config_dump(const struct config *c, FILE *out)
{
    const char *sec = "";
    char v[256];
    size_t i, j;

    fprintf(out, "; effective configuration (%s)\n", c->file ? c->file : "defaults");
    for (i = 0; i < CFG_N; i++) {
        const struct cfg_def *d = &cfg_table[i];
        if (strcmp(sec, d->section) != 0) {
            fprintf(out, "\n[%s]\n", d->section);
            sec = d->section;
        }
        fmt_value(d, (const char *)c, v, sizeof v);
        fprintf(out, "%s = %s%*s; %s (default %s)\n", d->key, v,
                (int)(strlen(v) < 24 ? 24 - strlen(v) : 1), "", d->help, d->dflt);
    }
    for (i = 0; i < c->n_endpoints; i++) {
        const struct ep_def *e = &c->endpoints[i];
        fprintf(out, "\n[endpoint.%s]\nurl = %s\n", e->name, e->url);
        for (j = 0; j < e->nsecrets; j++)
            fprintf(out, "secret = whsec_(hidden)\n");
        for (j = 0; j < e->nheaders; j++) {
            const char *colon = strchr(e->headers[j], ':');
            /* header values often carry tokens: print names only */
            fprintf(out, "header = %.*s: (hidden)\n", (int)(colon - e->headers[j]), e->headers[j]);
        }
        if (e->event_types)
            fprintf(out, "event_types = %s\n", e->event_types);
        if (e->paused)
            fprintf(out, "paused = yes\n");
        ep_settings_each(&e->s, dump_kv, out);
    }
}
