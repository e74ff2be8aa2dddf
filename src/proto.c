/* proto.c - request parsing and validation, reply framing. Pure. */
#include "proto.h"
#include "msgsel.h"
#include "jscan.h"
#include "schedule.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fields: the members an op accepts besides "op", blank separated. A
 * member that is not listed is refused: a misspelt "event_id" silently
 * ignored would turn a client's retries into duplicate deliveries.
 * endpoint.put (NULL) is checked by the endpoint parser, which knows the
 * endpoint keys. */
static const struct {
    const char *name;
    enum proto_op op;
    int admin;
    const char *fields;
} ops[] = {
    {"ping", OP_PING, 0, ""},
    {"enqueue", OP_ENQUEUE, 0, "endpoint event_id event_type payload delay deliver_at"},
    {"get", OP_GET, 0, "id event_id endpoint"},
    {"stats", OP_STATS, 0, ""},
    {"endpoint.list", OP_ENDPOINT_LIST, 0, ""},
    {"endpoint.put", OP_ENDPOINT_PUT, 1, NULL},
    {"endpoint.delete", OP_ENDPOINT_DELETE, 1, "name"},
    {"requeue", OP_REQUEUE, 1,
     "id endpoint since statuses event_id type error_class until where limit after dry_run"},
    {"purge", OP_PURGE, 1, "endpoint since event_id type error_class until where limit after dry_run"},
    {"pause", OP_PAUSE, 1, "endpoint"},
    {"resume", OP_RESUME, 1, "endpoint"},
    {"dead_letters", OP_DEAD_LETTERS, 0, "hours"},
    {"slow", OP_SLOW, 0, "p95_ms"},
    {"metrics", OP_METRICS, 0, ""},
    {"attempts", OP_ATTEMPTS, 0, "id event_id endpoint"},
    {"report", OP_REPORT, 0, "hours"},
    {"messages", OP_MESSAGES, 0, "endpoint status event_id type error_class since until where limit after"},
    {"erase", OP_ERASE, 1, "id endpoint event_id type error_class since until where limit after dry_run"},
};

const char *proto_op_fields(enum proto_op op)
{
    size_t i;

    for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return ops[i].fields;
    return "";
}

const char *proto_op_name(enum proto_op op)
{
    size_t i;

    for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "none";
}

static int fail(struct proto_err *err, const char *code, const char *msg)
{
    err->code = code;
    snprintf(err->message, sizeof err->message, "%s", msg);
    return -1;
}

static const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at an opening quote; returns the position after the closing quote */
static const char *skip_string(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *e)
{
    int depth = 0;

    if (p >= e)
        return NULL;
    if (*p == '"')
        return skip_string(p, e);
    if (*p != '{' && *p != '[') {
        while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
               *p != '\n' && *p != '\r')
            p++;
        return p;
    }
    while (p < e) {
        if (*p == '"') {
            p = skip_string(p, e);
            if (!p)
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']') {
            if (--depth == 0)
                return p + 1;
        }
        p++;
    }
    return NULL;
}

/* Walk the top-level members of a JSON object text already known to be
 * valid: fn(ctx, raw name with quotes, its length, raw value, its length);
 * a non-zero return stops the walk and is returned. */
static int each_member(const char *json, size_t len,
                       int (*fn)(void *ctx, const char *k, size_t klen, const char *v, size_t vlen),
                       void *ctx)
{
    const char *p = json, *e = json + len, *k, *ke, *v, *ve;
    int rc;

    p = skip_ws(p, e);
    if (p >= e || *p != '{')
        return 0;
    p = skip_ws(p + 1, e);
    while (p < e && *p == '"') {
        k = p;
        ke = skip_string(p, e);
        if (!ke)
            return 0;
        p = skip_ws(ke, e);
        if (p >= e || *p != ':')
            return 0;
        v = skip_ws(p + 1, e);
        ve = skip_value(v, e);
        if (!ve)
            return 0;
        if ((rc = fn(ctx, k, (size_t)(ke - k), v, (size_t)(ve - v))) != 0)
            return rc;
        p = skip_ws(ve, e);
        if (p < e && *p == ',')
            p = skip_ws(p + 1, e);
        else
            break;
    }
    return 0;
}

