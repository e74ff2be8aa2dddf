/* endpoint.c - endpoint snapshots for the delivery threads, and the
 * JSON forms of a definition (endpoint.put requests, stored lists). */
#include "endpoint.h"
#include "filter.h"
#include "urlmask.h"
#include "settings.h"
#include "tlsid.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the URL's scheme and authority, without userinfo; a URL without "://"
 * hashes whole (it fails at delivery anyway) */
static uint64_t host_hash(const char *url)
{
    const char *a = strstr(url, "://"), *end, *at;

    if (!a)
        return util_hash(url, strlen(url), 1);
    a += 3;
    end = a + strcspn(a, "/?#");
    at = memchr(a, '@', (size_t)(end - a));
    if (at) {
        uint64_t h = util_hash(url, (size_t)(a - url), 1);
        return h ^ util_hash(at + 1, (size_t)(end - at - 1), 1);
    }
    return util_hash(url, (size_t)(end - url), 1);
}

static void request_free(struct ep_conf *e)
{
    size_t i;

    tpl_free(&e->url_tpl);
    tpl_free(&e->order_tpl);
    for (i = 0; i < e->nmaps; i++)
        tpl_map_free(&e->maps[i]);
    free(e->maps);
    free(e->shown_url);
    if (e->filter)
        filter_free(e->filter);
    free(e->filter);
}

/* The parsed form of the request keys (validated before). */
static int request_build(struct ep_conf *e)
{
    const struct ep_request *rq = &e->def.rq;
    char err[200];
    struct buf b = {0};
    size_t i;

    e->body = rq->body != EP_BODY_AUTO ? rq->body : rq->method == EP_GET ? EP_BODY_NONE : EP_BODY_JSON;
    if (tpl_parse(&e->url_tpl, e->def.url, (enum tpl_style)rq->macro_style, TPL_URL, err, sizeof err) < 0)
        return -1;
    if (rq->ordering_key &&
        tpl_parse(&e->order_tpl, rq->ordering_key, (enum tpl_style)rq->macro_style, TPL_TEXT, err, sizeof err) < 0)
        return -1;
    if (rq->filter &&
        (!(e->filter = calloc(1, sizeof *e->filter)) || filter_parse(e->filter, rq->filter, err, sizeof err) < 0)) {
        free(e->filter);
        e->filter = NULL;
        return -1;
    }
    if (rq->delay && util_parse_duration_ms(rq->delay, &e->delay_ms) < 0)
        return -1;
    if (rq->nmaps && !(e->maps = calloc(rq->nmaps, sizeof *e->maps)))
        return -1;
    for (i = 0; i < rq->nmaps; i++) {
        if (tpl_map_parse(&e->maps[i], rq->map_name[i], rq->map_spec[i], err, sizeof err) < 0)
            return -1;
        e->nmaps++;
    }
    if (rq->success_status) {
        if (outcome_ok_parse(rq->success_status, &e->ok, err, sizeof err) < 0)
            return -1;
        e->has_ok = 1;
    }
    if (e->url_tpl.nmacros == 0) {
        if (urlmask_url(e->def.url, rq->mask_params, &b) < 0)
            return -1;
        e->shown_url = b.p;
    }
    e->plain = e->url_tpl.nmacros == 0 && rq->method == EP_POST && e->body == EP_BODY_JSON && rq->sign == EP_SIGN_STANDARD;
    return 0;
}

/* signing keys do not outlive their use in freed heap memory (one per
 * secret of the definition, which must still be there) */
static void keys_free(struct ep_conf *e)
{
    if (e->keys)
        explicit_bzero(e->keys, e->def.nsecrets * sizeof *e->keys);
    free(e->keys);
}

struct ep_conf *ep_conf_new(int64_t id, const struct ep_def *def, const struct ep_settings *dflt)
{
    struct ep_conf *e = calloc(1, sizeof *e);
    char err[128];
    size_t i;

    if (!e)
        return NULL;
    e->refs = 1;
    e->id = id;
    if (ep_def_copy(&e->def, def) < 0)
        goto fail;
    e->eff = ep_settings_effective(&def->s, dflt);
    e->host_hash = host_hash(def->url);
    if (def->nsecrets && !(e->keys = calloc(def->nsecrets, sizeof *e->keys)))
        goto fail;
    for (i = 0; i < def->nsecrets; i++) {
        if (sign_key_decode(def->secrets[i], &e->keys[i], err, sizeof err) < 0)
            goto fail;
        e->nkeys++;
    }
    if (request_build(e) < 0)
        goto fail;
    return e;
fail:
    request_free(e);
    keys_free(e);
    ep_def_free(&e->def);
    free(e);
    return NULL;
}

