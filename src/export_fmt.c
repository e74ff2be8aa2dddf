/* export_fmt.c - the NDJSON lines of hookd export / hookd import (see
 * export_fmt.h). cJSON writes and reads them: a payload is one JSON
 * string, and cJSON gives back exactly the bytes it was given (bytes
 * above 0x7f verbatim, control characters as \u escapes). */
#include "export_fmt.h"
#include "breaker.h"
#include "endpoint.h"
#include "proto.h"
#include "seal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the object as one line, newline included; takes o */
static int emit(cJSON *o, struct buf *out)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    int rc = s && buf_puts(out, s) == 0 && buf_puts(out, "\n") == 0 ? 0 : -1;

    if (s) {
        explicit_bzero(s, strlen(s));   /* an endpoint line holds its secrets */
        cJSON_free(s);
    }
    cJSON_Delete(o);
    return rc;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* 0 (never, none) as null: the stored columns are NULL then */
static void add_ms_or_null(cJSON *o, const char *k, int64_t v)
{
    if (v > 0)
        cJSON_AddNumberToObject(o, k, (double)v);
    else
        cJSON_AddNullToObject(o, k);
}

int xf_header(int64_t now, const char *version, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "kind", "hookd-export");
    cJSON_AddNumberToObject(o, "version", XF_VERSION);
    cJSON_AddNumberToObject(o, "exported_at", (double)now);
    cJSON_AddStringToObject(o, "hookd", version);
    return emit(o, out);
}

/* a stored array, sealed when there is a key; 0 / -1 */
static int seal_in_place(const struct seal_key *key, char **json, int headers)
{
    char *sealed, why[256];

    if (!key)
        return 0;
    if (seal_json(key, *json, headers, &sealed, why, sizeof why) < 0)
        return -1;
    seal_free(*json);
    *json = sealed;
    return 0;
}

int xf_endpoint(const struct ep_def *d, int from_config, struct buf *out)
{
    return xf_endpoint_sealed(d, from_config, NULL, out);
}

int xf_endpoint_sealed(const struct ep_def *d, int from_config, const struct seal_key *key, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();
    char *secrets = ep_json_secrets(d), *headers = ep_json_strings(d->headers, d->nheaders);
    char *settings = ep_json_overrides(d);
    int rc = -1;

    if (!o || !secrets || !headers || !settings || seal_in_place(key, &secrets, 0) < 0 ||
        seal_in_place(key, &headers, 1) < 0)
        goto out;
    cJSON_AddStringToObject(o, "kind", "endpoint");
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "url", d->url);
    cJSON_AddItemToObject(o, "secrets", cJSON_Parse(secrets));
    cJSON_AddItemToObject(o, "headers", cJSON_Parse(headers));
    add_str_or_null(o, "event_types", d->event_types);
    cJSON_AddItemToObject(o, "settings", cJSON_Parse(settings));
    cJSON_AddBoolToObject(o, "paused", d->paused);
    cJSON_AddBoolToObject(o, "from_config", from_config);
    rc = emit(o, out);
    o = NULL;
out:
    cJSON_Delete(o);
    ep_json_release(secrets, headers, settings);
    return rc;
}

int xf_health(const char *endpoint, const struct store_health *h, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "kind", "health");
    cJSON_AddStringToObject(o, "endpoint", endpoint);
    cJSON_AddStringToObject(o, "state", breaker_state_name((enum breaker_state)h->state));
    cJSON_AddNumberToObject(o, "consecutive_failures", (double)h->consecutive_failures);
    cJSON_AddNumberToObject(o, "failure_threshold", (double)h->failure_threshold);
    add_ms_or_null(o, "last_failure_at", h->last_failure_at);
    add_ms_or_null(o, "last_success_at", h->last_success_at);
    add_ms_or_null(o, "opened_at", h->opened_at);
    cJSON_AddNumberToObject(o, "cooldown_ms", (double)h->cooldown_ms);
    add_ms_or_null(o, "slow_since", h->slow_since);
    add_ms_or_null(o, "failing_since", h->failing_since);
    return emit(o, out);
}