struct find_ctx {
    const char *key;
    size_t klen;
    const char *start;
    size_t vlen;
};

static int find_fn(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
    struct find_ctx *f = arg;

    if (klen != f->klen + 2 || memcmp(k + 1, f->key, f->klen) != 0)
        return 0;
    f->start = v;
    f->vlen = vlen;
    return 1;
}

int proto_find_member(const char *json, size_t len, const char *key, const char **start,
                      size_t *vlen)
{
    struct find_ctx f = {key, strlen(key), NULL, 0};

    if (each_member(json, len, find_fn, &f) != 1)
        return -1;
    *start = f.start;
    *vlen = f.vlen;
    return 0;
}

/* FNV-1a: the names are short and few; a hash collision costs one memcmp */
static uint64_t name_hash(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037ULL;

    while (n--) {
        h ^= (unsigned char)*p++;
        h *= 1099511628211ULL;
    }
    return h;
}

int proto_first_repeat(const struct proto_name *v, size_t n)
{
    struct slot {
        uint64_t h;
        size_t i;   /* index + 1; 0 empty */
    } small[2 * PROTO_MAX_MEMBERS], *t = small;
    size_t cap = 2 * PROTO_MAX_MEMBERS, i, k;
    int rc = -1;

    while (cap < 2 * n)
        cap *= 2;
    if (cap > 2 * PROTO_MAX_MEMBERS && !(t = calloc(cap, sizeof *t)))
        return -2;
    if (t == small)
        memset(small, 0, sizeof small);
    for (i = 0; i < n && rc == -1; i++) {
        uint64_t h = name_hash(v[i].p, v[i].len);
        for (k = (size_t)h & (cap - 1);; k = (k + 1) & (cap - 1)) {
            const struct proto_name *o;
            if (!t[k].i) {
                t[k].h = h;
                t[k].i = i + 1;
                break;
            }
            o = &v[t[k].i - 1];
            if (t[k].h == h && o->len == v[i].len && memcmp(o->p, v[i].p, o->len) == 0) {
                rc = (int)i;
                break;
            }
        }
    }
    if (t != small)
        free(t);
    return rc;
}

/* Optional string member: 0 absent, 1 present (copied), -1 wrong type. */
static int get_str(const cJSON *o, const char *name, char **out, size_t max,
                   struct proto_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    char msg[160];

    if (!it || cJSON_IsNull(it))
        return 0;
    if (!cJSON_IsString(it)) {
        snprintf(msg, sizeof msg, "field '%s' must be a string", name);
        return fail(err, PERR_BAD_REQUEST, msg);
    }
    if (strlen(it->valuestring) == 0 || strlen(it->valuestring) > max) {
        snprintf(msg, sizeof msg, "field '%s' must be 1-%zu bytes", name, max);
        return fail(err, PERR_BAD_REQUEST, msg);
    }
    *out = strdup(it->valuestring);
    if (!*out)
        return fail(err, PERR_INTERNAL, "out of memory");
    return 1;
}

/* Optional non-negative integer member: 0 absent, 1 present, -1 bad. */
static int get_int(const cJSON *o, const char *name, int64_t *out, int64_t min, int64_t max,
                   struct proto_err *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    char msg[160];
    double d;

    if (!it || cJSON_IsNull(it))
        return 0;
    d = it->valuedouble;
    if (!cJSON_IsNumber(it) || d != floor(d) || d < (double)min || d > (double)max) {
        snprintf(msg, sizeof msg, "field '%s' must be an integer in %lld..%lld", name,
                 (long long)min, (long long)max);
        return fail(err, PERR_BAD_REQUEST, msg);
    }
    *out = (int64_t)d;
    return 1;
}

/* "statuses": one name or an array of them, of the statuses a requeue
 * may take rows from. */
