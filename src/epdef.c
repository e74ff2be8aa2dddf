/* epdef.c - endpoint definitions: the keys of an [endpoint.NAME]
 * section or an endpoint.put request (url, secrets, headers, event types,
 * and the per-endpoint overrides of the settings table), validated the
 * same way wherever they come from. */
#include "epdef.h"
#include "filter.h"
#include "schedule.h"
#include "netpolicy.h"
#include "outcome.h"
#include "proxy.h"
#include "settings.h"
#include "tlsid.h"
#include "tpl.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    free(d->headers);
    free(d->event_types);
    if (d->token)
        explicit_bzero(d->token, strlen(d->token));
    free(d->token);
    if (d->proxy_auth)
        explicit_bzero(d->proxy_auth, strlen(d->proxy_auth));
    free(d->proxy_auth);
    free(d->rq.proxy);
    free(d->rq.success_status);
    free(d->rq.success_body);
    free(d->rq.mask_params);
    free(d->rq.ordering_key);
    free(d->rq.signature_header);
    free(d->rq.filter);
    free(d->rq.delay);
    free(d->rq.raw_allow);
    free(d->rq.source_address);
    free(d->rq.ca_file);
    free(d->rq.client_cert);
    free(d->rq.client_key);
    free(d->rq.pinned_pubkey);
    for (i = 0; i < d->rq.nmaps; i++) {
        free(d->rq.map_name[i]);
        free(d->rq.map_spec[i]);
    }
    free(d->rq.map_name);
    free(d->rq.map_spec);
    ep_def_init(d);
}

