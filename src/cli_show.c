/* cli_show.c - replies printed for people. */
#include "cli_show.h"
#include "esc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- output helpers ---------- */

const cJSON *cli_jget(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static int is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9e15;
}

/* Daemon strings can carry text from remote servers (error messages,
 * response excerpts) and from payloads: no control character, C1 or bidi
 * override reaches the terminal. A backslash stays as it is: excerpts
 * arrive escaped already. */
void cli_sanitize(const char *s, char *out, size_t n)
{
    esc_str(out, n, s, ESC_SHOW);
}

void cli_fmt_val(const cJSON *v, char *out, size_t n)
{
    if (!v || cJSON_IsNull(v))
        snprintf(out, n, "-");
    else if (is_int(v))
        snprintf(out, n, "%lld", (long long)v->valuedouble);
    else if (cJSON_IsNumber(v))
        snprintf(out, n, "%.1f", v->valuedouble);
    else if (cJSON_IsString(v))
        cli_sanitize(*v->valuestring ? v->valuestring : "-", out, n);
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
        cli_fmt_val(v, out, n);
}

static void fmt_time(const cJSON *v, char *out, size_t n)
{
    if (cJSON_IsNumber(v))
        util_fmt_time((int64_t)v->valuedouble, out, n);
    else
        cli_fmt_val(v, out, n);
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
    char kind;         /* 'v' value, 'm' milliseconds, 't' time, '#' row number, 'd' attempt detail,
                        * 'T' an endpoint's client certificate and pins */
    size_t maxw;       /* cut longer values (0: no limit); --json has them whole */
};

#define COLS_MAX 16

/* An attempt's detail without the class it starts with: a transport
 * error is stored as "dns: Could not resolve host: ..." (the message's
 * last_error), and its class is shown beside it already. */
static void fmt_detail(const cJSON *attempt, char *out, size_t n)
{
    const cJSON *cls = cli_jget(attempt, "error_class"), *d = cli_jget(attempt, "detail");
    size_t l;

    if (cJSON_IsString(cls) && cJSON_IsString(d) && (l = strlen(cls->valuestring)) > 0 &&
        strncmp(d->valuestring, cls->valuestring, l) == 0 && strncmp(d->valuestring + l, ": ", 2) == 0 &&
        d->valuestring[l + 2]) {
        cli_sanitize(d->valuestring + l + 2, out, n);
        return;
    }
    cli_fmt_val(d, out, n);
}

/* An endpoint's TLS identity at a glance: "mtls" (a client certificate),
 * "pin", both, or "-"; the paths are in --json's settings. */
static void fmt_tlsid(const cJSON *ep, char *out, size_t n)
{
    const cJSON *s = cli_jget(ep, "settings");
    int cert = cli_jget(s, "client_cert") != NULL, pin = cli_jget(s, "pinned_pubkey") != NULL;

    snprintf(out, n, "%s", cert && pin ? "mtls+pin" : cert ? "mtls" : pin ? "pin" : "-");
}