static int get_statuses(const cJSON *o, unsigned *out, struct proto_err *err)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"failed", PROTO_STATUS_FAILED},
                 {"delivered", PROTO_STATUS_DELIVERED},
                 {"dead_letter", PROTO_STATUS_DEAD_LETTER}};
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "statuses"), *el;
    size_t i;

    *out = 0;
    if (!it || cJSON_IsNull(it))
        return 0;
    if (cJSON_IsString(it))
        el = it;
    else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) > 0)
        el = it->child;
    else
        return fail(err, PERR_BAD_REQUEST, "field 'statuses' must be one of, or an array of: failed, delivered, dead_letter");
    for (; el; el = el == it ? NULL : el->next) {
        for (i = 0; cJSON_IsString(el) && i < sizeof names / sizeof names[0]; i++)
            if (strcmp(el->valuestring, names[i].name) == 0)
                break;
        if (!cJSON_IsString(el) || i == sizeof names / sizeof names[0])
            return fail(err, PERR_BAD_REQUEST,
                        "field 'statuses' must be one of, or an array of: failed, delivered, dead_letter");
        *out |= names[i].bit;
    }
    return 0;
}

static int printable_id(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || *s == 0x7f)
            return 0;
    return 1;
}

/* raw, rawlen: the payload's text as written (the scan's) */
static int parse_enqueue(const char *raw, size_t rawlen, const cJSON *o,
                         const struct proto_limits *lim, struct proto_req *r,
                         struct proto_err *err)
{
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "payload");
    char msg[160];

    if (get_str(o, "endpoint", &r->endpoint, 64, err) < 0 ||
        get_str(o, "event_id", &r->event_id, PROTO_EVENT_ID_MAX, err) < 0 ||
        get_str(o, "event_type", &r->event_type, PROTO_EVENT_TYPE_MAX, err) < 0)
        return -1;
    if (!r->endpoint && !r->event_type)
        return fail(err, PERR_BAD_REQUEST, "enqueue needs 'endpoint' or 'event_type'");
    if (r->event_id && !printable_id(r->event_id))
        return fail(err, PERR_BAD_REQUEST, "field 'event_id' must be printable ASCII without blanks");
    if (r->event_type && !printable_id(r->event_type))
        return fail(err, PERR_BAD_REQUEST, "field 'event_type' must be printable ASCII without blanks");
    if (sched_members(o, &r->delay_ms, &r->deliver_at_ms, msg, sizeof msg) < 0)
        return fail(err, PERR_BAD_REQUEST, msg);
    if (!pl)
        return fail(err, PERR_BAD_REQUEST, "enqueue needs 'payload'");
    if (!cJSON_IsObject(pl) && !cJSON_IsArray(pl))
        return fail(err, PERR_BAD_REQUEST, "field 'payload' must be a JSON object or array");
    /* what is stored is the raw text of the member spelled "payload";
     * names with escapes are refused, so it is the member looked at */
    if (!raw || (raw[0] != '{' && raw[0] != '['))
        return fail(err, PERR_BAD_REQUEST, "field 'payload' must be a JSON object or array, its name written without escapes");
    if (rawlen > lim->max_payload) {
        snprintf(msg, sizeof msg, "payload is %zu bytes, limit %zu", rawlen, lim->max_payload);
        return fail(err, PERR_PAYLOAD_TOO_LARGE, msg);
    }
    r->payload = malloc(rawlen + 1);
    if (!r->payload)
        return fail(err, PERR_INTERNAL, "out of memory");
    memcpy(r->payload, raw, rawlen);
    r->payload[rawlen] = '\0';
    r->payload_len = rawlen;
    return 0;
}

/* Length of s shown in a message: at most 64 bytes, cut on a character
 * boundary (replies are JSON, hence UTF-8). */
static int clip64(const char *s)
{
    size_t n = strlen(s);

    if (n > 64) {
        n = 64;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    return (int)n;
}

/* Is name one of the blank-separated words of list? */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;

    if (n == 0)   /* strstr would find "" everywhere and never advance */
        return 0;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}

/* Every top-level member once. A repeated member is as ambiguous as an
 * unknown one: which of two "endpoint" values did the client mean? */
static int check_repeats(const struct jscan_member *m, size_t n, struct proto_err *err)
{
    struct proto_name names[PROTO_MAX_MEMBERS];
    char msg[sizeof err->message];
    size_t i;
    int k;

    for (i = 0; i < n; i++) {
        names[i].p = m[i].name;
        names[i].len = m[i].name_len;
    }
    k = proto_first_repeat(names, n);
    if (k == -2)
        return fail(err, PERR_INTERNAL, "out of memory");
    if (k >= 0) {
        int shown = (int)(names[k].len < 64 ? names[k].len : 64);
        while (shown > 0 && shown < (int)names[k].len && ((unsigned char)names[k].p[shown] & 0xc0) == 0x80)
            shown--;
        snprintf(msg, sizeof msg, "field '%.*s' appears more than once", shown, names[k].p);
        return fail(err, PERR_BAD_REQUEST, msg);
    }
    return 0;
}