int xf_message(const char *endpoint, const struct store_row *r, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "kind", "message");
    cJSON_AddStringToObject(o, "endpoint", endpoint);
    cJSON_AddStringToObject(o, "event_id", r->event_id);
    add_str_or_null(o, "event_type", r->event_type);
    /* a stored payload is NUL-terminated text of payload_len bytes */
    cJSON_AddStringToObject(o, "payload", r->payload);
    cJSON_AddStringToObject(o, "status", msg_status_name(r->status));
    cJSON_AddNumberToObject(o, "attempt_count", r->attempt_count);
    cJSON_AddNumberToObject(o, "max_attempts", r->max_attempts);
    cJSON_AddNumberToObject(o, "created_at", (double)r->created_at);
    cJSON_AddNumberToObject(o, "next_attempt_at", (double)r->next_attempt_at);
    add_str_or_null(o, "last_error", r->last_error);
    add_str_or_null(o, "last_error_class", r->last_error_class);
    add_ms_or_null(o, "last_status_code", r->last_status_code);
    if (r->last_response_ms >= 0)
        cJSON_AddNumberToObject(o, "last_response_ms", (double)r->last_response_ms);
    else
        cJSON_AddNullToObject(o, "last_response_ms");
    add_str_or_null(o, "ordering_key", r->ordering_key);
    /* the row's due time is this time on the wall clock (a clock step
     * leaves it): import keeps that, an older export has none */
    add_ms_or_null(o, "deliver_at", r->deliver_at);
    return emit(o, out);
}

int xf_end(int64_t n_endpoints, int64_t n_messages, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "kind", "end");
    cJSON_AddNumberToObject(o, "endpoints", (double)n_endpoints);
    cJSON_AddNumberToObject(o, "messages", (double)n_messages);
    return emit(o, out);
}

/* ---- reading ---- */

/* field readers: 0, or -1 naming the field in err */
static int get_str(const cJSON *o, const char *k, int nullable, const char **v, char *err, size_t errlen)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

    *v = NULL;
    if (cJSON_IsString(x)) {
        *v = x->valuestring;
        return 0;
    }
    if (nullable && (!x || cJSON_IsNull(x)))
        return 0;
    snprintf(err, errlen, "\"%s\" must be a string%s", k, nullable ? " or null" : "");
    return -1;
}

static int get_int(const cJSON *o, const char *k, int nullable, int64_t min, int64_t *v, char *err, size_t errlen)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

    *v = 0;
    if (nullable && (!x || cJSON_IsNull(x)))
        return 0;
    /* the range first: casting a double outside int64's is undefined (the
     * fuzzer's first find); NaN fails it too */
    if (!cJSON_IsNumber(x) || !(x->valuedouble >= (double)min && x->valuedouble <= 9e15) ||
        x->valuedouble != (double)(int64_t)x->valuedouble) {
        snprintf(err, errlen, "\"%s\" must be a whole number >= %lld%s", k, (long long)min,
                 nullable ? " or null" : "");
        return -1;
    }
    *v = (int64_t)x->valuedouble;
    return 0;
}

