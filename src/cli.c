/* cli.c - the hookd command line. One static table drives dispatch, usage
 * and per-command option checks (smtpctl style). Client commands build one
 * JSON request line, send it over the control socket and render the reply
 * as a table or, with --json, print it unchanged. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "server.h"
#include "util.h"

#ifndef HOOKD_VERSION
#define HOOKD_VERSION "unknown"
#endif

#define DEFAULT_CONFIG "/etc/hookd/hookd.ini"
/* Where packaged installs put the socket; used when no config is readable
 * (an unprivileged user typically cannot read /etc/hookd/hookd.ini). */
#define FALLBACK_SOCKET "/run/hookd/hookd.sock"
#define DEFAULT_TIMEOUT_MS 30000
#define MAX_REPEAT 64
/* Above the largest max_line the daemon accepts (64 MiB). */
#define MAX_PAYLOAD_READ ((size_t)64 << 20)
/* Endpoint lists are a few MB; this only stops a runaway peer. */
#define MAX_REPLY ((size_t)512 << 20)

enum opt_id {
    O_HELP,
    O_CONFIG,
    O_SOCKET,
    O_JSON,
    O_TIMEOUT,
    O_QUIET,
    O_ENDPOINT,
    O_TYPE,
    O_EVENT_ID,
    O_DATA,
    O_FILE,
    O_URL,
    O_SECRET,
    O_EVENT_TYPES,
    O_HEADER,
    O_SET,
    O_SINCE,
    O_HOURS,
    O_P95,
    O__COUNT
};

#define OB(x) (1u << (x))
#define CLIENT_OPTS (OB(O_CONFIG) | OB(O_SOCKET) | OB(O_JSON) | OB(O_TIMEOUT))

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
    [O_FILE] = {"file", 'f', 1},
    [O_URL] = {"url", 0, 1},
    [O_SECRET] = {"secret", 0, 1},
    [O_EVENT_TYPES] = {"event-types", 0, 1},
    [O_HEADER] = {"header", 'H', 1},
    [O_SET] = {"set", 0, 1},
    [O_SINCE] = {"since", 0, 1},
    [O_HOURS] = {"hours", 0, 1},
    [O_P95] = {"p95-ms", 0, 1},
};

enum { R_SECRET, R_HEADER, R_SET, R__COUNT };

struct args {
    unsigned seen;
    const char *val[O__COUNT];
    const char *rep[R__COUNT][MAX_REPEAT];
    size_t nrep[R__COUNT];
    const char *pos[2];
    size_t npos;
};

struct cmd;
typedef int (*handler_fn)(const struct cmd *c, int argc, char **argv);
typedef int (*build_fn)(const struct args *a, cJSON *req, struct buf *payload, char *err,
                        size_t errlen);
typedef void (*show_fn)(const cJSON *reply, const struct args *a);

struct cmd {
    const char *name;
    handler_fn handler;
    int needs_socket;
    int admin;
    const char *usage;
    const char *help;
    unsigned opts;  /* accepted options; --help is always accepted */
    size_t min_pos, max_pos;
    const char *op;
    build_fn build;
    show_fn show;
};

static const struct cmd *find_cmd(const char *name);
static void usage(FILE *out);

/* ---------- argument parsing ---------- */

