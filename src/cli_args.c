/* cli_args.c - the command line's options, payload loading and the
 * request each client command sends. */
#include "cli_args.h"
#include "jscan.h"
#include "cli.h"
#include "msgsel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct optdef {
    const char *lng;
    char shrt;
    int has_arg;
} optdefs[O__COUNT] = {
    [O_HELP] = {"help", 'h', 0},
    [O_CONFIG] = {"config", 'c', 1},
    [O_SOCKET] = {"socket", 's', 1},
    [O_JSON] = {"json", 0, 0},
    [O_TIMEOUT] = {"timeout", 0, 1},
    [O_QUIET] = {"quiet", 'q', 0},
    [O_ENDPOINT] = {"endpoint", 'e', 1},
    [O_TYPE] = {"type", 't', 1},
    [O_EVENT_ID] = {"event-id", 0, 1},
    [O_DATA] = {"data", 'd', 1},
    [O_DELAY] = {"delay", 0, 1},
    [O_DELIVER_AT] = {"deliver-at", 0, 1},
    [O_FILE] = {"file", 'f', 1},
    [O_URL] = {"url", 0, 1},
    [O_SECRET] = {"secret", 0, 1},
    [O_EVENT_TYPES] = {"event-types", 0, 1},
    [O_HEADER] = {"header", 'H', 1},
    [O_SET] = {"set", 0, 1},
    [O_SINCE] = {"since", 0, 1},
    [O_HOURS] = {"hours", 0, 1},
    [O_P95] = {"p95-ms", 0, 1},
    [O_STATUS] = {"status", 0, 1},
    [O_ONCE] = {"once", 0, 0},
    [O_SORT] = {"sort", 0, 1},
    [O_HTML] = {"html", 0, 1},
    [O_WHERE] = {"where", 0, 1},
    [O_UNTIL] = {"until", 0, 1},
    [O_LIMIT] = {"limit", 0, 1},
    [O_AFTER] = {"after", 0, 1},
    [O_NDJSON] = {"ndjson", 0, 0},
    [O_DRY_RUN] = {"dry-run", 0, 0},
    [O_ERROR_CLASS] = {"error-class", 0, 1},
};

/* ---------- argument parsing ---------- */

static int set_opt(struct args *a, enum opt_id id, const char *v, char *err, size_t errlen)
{
    int r = id == O_SECRET ? R_SECRET : id == O_HEADER ? R_HEADER : id == O_SET ? R_SET : id == O_WHERE ? R_WHERE : -1;

    a->seen |= OB(id);
    if (r < 0) {
        a->val[id] = v;
        return 0;
    }
    if (a->nrep[r] >= MAX_REPEAT) {
        snprintf(err, errlen, "too many --%s options (max %d)", optdefs[id].lng, MAX_REPEAT);
        return -1;
    }
    a->rep[r][a->nrep[r]++] = v;
    return 0;
}

int cli_parse_args(const struct cmd *c, int argc, char **argv, struct args *a, char *err,
                      size_t errlen)
{
    int i, only_pos = 0;

    memset(a, 0, sizeof *a);
    for (i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        size_t nlen = 0;
        int id = -1, k;

        if (only_pos || s[0] != '-' || s[1] == '\0') {
            if (a->npos >= c->max_pos) {
                snprintf(err, errlen, "unexpected argument '%s'", s);
                return -1;
            }
            a->pos[a->npos++] = s;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (s[1] == '-') {
            const char *eq = strchr(s + 2, '=');
            nlen = eq ? (size_t)(eq - (s + 2)) : strlen(s + 2);
            for (k = 0; k < O__COUNT; k++)
                if (strlen(optdefs[k].lng) == nlen && memcmp(optdefs[k].lng, s + 2, nlen) == 0)
                    id = k;
            if (eq)
                v = eq + 1;
        } else if (s[2] == '\0') {
            for (k = 0; k < O__COUNT; k++)
                if (optdefs[k].shrt == s[1])
                    id = k;
        }
        if (id < 0 || (id != O_HELP && !(c->opts & OB(id)))) {
            snprintf(err, errlen, "unknown option '%s'", s);
            return -1;
        }
        if (id == O_HELP)
            return 1;
        if (optdefs[id].has_arg && !v) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option '%s' needs a value", s);
                return -1;
            }
            v = argv[++i];
        } else if (!optdefs[id].has_arg && v) {
            snprintf(err, errlen, "option '--%s' takes no value", optdefs[id].lng);
            return -1;
        }
        if (set_opt(a, (enum opt_id)id, v ? v : "", err, errlen) < 0)
            return -1;
    }
    if (a->npos < c->min_pos) {
        snprintf(err, errlen, "missing argument");
        return -1;
    }
    return 0;
}