static int parse_endpoint(const cJSON *o, const struct seal_key *key, struct xf_item *it, char *err, size_t errlen)
{
    static const struct seal_key nokey = {.why = "the export holds sealed secrets and no key was given"};
    char *psec = NULL, *phdr = NULL, why[256];
    const char *name, *url, *types;
    const cJSON *paused = cJSON_GetObjectItemCaseSensitive(o, "paused"),
                *cfg = cJSON_GetObjectItemCaseSensitive(o, "from_config");
    char *secrets = NULL, *headers = NULL, *settings = NULL;
    int rc = -1;

    if (get_str(o, "name", 0, &name, err, errlen) < 0 || get_str(o, "url", 0, &url, err, errlen) < 0 ||
        get_str(o, "event_types", 1, &types, err, errlen) < 0)
        return -1;
    if (!ep_name_valid(name)) {
        snprintf(err, errlen, "\"name\" is not a valid endpoint name");
        return -1;
    }
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "secrets")) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "headers")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "settings")) || !cJSON_IsBool(paused) ||
        !cJSON_IsBool(cfg)) {
        snprintf(err, errlen, "endpoint %s: secrets and headers must be arrays, settings an object, paused and "
                 "from_config true or false", name);
        return -1;
    }
    secrets = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "secrets"));
    headers = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "headers"));
    settings = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "settings"));
    if (!secrets || !headers || !settings)
        snprintf(err, errlen, "out of memory");
    else if (seal_json_open(key ? key : &nokey, secrets, 0, &psec, NULL, why, sizeof why) < 0 ||
             seal_json_open(key ? key : &nokey, headers, 1, &phdr, NULL, why, sizeof why) < 0)
        snprintf(err, errlen, "endpoint %s: secrets: %s", name, why);
    else if (ep_def_from_stored(&it->def, name, url, psec, phdr, types, settings, cJSON_IsTrue(paused)) < 0)
        snprintf(err, errlen, "endpoint %s: its definition is invalid (url, secrets, headers or settings)", name);
    else
        rc = 0;
    it->from_config = cJSON_IsTrue(cfg);
    seal_free(psec);
    seal_free(phdr);
    ep_json_release(secrets, headers, settings);
    return rc;
}

static int parse_health(const cJSON *o, struct xf_item *it, char *err, size_t errlen)
{
    struct store_health *h = &it->h;
    const char *state;
    enum breaker_state bs;

    if (get_str(o, "endpoint", 0, &it->endpoint, err, errlen) < 0 || get_str(o, "state", 0, &state, err, errlen) < 0)
        return -1;
    if (breaker_state_parse(state, &bs) < 0) {
        snprintf(err, errlen, "\"state\" must be closed, open or half_open");
        return -1;
    }
    h->state = (int)bs;
    return get_int(o, "consecutive_failures", 0, 0, &h->consecutive_failures, err, errlen) < 0 ||
                   get_int(o, "failure_threshold", 0, 1, &h->failure_threshold, err, errlen) < 0 ||
                   get_int(o, "last_failure_at", 1, 0, &h->last_failure_at, err, errlen) < 0 ||
                   get_int(o, "last_success_at", 1, 0, &h->last_success_at, err, errlen) < 0 ||
                   get_int(o, "opened_at", 1, 0, &h->opened_at, err, errlen) < 0 ||
                   get_int(o, "cooldown_ms", 0, 0, &h->cooldown_ms, err, errlen) < 0 ||
                   get_int(o, "slow_since", 1, 0, &h->slow_since, err, errlen) < 0 ||
                   get_int(o, "failing_since", 1, 0, &h->failing_since, err, errlen) < 0
               ? -1
               : 0;
}