static void fmt_kind(char kind, const cJSON *x, char *out, size_t n)
{
    if (kind == 't')
        fmt_time(x, out, n);
    else if (kind == 'm')
        fmt_ms(x, out, n);
    else
        cli_fmt_val(x, out, n);
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
            const cJSON *x = cli_jget(c->sub ? cli_jget(it, c->sub) : it, c->key);
            if (c->kind == '#')
                snprintf(cells[i], sizeof cells[i], "%d", n);
            else if (c->kind == 'd')
                fmt_detail(it, cells[i], sizeof cells[i]);
            else if (c->kind == 'T')
                fmt_tlsid(it, cells[i], sizeof cells[i]);
            else
                fmt_kind(c->kind, x, cells[i], sizeof cells[i]);
            if (c->maxw > 3 && c->maxw < sizeof cells[i] && strlen(cells[i]) > c->maxw) {
                size_t cut = c->maxw - 3;
                while (cut > 0 && ((unsigned char)cells[i][cut] & 0xc0) == 0x80)
                    cut--;   /* not inside a character */
                memcpy(cells[i] + cut, "...", 4);
            }
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

void cli_show_ping(const cJSON *r, const struct args *a)
{
    char v[64];

    cli_fmt_val(cli_jget(r, "version"), v, sizeof v);
    printf("pong (hookd %s)\n", v);
}

void cli_show_send(const cJSON *r, const struct args *a)
{
    const cJSON *dl = cli_jget(r, "deliveries"), *d;
    char id[32], ev[256], ep[128];

    cli_fmt_val(cli_jget(r, "event_id"), ev, sizeof ev);
    if (cJSON_IsTrue(cli_jget(r, "filtered"))) {
        printf("filtered event_id=%s (the endpoint's filter keeps it out; nothing stored)\n", ev);
        return;
    }
    if (!cJSON_IsArray(dl)) {
        cli_fmt_val(cli_jget(r, "id"), id, sizeof id);
        printf("%s id=%s event_id=%s", cJSON_IsTrue(cli_jget(r, "duplicate")) ? "duplicate" : "queued", id, ev);
        if (cJSON_IsNumber(cli_jget(r, "deliver_at"))) {
            fmt_time(cli_jget(r, "deliver_at"), ep, sizeof ep);
            printf(" deliver_at=%s", ep);
        }
        printf("\n");
        return;
    }
    if (cJSON_IsNumber(cli_jget(r, "filtered")))
        printf("filtered %d endpoint(s) event_id=%s\n", cli_jget(r, "filtered")->valueint, ev);
    if (cJSON_GetArraySize(dl) == 0)
        printf("no deliveries event_id=%s\n", ev);
    cJSON_ArrayForEach(d, dl) {
        cli_fmt_val(cli_jget(d, "id"), id, sizeof id);
        cli_fmt_val(cli_jget(d, "endpoint"), ep, sizeof ep);
        printf("%s id=%s event_id=%s endpoint=%s\n",
               cJSON_IsTrue(cli_jget(d, "duplicate")) ? "duplicate" : "queued", id, ev, ep);
    }
}

void cli_show_get(const cJSON *r, const struct args *a)
{
    static const struct {
        const char *key;
        char kind; /* v value, t time, m milliseconds */
    } rows[] = {
        {"id", 'v'},           {"endpoint", 'v'},        {"event_id", 'v'},
        {"event_type", 'v'},   {"status", 'v'},          {"attempt_count", 'v'},
        {"max_attempts", 'v'}, {"created_at", 't'},      {"next_attempt_at", 't'},
        {"claimed_at", 't'},   {"delivered_at", 't'},    {"last_error", 'v'},
        {"last_error_class", 'v'}, {"last_status_code", 'v'}, {"last_response_ms", 'm'},
        {"payload_bytes", 'v'},    {"erased_at", 't'},
    };
    static const struct col attempt_cols[] = {
        /* a requeue is attempt 0 of the generation it begins */
        {"GEN", "generation", NULL, 'v', 0},
        {"#", "attempt", NULL, 'v', 0},
        {"AT", "at", NULL, 't', 0},
        {"STATUS", "status_code", NULL, 'v', 0},
        {"RESPONSE", "response_ms", NULL, 'm', 0},
        {"ERROR", "error_class", NULL, 'v', 0},
        {"DETAIL", "detail", NULL, 'd', 40},
        {"METHOD", "method", NULL, 'v', 0},
        {"URL (hookd attempts ID: whole)", "url", NULL, 'v', 50},
    };
    const cJSON *m = cli_jget(r, "message"), *at;
    char v[512];
    size_t i;

    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fmt_kind(rows[i].kind, cli_jget(m, rows[i].key), v, sizeof v);
        printf("%-17s %s\n", rows[i].key, v);
    }
    at = cli_jget(m, "attempts");
    if (!cJSON_IsArray(at) || cJSON_GetArraySize(at) == 0)
        return;
    printf("\nattempts:\n");
    print_list(at, attempt_cols, sizeof attempt_cols / sizeof attempt_cols[0]);
}