static int parse_pos_int(const char *s, const char *what, int64_t min, int64_t max, int64_t *out,
                         char *err, size_t errlen)
{
    if (util_parse_int(s, out) < 0 || *out < min || *out > max) {
        snprintf(err, errlen, "%s must be an integer in %lld..%lld, not '%s'", what, (long long)min,
                 (long long)max, s);
        return -1;
    }
    return 0;
}

int cli_parse_since(const char *s, int64_t now_ms, int64_t *out)
{
    int64_t v;

    if (util_parse_int(s, &v) == 0) {
        if (v < 0)
            return -1;
        *out = v;
        return 0;
    }
    if (util_parse_duration_ms(s, &v) < 0 || v < 0)
        return -1;
    *out = v >= now_ms ? 0 : now_ms - v;
    return 0;
}

/* ---------- payloads ---------- */

int cli_payload_normalise(const char *text, size_t len, struct buf *out, char *err, size_t errlen)
{
    const char *p = text, *e = text + len, *end = NULL;
    cJSON *j = NULL;
    size_t start = out->len;
    int in_str = 0, rc = -1;

    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        e--;
    if (p == e) {
        snprintf(err, errlen, "payload is empty");
        return -1;
    }
    if (memchr(p, '\0', (size_t)(e - p))) {
        snprintf(err, errlen, "payload contains a NUL byte");
        return -1;
    }
    if (!util_utf8_valid(p, (size_t)(e - p))) {
        snprintf(err, errlen, "payload is not valid UTF-8");
        return -1;
    }
    j = cJSON_ParseWithLengthOpts(p, (size_t)(e - p), &end, 0);
    if (!j) {
        snprintf(err, errlen, "payload is not valid JSON");
        return -1;
    }

    if (end != e) {
        snprintf(err, errlen, "payload has data after the JSON value (byte %zu)", (size_t)(end - text));
        goto out;
    }
    if (!cJSON_IsObject(j) && !cJSON_IsArray(j)) {
        snprintf(err, errlen, "payload must be a JSON object or array");
        goto out;
    }
    if (buf_reserve(out, (size_t)(e - p)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (; p < e; p++) {
        char ch = *p;
        if (in_str) {
            /* cJSON lets raw control bytes through in strings; JSON does not,
             * and a raw newline would split the request line */
            if ((unsigned char)ch < 0x20) {
                snprintf(err, errlen, "payload has a raw control character inside a string");
                out->len = start;
                out->p[start] = '\0';
                goto out;
            }
            if (ch == '\\') {
                out->p[out->len++] = ch;
                ch = *++p;
            } else if (ch == '"') {
                in_str = 0;
            }
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == '\n' || ch == '\r') {
            ch = ' ';
        }
        out->p[out->len++] = ch;
    }
    out->p[out->len] = '\0';
    {
        /* what hookd checks: cJSON also takes 01, 1. or -.5 */
        struct jscan_result res;
        if (jscan(out->p + start, out->len - start, NULL, NULL, 0, &res) != 0) {
            snprintf(err, errlen, "payload is not valid JSON (RFC 8259: no leading zeros, digits after a point)");
            out->len = start;
            out->p[start] = '\0';
            goto out;
        }
    }
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

static int read_all(FILE *f, struct buf *b, char *err, size_t errlen)
{
    char tmp[65536];
    size_t n;

    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (b->len + n > MAX_PAYLOAD_READ) {
            snprintf(err, errlen, "payload larger than %zu MiB", MAX_PAYLOAD_READ >> 20);
            return -1;
        }
        if (buf_append(b, tmp, n) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int load_payload(const struct args *a, struct buf *payload, char *err, size_t errlen)
{
    struct buf raw = {0};
    const char *file = a->val[O_FILE];
    char why[200];
    int rc = -1;

    if (a->val[O_DATA] && file) {
        snprintf(err, errlen, "give the payload with --data or --file, not both");
        return -1;
    }
    if (a->val[O_DATA]) {
        if (cli_payload_normalise(a->val[O_DATA], strlen(a->val[O_DATA]), payload, why, sizeof why) < 0) {
            snprintf(err, errlen, "--data: %s", why);
            return -1;
        }
        return 0;
    }
    if (!file || strcmp(file, "-") == 0) {
        if (!file && isatty(STDIN_FILENO)) {
            snprintf(err, errlen, "no payload: use --data JSON, --file FILE or pipe JSON on stdin");
            return -1;
        }
        if (read_all(stdin, &raw, why, sizeof why) < 0) {
            snprintf(err, errlen, "stdin: %s", why);
            goto out;
        }
        file = "stdin";
    } else {
        FILE *f = fopen(file, "rb");
        if (!f) {
            snprintf(err, errlen, "%s: %s", file, strerror(errno));
            goto out;
        }
        if (read_all(f, &raw, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", file, why);
            fclose(f);
            goto out;
        }
        fclose(f);
    }
    if (cli_payload_normalise(raw.p ? raw.p : "", raw.len, payload, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s: %s", file, why);
        goto out;
    }
    rc = 0;
out:
    buf_free(&raw);
    return rc;
}

/* ---------- request builders ---------- */

int cli_oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return -1;
}

int cli_add_str(cJSON *o, const char *k, const char *v, char *err, size_t errlen)
{
    return cJSON_AddStringToObject(o, k, v) ? 0 : cli_oom(err, errlen);
}

int cli_add_num(cJSON *o, const char *k, int64_t v, char *err, size_t errlen)
{
    return cJSON_AddNumberToObject(o, k, (double)v) ? 0 : cli_oom(err, errlen);
}

int cli_build_none(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    return 0;
}

int cli_build_send(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    if (!a->val[O_ENDPOINT] && !a->val[O_TYPE]) {
        snprintf(err, errlen, "send needs --endpoint NAME or --type TYPE");
        return -1;
    }
    if ((a->val[O_ENDPOINT] && cli_add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0) ||
        (a->val[O_TYPE] && cli_add_str(req, "event_type", a->val[O_TYPE], err, errlen) < 0) ||
        (a->val[O_EVENT_ID] && cli_add_str(req, "event_id", a->val[O_EVENT_ID], err, errlen) < 0) ||
        (a->val[O_DELAY] && cli_add_str(req, "delay", a->val[O_DELAY], err, errlen) < 0))
        return -1;
    if (a->val[O_DELIVER_AT]) {
        /* epoch ms as a number, anything else (RFC 3339) as text: the
         * daemon judges either */
        int64_t ms;
        if (util_parse_int(a->val[O_DELIVER_AT], &ms) == 0 ? cli_add_num(req, "deliver_at", ms, err, errlen) < 0
                                                           : cli_add_str(req, "deliver_at", a->val[O_DELIVER_AT], err,
                                                                     errlen) < 0)
            return -1;
    }
    return load_payload(a, payload, err, errlen);
}

int cli_build_get(const struct args *a, cJSON *req, struct buf *payload, char *err,
                     size_t errlen)
{
    int64_t id;

    if ((a->npos > 0) == (a->val[O_EVENT_ID] != NULL)) {
        snprintf(err, errlen, "give a message ID or --event-id ID [--endpoint NAME] (one of them)");
        return -1;
    }
    if (a->val[O_EVENT_ID])
        return cli_add_str(req, "event_id", a->val[O_EVENT_ID], err, errlen) < 0 ||
                       (a->val[O_ENDPOINT] && cli_add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0)
                   ? -1
                   : 0;
    if (a->val[O_ENDPOINT]) {
        snprintf(err, errlen, "--endpoint goes with --event-id, not with a message ID");
        return -1;
    }
    if (parse_pos_int(a->pos[0], "ID", 1, INT64_MAX / 2, &id, err, errlen) < 0)
        return -1;
    return cli_add_num(req, "id", id, err, errlen);
}

int cli_build_since(const struct args *a, cJSON *req, char *err, size_t errlen)
{
    int64_t since;

    if (!a->val[O_SINCE])
        return 0;
    if (cli_parse_since(a->val[O_SINCE], util_now_ms(), &since) < 0) {
        snprintf(err, errlen, "--since wants epoch milliseconds or a duration like 2h, not '%s'",
                 a->val[O_SINCE]);
        return -1;
    }
    return cli_add_num(req, "since", since, err, errlen);
}

static int add_str_array(cJSON *req, const char *k, const char *const *v, size_t n, char *err,
                         size_t errlen)
{
    cJSON *arr;
    size_t i;

    if (!n)
        return 0;
    arr = cJSON_AddArrayToObject(req, k);
    if (!arr)
        return cli_oom(err, errlen);
    for (i = 0; i < n; i++) {
        cJSON *s = cJSON_CreateString(v[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            return cli_oom(err, errlen);
        }
    }
    return 0;
}

static int add_int_opt(const struct args *a, enum opt_id id, const char *key, const char *what, int64_t min,
                       int64_t max, cJSON *req, char *err, size_t errlen)
{
    int64_t v;

    if (!a->val[id])
        return 0;
    if (util_parse_int(a->val[id], &v) < 0 || v < min || v > max) {
        snprintf(err, errlen, "%s must be an integer in %lld..%lld, not '%s'", what, (long long)min, (long long)max,
                 a->val[id]);
        return -1;
    }
    return cli_add_num(req, key, v, err, errlen);
}

int cli_build_selector(const struct args *a, cJSON *req, char *err, size_t errlen)
{
    cJSON *arr;
    int64_t until;
    size_t i, eq;

    if ((a->val[O_EVENT_ID] && cli_add_str(req, "event_id", a->val[O_EVENT_ID], err, errlen) < 0) ||
        (a->val[O_TYPE] && cli_add_str(req, "type", a->val[O_TYPE], err, errlen) < 0) ||
        (a->val[O_ERROR_CLASS] && cli_add_str(req, "error_class", a->val[O_ERROR_CLASS], err, errlen) < 0) ||
        add_int_opt(a, O_LIMIT, "limit", "--limit", 1, MSGSEL_LIMIT_MAX, req, err, errlen) < 0 ||
        add_int_opt(a, O_AFTER, "after", "--after", 1, INT64_MAX / 2, req, err, errlen) < 0)
        return -1;
    if (a->val[O_UNTIL]) {
        if (cli_parse_since(a->val[O_UNTIL], util_now_ms(), &until) < 0 || until < 1) {
            snprintf(err, errlen, "--until wants epoch milliseconds or a duration like 2h, not '%s'", a->val[O_UNTIL]);
            return -1;
        }
        if (cli_add_num(req, "until", until, err, errlen) < 0)
            return -1;
    }
    if ((a->seen & OB(O_DRY_RUN)) && !cJSON_AddTrueToObject(req, "dry_run"))
        return cli_oom(err, errlen);
    if (!a->nrep[R_WHERE])
        return 0;
    if (!(arr = cJSON_AddArrayToObject(req, "where")))
        return cli_oom(err, errlen);
    for (i = 0; i < a->nrep[R_WHERE]; i++) {
        cJSON *s;
        if (msgsel_where_split(a->rep[R_WHERE][i], &eq, err, errlen) < 0)
            return -1;
        if (!(s = cJSON_CreateString(a->rep[R_WHERE][i])) || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            return cli_oom(err, errlen);
        }
    }
    return 0;
}

int cli_build_requeue(const struct args *a, cJSON *req, struct buf *payload, char *err,
                         size_t errlen)
{
    if ((a->npos > 0) == (a->val[O_ENDPOINT] != NULL || a->val[O_EVENT_ID] != NULL)) {
        snprintf(err, errlen, "requeue needs a message ID, or --endpoint NAME and/or --event-id ID (one of them)");
        return -1;
    }
    if (a->npos > 0 && (a->seen & (SELECT_OPTS | OB(O_DRY_RUN) | OB(O_AFTER)) & ~OB(O_SINCE))) {
        snprintf(err, errlen, "a message ID takes no other filter");
        return -1;
    }
    if (cli_build_selector(a, req, err, errlen) < 0)
        return -1;
    if (a->val[O_STATUS]) {
        /* "dead_letter,delivered": the daemon checks the names */
        char *copy = strdup(a->val[O_STATUS]), *tok, *save = NULL;
        const char *names[8];
        size_t n = 0;
        int rc;
        if (!copy)
            return cli_oom(err, errlen);
        for (tok = strtok_r(copy, ", ", &save); tok && n < 8; tok = strtok_r(NULL, ", ", &save))
            names[n++] = tok;
        rc = n ? add_str_array(req, "statuses", names, n, err, errlen) : -1;
        if (!n)
            snprintf(err, errlen, "--status wants a list like dead_letter,delivered");
        free(copy);
        if (rc < 0)
            return -1;
    }
    if (a->npos > 0) {
        if (a->val[O_SINCE]) {
            snprintf(err, errlen, "--since only applies with --endpoint");
            return -1;
        }
        return cli_build_get(a, req, payload, err, errlen);
    }
    if (a->val[O_ENDPOINT] && cli_add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0)
        return -1;
    return cli_build_since(a, req, err, errlen);
}

int cli_build_purge(const struct args *a, cJSON *req, struct buf *payload, char *err,
                       size_t errlen)
{
    if (cli_build_selector(a, req, err, errlen) < 0 ||
        (a->val[O_ENDPOINT] && cli_add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0))
        return -1;
    return cli_build_since(a, req, err, errlen);
}

int cli_build_endpoint(const struct args *a, cJSON *req, struct buf *payload, char *err,
                          size_t errlen)
{
    return cli_add_str(req, "endpoint", a->pos[0], err, errlen);
}

int cli_build_delete(const struct args *a, cJSON *req, struct buf *payload, char *err,
                        size_t errlen)
{
    return cli_add_str(req, "name", a->pos[0], err, errlen);
}

int cli_build_put(const struct args *a, cJSON *req, struct buf *payload, char *err,
                     size_t errlen)
{
    size_t i;

    if (!a->val[O_URL]) {
        snprintf(err, errlen, "endpoint-put needs --url URL");
        return -1;
    }
    if (cli_add_str(req, "name", a->pos[0], err, errlen) < 0 ||
        cli_add_str(req, "url", a->val[O_URL], err, errlen) < 0 ||
        add_str_array(req, "secret", a->rep[R_SECRET], a->nrep[R_SECRET], err, errlen) < 0 ||
        (a->val[O_EVENT_TYPES] && cli_add_str(req, "event_types", a->val[O_EVENT_TYPES], err, errlen) < 0) ||
        add_str_array(req, "header", a->rep[R_HEADER], a->nrep[R_HEADER], err, errlen) < 0)
        return -1;
    for (i = 0; i < a->nrep[R_SET]; i++) {
        const char *kv = a->rep[R_SET][i], *eq = strchr(kv, '=');
        char key[64];

        if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key) {
            snprintf(err, errlen, "--set wants key=value, not '%s'", kv);
            return -1;
        }
        memcpy(key, kv, (size_t)(eq - kv));
        key[eq - kv] = '\0';
        /* a second "url"/"op" member would be ambiguous on the daemon side */
        if (cJSON_GetObjectItemCaseSensitive(req, key)) {
            snprintf(err, errlen, "--set %s: key given twice or reserved", key);
            return -1;
        }
        if (cli_add_str(req, key, eq + 1, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int cli_build_dead(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    int64_t h;

    if (!a->val[O_HOURS])
        return 0;
    if (parse_pos_int(a->val[O_HOURS], "--hours", 1, 24 * 3650, &h, err, errlen) < 0)
        return -1;
    return cli_add_num(req, "hours", h, err, errlen);
}

int cli_build_slow(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    int64_t ms;

    if (!a->val[O_P95])
        return 0;
    if (parse_pos_int(a->val[O_P95], "--p95-ms", 0, INT64_MAX / 2, &ms, err, errlen) < 0)
        return -1;
    return cli_add_num(req, "p95_ms", ms, err, errlen);
}

/* Payload bytes go in verbatim (cJSON would round big integers through a
 * double and re-escape strings), so the object is printed without it and
 * the raw text is spliced in before the closing brace. */
int cli_assemble(const struct cmd *c, const struct args *a, struct buf *out, char *err,
                    size_t errlen)
{
    struct buf payload = {0};
    cJSON *req = cJSON_CreateObject();
    char *text = NULL;
    size_t len;
    int rc = -1;

    if (!req || cli_add_str(req, "op", c->op, err, errlen) < 0) {
        cli_oom(err, errlen);
        goto out;
    }
    if (c->build(a, req, &payload, err, errlen) < 0)
        goto out;
    text = cJSON_PrintUnformatted(req);
    if (!text) {
        cli_oom(err, errlen);
        goto out;
    }
    len = strlen(text);
    if (payload.len == 0) {
        if (buf_append(out, text, len) < 0)
            goto nomem;
    } else if (buf_append(out, text, len - 1) < 0 || buf_puts(out, ",\"payload\":") < 0 ||
               buf_append(out, payload.p, payload.len) < 0 || buf_puts(out, "}") < 0) {
        goto nomem;
    }
    rc = 0;
    goto out;
nomem:
    cli_oom(err, errlen);
out:
    free(text);
    cJSON_Delete(req);
    buf_free(&payload);
    return rc;
}