/* The request as a cJSON object of its top-level members, but for the
 * payload: what cJSON would build of it (one node per value, a slow path
 * per escape) costs the event loop up to 150 ms for a line of max_line
 * bytes, and the payload's bytes are kept as written anyway. The scan has
 * checked its syntax; it stands here as an empty object or array (or
 * false: not one of them). */
static cJSON *members_object(const struct jscan_member *m, size_t n, const struct jscan_result *res,
                             struct proto_err *err)
{
    cJSON *o = cJSON_CreateObject();
    char small[128], *name;

    if (!o) {
        fail(err, PERR_INTERNAL, "out of memory");
        return NULL;
    }
    size_t i;

    for (i = 0; o && i < n; i++) {
        cJSON *v;
        if (m[i].value == res->skipped)
            v = m[i].value[0] == '{' ? cJSON_CreateObject() : m[i].value[0] == '[' ? cJSON_CreateArray()
                                                                                   : cJSON_CreateFalse();
        else
            v = cJSON_ParseWithLength(m[i].value, m[i].value_len);
        name = m[i].name_len < sizeof small ? small : malloc(m[i].name_len + 1);
        if (!v || !name) {
            /* the scan is stricter than cJSON: only memory can fail here */
            fail(err, PERR_INTERNAL, "out of memory");
            cJSON_Delete(v);
            cJSON_Delete(o);
            o = NULL;
        } else {
            memcpy(name, m[i].name, m[i].name_len);
            name[m[i].name_len] = '\0';
            if (!cJSON_AddItemToObject(o, name, v)) {
                fail(err, PERR_INTERNAL, "out of memory");
                cJSON_Delete(v);
                cJSON_Delete(o);
                o = NULL;
            }
        }
        if (name && name != small)
            free(name);
    }
    return o;
}

/* Only the members the op lists (fields NULL: checked elsewhere). */
static int check_known(const cJSON *o, const char *opname, const char *fields, struct proto_err *err)
{
    const cJSON *it;
    char msg[sizeof err->message];

    for (it = o->child; fields && it; it = it->next)
        if (strcmp(it->string, "op") != 0 && !listed(fields, it->string)) {
            snprintf(msg, sizeof msg, "unknown field '%.*s' for op '%s' (accepted: %s)", clip64(it->string),
                     it->string, opname, *fields ? fields : "none");
            return fail(err, PERR_BAD_REQUEST, msg);
        }
    return 0;
}

int proto_parse(const char *line, size_t len, const struct proto_limits *lim,
                struct proto_req *r, struct proto_err *err)
{
    struct jscan_member m[PROTO_MAX_MEMBERS];
    struct jscan_result res;
    char why[sizeof err->message];
    cJSON *o = NULL;
    const cJSON *opj;
    size_t i;
    int rc = -1, sc;

