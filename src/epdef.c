/* epdef.c - endpoint definitions: the keys of an [endpoint.NAME]
 * section or an endpoint.put request (url, secrets, headers, event types,
 * and the per-endpoint overrides of the settings table), validated the
 * same way wherever they come from. */
#include "epdef.h"
#include "netpolicy.h"
#include "settings.h"
#include "util.h"

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
    return settings_set_ep(&d->s, key, value, err, errlen) < 0 ? -1 : 0;
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

