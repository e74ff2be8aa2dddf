/* topview.c - rows, sorting and layout of `hookd top`. */
#include "topview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const col_names[TOP__NCOLS] = {
    "name", "state", "inflight", "dlv", "fail", "p50", "p95", "p99", "queue", "oldest",
};
/* header labels and widths (NAME takes what is left) */
static const char *const col_labels[TOP__NCOLS] = {
    "NAME", "STATE", "INFL/LIM", "DLV/s", "FAIL/s", "P50", "P95", "P99", "QUEUE", "OLDEST",
};
static const int col_width[TOP__NCOLS] = {0, 8, 9, 6, 7, 5, 5, 5, 6, 7};
#define NAME_MIN 8
#define CELL (ENDPOINT_NAME_MAX + 32)

const char *top_col_name(enum top_col c)
{
    return (int)c >= 0 && c < TOP__NCOLS ? col_names[c] : "?";
}

int top_col_parse(const char *name)
{
    int i;

    for (i = 0; i < TOP__NCOLS; i++)
        if (strcmp(name, col_names[i]) == 0)
            return i;
    return -1;
}

int top_col_default_desc(enum top_col c)
{
    return c != TOP_NAME && c != TOP_STATE;
}

int top_col_key(int key)
{
    if (key >= '1' && key <= '9')
        return key - '1';
    if (key == '0')
        return TOP__NCOLS - 1;
    return -1;
}

static int64_t num(const cJSON *o, const char *k, int64_t none)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : none;
}

static void row_of(const cJSON *e, int window_s, struct top_row *r)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(e, "queue");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "last_10s");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "state");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
    const char *s;

    memset(r, 0, sizeof *r);
    util_strlcpy(r->name, cJSON_IsString(nm) ? nm->valuestring : "?", sizeof r->name);
    util_printable(r->name);
    s = cJSON_IsString(st) ? st->valuestring : "?";
    if (cJSON_IsString(status) && strcmp(status->valuestring, "active") != 0)
        s = status->valuestring;   /* paused or disabled says more than the breaker */
    else if (strcmp(s, "open") == 0)
        s = "OPEN";
    else if (strcmp(s, "half_open") == 0)
        s = "half";
    util_strlcpy(r->state, s, sizeof r->state);
    util_printable(r->state);
    r->in_flight = num(q, "in_flight", 0);
    r->limit = num(e, "concurrency_limit", -1);
    r->dps = (double)num(w, "delivered", 0) / window_s;
    r->fps = (double)num(w, "failed", 0) / window_s;
    r->p50 = num(e, "p50_ms", -1);
    r->p95 = num(e, "p95_ms", -1);
    r->p99 = num(e, "p99_ms", -1);
    r->queue = num(q, "pending", 0) + num(q, "failed", 0);
    r->oldest_ms = num(e, "oldest_pending_age_ms", -1);
}

int top_parse(const cJSON *reply, int window_s, struct top_frame *out)
{
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(reply, "endpoints"), *e;
    struct top_row *t = &out->total;
    size_t n = 0;

    memset(out, 0, sizeof *out);
    if (!cJSON_IsArray(eps) || window_s <= 0)
        return -1;
    n = (size_t)cJSON_GetArraySize(eps);
    if (n && !(out->rows = calloc(n, sizeof *out->rows)))
        return -1;
    snprintf(t->name, sizeof t->name, "TOTAL (%zu)", n);
    snprintf(t->state, sizeof t->state, "-");
    t->limit = 0;
    t->p50 = t->p95 = t->p99 = -1;
    t->oldest_ms = -1;
    cJSON_ArrayForEach(e, eps)
    {
        struct top_row *r = &out->rows[out->n++];
        row_of(e, window_s, r);
        t->in_flight += r->in_flight;
        t->limit += r->limit > 0 ? r->limit : 0;
        t->dps += r->dps;
        t->fps += r->fps;
        t->queue += r->queue;
        if (r->oldest_ms > t->oldest_ms)
            t->oldest_ms = r->oldest_ms;
    }
    return 0;
}

void top_frame_free(struct top_frame *f)
{
    free(f->rows);
    f->rows = NULL;
    f->n = 0;
}

static enum top_col sort_by;
static int sort_desc;

static int cmp_num(double a, double b)
{
    return a < b ? -1 : a > b;
}

static int cmp_rows(const void *pa, const void *pb)
{
    const struct top_row *a = pa, *b = pb;
    int c = 0;

    switch (sort_by) {
    case TOP_NAME: c = strcmp(a->name, b->name); break;
    case TOP_STATE: c = strcmp(a->state, b->state); break;
    case TOP_INFLIGHT: c = cmp_num((double)a->in_flight, (double)b->in_flight); break;
    case TOP_DPS: c = cmp_num(a->dps, b->dps); break;
    case TOP_FPS: c = cmp_num(a->fps, b->fps); break;
    case TOP_P50: c = cmp_num((double)a->p50, (double)b->p50); break;
    case TOP_P95: c = cmp_num((double)a->p95, (double)b->p95); break;
    case TOP_P99: c = cmp_num((double)a->p99, (double)b->p99); break;
    case TOP_QUEUE: c = cmp_num((double)a->queue, (double)b->queue); break;
    case TOP_OLDEST: c = cmp_num((double)a->oldest_ms, (double)b->oldest_ms); break;
    default: break;
    }
    if (sort_desc)
        c = -c;
    return c ? c : strcmp(a->name, b->name);   /* stable between refreshes */
}