static int parse_message(const cJSON *o, struct xf_item *it, char *err, size_t errlen)
{
    struct store_row *r = &it->row;
    const char *status;
    int64_t att, max, code;

    if (get_str(o, "endpoint", 0, &it->endpoint, err, errlen) < 0 ||
        get_str(o, "event_id", 0, &r->event_id, err, errlen) < 0 ||
        get_str(o, "event_type", 1, &r->event_type, err, errlen) < 0 ||
        get_str(o, "payload", 0, &r->payload, err, errlen) < 0 || get_str(o, "status", 0, &status, err, errlen) < 0 ||
        get_int(o, "attempt_count", 0, 0, &att, err, errlen) < 0 ||
        get_int(o, "max_attempts", 0, 1, &max, err, errlen) < 0 ||
        get_int(o, "created_at", 0, 0, &r->created_at, err, errlen) < 0 ||
        get_int(o, "next_attempt_at", 0, 0, &r->next_attempt_at, err, errlen) < 0 ||
        get_str(o, "last_error", 1, &r->last_error, err, errlen) < 0 ||
        get_str(o, "last_error_class", 1, &r->last_error_class, err, errlen) < 0 ||
        get_int(o, "last_status_code", 1, 0, &code, err, errlen) < 0 ||
        get_int(o, "last_response_ms", 1, 0, &r->last_response_ms, err, errlen) < 0 ||
        get_str(o, "ordering_key", 1, &r->ordering_key, err, errlen) < 0 ||
        get_int(o, "deliver_at", 1, 1, &r->deliver_at, err, errlen) < 0)
        return -1;
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "last_response_ms")))
        r->last_response_ms = -1;
    if (msg_status_parse(status, &r->status) < 0 ||
        (r->status != MSG_PENDING && r->status != MSG_FAILED && r->status != MSG_DEAD_LETTER)) {
        snprintf(err, errlen, "\"status\" must be pending, failed or dead_letter");
        return -1;
    }
    if (!*r->event_id || strlen(r->event_id) > PROTO_EVENT_ID_MAX ||
        (r->event_type && strlen(r->event_type) > PROTO_EVENT_TYPE_MAX) || att > 1000000 || max > 1000000 || code > 999) {
        snprintf(err, errlen, "message: event_id empty, event_id or event_type too long, or a count out of range");
        return -1;
    }
    r->attempt_count = (int)att;
    r->max_attempts = (int)max;
    r->last_status_code = (int)code;
    r->payload_len = strlen(r->payload);
    return 0;
}

int xf_parse(const char *line, struct xf_item *it, char *err, size_t errlen)
{
    return xf_parse_sealed(line, NULL, it, err, errlen);
}

int xf_parse_sealed(const char *line, const struct seal_key *key, struct xf_item *it, char *err, size_t errlen)
{
    static const char *const kinds[] = {"hookd-export", "endpoint", "health", "message", "end"};
    cJSON *o = cJSON_Parse(line);
    const char *kind;
    int64_t v;
    size_t k;

    memset(it, 0, sizeof *it);
    ep_def_init(&it->def);
    it->kind = XF_UNKNOWN;
    it->json = o;
    if (!cJSON_IsObject(o)) {
        snprintf(err, errlen, "not a JSON object");
        return -1;
    }
    if (get_str(o, "kind", 0, &kind, err, errlen) < 0)
        return -1;
    for (k = 0; k < sizeof kinds / sizeof kinds[0] && strcmp(kinds[k], kind) != 0; k++)
        ;
    if (k == sizeof kinds / sizeof kinds[0]) {
        snprintf(err, errlen, "unknown kind \"%.32s\"", kind);
        return -1;
    }
    it->kind = (enum xf_kind)k;
    switch (it->kind) {
    case XF_HEADER:
        if (get_int(o, "version", 0, 1, &v, err, errlen) < 0)
            return -1;
        it->version = (int)v;
        if (v != XF_VERSION) {
            snprintf(err, errlen, "export format version %lld; this hookd reads version %d", (long long)v,
                     XF_VERSION);
            return -1;
        }
        return 0;
    case XF_ENDPOINT:
        return parse_endpoint(o, key, it, err, errlen);
    case XF_HEALTH:
        return parse_health(o, it, err, errlen);
    case XF_MESSAGE:
        return parse_message(o, it, err, errlen);
    case XF_END:
        return get_int(o, "endpoints", 0, 0, &it->n_endpoints, err, errlen) < 0 ||
                       get_int(o, "messages", 0, 0, &it->n_messages, err, errlen) < 0
                   ? -1
                   : 0;
    case XF_UNKNOWN:
        break;
    }
    return -1;
}

void xf_item_free(struct xf_item *it)
{
    ep_def_free(&it->def);
    cJSON_Delete(it->json);
    it->json = NULL;
}