static int opt_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int strs_same(char *const *a, size_t na, char *const *b, size_t nb)
{
    size_t i;

    if (na != nb)
        return 0;
    for (i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

static void kv_text(void *ctx, const char *key, const char *val)
{
    buf_printf(ctx, "%zu:%s%zu:%s", strlen(key), key, strlen(val), val);
}

int ep_def_same(const struct ep_def *a, const struct ep_def *b)
{
    struct buf x = {0}, y = {0};
    int same;

    if (strcmp(a->name, b->name) != 0 || !opt_same(a->url, b->url) || !opt_same(a->event_types, b->event_types) ||
        !opt_same(a->token, b->token) || !opt_same(a->proxy_auth, b->proxy_auth) ||
        !strs_same(a->secrets, a->nsecrets, b->secrets, b->nsecrets) ||
        !strs_same(a->headers, a->nheaders, b->headers, b->nheaders))
        return 0;
    /* the settings and request keys in their stored form: what differs
     * from the defaults, in the table's order */
    ep_settings_each(&a->s, kv_text, &x);
    ep_request_each(a, kv_text, &x);
    ep_settings_each(&b->s, kv_text, &y);
    ep_request_each(b, kv_text, &y);
    same = !x.failed && !y.failed && x.len == y.len && (x.len == 0 || memcmp(x.p, y.p, x.len) == 0);
    buf_free(&x);
    buf_free(&y);
    return same;
}

/* One more slot in a pointer array of n (grown one at a time: these
 * arrays hold a handful, and an endpoint's size matters at 50,000). */
static int grow_one(char ***v, size_t n)
{
    char **nv = realloc(*v, (n + 1) * sizeof *nv);

    if (!nv)
        return -1;
    nv[n] = NULL;
    *v = nv;
    return 0;
}

static int dup_opt(char **dst, const char *src)
{
    return src && !(*dst = strdup(src)) ? -1 : 0;
}

int ep_def_copy(struct ep_def *dst, const struct ep_def *src)
{
    size_t i;

    ep_def_init(dst);
    memcpy(dst->name, src->name, sizeof dst->name);
    dst->s = src->s;
    dst->paused = src->paused;
    dst->paused_given = src->paused_given;
    dst->rq.method = src->rq.method;
    dst->rq.body = src->rq.body;
    dst->rq.macro_style = src->rq.macro_style;
    dst->rq.on_missing_fail = src->rq.on_missing_fail;
    dst->rq.sign = src->rq.sign;
    if (dup_opt(&dst->rq.success_status, src->rq.success_status) < 0 ||
        dup_opt(&dst->rq.success_body, src->rq.success_body) < 0 ||
        dup_opt(&dst->rq.mask_params, src->rq.mask_params) < 0 ||
        dup_opt(&dst->rq.ordering_key, src->rq.ordering_key) < 0 ||
        dup_opt(&dst->rq.signature_header, src->rq.signature_header) < 0 ||
        dup_opt(&dst->rq.filter, src->rq.filter) < 0 || dup_opt(&dst->rq.delay, src->rq.delay) < 0 ||
        dup_opt(&dst->rq.raw_allow, src->rq.raw_allow) < 0 ||
        dup_opt(&dst->rq.source_address, src->rq.source_address) < 0 ||
        dup_opt(&dst->rq.ca_file, src->rq.ca_file) < 0 || dup_opt(&dst->rq.proxy, src->rq.proxy) < 0 ||
        dup_opt(&dst->proxy_auth, src->proxy_auth) < 0)
        goto fail;
    if (dup_opt(&dst->rq.client_cert, src->rq.client_cert) < 0 ||
        dup_opt(&dst->rq.client_key, src->rq.client_key) < 0 ||
        dup_opt(&dst->rq.pinned_pubkey, src->rq.pinned_pubkey) < 0)
        goto fail;
    for (i = 0; i < src->rq.nmaps; i++) {
        if (grow_one(&dst->rq.map_name, i) < 0 || grow_one(&dst->rq.map_spec, i) < 0)
            goto fail;
        if (!(dst->rq.map_name[i] = strdup(src->rq.map_name[i])) ||
            !(dst->rq.map_spec[i] = strdup(src->rq.map_spec[i]))) {
            free(dst->rq.map_name[i]);
            goto fail;
        }
        dst->rq.nmaps++;
    }
    if (src->url && !(dst->url = strdup(src->url)))
        goto fail;
    if (src->event_types && !(dst->event_types = strdup(src->event_types)))
        goto fail;
    if (dup_opt(&dst->token, src->token) < 0)
        goto fail;
    for (i = 0; i < src->nsecrets; i++) {
        if (!(dst->secrets[i] = strdup(src->secrets[i])))
            goto fail;
        dst->nsecrets++;
    }
    for (i = 0; i < src->nheaders; i++) {
        if (grow_one(&dst->headers, i) < 0 || !(dst->headers[i] = strdup(src->headers[i])))
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

static int set_str(char **dst, const char *value, size_t max, char *err, size_t errlen)
{
    char *v;

    if (strlen(value) > max) {
        snprintf(err, errlen, "too long (max %zu bytes)", max);
        return -1;
    }
    if (!(v = strdup(value))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    free(*dst);
    *dst = v;
    return 0;
}

static int pick(const char *value, const char *const *names, int *out, char *err, size_t errlen)
{
    int i;

    for (i = 0; names[i]; i++)
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return 0;
        }
    snprintf(err, errlen, "must be one of");
    for (i = 0; names[i]; i++)
        if (names[i][0]) {
            size_t l = strlen(err);
            snprintf(err + l, errlen > l ? errlen - l : 0, "%s %s", i ? "," : "", names[i]);
        }
    return -1;
}

static const char *const methods[] = {"POST", "GET", "PUT", NULL};
static const char *const bodies[] = {"", "json", "form", "none", NULL};
static const char *const styles[] = {"braces", "hashes", "brackets", NULL};
static const char *const missing[] = {"empty", "fail", NULL};
static const char *const signs[] = {"standard", "none", "hub", NULL};

const char *ep_method_name(int method)
{
    return method >= EP_POST && method <= EP_PUT ? methods[method] : "POST";
}

/* The request keys (postbacks). 1: not one of them. */
static int request_set(struct ep_request *rq, const char *key, const char *value, char *err, size_t errlen)
{
    if (strcmp(key, "method") == 0)
        return pick(value, methods, &rq->method, err, errlen);
    if (strcmp(key, "body") == 0) {
        if (!*value) {
            snprintf(err, errlen, "must be one of json, form, none");
            return -1;
        }
        return pick(value, bodies, &rq->body, err, errlen);
    }
    if (strcmp(key, "macro_style") == 0)
        return pick(value, styles, &rq->macro_style, err, errlen);
    if (strcmp(key, "on_missing") == 0)
        return pick(value, missing, &rq->on_missing_fail, err, errlen);
    if (strcmp(key, "sign") == 0)
        return pick(value, signs, &rq->sign, err, errlen);
    if (strcmp(key, "signature_header") == 0) {
        /* the header is hookd's: one the endpoint or curl sets is refused */
        char h[80];
        if (strlen(value) > 64 || strchr(value, ':')) {
            snprintf(err, errlen, "must be a header name of at most 64 characters");
            return -1;
        }
        snprintf(h, sizeof h, "%s: x", value);
        if (header_valid(h, err, errlen) < 0)
            return -1;
        return set_str(&rq->signature_header, value, 64, err, errlen);
    }
    if (strcmp(key, "success_status") == 0) {
        struct outcome_ok ok;
        if (outcome_ok_parse(value, &ok, err, errlen) < 0)
            return -1;
        return set_str(&rq->success_status, value, 512, err, errlen);
    }
    if (strcmp(key, "success_body") == 0) {
        if (!*value) {
            snprintf(err, errlen, "must not be empty");
            return -1;
        }
        return set_str(&rq->success_body, value, 1024, err, errlen);
    }
    if (strcmp(key, "mask_params") == 0)
        return set_str(&rq->mask_params, value, 1024, err, errlen);
    if (strcmp(key, "ordering_key") == 0)
        return set_str(&rq->ordering_key, value, 512, err, errlen);
    if (strcmp(key, "delay") == 0) {
        int64_t ms;
        if (util_parse_duration_ms(value, &ms) < 0 || ms < 0 || ms > SCHED_MAX_MS) {
            snprintf(err, errlen, "must be a duration of at most 30 days (90s, 5m, 2h)");
            return -1;
        }
        return set_str(&rq->delay, value, 64, err, errlen);
    }
    if (strcmp(key, "filter") == 0) {
        struct filter f;
        if (filter_parse(&f, value, err, errlen) < 0)
            return -1;
        filter_free(&f);
        return set_str(&rq->filter, value, FILTER_MAX, err, errlen);
    }
    if (strcmp(key, "raw_allow") == 0)   /* checked against the url by ep_request_validate */
        return set_str(&rq->raw_allow, value, 512, err, errlen);
    if (strcmp(key, "source_address") == 0) {
        unsigned char a[16];
        if (inet_pton(AF_INET, value, a) != 1 && inet_pton(AF_INET6, value, a) != 1) {
            snprintf(err, errlen, "not an IPv4 or IPv6 address");
            return -1;
        }
        return set_str(&rq->source_address, value, 64, err, errlen);
    }
    if (strcmp(key, "ca_file") == 0) {
        if (value[0] != '/') {
            snprintf(err, errlen, "must be an absolute path");
            return -1;
        }
        return set_str(&rq->ca_file, value, 4096, err, errlen);
    }
    if (strcmp(key, "client_cert") == 0 || strcmp(key, "client_key") == 0) {
        /* the files themselves: tlsid_files_check, where a definition is
         * taken in (a stored one is not refused for a file gone since) */
        if (value[0] != '/') {
            snprintf(err, errlen, "must be an absolute path");
            return -1;
        }
        return set_str(strcmp(key, "client_cert") == 0 ? &rq->client_cert : &rq->client_key, value, 4096, err,
                       errlen);
    }
    if (strcmp(key, "pinned_pubkey") == 0) {
        if (tlsid_pins_check(value, err, errlen) < 0)
            return -1;
        return set_str(&rq->pinned_pubkey, value, TLSID_PINS_MAX, err, errlen);
    }
    if (strncmp(key, "map.", 4) == 0) {
        struct tpl_map m;
        size_t i;
        if (tpl_map_parse(&m, key + 4, value, err, errlen) < 0)
            return -1;
        tpl_map_free(&m);
        for (i = 0; i < rq->nmaps; i++)
            if (strcmp(rq->map_name[i], key + 4) == 0)
                return set_str(&rq->map_spec[i], value, 4096, err, errlen);
        if (rq->nmaps >= EP_MAPS_MAX) {
            snprintf(err, errlen, "too many maps (max %d)", EP_MAPS_MAX);
            return -1;
        }
        if (grow_one(&rq->map_spec, rq->nmaps) < 0 || grow_one(&rq->map_name, rq->nmaps) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (set_str(&rq->map_spec[rq->nmaps], value, 4096, err, errlen) < 0)
            return -1;
        if (set_str(&rq->map_name[rq->nmaps], key + 4, 128, err, errlen) < 0) {
            free(rq->map_spec[rq->nmaps]);
            rq->map_spec[rq->nmaps] = NULL;
            return -1;
        }
        rq->nmaps++;
        return 0;
    }
    return 1;
}

void ep_request_each(const struct ep_def *d, void (*fn)(void *ctx, const char *key, const char *val), void *ctx)
{
    const struct ep_request *rq = &d->rq;
    char key[160];
    size_t i;

    if (rq->method)
        fn(ctx, "method", methods[rq->method]);
    if (rq->body)
        fn(ctx, "body", bodies[rq->body]);
    if (rq->macro_style)
        fn(ctx, "macro_style", styles[rq->macro_style]);
    if (rq->on_missing_fail)
        fn(ctx, "on_missing", "fail");
    if (rq->sign)
        fn(ctx, "sign", signs[rq->sign]);
    if (rq->signature_header)
        fn(ctx, "signature_header", rq->signature_header);
    if (rq->success_status)
        fn(ctx, "success_status", rq->success_status);
    if (rq->success_body)
        fn(ctx, "success_body", rq->success_body);
    if (rq->mask_params)
        fn(ctx, "mask_params", rq->mask_params);
    if (rq->ordering_key)
        fn(ctx, "ordering_key", rq->ordering_key);
    if (rq->filter)
        fn(ctx, "filter", rq->filter);
    if (rq->delay)
        fn(ctx, "delay", rq->delay);
    if (rq->raw_allow)
        fn(ctx, "raw_allow", rq->raw_allow);
    if (rq->source_address)
        fn(ctx, "source_address", rq->source_address);
    if (rq->ca_file)
        fn(ctx, "ca_file", rq->ca_file);
    if (rq->client_cert)
        fn(ctx, "client_cert", rq->client_cert);
    if (rq->client_key)
        fn(ctx, "client_key", rq->client_key);
    if (rq->pinned_pubkey)
        fn(ctx, "pinned_pubkey", rq->pinned_pubkey);
    if (rq->proxy)
        fn(ctx, "proxy", rq->proxy);
    for (i = 0; i < rq->nmaps; i++) {
        snprintf(key, sizeof key, "map.%s", rq->map_name[i]);
        fn(ctx, key, rq->map_spec[i]);
    }
}

int ep_def_set_proxy_auth(struct ep_def *d, const char *auth)
{
    char *a = strdup(auth);

    if (!a)
        return -1;
    if (d->proxy_auth)
        explicit_bzero(d->proxy_auth, strlen(d->proxy_auth));
    free(d->proxy_auth);
    d->proxy_auth = a;
    return 0;
}

/* "proxy": credentials in the value replace the endpoint's, none remove
 * them, and the masked form (the stored one) keeps those loaded apart.
 * PROXY_NONE: direct, whatever [delivery] proxy says. */
static int proxy_set(struct ep_def *d, const char *value, char *err, size_t errlen)
{
    struct proxy_url p;
    char *shown;
    int rc = -1;

    if (strcmp(value, PROXY_NONE) == 0) {
        memset(&p, 0, sizeof p);
        util_strlcpy(p.shown, PROXY_NONE, sizeof p.shown);
    } else if (proxy_parse(value, &p, err, errlen) < 0) {
        return -1;
    }
    if (p.masked && !d->proxy_auth) {
        snprintf(err, errlen, "credentials shown as " PROXY_MASKED ": give the real ones, or none");
        goto out;
    }
    if (!(shown = strdup(p.shown)) || (p.auth[0] && ep_def_set_proxy_auth(d, p.auth) < 0)) {
        free(shown);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!p.auth[0] && !p.masked && d->proxy_auth) {
        explicit_bzero(d->proxy_auth, strlen(d->proxy_auth));
        free(d->proxy_auth);
        d->proxy_auth = NULL;
    }
    free(d->rq.proxy);
    d->rq.proxy = shown;
    rc = 0;
out:
    explicit_bzero(&p, sizeof p);
    return rc;
}

int ep_def_set(struct ep_def *d, const char *key, const char *value, char *err, size_t errlen)
{
    int r;

    if (strcmp(key, "url") == 0) {
        char *u;
        /* checked whole by ep_def_validate: its macros depend on
         * macro_style, which may come later */
        if (strlen(value) > TPL_MAX) {
            snprintf(err, errlen, "URL too long (max %d)", TPL_MAX);
            return -1;
        }
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
    if (strcmp(key, "token") == 0) {
        size_t i, n = strlen(value);
        char *t;
        if (n == 0 || n > EP_TOKEN_MAX) {
            snprintf(err, errlen, "must be 1-%d bytes", EP_TOKEN_MAX);
            return -1;
        }
        for (i = 0; i < n; i++)
            if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f) {
                snprintf(err, errlen, "holds a control character at position %zu", i + 1);
                return -1;
            }
        if (!(t = strdup(value)))
            goto oom;
        if (d->token)
            explicit_bzero(d->token, strlen(d->token));
        free(d->token);
        d->token = t;
        return 0;
    }
    if (strcmp(key, "header") == 0) {
        if (d->nheaders >= ENDPOINT_MAX_HEADERS) {
            snprintf(err, errlen, "too many headers (max %d)", ENDPOINT_MAX_HEADERS);
            return -1;
        }
        if (header_valid(value, err, errlen) < 0)
            return -1;
        if (grow_one(&d->headers, d->nheaders) < 0 || !(d->headers[d->nheaders] = strdup(value)))
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
    if (strcmp(key, "proxy") == 0)
        return proxy_set(d, value, err, errlen);
    if (strcmp(key, "paused") == 0) {
        if (util_parse_bool(value, &d->paused) < 0) {
            snprintf(err, errlen, "not a valid boolean (yes/no)");
            return -1;
        }
        d->paused_given = 1;
        return 0;
    }
    if ((r = request_set(&d->rq, key, value, err, errlen)) <= 0)
        return r;
    return settings_set_ep(&d->s, key, value, err, errlen) < 0 ? -1 : 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* The URL template and the request keys together. */
static int ep_request_validate(const struct ep_def *d, char *err, size_t errlen)
{
    const struct ep_request *rq = &d->rq;
    struct tpl t;
    struct buf sk = {0};
    char why[200];
    int rc;

    if (tpl_parse(&t, d->url, (enum tpl_style)rq->macro_style, TPL_URL, why, sizeof why) < 0) {
        snprintf(err, errlen, "url: %s", why);
        return -1;
    }
    /* the shape of the URL with every macro filled in */
    rc = tpl_skeleton(&t, "x", &sk) < 0 ? -1 : netpolicy_url_check(sk.p, why, sizeof why);
    if (rc == 0 && tpl_keyed(&t) && !d->token) {
        snprintf(why, sizeof why, "an hmac_ macro is keyed by the endpoint's token: set token");
        rc = -1;
    }
    if (rc == 0 && tpl_raw_allow_check(&t, rq->raw_allow, why, sizeof why) < 0) {
        tpl_free(&t);
        buf_free(&sk);
        snprintf(err, errlen, "raw_allow: %s", why);
        return -1;
    }
    tpl_free(&t);
    buf_free(&sk);
    if (rc < 0) {
        snprintf(err, errlen, "url: %s", why);
        return -1;
    }
    if (rq->ordering_key) {
        if (tpl_parse(&t, rq->ordering_key, (enum tpl_style)rq->macro_style, TPL_TEXT, why, sizeof why) < 0) {
            snprintf(err, errlen, "ordering_key: %s", why);
            return -1;
        }
        rc = t.nmacros;
        tpl_free(&t);
        if (rc == 0) {
            snprintf(err, errlen, "ordering_key: holds no macro, so every message would share one key");
            return -1;
        }
    }
    if (rq->signature_header && rq->sign != EP_SIGN_HUB) {
        snprintf(err, errlen, "signature_header: names the header of sign = hub only");
        return -1;
    }
    if (rq->sign == EP_SIGN_HUB && d->nsecrets == 0) {
        snprintf(err, errlen, "sign: hub signs with the endpoint's secret: set secret (or sign = none)");
        return -1;
    }
    if (!rq->client_cert != !rq->client_key) {
        snprintf(err, errlen, "%s: set client_cert and client_key together (mutual TLS needs both)",
                 rq->client_cert ? "client_key" : "client_cert");
        return -1;
    }
    if (rq->method == EP_GET && (rq->body == EP_BODY_JSON || rq->body == EP_BODY_FORM)) {
        snprintf(err, errlen, "body: a GET request carries no body (body = none, or method = POST/PUT)");
        return -1;
    }
    return 0;
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
    if (d->proxy_auth && !d->rq.proxy) {
        snprintf(err, errlen, "endpoint %s: proxy credentials without a proxy", d->name);
        return -1;
    }
    if (d->s.base_delay_ms > 0 && d->s.max_delay_ms > 0 && d->s.base_delay_ms > d->s.max_delay_ms) {
        snprintf(err, errlen, "endpoint %s: base_delay exceeds max_delay", d->name);
        return -1;
    }
    return ep_request_validate(d, err, errlen);
}

/* A pattern with '*' (any run of characters, dots too): "order.*",
 * "*.created", "order.*.v2". Iterative, with one backtrack point. */
static int type_glob(const char *pat, size_t pl, const char *s)
{
    size_t pi = 0, si = 0, star = (size_t)-1, mark = 0, sl = strlen(s);

    while (si < sl) {
        if (pi < pl && pat[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < pl && pat[pi] == s[si]) {
            pi++;
            si++;
        } else if (star != (size_t)-1) {
            pi = star + 1;
            si = ++mark;
        } else {
            return 0;
        }
    }
    while (pi < pl && pat[pi] == '*')
        pi++;
    return pi == pl;
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
        if ((l == 1 && *p == '*') || (l == tl && memcmp(p, type, l) == 0) ||
            (memchr(p, '*', l) && type_glob(p, l, type)))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

