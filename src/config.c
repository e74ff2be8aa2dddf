/* config.c - the INI file: inih reads it, the settings table
 * (settings.c) and the endpoint definitions (epdef.c) take its keys;
 * cross-key checks, admin ids, and check-config's dump. */
#include "config.h"
#include "log.h"
#include "netpolicy.h"
#include "opsev.h"
#include "proxy.h"
#include "settings.h"
#include "tlsid.h"
#include "tpl.h"
#include "urlmask.h"
#include "util.h"

#include <errno.h>
#include <arpa/inet.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int config_init(struct config *c)
{
    struct opsev_min_free mf = {-1, -1};
    char err[320];

    memset(c, 0, sizeof *c);
    if (settings_defaults(c) < 0) {
        config_free(c);
        return -1;
    }
    /* the parsed forms of the defaults */
    if (opsev_parse_types(c->ops_event_types, &c->ops_event_mask, err, sizeof err) < 0)
        c->ops_event_mask = OPSEV_ALL;
    opsev_parse_min_free(c->ops_min_free, &mf);
    c->ops_min_free_pct = mf.pct;
    c->ops_min_free_bytes = mf.bytes;
    return 0;
}

void config_free(struct config *c)
{
    size_t i;

    settings_free(c);
    for (i = 0; i < c->n_endpoints; i++)
        ep_def_free(&c->endpoints[i]);
    free(c->endpoints);
    free(c->file);
    memset(c, 0, sizeof *c);
}

/* ---- INI loading ---- */

struct load_ctx {
    struct config *c;
    const char *path;
    char *err;
    size_t errlen;
    int failed;
    struct ep_def *cur;      /* endpoint section being read */
    unsigned char *indented; /* per line: starts with a blank (a continuation) */
    int nlines;
    struct buf joined;       /* the value being continued (endpoint keys) */
    int joined_line;         /* the line it ended on */
    int (*lines)[2];         /* per endpoint: the lines of its url and
                              * ordering_key, checked after the section */
    size_t nlines_cap;
    char prev_key[64];       /* the last key of a global section, and its line */
    int prev_line;
};

/* Long values (a postback URL template easily passes inih's line limit)
 * continue on indented lines, joined as they are: inih hands each line
 * over with the same key, and these keys replace rather than repeat. */
static int joinable(const char *key)
{
    return strcmp(key, "url") == 0 || strcmp(key, "ordering_key") == 0 || strcmp(key, "success_body") == 0 ||
           strcmp(key, "mask_params") == 0 || strcmp(key, "event_types") == 0 || strncmp(key, "map.", 4) == 0;
}

static int fail_at(struct load_ctx *x, int line, const char *section, const char *key,
                   const char *value, const char *why)
{
    /* an indented "secret = ..." line is a continuation of the previous
     * key for inih: hide anything that looks like a secret, whatever key */
    int secret = (key && (strcmp(key, "secret") == 0 || strcmp(key, "token") == 0)) ||
                 (value && strstr(value, "whsec_")) ||
                 (key && strstr(key, "whsec_"));

    /* an indented line is a continuation whatever it says ("  secret =
     * x" under a header): its text is not shown */
    if (line > 0 && line < x->nlines && x->indented[line])
        secret = 1;

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

    /* a section's keys come one after the other: its entry is the last
     * one, and 10,000 endpoints must not cost a quadratic search */
    if (c->n_endpoints && strcmp(c->endpoints[c->n_endpoints - 1].name, name) == 0)
        return &c->endpoints[c->n_endpoints - 1];
    for (i = 0; i < c->n_endpoints; i++)
        if (strcmp(c->endpoints[i].name, name) == 0)
            return &c->endpoints[i];
    if (c->n_endpoints >= CONFIG_MAX_ENDPOINTS)
        return NULL;
    if (c->n_endpoints == c->endpoints_cap) {
        size_t cap = c->endpoints_cap ? c->endpoints_cap * 2 : 16;
        n = realloc(c->endpoints, cap * sizeof *n);
        if (!n)
            return NULL;
        c->endpoints = n;
        c->endpoints_cap = cap;
    }
    n = c->endpoints;
    ep_def_init(&n[c->n_endpoints]);
    util_strlcpy(n[c->n_endpoints].name, name, sizeof n[c->n_endpoints].name);
    return &n[c->n_endpoints++];
}

