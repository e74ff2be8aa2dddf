/* report.c - the HTML health report: one self-contained page drawn from
 * the report op's JSON, charts as inline SVG, no script, font or other
 * file. Pure: the reply in, the page out. */
#include "report.h"
#include "esc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 900          /* chart width (SVG units) */
#define PAD_L 56
#define PAD_R 16
#define PAD_T 14
#define PAD_B 28
#define HOUR_MS 3600000LL

#define C_OK "#2ca02c"
#define C_FAIL "#d62728"
#define C_P50 "#1f77b4"
#define C_P95 "#ff7f0e"
#define C_P99 "#9467bd"

/* HTML text, with what esc.h calls unsafe shown as an escape: a bidi
 * override in an endpoint name would reorder the page. */
static void esc(struct buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0, i = 0, k;
    char rep[ESC_REP_MAX];

    for (; i < n; i += k) {
        k = esc_next(s + i, n - i, ESC_SHOW, rep);
        if (rep[0]) {
            buf_puts(b, rep);
            continue;
        }
        switch (s[i]) {
        case '&': buf_puts(b, "&amp;"); break;
        case '<': buf_puts(b, "&lt;"); break;
        case '>': buf_puts(b, "&gt;"); break;
        case '"': buf_puts(b, "&quot;"); break;
        case '\'': buf_puts(b, "&#39;"); break;
        default: buf_append(b, s + i, k);
        }
    }
}

static int64_t num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static int64_t at(const cJSON *row, int i, int *null)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    if (null)
        *null = !cJSON_IsNumber(v);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void fmt_time(int64_t ms, int with_date, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, n, with_date ? "%Y-%m-%d %H:%M" : "%H:%M", &tm);
}

/* 1, 2, 5 x 10^k at or above v (at least 1) */
double report_nice_max(double v)
{
    double p;

    if (v <= 1)
        return 1;
    p = pow(10, floor(log10(v)));
    if (v <= p)
        return p;
    if (v <= 2 * p)
        return 2 * p;
    if (v <= 5 * p)
        return 5 * p;
    return 10 * p;
}

struct frame {
    int h;                     /* chart height */
    int64_t t0, t1;            /* time axis */
    double ymax;
};

static double xpos(const struct frame *f, int64_t t)
{
    double span = (double)(f->t1 - f->t0);
    return PAD_L + (span > 0 ? (double)(t - f->t0) / span : 0) * (W - PAD_L - PAD_R);
}

static double ypos(const struct frame *f, double v)
{
    return f->h - PAD_B - (v / f->ymax) * (f->h - PAD_T - PAD_B);
}

/* the frame: y grid with labels (unit NULL: none), x ticks with times */
static void axes(struct buf *b, const struct frame *f, const char *unit)
{
    int64_t span = f->t1 - f->t0, step = HOUR_MS, t;
    int i, dated = span > 2 * 24 * HOUR_MS;

    for (i = 0; unit && i <= 4; i++) {
        double v = f->ymax * i / 4, y = ypos(f, v);
        buf_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", PAD_L, y, W - PAD_R, y);
        buf_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"ax\">%g%s</text>", PAD_L - 4, y + 4,
                   v, i == 4 ? unit : "");
    }
    while (span / step > 8)
        step *= span / step > 48 ? 6 : 2;
    for (t = f->t0 - f->t0 % step + step; t < f->t1; t += step) {
        char lbl[32];
        double x = xpos(f, t);
        fmt_time(t, dated, lbl, sizeof lbl);
        buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#bbb\"/>", x, f->h - PAD_B, x,
                   f->h - PAD_B + 4);
        buf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"ax\">%s</text>", x, f->h - 8, lbl);
    }
    buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>", PAD_L, f->h - PAD_B, W - PAD_R,
               f->h - PAD_B);
}

static void svg_open(struct buf *b, const char *kind, const char *label, int h)
{
    buf_printf(b, "<svg class=\"chart\" data-chart=\"%s\" role=\"img\" aria-label=\"", kind);
    esc(b, label);
    buf_printf(b, "\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">", W, h,
               W, h);
}

