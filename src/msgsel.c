/* msgsel.c - message selectors: parsed from a request, matched against
 * rows, walked over a store in bounded pages. */
#include "msgsel.h"
#include "jpath.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rows asked of the store at a time: a PostgreSQL result is held whole
 * in memory, payloads included (50 of the largest, 256 KiB by default,
 * are 12.5 MiB) */
#define MSGSEL_PAGE 500
#define MSGSEL_PAGE_PAYLOADS 50
/* how far below since a walk goes on before it stops */
#define MSGSEL_SINCE_SLACK_MS (10 * 60 * 1000LL)
/* an endpoint's walk: ids per statement, and its bound in ids covered
 * against a plain walk's in rows read (measured: 100,000 ids filtered by
 * the store in 15 ms, 100,000 rows handed over in 80 ms) */
#define MSGSEL_SPAN 50000
#define MSGSEL_SPAN_FACTOR 5

/* the message for a member; -1 */
#define bad(err, errlen, fmt, name) (snprintf((err), (errlen), fmt, (name)), -1)

/* Optional string member of 1..max bytes: 0 absent, 1 copied, -1 bad. */
static int opt_str(const cJSON *o, const char *name, size_t max, char **out, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    size_t n;

    if (!it || cJSON_IsNull(it))
        return 0;
    if (!cJSON_IsString(it))
        return bad(err, errlen, "field '%s' must be a string", name);
    n = strlen(it->valuestring);
    if (n == 0 || n > max) {
        snprintf(err, errlen, "field '%s' must be 1-%zu bytes", name, max);
        return -1;
    }
    if (!(*out = strdup(it->valuestring)))
        return bad(err, errlen, "out of memory reading '%s'", name);
    return 1;
}

/* Optional integer member in min..max: 0 absent, 1 set, -1 bad. */
static int opt_int(const cJSON *o, const char *name, int64_t min, int64_t max, int64_t *out, char *err,
                   size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
    double d;

    if (!it || cJSON_IsNull(it))
        return 0;
    d = it->valuedouble;
    /* the range first: a double past int64 must never be converted */
    if (!cJSON_IsNumber(it) || !(d >= (double)min && d <= (double)max) || d != floor(d)) {
        snprintf(err, errlen, "field '%s' must be an integer in %lld..%lld", name, (long long)min, (long long)max);
        return -1;
    }
    *out = (int64_t)d;
    return 1;
}

/* "status": a name or an array of the five status names. */
static int opt_status(const cJSON *o, unsigned *out, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "status"), *el;
    enum msg_status ms;

    *out = 0;
    if (!it || cJSON_IsNull(it))
        return 0;
    if (!cJSON_IsString(it) && !(cJSON_IsArray(it) && cJSON_GetArraySize(it) > 0 && cJSON_GetArraySize(it) <= 8))
        goto bad;
    for (el = cJSON_IsString(it) ? it : it->child; el; el = el == it ? NULL : el->next) {
        if (!cJSON_IsString(el) || msg_status_parse(el->valuestring, &ms) < 0)
            goto bad;
        *out |= MSG_BIT(ms);
    }
    return 1;
bad:
    snprintf(err, errlen, "field 'status' must be one of, or an array of: pending, failed, in_flight, delivered, "
                          "dead_letter");
    return -1;
}

int msgsel_where_split(const char *text, size_t *eq, char *err, size_t errlen)
{
    const char *p = strchr(text, '=');
    size_t n = strlen(text);

    if (!p || p == text) {
        snprintf(err, errlen, "a where condition is FIELD=VALUE (a dotted path into the payload), not '%.64s'", text);
        return -1;
    }
    if ((size_t)(p - text) > MSGSEL_PATH_MAX || n - (size_t)(p - text) - 1 > MSGSEL_PATH_MAX) {
        snprintf(err, errlen, "a where condition's path and value are at most %d bytes each", MSGSEL_PATH_MAX);
        return -1;
    }
    *eq = (size_t)(p - text);
    return 0;
}