static int config_ini_line(void *user, const char *section, const char *key, const char *value, int line)
{
    struct load_ctx *x = user;
    char why[256];

    if (x->failed)
        return 0;
    if (strncmp(section, "endpoint.", 9) == 0) {
        struct ep_def *e;
        int more = 0;
        if (!ep_name_valid(section + 9))
            return fail_at(x, line, section, key, value,
                           "endpoint name must be 1-64 of [A-Za-z0-9._-]");
        e = endpoint_section(x, section + 9);
        if (!e)
            return fail_at(x, line, section, key, value, "too many endpoints or out of memory");
        if (!key) /* section header alone */
            return 1;
        if (joinable(key)) {
            more = line > 0 && line < x->nlines && x->indented[line] && x->joined_line == line - 1;
            if (!more)
                buf_reset(&x->joined);
            if (buf_puts(&x->joined, value) < 0)
                return fail_at(x, line, section, key, value, "out of memory");
            x->joined_line = line;
            value = x->joined.p;
        } else {
            x->joined_line = 0;
        }
        if (ep_def_set(e, key, value, why, sizeof why) < 0)
            return fail_at(x, line, section, key, value, why);
        if (strcmp(key, "url") == 0 || strcmp(key, "ordering_key") == 0) {
            size_t k = (size_t)(e - x->c->endpoints);
            if (k >= x->nlines_cap) {
                size_t nc = x->c->endpoints_cap;
                int (*nl)[2] = realloc(x->lines, nc * sizeof *nl);
                if (!nl)
                    return fail_at(x, line, section, key, value, "out of memory");
                memset(nl + x->nlines_cap, 0, (nc - x->nlines_cap) * sizeof *nl);
                x->lines = nl;
                x->nlines_cap = nc;
            }
            if (!more)   /* a continued value is reported at its first line */
                x->lines[k][key[0] == 'o'] = line;
        }
        return 1;
    }
    if (!key)
        return 1;
    /* inih hands an indented line over as the previous key again: for a
     * global setting that would replace its value with the line's text
     * ("  secret = whsec_..." under path became the path, printed by
     * check-config; found by fuzz_config). Only an endpoint's long
     * values continue: here it is refused, its text hidden. */
    if (line > 0 && line < x->nlines && x->indented[line] && x->prev_line > 0 && x->prev_line < line &&
        strcmp(x->prev_key, key) == 0)
        return fail_at(x, line, section, key, value, "an indented line continues the key above it; only an "
                                                     "endpoint's url and other long values may continue");
    util_strlcpy(x->prev_key, key, sizeof x->prev_key);
    x->prev_line = line;
    if (settings_set(x->c, section, key, value, why, sizeof why) < 0)
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
static int check_line_lengths(struct load_ctx *x, char *err, size_t errlen)
{
    FILE *f = fopen(x->path, "r");
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
        if (line >= x->nlines) {
            int n = line * 2 + 64;
            unsigned char *p = realloc(x->indented, (size_t)n);
            if (!p) {
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", x->path);
                return -1;
            }
            memset(p + x->nlines, 0, (size_t)(n - x->nlines));
            x->indented = p;
            x->nlines = n;
        }
        if (len == 0)
            x->indented[line] = ch == ' ' || ch == '\t';
        if (++len == INI_MAX_LINE - 1 + 1) {
            fclose(f);
            snprintf(err, errlen,
                     "%s:%d: line longer than %d bytes (the INI reader's limit): continue a long value "
                     "on the next lines, indented (the pieces are joined as they are)",
                     x->path, line, INI_MAX_LINE - 1);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

/* A node's name tells nodes apart in hookd_node and in logs: the host
 * name unless the file gives one; letters, digits, '.', '_', '-'. */
static int node_name_check(struct config *c, const char *path, char *err, size_t errlen)
{
    const char *p;

    if (!*c->pg_node_name) {
        char host[256];
        char *dup;
        if (gethostname(host, sizeof host) < 0 || !*host)
            snprintf(host, sizeof host, "hookd");
        host[sizeof host - 1] = '\0';
        if (strlen(host) > 63)
            host[63] = '\0';
        if (!(dup = strdup(host))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        free(c->pg_node_name);
        c->pg_node_name = dup;
    }
    if (strlen(c->pg_node_name) > 63) {
        snprintf(err, errlen, "%s: [postgres] node_name: at most 63 characters", path);
        return -1;
    }
    for (p = c->pg_node_name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-')) {
            snprintf(err, errlen, "%s: [postgres] node_name: only letters, digits, '.', '_' and '-'", path);
            return -1;
        }
    return 0;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
    struct load_ctx x = {c, path, err, errlen, 0, NULL, NULL, 0, {0}, 0, NULL, 0, {0}, 0};
    struct netpolicy np;
    int rc, open_errno;
    size_t i;

    free(c->file);
    c->file = strdup(path);
    rc = check_line_lengths(&x, err, errlen) < 0 ? -3 : ini_parse(path, config_ini_line, &x);
    open_errno = errno;   /* ini_parse's failed fopen, before free() */
    free(x.indented);
    buf_free(&x.joined);
    if (rc == -3)
        goto fail;
    if (rc == -1) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(open_errno));
        goto fail;
    }
    if (rc == -2) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    if (x.failed)
        goto fail;
    if (rc > 0) {
        snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path, rc);
        goto fail;
    }
    /* the endpoints' URLs and keys: checked whole, as macro_style may
     * come after them, but reported at their lines */
    for (i = 0; i < c->n_endpoints; i++) {
        char why[256];
        if (ep_def_validate(&c->endpoints[i], why, sizeof why) < 0) {
            int at = i < x.nlines_cap ? x.lines[i][strncmp(why, "ordering_key", 12) == 0] : 0;
            if (at > 0 && (strncmp(why, "url", 3) == 0 || strncmp(why, "ordering_key", 12) == 0))
                snprintf(err, errlen, "%s:%d: [endpoint.%s]: %s", path, at, c->endpoints[i].name, why);
            else
                snprintf(err, errlen, "%s: [endpoint.%s]: %s", path, c->endpoints[i].name, why);
            goto fail;
        }
        if (c->endpoints[i].rq.client_cert &&
            tlsid_files_check(c->endpoints[i].rq.client_cert, c->endpoints[i].rq.client_key, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: [endpoint.%s]: %s", path, c->endpoints[i].name, why);
            goto fail;
        }
    }
    free(x.lines);
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
    if (c->backend == CFG_BACKEND_POSTGRES && !*c->pg_conninfo) {
        snprintf(err, errlen, "%s: [storage] backend = postgres needs [postgres] conninfo", path);
        return -1;
    }
    if (node_name_check(c, path, err, errlen) < 0)
        return -1;
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
    if (*c->source_address) {
        unsigned char a[16];
        if (inet_pton(AF_INET, c->source_address, a) != 1 && inet_pton(AF_INET6, c->source_address, a) != 1) {
            snprintf(err, errlen, "%s: [delivery] source_address: not an IPv4 or IPv6 address", path);
            return -1;
        }
    }
    if (*c->proxy) {
        struct proxy_url p;
        char why[200];
        int bad = proxy_parse(c->proxy, &p, why, sizeof why) < 0;
        if (!bad && p.masked) {
            snprintf(why, sizeof why, "credentials shown as " PROXY_MASKED ": give the real ones, or none");
            bad = 1;
        }
        explicit_bzero(&p, sizeof p);
        if (bad) {
            snprintf(err, errlen, "%s: [delivery] proxy: %s", path, why);
            return -1;
        }
    }
    if (*c->group && !getgrnam(c->group)) {
        snprintf(err, errlen, "%s: [server] group: unknown group '%s'", path, c->group);
        return -1;
    }
    c->n_admin_uid = c->n_admin_gid = 0;
    if (parse_id_list(c->admin_uids, 0, c, err, errlen) < 0 ||
        parse_id_list(c->admin_groups, 1, c, err, errlen) < 0)
        return -1;
    {
        char why[320];
        struct opsev_min_free mf;
        if (opsev_parse_types(c->ops_event_types, &c->ops_event_mask, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: [ops] event_types: %s", path, why);
            return -1;
        }
        if (opsev_parse_min_free(c->ops_min_free, &mf) < 0) {
            snprintf(err, errlen, "%s: [ops] min_free: not a percentage or size (e.g. 10%%, 2GiB, or \"10%%, 1GiB\")",
                     path);
            return -1;
        }
        c->ops_min_free_pct = mf.pct;
        c->ops_min_free_bytes = mf.bytes;
        if (*c->ops_endpoint && !ep_name_valid(c->ops_endpoint)) {
            snprintf(err, errlen, "%s: [ops] endpoint: not an endpoint name", path);
            return -1;
        }
    }
    log_set_level((enum log_level)c->log_level);
    return 0;
fail:
    free(x.lines);
    return -1;
}

static void dump_kv(void *ctx, const char *key, const char *val)
{
    fprintf((FILE *)ctx, "%s = %s\n", key, val);
}

void config_dump(const struct config *c, FILE *out)
{
    size_t i, j;

    fprintf(out, "; effective configuration (%s)\n", c->file ? c->file : "defaults");
    settings_dump(c, out);
    for (i = 0; i < c->n_endpoints; i++) {
        const struct ep_def *e = &c->endpoints[i];
        struct buf u = {0};
        /* a token typed into the query is hidden like a secret */
        urlmask_url(e->url, e->rq.mask_params, &u);
        fprintf(out, "\n[endpoint.%s]\nurl = %s\n", e->name, u.p ? u.p : "(out of memory)");
        buf_free(&u);
        for (j = 0; j < e->nsecrets; j++)
            fprintf(out, "secret = whsec_(hidden)\n");
        if (e->token)
            fprintf(out, "token = (hidden)\n");
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
        ep_request_each(e, dump_kv, out);
    }
}