static void no_data(struct buf *b, int h)
{
    buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"none\">no data in this period</text>",
               W / 2, h / 2);
}

/* Deliveries (green) and failures (red) per hour, stacked. rows: arrays
 * [bucket_at, delivered, failed, ...]. */
static void chart_hourly(struct buf *b, const cJSON *rows, int64_t since, int64_t until, const char *label)
{
    int64_t h0 = since - since % HOUR_MS, nh = (until - h0) / HOUR_MS + 1, i;
    int64_t(*v)[2] = calloc((size_t)nh, sizeof *v);
    struct frame f = {200, h0, h0 + nh * HOUR_MS, 1};
    const cJSON *r;
    double max = 0, bw;

    svg_open(b, "hourly", label, f.h);
    if (!v) {
        buf_puts(b, "</svg>");
        return;
    }
    cJSON_ArrayForEach(r, rows)
    {
        int64_t k = (at(r, 0, NULL) - h0) / HOUR_MS;
        if (k >= 0 && k < nh) {
            v[k][0] += at(r, 1, NULL);
            v[k][1] += at(r, 2, NULL);
        }
    }
    for (i = 0; i < nh; i++)
        if (v[i][0] + v[i][1] > max)
            max = (double)(v[i][0] + v[i][1]);
    f.ymax = report_nice_max(max);
    axes(b, &f, "/h");
    bw = (W - PAD_L - PAD_R) / (double)nh;
    for (i = 0; i < nh; i++) {
        double x = xpos(&f, h0 + i * HOUR_MS) + bw * 0.1, yo = ypos(&f, (double)v[i][0]),
               yf = ypos(&f, (double)(v[i][0] + v[i][1]));
        if (v[i][0])
            buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" C_OK "\">"
                       "<title>%lld delivered</title></rect>", x, yo, bw * 0.8, ypos(&f, 0) - yo,
                       (long long)v[i][0]);
        if (v[i][1])
            buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" C_FAIL "\">"
                       "<title>%lld failed</title></rect>", x, yf, bw * 0.8, yo - yf, (long long)v[i][1]);
    }
    if (max == 0)
        no_data(b, f.h);
    buf_puts(b, "</svg>");
    free(v);
}

/* p50/p95/p99 over time: one polyline each, broken where a bucket had
 * no samples. rows: [bucket_at, d, f, opens, p50, p95, p99]. */
static void chart_latency(struct buf *b, const cJSON *rows, int64_t since, int64_t until, int64_t step,
                          const char *label)
{
    static const char *const colour[3] = {C_P50, C_P95, C_P99};
    static const char *const name[3] = {"p50", "p95", "p99"};
    struct frame f = {200, since, until, 1};
    const cJSON *r;
    double max = 0;
    int k, any = 0;

    svg_open(b, "latency", label, f.h);
    cJSON_ArrayForEach(r, rows)
    {
        int nul;
        int64_t v = at(r, 6, &nul);
        if (!nul && v > max)
            max = (double)v;
        any |= !nul;
    }
    f.ymax = report_nice_max(max);
    axes(b, &f, " ms");
    for (k = 0; k < 3; k++) {
        int open = 0;
        cJSON_ArrayForEach(r, rows)
        {
            int nul;
            int64_t v = at(r, 4 + k, &nul);
            double x = xpos(&f, at(r, 0, NULL) + step / 2);
            if (nul) {
                if (open)
                    buf_puts(b, "\"/>");
                open = 0;
                continue;
            }
            if (!open)
                buf_printf(b, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                           name[k], colour[k]);
            buf_printf(b, "%s%.1f,%.1f", open ? " " : "", x, ypos(&f, (double)v));
            open = 1;
        }
        if (open)
            buf_puts(b, "\"/>");
        /* a lone point draws nothing as a line: mark every point */
        cJSON_ArrayForEach(r, rows)
        {
            int nul;
            int64_t v = at(r, 4 + k, &nul);
            if (!nul)
                buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>%s %lld ms</title>"
                           "</circle>", xpos(&f, at(r, 0, NULL) + step / 2), ypos(&f, (double)v), colour[k],
                           name[k], (long long)v);
        }
    }
    if (!any)
        no_data(b, f.h);
    buf_puts(b, "</svg>");
}