    memset(r, 0, sizeof *r);
    err->code = NULL;
    err->message[0] = '\0';
    if (memchr(line, '\0', len))
        return fail(err, PERR_BAD_JSON, "request contains a NUL byte");
    if (!util_utf8_valid(line, len))
        return fail(err, PERR_BAD_JSON, "request is not valid UTF-8");
    /* Everything up to the cJSON values is one pass over the line and
     * then work bounded by the limits below, before the op or the
     * caller's rights are known: a line may cost the event loop no more
     * than that, whatever it holds. */
    sc = jscan(line, len, "payload", m, PROTO_MAX_MEMBERS, &res);
    if (sc == -1)
        return fail(err, PERR_BAD_JSON, "malformed JSON");
    if (sc == -2)
        return fail(err, PERR_BAD_JSON, "trailing data after the JSON object");
    if (!res.is_object)
        return fail(err, PERR_BAD_REQUEST, "request must be a JSON object");
    if (res.n_members > PROTO_MAX_MEMBERS) {
        snprintf(why, sizeof why, "request has %zu members, more than the limit of %d", res.n_members,
                 PROTO_MAX_MEMBERS);
        return fail(err, PERR_BAD_REQUEST, why);
    }
    for (i = 0; i < res.n_members; i++)
        if (m[i].name_escaped)
            /* cJSON decodes escapes in names and the raw payload lookup
             * does not: two views of one request must never disagree */
            return fail(err, PERR_BAD_REQUEST, "member names must be written without escapes");
    if (check_repeats(m, res.n_members, err) < 0)
        return -1;
    if (res.values > PROTO_MAX_VALUES) {
        snprintf(why, sizeof why, "request has %zu values outside the payload, more than the limit of %d",
                 res.values, PROTO_MAX_VALUES);
        return fail(err, PERR_BAD_REQUEST, why);
    }
    if (res.escapes > PROTO_MAX_ESCAPES) {
        snprintf(why, sizeof why, "request has %zu escapes outside the payload, more than the limit of %d",
                 res.escapes, PROTO_MAX_ESCAPES);
        return fail(err, PERR_BAD_REQUEST, why);
    }
    if (!(o = members_object(m, res.n_members, &res, err)))
        return -1;
    opj = cJSON_GetObjectItemCaseSensitive(o, "op");
    if (!cJSON_IsString(opj)) {
        fail(err, PERR_BAD_REQUEST, "field 'op' (string) is required");
        goto out;
    }
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(opj->valuestring, ops[i].name) == 0)
            break;
    if (i == sizeof ops / sizeof ops[0]) {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown op '%.*s'", clip64(opj->valuestring), opj->valuestring);
        fail(err, PERR_UNKNOWN_OP, msg);
        goto out;
    }
    r->op = ops[i].op;
    r->admin_only = ops[i].admin;
    if (check_known(o, ops[i].name, ops[i].fields, err) < 0)
        goto out;
    /* cJSON cuts a C string at a \u0000 escape: "evt\u0000a" and
     * "evt\u0000b" would be one event id, "endpoint.list\u0000x" the op
     * endpoint.list, a URL would lose its tail. Only the payload keeps
     * its bytes as written, so only there is the escape harmless. */
    if (res.nul_escape) {
        fail(err, PERR_BAD_REQUEST, "\\u0000 is refused outside the payload (it would cut a field short)");
        goto out;
    }

    switch (r->op) {
    case OP_ENQUEUE:
        if (parse_enqueue(res.skipped, res.skipped_len, o, lim, r, err) < 0)
            goto out;
        break;
    case OP_GET:
    case OP_ATTEMPTS:
        if (get_int(o, "id", &r->id, 1, INT64_MAX / 2, err) < 0)
            goto out;
        if (!r->id == !cJSON_GetObjectItemCaseSensitive(o, "event_id")) {
            fail(err, PERR_BAD_REQUEST, r->op == OP_GET ? "get needs 'id' (positive integer) or 'event_id'"
                                                        : "attempts needs 'id' (positive integer) or 'event_id'");
            goto out;
        }
        if (r->id && cJSON_GetObjectItemCaseSensitive(o, "endpoint")) {
            fail(err, PERR_BAD_REQUEST, "'endpoint' goes with 'event_id', not with 'id'");
            goto out;
        }
        break;
    case OP_MESSAGES:
        break;
    case OP_ERASE:
        if (get_str(o, "endpoint", &r->endpoint, 64, err) < 0)
            goto out;
        /* never everything by accident: a message, an event, or a window */
        if (!cJSON_GetObjectItemCaseSensitive(o, "id") && !cJSON_GetObjectItemCaseSensitive(o, "event_id") &&
            !cJSON_GetObjectItemCaseSensitive(o, "since")) {
            fail(err, PERR_BAD_REQUEST, "erase needs 'id', 'event_id', or 'since' (with 'endpoint', 'until', "
                                        "'where' to narrow it)");
            goto out;
        }
        break;
    case OP_REQUEUE: {
        int hid = get_int(o, "id", &r->id, 1, INT64_MAX / 2, err);
        int hep;
        if (hid < 0)
            goto out;
        hep = get_str(o, "endpoint", &r->endpoint, 64, err);
        if (hep < 0 || get_int(o, "since", &r->since_ms, 0, INT64_MAX / 2, err) < 0)
            goto out;
        if ((hid > 0) == (hep > 0 || cJSON_GetObjectItemCaseSensitive(o, "event_id") != NULL)) {
            fail(err, PERR_BAD_REQUEST, "requeue needs 'id', or 'endpoint' and/or 'event_id' (not both kinds)");
            goto out;
        }
        if (get_statuses(o, &r->statuses, err) < 0)
            goto out;
        break;
    }
    case OP_PURGE:
        if (get_str(o, "endpoint", &r->endpoint, 64, err) < 0 ||
            get_int(o, "since", &r->since_ms, 0, INT64_MAX / 2, err) < 0)
            goto out;
        break;
    case OP_PAUSE:
    case OP_RESUME:
    case OP_ENDPOINT_DELETE: {
        int h = get_str(o, r->op == OP_ENDPOINT_DELETE ? "name" : "endpoint", &r->endpoint, 64, err);
        if (h < 0)
            goto out;
        if (h == 0) {
            fail(err, PERR_BAD_REQUEST,
                 r->op == OP_ENDPOINT_DELETE ? "field 'name' is required" : "field 'endpoint' is required");
            goto out;
        }
        break;
    }
    case OP_ENDPOINT_PUT:
        if (get_str(o, "name", &r->endpoint, 64, err) <= 0) {
            if (!r->endpoint && err->code == NULL)
                fail(err, PERR_BAD_REQUEST, "field 'name' is required");
            goto out;
        }
        r->body = o;
        o = NULL; /* ownership moves to the request */
        break;
    case OP_DEAD_LETTERS:
    case OP_REPORT:
        r->hours = 24;
        if (get_int(o, "hours", &r->hours, 1, 24 * 3650, err) < 0)
            goto out;
        break;
    case OP_SLOW:
        if (get_int(o, "p95_ms", &r->p95_ms, 0, INT64_MAX / 2, err) < 0)
            goto out;
        break;
    default:
        break;
    }
    if (r->op == OP_GET || r->op == OP_ATTEMPTS || r->op == OP_MESSAGES || r->op == OP_REQUEUE ||
        r->op == OP_PURGE || r->op == OP_ERASE) {
        if (!(r->sel = calloc(1, sizeof *r->sel))) {
            fail(err, PERR_INTERNAL, "out of memory");
            goto out;
        }
        if (msgsel_parse(o ? o : r->body, r->sel, err->message, sizeof err->message) < 0) {
            err->code = PERR_BAD_REQUEST;
            goto out;
        }
        /* a condition on the payload reads it: an admin's question */
        if (r->sel->nwhere)
            r->admin_only = 1;
    }
    rc = 0;