/* One block per attempt: the URL and the response do not fit a column. */
void cli_show_attempts(const cJSON *r, const struct args *a)
{
    const cJSON *at = cli_jget(r, "attempts"), *it;
    char v[4096], w[64];
    int n = 0;

    (void)a;
    cJSON_ArrayForEach(it, at) {
        const cJSON *num = cli_jget(it, "attempt"), *gen = cli_jget(it, "generation");
        fmt_kind('t', cli_jget(it, "at"), w, sizeof w);
        if (cJSON_IsNumber(num) && num->valueint == 0) {
            /* the log keeps what came before a requeue */
            printf("%srequeued  %s  (generation %d begins)\n", n ? "\n" : "", w,
                   cJSON_IsNumber(gen) ? gen->valueint : 0);
            n++;
            continue;
        }
        if (cJSON_IsNumber(gen) && gen->valueint > 0)
            printf("%sattempt %d  %s  (generation %d)\n", n ? "\n" : "", cJSON_IsNumber(num) ? num->valueint : n + 1,
                   w, gen->valueint);
        else
            printf("%sattempt %d  %s\n", n ? "\n" : "", cJSON_IsNumber(num) ? num->valueint : n + 1, w);
        n++;
        cli_fmt_val(cli_jget(it, "method"), v, sizeof v);
        printf("  request   %s ", v);
        cli_fmt_val(cli_jget(it, "url"), v, sizeof v);
        printf("%s\n", v);
        cli_fmt_val(cli_jget(it, "status_code"), v, sizeof v);
        fmt_kind('m', cli_jget(it, "response_ms"), w, sizeof w);
        printf("  status    %s in %s\n", v, w);
        cli_fmt_val(cli_jget(it, "error_class"), v, sizeof v);
        if (v[0] && strcmp(v, "-") != 0) {
            printf("  error     %s", v);
            fmt_detail(it, v, sizeof v);
            printf(": %s\n", v);
        }
        cli_fmt_val(cli_jget(it, "response"), v, sizeof v);
        printf("  response  %s\n", v);
    }
    if (!n)
        printf("no attempts yet\n");
}

void cli_show_stats(const cJSON *r, const struct args *a)
{
    static const char *const counts[] = {"pending", "awaiting_retry", "in_flight", "dead_letter",
                                         "delivered_last_hour", "failed_last_hour", "scheduled"};
    const cJSON *s = cli_jget(r, "stats"), *age;
    char v[128], w[64];
    size_t i;

    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        cli_fmt_val(cli_jget(s, counts[i]), v, sizeof v);
        printf("%-26s %s\n", counts[i], v);
    }
    fmt_time(cli_jget(s, "oldest_pending"), v, sizeof v);
    age = cli_jget(s, "oldest_pending_age_ms");
    if (cJSON_IsNumber(age)) {
        fmt_age((int64_t)age->valuedouble, w, sizeof w);
        printf("%-26s %s (%s ago)\n", "oldest_pending", v, w);
    } else {
        printf("%-26s %s\n", "oldest_pending", v);
    }
    fmt_ms(cli_jget(s, "avg_delivery_ms_last_hour"), v, sizeof v);
    printf("%-26s %s\n", "avg_delivery_last_hour", v);
}