/* One row per endpoint whose breaker opened, a mark per bucket. */
static void chart_openings(struct buf *b, const cJSON *eps, int64_t since, int64_t until, int64_t step)
{
    const cJSON *e, *r;
    int n = 0, row = 0;
    struct frame f = {0, since, until, 1};

    cJSON_ArrayForEach(e, eps)
        n += num(e, "breaker_opens") > 0;
    f.h = PAD_T + PAD_B + (n ? n : 1) * 22;
    svg_open(b, "openings", "breaker openings", f.h);
    axes(b, &f, NULL);
    cJSON_ArrayForEach(e, eps)
    {
        double y;
        if (num(e, "breaker_opens") <= 0)
            continue;
        y = PAD_T + row * 22 + 11;
        buf_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">", PAD_L - 4, y + 4);
        esc(b, str(e, "name"));
        buf_puts(b, "</text>");
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(e, "series"))
        {
            int64_t o = at(r, 3, NULL);
            if (o > 0)
                buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"" C_FAIL "\"><title>%lld opened"
                           "</title></circle>", xpos(&f, at(r, 0, NULL) + step / 2), y,
                           o > 4 ? 8.0 : 4.0 + (double)o, (long long)o);
        }
        row++;
    }
    if (!n)
        buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"none\">no breaker opened in this "
                   "period</text>", W / 2, PAD_T + 15);
    buf_puts(b, "</svg>");
}

/* Dead letters by error class: horizontal bars. */
static void chart_dead(struct buf *b, const cJSON *classes)
{
    const cJSON *c;
    int n = cJSON_GetArraySize(classes), i = 0;
    int h = PAD_T + 8 + (n ? n : 1) * 24;
    double max = 1;

    svg_open(b, "dead_letters", "dead letters by error class", h);
    cJSON_ArrayForEach(c, classes)
        if (at(c, 1, NULL) > max)
            max = (double)at(c, 1, NULL);
    cJSON_ArrayForEach(c, classes)
    {
        const cJSON *name = cJSON_GetArrayItem(c, 0);
        int64_t v = at(c, 1, NULL);
        double y = PAD_T + i * 24, w = (v / max) * (W - 200 - PAD_R - 60);
        buf_printf(b, "<text x=\"196\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">", y + 15);
        esc(b, cJSON_IsString(name) ? name->valuestring : "?");
        buf_printf(b, "</text><rect x=\"200\" y=\"%.1f\" width=\"%.1f\" height=\"18\" fill=\"" C_FAIL "\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">%lld</text>", y + 2, w < 1 ? 1 : w, 206 + w, y + 15,
                   (long long)v);
        i++;
    }
    if (!n)
        buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"none\">no dead letters in this "
                   "period</text>", W / 2, PAD_T + 18);
    buf_puts(b, "</svg>");
}

static void ms_cell(struct buf *b, const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNumber(v))
        buf_printf(b, "<td>%lld ms</td>", (long long)v->valuedouble);
    else
        buf_puts(b, "<td>-</td>");
}