static int set_opt(struct args *a, enum opt_id id, const char *v, char *err, size_t errlen)
{
    int r = id == O_SECRET ? R_SECRET : id == O_HEADER ? R_HEADER : id == O_SET ? R_SET : -1;

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

/* argv[0] is the command name. Returns 0, 1 when --help was given, or -1
 * with err filled. */
static int parse_args(const struct cmd *c, int argc, char **argv, struct args *a, char *err,
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

static int oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int add_str(cJSON *o, const char *k, const char *v, char *err, size_t errlen)
{
    return cJSON_AddStringToObject(o, k, v) ? 0 : oom(err, errlen);
}

static int add_num(cJSON *o, const char *k, int64_t v, char *err, size_t errlen)
{
    return cJSON_AddNumberToObject(o, k, (double)v) ? 0 : oom(err, errlen);
}

static int build_none(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    return 0;
}

static int build_send(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    if (!a->val[O_ENDPOINT] && !a->val[O_TYPE]) {
        snprintf(err, errlen, "send needs --endpoint NAME or --type TYPE");
        return -1;
    }
    if ((a->val[O_ENDPOINT] && add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0) ||
        (a->val[O_TYPE] && add_str(req, "event_type", a->val[O_TYPE], err, errlen) < 0) ||
        (a->val[O_EVENT_ID] && add_str(req, "event_id", a->val[O_EVENT_ID], err, errlen) < 0))
        return -1;
    return load_payload(a, payload, err, errlen);
}

static int build_get(const struct args *a, cJSON *req, struct buf *payload, char *err,
                     size_t errlen)
{
    int64_t id;

    if (parse_pos_int(a->pos[0], "ID", 1, INT64_MAX / 2, &id, err, errlen) < 0)
        return -1;
    return add_num(req, "id", id, err, errlen);
}

static int build_since(const struct args *a, cJSON *req, char *err, size_t errlen)
{
    int64_t since;

    if (!a->val[O_SINCE])
        return 0;
    if (cli_parse_since(a->val[O_SINCE], util_now_ms(), &since) < 0) {
        snprintf(err, errlen, "--since wants epoch milliseconds or a duration like 2h, not '%s'",
                 a->val[O_SINCE]);
        return -1;
    }
    return add_num(req, "since", since, err, errlen);
}

static int build_requeue(const struct args *a, cJSON *req, struct buf *payload, char *err,
                         size_t errlen)
{
    if ((a->npos > 0) == (a->val[O_ENDPOINT] != NULL)) {
        snprintf(err, errlen, "requeue needs a message ID or --endpoint NAME (one of them)");
        return -1;
    }
    if (a->npos > 0) {
        if (a->val[O_SINCE]) {
            snprintf(err, errlen, "--since only applies with --endpoint");
            return -1;
        }
        return build_get(a, req, payload, err, errlen);
    }
    if (add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0)
        return -1;
    return build_since(a, req, err, errlen);
}

static int build_purge(const struct args *a, cJSON *req, struct buf *payload, char *err,
                       size_t errlen)
{
    if (a->val[O_ENDPOINT] && add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0)
        return -1;
    return build_since(a, req, err, errlen);
}

static int build_endpoint(const struct args *a, cJSON *req, struct buf *payload, char *err,
                          size_t errlen)
{
    return add_str(req, "endpoint", a->pos[0], err, errlen);
}

static int build_delete(const struct args *a, cJSON *req, struct buf *payload, char *err,
                        size_t errlen)
{
    return add_str(req, "name", a->pos[0], err, errlen);
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
        return oom(err, errlen);
    for (i = 0; i < n; i++) {
        cJSON *s = cJSON_CreateString(v[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            return oom(err, errlen);
        }
    }
    return 0;
}

static int build_put(const struct args *a, cJSON *req, struct buf *payload, char *err,
                     size_t errlen)
{
    size_t i;

    if (!a->val[O_URL]) {
        snprintf(err, errlen, "endpoint-put needs --url URL");
        return -1;
    }
    if (add_str(req, "name", a->pos[0], err, errlen) < 0 ||
        add_str(req, "url", a->val[O_URL], err, errlen) < 0 ||
        add_str_array(req, "secret", a->rep[R_SECRET], a->nrep[R_SECRET], err, errlen) < 0 ||
        (a->val[O_EVENT_TYPES] && add_str(req, "event_types", a->val[O_EVENT_TYPES], err, errlen) < 0) ||
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
        if (add_str(req, key, eq + 1, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int build_dead(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    int64_t h;

    if (!a->val[O_HOURS])
        return 0;
    if (parse_pos_int(a->val[O_HOURS], "--hours", 1, 24 * 3650, &h, err, errlen) < 0)
        return -1;
    return add_num(req, "hours", h, err, errlen);
}

static int build_slow(const struct args *a, cJSON *req, struct buf *payload, char *err,
                      size_t errlen)
{
    int64_t ms;

    if (!a->val[O_P95])
        return 0;
    if (parse_pos_int(a->val[O_P95], "--p95-ms", 0, INT64_MAX / 2, &ms, err, errlen) < 0)
        return -1;
    return add_num(req, "p95_ms", ms, err, errlen);
}

/* Payload bytes go in verbatim (cJSON would round big integers through a
 * double and re-escape strings), so the object is printed without it and
 * the raw text is spliced in before the closing brace. */
static int assemble(const struct cmd *c, const struct args *a, struct buf *out, char *err,
                    size_t errlen)
{
    struct buf payload = {0};
    cJSON *req = cJSON_CreateObject();
    char *text = NULL;
    size_t len;
    int rc = -1;

    if (!req || add_str(req, "op", c->op, err, errlen) < 0) {
        oom(err, errlen);
        goto out;
    }
    if (c->build(a, req, &payload, err, errlen) < 0)
        goto out;
    text = cJSON_PrintUnformatted(req);
    if (!text) {
        oom(err, errlen);
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
    oom(err, errlen);
out:
    free(text);
    cJSON_Delete(req);
    buf_free(&payload);
    return rc;
}

int cli_build_request(int argc, char **argv, struct buf *out, char *err, size_t errlen)
{
    const struct cmd *c;
    struct args a;
    int r;

    if (argc < 1 || !(c = find_cmd(argv[0])) || !c->needs_socket) {
        snprintf(err, errlen, "not a client command: '%s'", argc > 0 ? argv[0] : "");
        return -1;
    }
    r = parse_args(c, argc, argv, &a, err, errlen);
    if (r == 1)
        snprintf(err, errlen, "--help given");
    if (r != 0)
        return -1;
    return assemble(c, &a, out, err, errlen);
}

/* ---------- transport ---------- */

static int remaining_ms(int64_t deadline)
{
    int64_t left = deadline - util_mono_ms();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Returns 1 ready, 0 timed out, -1 error (errno). */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = ev};
    int r;

    for (;;) {
        r = poll(&pfd, 1, remaining_ms(deadline));
        if (r >= 0)
            return r > 0;
        if (errno != EINTR)
            return -1;
    }
}

static int do_connect(const char *path, int64_t deadline, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    /* A non-blocking AF_UNIX connect either completes or fails with
     * EAGAIN when the listen backlog is full: retry until the deadline. */
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN && remaining_ms(deadline) > 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        snprintf(err, errlen, "cannot connect to %s: %s%s", path, strerror(e),
                 e == ENOENT || e == ECONNREFUSED ? " (is hookd running?)" : "");
        close(fd);
        return -1;
    }
    return fd;
}

static int transact(const char *path, const struct buf *req, int64_t timeout_ms, struct buf *reply,
                    char *err, size_t errlen)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    char tdur[32];
    size_t off = 0, scanned = 0;
    int fd, rc = -1, r;

    util_fmt_duration(timeout_ms, tdur, sizeof tdur);
    fd = do_connect(path, deadline, err, errlen);
    if (fd < 0)
        return -1;
    while (off < req->len) {
        ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            r = wait_fd(fd, POLLOUT, deadline);
            if (r > 0)
                continue;
            if (r == 0)
                snprintf(err, errlen, "%s: daemon did not take the request within %s", path, tdur);
            else
                snprintf(err, errlen, "%s: poll: %s", path, strerror(errno));
            goto out;
        }
        snprintf(err, errlen, "%s: write: %s", path, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t n;
        char *nl;

        if (buf_reserve(reply, 65536) < 0) {
            snprintf(err, errlen, "out of memory reading the reply");
            goto out;
        }
        n = read(fd, reply->p + reply->len, reply->cap - reply->len - 1);
        if (n > 0) {
            reply->len += (size_t)n;
            reply->p[reply->len] = '\0';
            nl = memchr(reply->p + scanned, '\n', reply->len - scanned);
            if (nl) {
                reply->len = (size_t)(nl - reply->p);
                reply->p[reply->len] = '\0';
                break;
            }
            scanned = reply->len;
            if (reply->len > MAX_REPLY) {
                snprintf(err, errlen, "%s: reply larger than %zu MiB", path, MAX_REPLY >> 20);
                goto out;
            }
            continue;
        }
        if (n == 0) {
            snprintf(err, errlen, "%s: daemon closed the connection without a reply", path);
            goto out;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            r = wait_fd(fd, POLLIN, deadline);
            if (r > 0)
                continue;
            if (r == 0)
                snprintf(err, errlen, "%s: no reply within %s", path, tdur);
            else
                snprintf(err, errlen, "%s: poll: %s", path, strerror(errno));
            goto out;
        }
        snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

/* ---------- configuration ---------- */

static const char *default_config(void)
{
    const char *e = getenv("HOOKD_CONFIG");
    return e && *e ? e : DEFAULT_CONFIG;
}

static int load_config(struct config *cfg, const char *path)
{
    char err[512];

    if (config_init(cfg) < 0) {
        fprintf(stderr, "hookd: out of memory\n");
        return -1;
    }
    if (config_load(cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        config_free(cfg);
        return -1;
    }
    return 0;
}

/* -s beats HOOKD_SOCKET beats the config's [server] socket. */
static int resolve_socket(const struct args *a, char *out, size_t n)
{
    const char *env = getenv("HOOKD_SOCKET"), *path = a->val[O_CONFIG];
    struct config cfg;

    if (a->val[O_SOCKET]) {
        util_strlcpy(out, a->val[O_SOCKET], n);
        return 0;
    }
    if (env && *env) {
        util_strlcpy(out, env, n);
        return 0;
    }
    if (!path) {
        path = default_config();
        if (access(path, R_OK) != 0) {
            util_strlcpy(out, FALLBACK_SOCKET, n);
            return 0;
        }
    }
    if (load_config(&cfg, path) < 0)
        return -1;
    util_strlcpy(out, cfg.socket_path, n);
    config_free(&cfg);
    return 0;
}

/* ---------- output helpers ---------- */

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static int is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9e15;
}

/* Daemon strings can carry text from remote servers (error messages):
 * keep terminal control bytes out. */
static void sanitize(const char *s, char *out, size_t n)
{
    size_t i = 0;

    for (; *s && i + 1 < n; s++)
        out[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    out[i] = '\0';
}

static void fmt_val(const cJSON *v, char *out, size_t n)
{
    if (!v || cJSON_IsNull(v))
        snprintf(out, n, "-");
    else if (is_int(v))
        snprintf(out, n, "%lld", (long long)v->valuedouble);
    else if (cJSON_IsNumber(v))
        snprintf(out, n, "%.1f", v->valuedouble);
    else if (cJSON_IsString(v))
        sanitize(*v->valuestring ? v->valuestring : "-", out, n);
    else if (cJSON_IsTrue(v))
        snprintf(out, n, "yes");
    else if (cJSON_IsFalse(v))
        snprintf(out, n, "no");
    else
        snprintf(out, n, "?");
}

static void fmt_ms(const cJSON *v, char *out, size_t n)
{
    if (is_int(v))
        snprintf(out, n, "%lldms", (long long)v->valuedouble);
    else if (cJSON_IsNumber(v))
        snprintf(out, n, "%.1fms", v->valuedouble);
    else
        fmt_val(v, out, n);
}

static void fmt_time(const cJSON *v, char *out, size_t n)
{
    if (cJSON_IsNumber(v))
        util_fmt_time((int64_t)v->valuedouble, out, n);
    else
        fmt_val(v, out, n);
}

/* Two significant units ("2h13m") read better than util_fmt_duration's
 * exact form for ages. */
static void fmt_age(int64_t ms, char *out, size_t n)
{
    int64_t s = ms / 1000;

    if (ms < 1000)
        snprintf(out, n, "%lldms", (long long)(ms < 0 ? 0 : ms));
    else if (s < 60)
        snprintf(out, n, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(out, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(out, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(out, n, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

struct table {
    size_t ncols, nrows, cap;
    char **cells;
};

static int table_row(struct table *t, const char *const *row)
{
    size_t i;

    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        char **nc = realloc(t->cells, ncap * t->ncols * sizeof *nc);
        if (!nc)
            return -1;
        t->cells = nc;
        t->cap = ncap;
    }
    for (i = 0; i < t->ncols; i++) {
        char *s = strdup(row[i]);
        if (!s) {
            while (i > 0)
                free(t->cells[t->nrows * t->ncols + --i]);
            return -1;
        }
        t->cells[t->nrows * t->ncols + i] = s;
    }
    t->nrows++;
    return 0;
}

static void table_print(const struct table *t, FILE *out)
{
    size_t w[32] = {0}, r, i;

    for (r = 0; r < t->nrows; r++)
        for (i = 0; i < t->ncols && i < 32; i++) {
            size_t l = strlen(t->cells[r * t->ncols + i]);
            if (l > w[i])
                w[i] = l;
        }
    for (r = 0; r < t->nrows; r++) {
        for (i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * t->ncols + i];
            if (i + 1 == t->ncols)
                fprintf(out, "%s\n", s);
            else
                fprintf(out, "%-*s  ", (int)w[i < 32 ? i : 31], s);
        }
    }
}

static void table_free(struct table *t)
{
    size_t i;

    for (i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

static void table_oom(void)
{
    fprintf(stderr, "hookd: out of memory formatting the reply\n");
}

/* One column of a list reply: where the value is (a member of the item,
 * or of one of its objects) and how it is shown. */
struct col {
    const char *hdr;
    const char *key;
    const char *sub;   /* the item's object holding key, or NULL */
    char kind;         /* 'v' value, 'm' milliseconds, 't' time, '#' row number */
    size_t maxw;       /* cut longer values (0: no limit); --json has them whole */
};

#define COLS_MAX 16

static void fmt_kind(char kind, const cJSON *x, char *out, size_t n)
{
    if (kind == 't')
        fmt_time(x, out, n);
    else if (kind == 'm')
        fmt_ms(x, out, n);
    else
        fmt_val(x, out, n);
}

/* Print a JSON array of objects as an aligned table. */
static void print_list(const cJSON *arr, const struct col *cols, size_t ncols)
{
    struct table t = {.ncols = ncols};
    const char *row[COLS_MAX];
    char cells[COLS_MAX][512];
    const cJSON *it;
    size_t i;
    int n = 0;

    for (i = 0; i < ncols; i++)
        row[i] = cols[i].hdr;
    if (table_row(&t, row) < 0)
        goto nomem;
    cJSON_ArrayForEach(it, arr) {
        n++;
        for (i = 0; i < ncols; i++) {
            const struct col *c = &cols[i];
            const cJSON *x = jget(c->sub ? jget(it, c->sub) : it, c->key);
            if (c->kind == '#')
                snprintf(cells[i], sizeof cells[i], "%d", n);
            else
                fmt_kind(c->kind, x, cells[i], sizeof cells[i]);
            if (c->maxw > 3 && c->maxw < sizeof cells[i] && strlen(cells[i]) > c->maxw)
                memcpy(cells[i] + c->maxw - 3, "...", 4);
            row[i] = cells[i];
        }
        if (table_row(&t, row) < 0)
            goto nomem;
    }
    table_print(&t, stdout);
    table_free(&t);
    return;
nomem:
    table_free(&t);
    table_oom();
}

/* ---------- reply renderers ---------- */

static void show_ping(const cJSON *r, const struct args *a)
{
    char v[64];

    fmt_val(jget(r, "version"), v, sizeof v);
    printf("pong (hookd %s)\n", v);
}

static void show_send(const cJSON *r, const struct args *a)
{
    const cJSON *dl = jget(r, "deliveries"), *d;
    char id[32], ev[256], ep[128];

    fmt_val(jget(r, "event_id"), ev, sizeof ev);
    if (!cJSON_IsArray(dl)) {
        fmt_val(jget(r, "id"), id, sizeof id);
        printf("%s id=%s event_id=%s\n", cJSON_IsTrue(jget(r, "duplicate")) ? "duplicate" : "queued",
               id, ev);
        return;
    }
    if (cJSON_GetArraySize(dl) == 0)
        printf("no deliveries event_id=%s\n", ev);
    cJSON_ArrayForEach(d, dl) {
        fmt_val(jget(d, "id"), id, sizeof id);
        fmt_val(jget(d, "endpoint"), ep, sizeof ep);
        printf("%s id=%s event_id=%s endpoint=%s\n",
               cJSON_IsTrue(jget(d, "duplicate")) ? "duplicate" : "queued", id, ev, ep);
    }
}

static void show_get(const cJSON *r, const struct args *a)
{
    static const struct {
        const char *key;
        char kind; /* v value, t time, m milliseconds */
    } rows[] = {
        {"id", 'v'},           {"endpoint", 'v'},        {"event_id", 'v'},
        {"event_type", 'v'},   {"status", 'v'},          {"attempt_count", 'v'},
        {"max_attempts", 'v'}, {"created_at", 't'},      {"next_attempt_at", 't'},
        {"claimed_at", 't'},   {"delivered_at", 't'},    {"last_error", 'v'},
        {"last_status_code", 'v'}, {"last_response_ms", 'm'}, {"payload_bytes", 'v'},
    };
    static const struct col attempt_cols[] = {
        {"#", NULL, NULL, '#', 0},
        {"AT", "at", NULL, 't', 0},
        {"STATUS", "status_code", NULL, 'v', 0},
        {"RESPONSE", "response_ms", NULL, 'm', 0},
        {"ERROR", "error_class", NULL, 'v', 0},
    };
    const cJSON *m = jget(r, "message"), *at;
    char v[512];
    size_t i;

    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fmt_kind(rows[i].kind, jget(m, rows[i].key), v, sizeof v);
        printf("%-17s %s\n", rows[i].key, v);
    }
    at = jget(m, "attempts");
    if (!cJSON_IsArray(at) || cJSON_GetArraySize(at) == 0)
        return;
    printf("\nattempts:\n");
    print_list(at, attempt_cols, sizeof attempt_cols / sizeof attempt_cols[0]);
}

static void show_stats(const cJSON *r, const struct args *a)
{
    static const char *const counts[] = {"pending", "awaiting_retry", "in_flight", "dead_letter",
                                         "delivered_last_hour", "failed_last_hour"};
    const cJSON *s = jget(r, "stats"), *age;
    char v[128], w[64];
    size_t i;

    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        fmt_val(jget(s, counts[i]), v, sizeof v);
        printf("%-26s %s\n", counts[i], v);
    }
    fmt_time(jget(s, "oldest_pending"), v, sizeof v);
    age = jget(s, "oldest_pending_age_ms");
    if (cJSON_IsNumber(age)) {
        fmt_age((int64_t)age->valuedouble, w, sizeof w);
        printf("%-26s %s (%s ago)\n", "oldest_pending", v, w);
    } else {
        printf("%-26s %s\n", "oldest_pending", v);
    }
    fmt_ms(jget(s, "avg_delivery_ms_last_hour"), v, sizeof v);
    printf("%-26s %s\n", "avg_delivery_last_hour", v);
}

static void show_endpoints(const cJSON *r, const struct args *a)
{
    static const struct col cols[] = {
        {"NAME", "name", NULL, 'v', 0},
        {"STATE", "state", NULL, 'v', 0},
        {"FAILS", "consecutive_failures", NULL, 'v', 0},
        {"P50", "p50_ms", NULL, 'm', 0},
        {"P95", "p95_ms", NULL, 'm', 0},
        {"P99", "p99_ms", NULL, 'm', 0},
        {"SAMPLES", "sample_count", NULL, 'v', 0},
        {"PENDING", "pending", "queue", 'v', 0},
        {"RETRY", "failed", "queue", 'v', 0},
        {"INFLIGHT", "in_flight", "queue", 'v', 0},
        {"DEAD", "dead_letter", "queue", 'v', 0},
        {"PAUSED", "paused", NULL, 'v', 0},
        {"URL", "url", NULL, 'v', 0},
    };
    const cJSON *eps = jget(r, "endpoints");

    if (cJSON_GetArraySize(eps) == 0) {
        printf("no endpoints\n");
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

static void show_put(const cJSON *r, const struct args *a)
{
    const cJSON *ep = jget(r, "endpoint");
    char name[128], id[32];

    fmt_val(jget(ep, "name"), name, sizeof name);
    fmt_val(jget(ep, "id"), id, sizeof id);
    printf("%s endpoint %s (id %s)\n", cJSON_IsTrue(jget(r, "created")) ? "created" : "updated", name,
           id);
}

static void show_delete(const cJSON *r, const struct args *a)
{
    char n[32], name[128];

    sanitize(a->pos[0], name, sizeof name);
    fmt_val(jget(r, "dead_lettered"), n, sizeof n);
    printf("deleted endpoint %s (%s queued messages moved to dead letters)\n", name, n);
}

static void show_requeue(const cJSON *r, const struct args *a)
{
    char n[32];

    fmt_val(jget(r, "requeued"), n, sizeof n);
    printf("requeued %s\n", n);
}

static void show_purge(const cJSON *r, const struct args *a)
{
    char n[32];

    fmt_val(jget(r, "purged"), n, sizeof n);
    printf("purged %s dead letters\n", n);
}

static void show_pause(const cJSON *r, const struct args *a)
{
    char name[128];

    fmt_val(jget(r, "endpoint"), name, sizeof name);
    printf("%s %s\n", cJSON_IsTrue(jget(r, "paused")) ? "paused" : "resumed", name);
}

static void show_dead(const cJSON *r, const struct args *a)
{
    /* curl messages are long; the full text is in --json and `get` */
    static const struct col cols[] = {
        {"ENDPOINT", "endpoint", NULL, 'v', 0},
        {"COUNT", "dead_count", NULL, 'v', 0},
        {"PRIMARY_ERROR", "primary_error", NULL, 'v', 60},
        {"STATUS", "primary_status_code", NULL, 'v', 0},
        {"FIRST", "first_dead", NULL, 't', 0},
        {"LAST", "last_dead", NULL, 't', 0},
        {"AVG_ATTEMPTS", "avg_attempts", NULL, 'v', 0},
    };
    const cJSON *eps = jget(r, "endpoints");
    char h[32];

    if (cJSON_GetArraySize(eps) == 0) {
        fmt_val(jget(r, "hours"), h, sizeof h);
        printf("no dead letters in the last %s hours\n", h);
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

static void show_slow(const cJSON *r, const struct args *a)
{
    static const struct col cols[] = {
        {"NAME", "name", NULL, 'v', 0},
        {"P50", "p50_ms", NULL, 'm', 0},
        {"P95", "p95_ms", NULL, 'm', 0},
        {"P99", "p99_ms", NULL, 'm', 0},
        {"SAMPLES", "sample_count", NULL, 'v', 0},
        {"STATE", "state", NULL, 'v', 0},
    };
    const cJSON *eps = jget(r, "endpoints");
    char th[32];

    if (cJSON_GetArraySize(eps) == 0) {
        fmt_ms(jget(r, "p95_ms"), th, sizeof th);
        printf("no endpoints with p95 above %s\n", th);
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

static void show_metrics(const cJSON *r, const struct args *a)
{
    const cJSON *t = jget(r, "text");

    if (cJSON_IsString(t))
        fputs(t->valuestring, stdout);
}

/* ---------- command handlers ---------- */

static void cmd_usage(const struct cmd *c, FILE *out)
{
    fprintf(out, "usage: hookd %s\n", c->usage);
}

static void cmd_help(const struct cmd *c)
{
    cmd_usage(c, stdout);
    printf("\n%s%s\n", c->help, c->admin ? " (admin)" : "");
    if (c->needs_socket)
        printf("\n  -c FILE          read the socket path from FILE's [server] socket\n"
               "  -s, --socket P   control socket (overrides HOOKD_SOCKET and -c)\n"
               "  --json           print the daemon's JSON reply\n"
               "  --timeout DUR    how long to wait for the reply (default 30s)\n");
}

/* Shared prologue: -1 means go on, anything else is the exit status. */
static int start(const struct cmd *c, int argc, char **argv, struct args *a)
{
    char err[256];
    int r = parse_args(c, argc, argv, a, err, sizeof err);

    if (r == 1) {
        cmd_help(c);
        return CLI_EXIT_OK;
    }
    if (r < 0) {
        fprintf(stderr, "hookd %s: %s\n", c->name, err);
        cmd_usage(c, stderr);
        return CLI_EXIT_USAGE;
    }
    return -1;
}

static int run_serve(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    const char *path;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    path = a.val[O_CONFIG] ? a.val[O_CONFIG] : default_config();
    if (load_config(&cfg, path) < 0)
        return CLI_EXIT_USAGE;
    rc = server_run(&cfg, path);
    config_free(&cfg);
    return rc;
}

static int run_check(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    if (load_config(&cfg, a.val[O_CONFIG] ? a.val[O_CONFIG] : default_config()) < 0)
        return CLI_EXIT_USAGE;
    if (!(a.seen & OB(O_QUIET)))
        config_dump(&cfg, stdout);
    config_free(&cfg);
    fflush(stdout);
    fprintf(stderr, "configuration OK\n");
    return CLI_EXIT_OK;
}

static int run_version(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    printf("hookd %s\n", HOOKD_VERSION);
    return CLI_EXIT_OK;
}

static int run_help(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    const struct cmd *sub;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    if (a.npos == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    sub = find_cmd(a.pos[0]);
    if (!sub) {
        fprintf(stderr, "hookd: unknown command '%s'\n", a.pos[0]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    cmd_help(sub);
    return CLI_EXIT_OK;
}

static int run_client(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct buf req = {0}, reply = {0};
    char err[1024], sock[128]; /* sun_path is 108; longer is reported, not used */
    int64_t timeout = DEFAULT_TIMEOUT_MS;
    cJSON *r = NULL;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    rc = CLI_EXIT_USAGE;
    if (a.val[O_TIMEOUT] && (util_parse_duration_ms(a.val[O_TIMEOUT], &timeout) < 0 || timeout <= 0)) {
        fprintf(stderr, "hookd %s: --timeout wants a duration like 30s, not '%s'\n", c->name,
                a.val[O_TIMEOUT]);
        goto out;
    }
    if (resolve_socket(&a, sock, sizeof sock) < 0)
        goto out;
    if (assemble(c, &a, &req, err, sizeof err) < 0) {
        fprintf(stderr, "hookd %s: %s\n", c->name, err);
        goto out;
    }
    if (buf_puts(&req, "\n") < 0) {
        fprintf(stderr, "hookd: out of memory\n");
        goto out;
    }
    if (transact(sock, &req, timeout, &reply, err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        rc = CLI_EXIT_UNAVAILABLE;
        goto out;
    }
    rc = CLI_EXIT_ERROR;
    r = cJSON_ParseWithLength(reply.p, reply.len);
    if (!cJSON_IsObject(r)) {
        fprintf(stderr, "hookd: %s: malformed reply from the daemon\n", sock);
        goto out;
    }
    if (a.seen & OB(O_JSON)) {
        fwrite(reply.p, 1, reply.len, stdout);
        fputc('\n', stdout);
    }
    if (!cJSON_IsTrue(jget(r, "ok"))) {
        const cJSON *e = jget(r, "error");
        char code[64], msg[512];
        fmt_val(jget(e, "code"), code, sizeof code);
        fmt_val(jget(e, "message"), msg, sizeof msg);
        fflush(stdout);
        fprintf(stderr, "hookd: %s: %s\n", code, msg);
        goto out;
    }
    if (!(a.seen & OB(O_JSON)))
        c->show(r, &a);
    rc = fflush(stdout) == 0 && !ferror(stdout) ? CLI_EXIT_OK : CLI_EXIT_ERROR;
out:
    cJSON_Delete(r);
    buf_free(&req);
    buf_free(&reply);
    return rc;
}

#define CLIENT(nm, adm, us, hl, op_, extra, minp, maxp, bld, shw)                              \
    {nm, run_client, 1, adm, us, hl, CLIENT_OPTS | (extra), minp, maxp, op_, bld, shw}

static const struct cmd commands[] = {
    {"serve", run_serve, 0, 0, "serve [-c FILE]", "Run the daemon in the foreground.",
     OB(O_CONFIG), 0, 0, NULL, NULL, NULL},
    {"check-config", run_check, 0, 0, "check-config [-c FILE] [--quiet]",
     "Validate the configuration and print the effective settings (secrets hidden).",
     OB(O_CONFIG) | OB(O_QUIET), 0, 0, NULL, NULL, NULL},
    CLIENT("ping", 0, "ping", "Check that the daemon answers.", "ping", 0, 0, 0, build_none,
           show_ping),
    CLIENT("send", 0,
           "send (--endpoint NAME [--type TYPE] | --type TYPE) [--event-id ID]\n"
           "                  (--data JSON | --file FILE | payload on stdin)",
           "Queue one event: for one endpoint, or with only --type for every subscriber.",
           "enqueue", OB(O_ENDPOINT) | OB(O_TYPE) | OB(O_EVENT_ID) | OB(O_DATA) | OB(O_FILE), 0, 0,
           build_send, show_send),
    CLIENT("get", 0, "get ID", "Show one message and its delivery attempts.", "get", 0, 1, 1,
           build_get, show_get),
    CLIENT("stats", 0, "stats", "Queue totals and delivery rates.", "stats", 0, 0, 0, build_none,
           show_stats),
    CLIENT("endpoints", 0, "endpoints", "List endpoints with circuit state, latency and queue.",
           "endpoint.list", 0, 0, 0, build_none, show_endpoints),
    CLIENT("endpoint-put", 1,
           "endpoint-put NAME --url URL [--secret S]... [--event-types a,b]\n"
           "                  [--header 'Name: value']... [--set key=value]...",
           "Create or replace an endpoint.", "endpoint.put",
           OB(O_URL) | OB(O_SECRET) | OB(O_EVENT_TYPES) | OB(O_HEADER) | OB(O_SET), 1, 1, build_put,
           show_put),
    CLIENT("endpoint-delete", 1, "endpoint-delete NAME",
           "Delete an endpoint; its queued messages become dead letters.", "endpoint.delete", 0, 1, 1,
           build_delete, show_delete),
    CLIENT("requeue", 1, "requeue ID | requeue --endpoint NAME [--since TIME]",
           "Send dead letters again. TIME is epoch ms or a duration ago (2h).", "requeue",
           OB(O_ENDPOINT) | OB(O_SINCE), 0, 1, build_requeue, show_requeue),
    CLIENT("purge", 1, "purge [--endpoint NAME] [--since TIME]", "Delete dead letters.", "purge",
           OB(O_ENDPOINT) | OB(O_SINCE), 0, 0, build_purge, show_purge),
    CLIENT("pause", 1, "pause NAME", "Stop delivering to an endpoint (messages keep queuing).",
           "pause", 0, 1, 1, build_endpoint, show_pause),
    CLIENT("resume", 1, "resume NAME", "Resume delivering to a paused endpoint.", "resume", 0, 1, 1,
           build_endpoint, show_pause),
    CLIENT("dead-letters", 0, "dead-letters [--hours N]",
           "Dead letters per endpoint over the last N hours (default 24).", "dead_letters",
           OB(O_HOURS), 0, 0, build_dead, show_dead),
    CLIENT("slow", 0, "slow [--p95-ms N]",
           "Endpoints whose p95 latency is above N ms (default: configured).", "slow",
           OB(O_P95), 0, 0, build_slow, show_slow),
    CLIENT("metrics", 0, "metrics", "Print Prometheus metrics.", "metrics", 0, 0, 0, build_none,
           show_metrics),
    {"version", run_version, 0, 0, "version", "Print the version.", 0, 0, 0, NULL, NULL, NULL},
    {"help", run_help, 0, 0, "help [COMMAND]", "Show usage.", 0, 0, 1, NULL, NULL, NULL},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const struct cmd *find_cmd(const char *name)
{
    size_t i;

    for (i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *out)
{
    size_t i;

    fprintf(out, "usage: hookd COMMAND [OPTIONS]\n       hookd --version | --help\n\ncommands:\n");
    for (i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-16s %s%s\n", commands[i].name, commands[i].help,
                commands[i].admin ? " (admin)" : "");
    fprintf(out,
            "\nclient options: -c FILE, -s/--socket PATH, --json, --timeout DUR\n"
            "environment: HOOKD_CONFIG (default %s), HOOKD_SOCKET\n"
            "exit status: 0 ok, 1 the daemon refused, 2 usage or configuration error,\n"
            "             3 daemon unreachable\n"
            "`hookd COMMAND --help` shows a command's options.\n",
            DEFAULT_CONFIG);
}

int cli_main(int argc, char **argv)
{
    const struct cmd *c;
    const char *name;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        name = "version";
    else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    c = find_cmd(name);
    if (!c) {
        fprintf(stderr, "hookd: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return c->handler(c, argc - 1, argv + 1);
}