void cli_show_endpoints(const cJSON *r, const struct args *a)
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
        {"LIMIT", "concurrency_limit", NULL, 'v', 0},
        {"DEAD", "dead_letter", "queue", 'v', 0},
        {"STATUS", "status", NULL, 'v', 0},
        {"TLS", NULL, NULL, 'T', 0},
        {"PROXY", "proxy", "settings", 'v', 0},   /* credentials stored apart: never here */
        {"URL", "url", NULL, 'v', 0},
    };
    const cJSON *eps = cli_jget(r, "endpoints");

    if (cJSON_GetArraySize(eps) == 0) {
        printf("no endpoints\n");
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

void cli_show_put(const cJSON *r, const struct args *a)
{
    const cJSON *ep = cli_jget(r, "endpoint");
    char name[128], id[32];

    cli_fmt_val(cli_jget(ep, "name"), name, sizeof name);
    cli_fmt_val(cli_jget(ep, "id"), id, sizeof id);
    printf("%s endpoint %s (id %s)\n", cJSON_IsTrue(cli_jget(r, "created")) ? "created" : "updated", name,
           id);
}

void cli_show_delete(const cJSON *r, const struct args *a)
{
    char n[32], name[128];

    cli_sanitize(a->pos[0], name, sizeof name);
    cli_fmt_val(cli_jget(r, "dead_lettered"), n, sizeof n);
    printf("deleted endpoint %s (%s queued messages moved to dead letters)\n", name, n);
}

void cli_show_requeue(const cJSON *r, const struct args *a)
{
    char n[32];

    cli_fmt_val(cli_jget(r, "requeued"), n, sizeof n);
    printf("requeued %s\n", n);
}

void cli_show_purge(const cJSON *r, const struct args *a)
{
    char n[32];

    cli_fmt_val(cli_jget(r, "purged"), n, sizeof n);
    printf("purged %s dead letters\n", n);
}

void cli_show_pause(const cJSON *r, const struct args *a)
{
    char name[128];

    cli_fmt_val(cli_jget(r, "endpoint"), name, sizeof name);
    printf("%s %s\n", cJSON_IsTrue(cli_jget(r, "paused")) ? "paused" : "resumed", name);
}

void cli_show_dead(const cJSON *r, const struct args *a)
{
    /* the example (a body excerpt or curl's message) is cut; the full text
     * is in --json and `get` */
    static const struct col cols[] = {
        {"ENDPOINT", "endpoint", NULL, 'v', 0},
        {"COUNT", "dead_count", NULL, 'v', 0},
        {"PRIMARY_ERROR", "primary_error", NULL, 'v', 0},
        {"STATUS", "primary_status_code", NULL, 'v', 0},
        {"FIRST", "first_dead", NULL, 't', 0},
        {"LAST", "last_dead", NULL, 't', 0},
        {"AVG_ATTEMPTS", "avg_attempts", NULL, 'v', 0},
        {"EXAMPLE", "example_error", NULL, 'v', 60},
    };
    const cJSON *eps = cli_jget(r, "endpoints");
    char h[32];

    if (cJSON_GetArraySize(eps) == 0) {
        cli_fmt_val(cli_jget(r, "hours"), h, sizeof h);
        printf("no dead letters in the last %s hours\n", h);
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

void cli_show_slow(const cJSON *r, const struct args *a)
{
    static const struct col cols[] = {
        {"NAME", "name", NULL, 'v', 0},
        {"P50", "p50_ms", NULL, 'm', 0},
        {"P95", "p95_ms", NULL, 'm', 0},
        {"P99", "p99_ms", NULL, 'm', 0},
        {"SAMPLES", "sample_count", NULL, 'v', 0},
        {"STATE", "state", NULL, 'v', 0},
    };
    const cJSON *eps = cli_jget(r, "endpoints");
    char th[32];

    if (cJSON_GetArraySize(eps) == 0) {
        fmt_ms(cli_jget(r, "p95_ms"), th, sizeof th);
        printf("no endpoints with p95 above %s\n", th);
        return;
    }
    print_list(eps, cols, sizeof cols / sizeof cols[0]);
}

void cli_show_metrics(const cJSON *r, const struct args *a)
{
    const cJSON *t = cli_jget(r, "text");

    if (cJSON_IsString(t))
        fputs(t->valuestring, stdout);
}