int report_html(const cJSON *reply, int64_t generated_at, struct buf *out)
{
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(reply, "report");
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(rep, "endpoints");
    const cJSON *slow = cJSON_GetObjectItemCaseSensitive(rep, "slow"), *e;
    int64_t since = num(rep, "since"), until = num(rep, "until"), step = num(rep, "bucket_ms");
    int64_t shown = cJSON_GetArraySize(eps), active = num(rep, "endpoints_active");
    char a[40], z[40], g[40], bucket[32];

    if (!cJSON_IsObject(rep) || !cJSON_IsArray(eps) || step <= 0 || until <= since)
        return -1;
    fmt_time(since, 1, a, sizeof a);
    fmt_time(until, 1, z, sizeof z);
    fmt_time(generated_at, 1, g, sizeof g);
    util_fmt_duration(step, bucket, sizeof bucket);
    buf_puts(out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width\"><title>hookd health report</title>"
                  "<style>body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}"
                  "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
                  "h3{font-size:15px;margin:18px 0 4px}svg{display:block;max-width:100%;height:auto}"
                  ".ax{font-size:11px;fill:#666}.lbl{font-size:12px;fill:#222}.none{font-size:13px;fill:#999}"
                  "table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #eee;"
                  "text-align:right}td:first-child,th:first-child{text-align:left}.meta{color:#555}"
                  ".key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}"
                  ".st-open,.st-disabled{color:" C_FAIL ";font-weight:600}</style></head><body>\n");
    buf_printf(out, "<h1>hookd health report</h1><p class=\"meta\">%s to %s UTC (%lld h), buckets of %s; "
               "generated %s UTC. %lld endpoints, %lld with traffic in the period.</p>\n", a, z,
               (long long)num(rep, "hours"), bucket, g,
               (long long)num(rep, "endpoints_total"), (long long)active);
    buf_puts(out, "<h2>Deliveries and failures per hour, all endpoints</h2><p class=\"key\"><span style=\"background:"
                  C_OK "\"></span>delivered<span style=\"background:" C_FAIL "\"></span>failed attempts</p>");
    chart_hourly(out, cJSON_GetObjectItemCaseSensitive(rep, "totals"), since, until, "all endpoints per hour");
    buf_puts(out, "\n<h2>Breaker openings</h2>");
    chart_openings(out, eps, since, until, step);
    buf_puts(out, "\n<h2>Dead letters by error class</h2>");
    chart_dead(out, cJSON_GetObjectItemCaseSensitive(rep, "dead_letters"));
    buf_printf(out, "\n<h2>Slow endpoints (p95 over %lld ms)</h2>", (long long)num(rep, "slow_p95_ms"));
    if (cJSON_GetArraySize(slow) == 0) {
        buf_puts(out, "<p>None.</p>");
    } else {
        buf_puts(out, "<table><tr><th>endpoint</th><th>p50</th><th>p95</th><th>p99</th><th>samples</th></tr>");
        cJSON_ArrayForEach(e, slow)
        {
            buf_puts(out, "<tr><td>");
            esc(out, str(e, "name"));
            buf_puts(out, "</td>");
            ms_cell(out, e, "p50_ms");
            ms_cell(out, e, "p95_ms");
            ms_cell(out, e, "p99_ms");
            buf_printf(out, "<td>%lld</td></tr>", (long long)num(e, "sample_count"));
        }
        buf_puts(out, "</table>");
    }
    buf_puts(out, "\n<h2>Endpoints</h2><p class=\"key\"><span style=\"background:" C_P50 "\"></span>p50"
                  "<span style=\"background:" C_P95 "\"></span>p95<span style=\"background:" C_P99
                  "\"></span>p99 per bucket</p>");
    if (!shown)
        buf_puts(out, "<p>No endpoint had traffic in this period.</p>");
    cJSON_ArrayForEach(e, eps)
    {
        const char *state = str(e, "status");
        const cJSON *series = cJSON_GetObjectItemCaseSensitive(e, "series");
        if (strcmp(state, "active") == 0)
            state = str(e, "state");
        buf_puts(out, "\n<h3>");
        esc(out, str(e, "name"));
        buf_printf(out, "</h3><p class=\"meta\">now <span class=\"st-%s\">%s</span>; %lld attempts and %lld breaker "
                   "openings in the period</p>", state, state, (long long)num(e, "attempts"),
                   (long long)num(e, "breaker_opens"));
        chart_latency(out, series, since, until, step, str(e, "name"));
        chart_hourly(out, series, since, until, str(e, "name"));
    }
    if (active > shown)
        buf_printf(out, "<p class=\"meta\">%lld more endpoints had traffic; they count in the totals above.</p>",
                   (long long)(active - shown));
    buf_puts(out, "\n</body></html>\n");
    return out->failed ? -1 : 0;
}