static int opt_where(const cJSON *o, struct msgsel *s, char *err, size_t errlen)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "where"), *el;
    size_t eq;

    if (!it || cJSON_IsNull(it))
        return 0;
    if (!cJSON_IsString(it) && !cJSON_IsArray(it))
        return bad(err, errlen, "field '%s' must be a string FIELD=VALUE or an array of them", "where");
    for (el = cJSON_IsString(it) ? it : it->child; el; el = el == it ? NULL : el->next) {
        struct msgsel_where *w;
        if (!cJSON_IsString(el))
            return bad(err, errlen, "field '%s' must be a string FIELD=VALUE or an array of them", "where");
        if (s->nwhere == MSGSEL_WHERE_MAX) {
            snprintf(err, errlen, "at most %d where conditions", MSGSEL_WHERE_MAX);
            return -1;
        }
        if (msgsel_where_split(el->valuestring, &eq, err, errlen) < 0)
            return -1;
        w = &s->where[s->nwhere];
        w->path = strndup(el->valuestring, eq);
        w->value = strdup(el->valuestring + eq + 1);
        s->nwhere++;
        if (!w->path || !w->value)
            return bad(err, errlen, "out of memory reading '%s'", "where");
    }
    return 1;
}

int msgsel_parse(const cJSON *o, struct msgsel *s, char *err, size_t errlen)
{
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(o, "dry_run");
    int g = 0, rc;

    memset(s, 0, sizeof *s);
    if (opt_int(o, "id", 1, INT64_MAX / 2, &s->id, err, errlen) < 0 ||
        opt_str(o, "endpoint", 64, &s->endpoint, err, errlen) < 0 ||
        opt_int(o, "since", 0, INT64_MAX / 2, &s->since, err, errlen) < 0)
        return -1;
    if ((rc = opt_str(o, "event_id", 200, &s->event_id, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_str(o, "type", 200, &s->type, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_str(o, "error_class", 64, &s->error_class, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_status(o, &s->statuses, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_int(o, "until", 1, INT64_MAX / 2, &s->until, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_where(o, s, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_int(o, "limit", 1, MSGSEL_LIMIT_MAX, &s->limit, err, errlen)) < 0)
        return -1;
    g |= rc;
    if ((rc = opt_int(o, "after", 1, INT64_MAX / 2, &s->after, err, errlen)) < 0)
        return -1;
    g |= rc;
    if (dr && !cJSON_IsNull(dr)) {
        if (!cJSON_IsBool(dr))
            return bad(err, errlen, "field '%s' must be true or false", "dry_run");
        s->dry_run = cJSON_IsTrue(dr);
        g = 1;
    }
    s->given = g;
    return 0;
}

void msgsel_free(struct msgsel *s)
{
    size_t i;

    if (!s)
        return;
    free(s->endpoint);
    free(s->event_id);
    free(s->type);
    free(s->error_class);
    for (i = 0; i < s->nwhere; i++) {
        free(s->where[i].path);
        free(s->where[i].value);
    }
    memset(s, 0, sizeof *s);
}

int msgsel_glob(const char *pat, const char *text)
{
    const char *star = NULL, *back = NULL;

    /* the classic two-pointer walk: linear in practice, never recursive */
    while (*text) {
        if (*pat == '*') {
            star = pat++;
            back = text;
        } else if (*pat == '?' || *pat == *text) {
            pat++;
            text++;
        } else if (star) {
            pat = star + 1;
            text = ++back;
        } else {
            return 0;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}

/* The payload's value at path equals value: a string as its text, any
 * other value as the JSON wrote it (12.50 is not 12.5). */
static int where_one(const struct msgsel_where *w, const char *payload, size_t len)
{
    struct jp_val v;
    struct buf b = {0};
    int eq;

    if (jpath_get(payload, len, w->path, strlen(w->path), &v) != 0)
        return 0;
    if (v.type != JP_STRING)
        return v.n == strlen(w->value) && memcmp(v.p, w->value, v.n) == 0;
    if (jpath_text(&v, &b) < 0) {
        buf_free(&b);
        return 0;
    }
    eq = b.len == strlen(w->value) && (b.len == 0 || memcmp(b.p, w->value, b.len) == 0);
    buf_free(&b);
    return eq;
}

int msgsel_match(const struct msgsel *s, const struct store_message *m, const char *payload, size_t len)
{
    size_t i;

    if ((s->id && m->id != s->id) || (s->event_id && (!m->event_id || strcmp(m->event_id, s->event_id) != 0)) ||
        (s->endpoint && (!m->endpoint || strcmp(m->endpoint, s->endpoint) != 0)) ||
        (s->statuses && !(s->statuses & MSG_BIT(m->status))) ||
        (s->type && (!m->event_type || !msgsel_glob(s->type, m->event_type))) ||
        (s->error_class && (!m->last_error_class || strcmp(m->last_error_class, s->error_class) != 0)) ||
        m->created_at < s->since || (s->until && m->created_at >= s->until) || (s->skip_erased && m->erased_at))
        return 0;
    for (i = 0; i < s->nwhere; i++)
        if (!payload || !where_one(&s->where[i], payload, len))
            return 0;
    return 1;
}

struct walk_ctx {
    const struct msgsel *s;
    int64_t max;
    int (*fn)(void *ctx, const struct store_message *m);
    void *ctx;
    struct msgsel_walk *out;
    int64_t last_scanned, last_given;
    int done;                    /* the walk is over (enough rows, too old, fn said so) */
    int full;                    /* a match beyond max exists */
    int page_rows;
};

static int walk_row(void *arg, const struct store_message *m, const char *payload, size_t len)
{
    struct walk_ctx *w = arg;
    int rc;

    w->out->scanned++;
    w->page_rows++;
    w->last_scanned = m->id;
    /* ids grow with insertion time: well below since nothing newer
     * follows (the slack covers a wall clock stepped back; rows moved in
     * by hookd import keep their older times: a since window can miss
     * them, an event id or a wider window finds them) */
    if (!w->s->event_id && w->s->since && m->created_at < w->s->since - MSGSEL_SINCE_SLACK_MS) {
        w->done = 1;
        return 1;
    }
    if (!msgsel_match(w->s, m, payload, len))
        return 0;
    if (w->out->matched == w->max) {
        w->full = w->done = 1;
        return 1;
    }
    w->out->matched++;
    w->last_given = m->id;
    if ((rc = w->fn(w->ctx, m)) != 0) {
        w->done = 1;
        return rc;
    }
    return 0;
}

struct probe {
    int64_t id, created_at;
};

static int probe_row(void *arg, const struct store_message *m, const char *payload, size_t len)
{
    struct probe *p = arg;

    (void)payload;
    (void)len;
    p->id = m->id;
    p->created_at = m->created_at;
    return 1;
}

/* The newest row below id x (p->id 0: none): one primary-key seek. */
static int probe(struct store *st, int64_t x, struct probe *p)
{
    struct store_scan sc = {.before = x, .limit = 1};

    p->id = p->created_at = 0;
    return st->ops->message_scan(st, &sc, probe_row, p);
}

/* The id below which every row was created before t: ids grow with
 * created_at, so the primary key is bisected for it (about 24 seeks for
 * 10M ids) rather than every newer row read (hookd(8)). top: the walk's
 * exclusive upper id; *at = top when the newest row below it is already
 * older than t (or there is none). 0, or -1 with the store's error. */
static int id_before(struct store *st, int64_t t, int64_t top, int64_t *at)
{
    int64_t lo = 1, hi;
    struct probe p;

    *at = top;
    if (probe(st, top, &p) < 0)
        return -1;
    if (!p.id || p.created_at < t)
        return 0;
    /* f(x) = created_at of the newest row below x; f(lo) < t <= f(hi) */
    hi = p.id + 1;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (probe(st, mid, &p) < 0)
            return -1;
        if (!p.id || p.created_at < t)
            lo = mid;
        else
            hi = mid;
    }
    *at = lo;
    return 0;
}

/* One endpoint's rows (no event id, not dead letters alone): the store
 * reads spans of ids and hands over only that endpoint's rows, which
 * costs a fraction of handing every row over (hookd(8)), so the bound is
 * MSGSEL_SPAN_FACTOR times the rows of a plain walk, counted in ids
 * covered. The window's ends are found by bisection: nothing outside
 * them is read. */
static int endpoint_walk(struct store *st, const struct msgsel *s, struct walk_ctx *w, int64_t top, int64_t cap)
{
    int64_t bottom = 1, covered = 0, want = s->nwhere ? MSGSEL_PAGE_PAYLOADS : MSGSEL_PAGE;
    struct probe p;

    if (top == INT64_MAX) {
        if (probe(st, INT64_MAX, &p) < 0)
            return -1;
        top = p.id + 1;   /* an empty table: 1, nothing to read */
    }
    if (s->since && id_before(st, s->since - MSGSEL_SINCE_SLACK_MS, top, &bottom) < 0)
        return -1;
    if (bottom < 1)
        bottom = 1;
    while (!w->done && top > bottom && covered < cap) {
        int64_t span = cap - covered < MSGSEL_SPAN ? cap - covered : MSGSEL_SPAN,
                floor = top - span > bottom ? top - span : bottom;
        struct store_scan sc = {.endpoint = s->endpoint, .before = top, .floor = floor, .limit = want,
                                .with_payload = s->nwhere > 0};
        w->page_rows = 0;
        if (st->ops->message_scan(st, &sc, walk_row, w) < 0)
            return -1;
        if (w->done || w->page_rows == want) {
            /* stopped inside the span: go on below its last row */
            covered += top - w->last_scanned;
            top = w->last_scanned;
        } else {
            covered += top - floor;
            top = floor;
        }
    }
    w->out->scanned = covered;
    if (w->full)
        w->out->next = w->last_given;
    else if (!w->done && top > bottom)
        w->out->next = top;
    return 0;
}

int msgsel_walk(struct store *st, const struct msgsel *s, int64_t max,
                int (*fn)(void *ctx, const struct store_message *m), void *ctx, struct msgsel_walk *out)
{
    struct walk_ctx w = {s, max, fn, ctx, out, 0, 0, 0, 0, 0};
    int64_t before = s->after, cap = s->scan_max > 0 ? s->scan_max : MSGSEL_SCAN_MAX;

    memset(out, 0, sizeof *out);
    if (s->id && s->after && s->id >= s->after)
        return 0;
    if (s->until && !s->id && !s->event_id) {
        int64_t top = before > 0 ? before : INT64_MAX;
        if (id_before(st, s->until + MSGSEL_SINCE_SLACK_MS, top, &top) < 0)
            return -1;
        before = top == INT64_MAX ? 0 : top;
    }
    if (s->endpoint && !s->id && !s->event_id && s->statuses != MSG_BIT(MSG_DEAD_LETTER))
        return endpoint_walk(st, s, &w, before > 0 ? before : INT64_MAX, cap * MSGSEL_SPAN_FACTOR);
    /* by id: the walk starts at it (its first row is it or older) */
    while (!w.done && out->scanned < cap) {
        int64_t want = s->nwhere ? MSGSEL_PAGE_PAYLOADS : MSGSEL_PAGE,
                page = cap - out->scanned < want ? cap - out->scanned : want;
        w.page_rows = 0;
        struct store_scan sc = {.event_id = s->event_id,
                                /* dead letters have indexes of their own */
                                .dead_letters = s->statuses == MSG_BIT(MSG_DEAD_LETTER),
                                .endpoint = s->endpoint,
                                .before = s->id ? s->id + 1 : before,
                                .limit = s->id ? 1 : page,
                                .with_payload = s->nwhere > 0};
        if (st->ops->message_scan(st, &sc, walk_row, &w) < 0)
            return -1;
        if (w.page_rows < page || s->id)
            break;   /* nothing older is left */
        before = w.last_scanned;
    }
    if (w.full)
        out->next = w.last_given;
    else if (!w.done && out->scanned >= cap && w.page_rows)
        out->next = w.last_scanned;
    return 0;
}