void top_sort(struct top_frame *f, enum top_col by, int desc)
{
    f->sort = by;
    f->desc = desc;
    sort_by = by;
    sort_desc = desc;
    if (f->n > 1)
        qsort(f->rows, f->n, sizeof *f->rows, cmp_rows);
}

/* ---- cells: every value fits its column ---- */

static void fmt_count(double v, char *out, size_t n)
{
    if (v < 0)
        snprintf(out, n, "-");
    else if (v < 100000)
        snprintf(out, n, "%.0f", v);
    else if (v < 99950000)
        snprintf(out, n, "%.0fk", v / 1000);
    else
        snprintf(out, n, "%.0fM", v / 1e6);
}

static void fmt_rate(double v, char *out, size_t n)
{
    if (v == 0)
        snprintf(out, n, "0");
    else if (v < 100)
        snprintf(out, n, "%.1f", v);
    else if (v < 100000)
        snprintf(out, n, "%.0f", v);
    else
        snprintf(out, n, "%.0fk", v / 1000);
}

static void fmt_ms(int64_t v, char *out, size_t n)
{
    if (v < 0)
        snprintf(out, n, "-");
    else if (v < 10000)
        snprintf(out, n, "%lld", (long long)v);
    else if (v < 100000)
        snprintf(out, n, "%.0fs", (double)v / 1000);
    else
        snprintf(out, n, "%lldm", (long long)(v / 60000));
}

static void fmt_age(int64_t ms, char *out, size_t n)
{
    int64_t s = ms / 1000;

    if (ms < 0)
        snprintf(out, n, "-");
    else if (s < 60)
        snprintf(out, n, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(out, n, "%lldm", (long long)(s / 60));
    else if (s < 86400 * 2)
        snprintf(out, n, "%lldh", (long long)(s / 3600));
    else
        snprintf(out, n, "%lldd", (long long)(s / 86400));
}

static void cells(const struct top_row *r, char c[TOP__NCOLS][CELL])
{
    char a[16], b[16];

    snprintf(c[TOP_NAME], CELL, "%s", r->name);
    snprintf(c[TOP_STATE], CELL, "%s", r->state);
    fmt_count((double)r->in_flight, a, sizeof a);
    fmt_count((double)r->limit, b, sizeof b);
    snprintf(c[TOP_INFLIGHT], CELL, "%s/%s", a, b);
    fmt_rate(r->dps, c[TOP_DPS], CELL);
    fmt_rate(r->fps, c[TOP_FPS], CELL);
    fmt_ms(r->p50, c[TOP_P50], CELL);
    fmt_ms(r->p95, c[TOP_P95], CELL);
    fmt_ms(r->p99, c[TOP_P99], CELL);
    fmt_count((double)r->queue, c[TOP_QUEUE], CELL);
    fmt_age(r->oldest_ms, c[TOP_OLDEST], CELL);
}

static int name_width(int width)
{
    int i, w = width;

    for (i = 1; i < TOP__NCOLS; i++)
        w -= col_width[i] + 1;
    if (w > ENDPOINT_NAME_MAX)
        w = ENDPOINT_NAME_MAX;
    return w < NAME_MIN ? NAME_MIN : w;
}

static void line(struct buf *out, char c[TOP__NCOLS][CELL], int nw, int width)
{
    char l[512];
    size_t len = 0;
    int i;

    len += (size_t)snprintf(l, sizeof l, "%-*.*s", nw, nw, c[0]);
    for (i = 1; i < TOP__NCOLS && len < sizeof l; i++)
        len += (size_t)snprintf(l + len, sizeof l - len, " %*.*s", col_width[i], col_width[i], c[i]);
    if (len > (size_t)width)
        len = (size_t)width;
    while (len && l[len - 1] == ' ')
        len--;
    buf_append(out, l, len);
    buf_puts(out, "\n");
}

int top_render(const struct top_frame *f, const char *title, int width, size_t max_rows, struct buf *out)
{
    char c[TOP__NCOLS][CELL], keys[160];
    int nw = name_width(width), i;
    size_t k, shown;

    if (width < 20)
        width = 20;
    buf_printf(out, "%.*s\n", width, title);
    for (i = 0; i < TOP__NCOLS; i++) {
        /* the sort column is marked: > ascending, < descending */
        snprintf(c[i], sizeof c[i], "%s%s", col_labels[i], (int)f->sort == i ? (f->desc ? "<" : ">") : "");
    }
    line(out, c, nw, width);
    shown = max_rows && f->n > max_rows ? max_rows : f->n;
    for (k = 0; k < shown; k++) {
        cells(&f->rows[k], c);
        line(out, c, nw, width);
    }
    cells(&f->total, c);
    if (shown < f->n)
        snprintf(c[TOP_NAME], sizeof c[TOP_NAME], "(+%zu) TOTAL %zu", f->n - shown, f->n);
    line(out, c, nw, width);
    snprintf(keys, sizeof keys, "sort: 1-9,0 = column (now %s %s)  r reverse  q quit", top_col_name(f->sort),
             f->desc ? "desc" : "asc");
    buf_printf(out, "%.*s\n", width, keys);
    return out->failed ? -1 : 0;
}