out:
    cJSON_Delete(o);
    if (rc < 0)
        proto_req_free(r);
    return rc;
}

void proto_req_free(struct proto_req *r)
{
    free(r->endpoint);
    free(r->event_id);
    free(r->event_type);
    free(r->payload);
    cJSON_Delete(r->body);
    msgsel_free(r->sel);
    free(r->sel);
    memset(r, 0, sizeof *r);
}

int proto_reply_error(struct buf *out, const char *code, const char *message)
{
    char safe[512];
    size_t n = strlen(message), i;

    /* a message cut by a fixed-size buffer can end inside a character;
     * replies must stay valid UTF-8 */
    if (n >= sizeof safe)
        n = sizeof safe - 1;
    memcpy(safe, message, n);
    safe[n] = '\0';
    for (i = 0; i < 3 && n > 0 && !util_utf8_valid(safe, n); i++)
        safe[--n] = '\0';
    if (!util_utf8_valid(safe, n))
        for (i = 0; i < n; i++)
            if ((unsigned char)safe[i] >= 0x80)
                safe[i] = '?';
    message = safe;
    if (buf_puts(out, "{\"ok\":false,\"error\":{\"code\":") < 0 || buf_json_str(out, code) < 0 ||
        buf_puts(out, ",\"message\":") < 0 || buf_json_str(out, message) < 0 ||
        buf_puts(out, "}}\n") < 0)
        return -1;
    return 0;
}

int proto_reply_begin(struct buf *out)
{
    return buf_puts(out, "{\"ok\":true");
}

int proto_reply_end(struct buf *out)
{
    return buf_puts(out, "}\n");
}