struct ep_conf *ep_conf_ref(struct ep_conf *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
    return e;
}

void ep_conf_unref(struct ep_conf *e)
{
    if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    request_free(e);
    keys_free(e);
    ep_def_free(&e->def);
    free(e);
}

/* ---- JSON <-> definition ---- */

static int set_from_json_value(struct ep_def *d, const char *key, const cJSON *v, char *err,
                               size_t errlen)
{
    char num[64];

    if (cJSON_IsString(v))
        return ep_def_set(d, key, v->valuestring, err, errlen);
    if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof num, "%.17g", v->valuedouble);
        return ep_def_set(d, key, num, err, errlen);
    }
    if (cJSON_IsBool(v))
        return ep_def_set(d, key, cJSON_IsTrue(v) ? "yes" : "no", err, errlen);
    snprintf(err, errlen, "field '%s' has the wrong type", key);
    return -1;
}

int endpoint_def_from_json(const cJSON *body, struct ep_def *d, char *err, size_t errlen)
{
    const cJSON *it;
    char why[200];

    ep_def_init(d);
    cJSON_ArrayForEach(it, body) {
        const char *k = it->string;
        const char *key = k;
        if (strcmp(k, "op") == 0)
            continue;
        if (strcmp(k, "name") == 0) {
            if (!cJSON_IsString(it) || !ep_name_valid(it->valuestring)) {
                snprintf(err, errlen, "endpoint name must be 1-%d of [A-Za-z0-9._-]", ENDPOINT_NAME_MAX);
                goto fail;
            }
            util_strlcpy(d->name, it->valuestring, sizeof d->name);
            continue;
        }
        if (strcmp(k, "secrets") == 0)
            key = "secret";
        else if (strcmp(k, "headers") == 0)
            key = "header";
        if (cJSON_IsArray(it)) {
            const cJSON *el;
            struct buf joined = {0};
            if (strcmp(key, "event_types") == 0) {
                cJSON_ArrayForEach(el, it) {
                    if (!cJSON_IsString(el) || (joined.len && buf_puts(&joined, ",") < 0) ||
                        buf_puts(&joined, el->valuestring) < 0) {
                        buf_free(&joined);
                        snprintf(err, errlen, "field 'event_types' must be strings");
                        goto fail;
                    }
                }
                if (ep_def_set(d, key, joined.p ? joined.p : "", why, sizeof why) < 0) {
                    buf_free(&joined);
                    snprintf(err, errlen, "event_types: %s", why);
                    goto fail;
                }
                buf_free(&joined);
                continue;
            }
            if (strcmp(key, "secret") != 0 && strcmp(key, "header") != 0) {
                snprintf(err, errlen, "field '%s' must not be an array", k);
                goto fail;
            }
            cJSON_ArrayForEach(el, it) {
                if (!cJSON_IsString(el) || ep_def_set(d, key, el->valuestring, why, sizeof why) < 0) {
                    snprintf(err, errlen, "%s: %s", key, cJSON_IsString(el) ? why : "must be strings");
                    goto fail;
                }
            }
            continue;
        }
        if (set_from_json_value(d, key, it, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", k, why);
            goto fail;
        }
    }
    if (ep_def_validate(d, err, errlen) < 0)
        goto fail;
    if (d->rq.client_cert && tlsid_files_check(d->rq.client_cert, d->rq.client_key, err, errlen) < 0)
        goto fail;
    return 0;
fail:
    ep_def_free(d);
    return -1;
}

char *ep_json_strings(char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    char *s;
    size_t i;

    if (!a)
        return NULL;
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

/* a tree's copies of secrets do not outlive their use in freed memory */
static void wipe_strings(cJSON *a)
{
    cJSON *el;

    cJSON_ArrayForEach(el, a) {
        if (cJSON_IsString(el) && el->valuestring)
            explicit_bzero(el->valuestring, strlen(el->valuestring));
    }
}

/* tag + value as one element of a (the stored secrets array) */
static int add_tagged(cJSON *a, const char *tag, const char *value)
{
    struct buf t = {0};

    if (buf_puts(&t, tag) < 0 || buf_puts(&t, value) < 0) {
        buf_free(&t);
        return -1;
    }
    cJSON_AddItemToArray(a, cJSON_CreateString(t.p));
    explicit_bzero(t.p, t.len);
    buf_free(&t);
    return 0;
}

char *ep_json_secrets(const struct ep_def *d)
{
    cJSON *a = cJSON_CreateArray();
    char *s;
    size_t i;

    if (!a)
        return NULL;
    for (i = 0; i < d->nsecrets; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(d->secrets[i]));
    if ((d->token && add_tagged(a, EP_TOKEN_TAG, d->token) < 0) ||
        (d->proxy_auth && add_tagged(a, EP_PROXY_AUTH_TAG, d->proxy_auth) < 0)) {
        wipe_strings(a);
        cJSON_Delete(a);
        return NULL;
    }
    s = cJSON_PrintUnformatted(a);
    wipe_strings(a);
    cJSON_Delete(a);
    return s;
}

static void add_setting(void *ctx, const char *key, const char *val)
{
    cJSON_AddStringToObject((cJSON *)ctx, key, val);
}

char *ep_json_settings(const struct ep_settings *s)
{
    cJSON *o = cJSON_CreateObject();
    char *out;

    if (!o)
        return NULL;
    ep_settings_each(s, add_setting, o);
    out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

char *ep_json_overrides(const struct ep_def *d)
{
    cJSON *o = cJSON_CreateObject();
    char *out;

    if (!o)
        return NULL;
    ep_settings_each(&d->s, add_setting, o);
    ep_request_each(d, add_setting, o);
    out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

/* ---- the stored form ---- */

static int load_strings(struct ep_def *d, const char *key, const char *json)
{
    cJSON *a = cJSON_Parse(json ? json : "[]"), *el;
    char err[160];
    int rc = 0;

    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return -1;
    }
    cJSON_ArrayForEach(el, a) {
        const char *k = key, *v = cJSON_IsString(el) ? el->valuestring : NULL;
        if (v && strcmp(key, "secret") == 0 && strncmp(v, EP_TOKEN_TAG, strlen(EP_TOKEN_TAG)) == 0) {
            k = "token";
            v += strlen(EP_TOKEN_TAG);
        }
        if (v && strcmp(key, "secret") == 0 && strncmp(v, EP_PROXY_AUTH_TAG, strlen(EP_PROXY_AUTH_TAG)) == 0) {
            if (ep_def_set_proxy_auth(d, v + strlen(EP_PROXY_AUTH_TAG)) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        if (!v || ep_def_set(d, k, v, err, sizeof err) < 0) {
            rc = -1;
            break;
        }
    }
    wipe_strings(a);
    cJSON_Delete(a);
    return rc;
}

static int load_settings(struct ep_def *d, const char *json)
{
    cJSON *o = cJSON_Parse(json ? json : "{}"), *el;
    char err[160];
    int rc = 0;

    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return -1;
    }
    cJSON_ArrayForEach(el, o) {
        if (!cJSON_IsString(el) || ep_def_set(d, el->string, el->valuestring, err, sizeof err) < 0) {
            rc = -1;
            break;
        }
    }
    cJSON_Delete(o);
    return rc;
}

void ep_json_release(char *secrets_json, char *headers_json, char *settings_json)
{
    if (secrets_json)
        explicit_bzero(secrets_json, strlen(secrets_json));
    cJSON_free(secrets_json);
    cJSON_free(headers_json);
    cJSON_free(settings_json);
}

int ep_def_from_stored(struct ep_def *d, const char *name, const char *url, const char *secrets_json,
                       const char *headers_json, const char *event_types, const char *settings_json, int paused)
{
    char err[160];

    ep_def_init(d);
    if (!name || !url)
        return -1;
    util_strlcpy(d->name, name, sizeof d->name);
    d->paused = paused;
    d->paused_given = 1;
    if (ep_def_set(d, "url", url, err, sizeof err) < 0 || load_strings(d, "secret", secrets_json) < 0 ||
        load_strings(d, "header", headers_json) < 0 ||
        (event_types && ep_def_set(d, "event_types", event_types, err, sizeof err) < 0) ||
        load_settings(d, settings_json) < 0 || ep_def_validate(d, err, sizeof err) < 0) {
        ep_def_free(d);
        return -1;
    }
    return 0;
}
