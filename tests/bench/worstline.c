/* worstline.c - the event loop's cost of the most expensive request lines
 * a local client can send (make bench-hostile).
 *
 * Every request line is parsed and validated on the event-loop thread
 * (proto_parse) before the op or the caller's rights are known, so the
 * time of one proto_parse call is the time every other client waits
 * behind that line. This builds lines of up to max_line bytes (default
 * 1 MiB) shaped to be slow -- many members, repeated members, long
 * shared name prefixes, huge arrays, escapes, deep nesting -- runs each
 * ROUNDS times and prints the median and the maximum time per line, then
 * the worst of them. With -o DIR it also writes each line to DIR (the
 * fuzz corpus keeps 32 KiB copies of the same shapes).
 *
 *   worstline [-n ROUNDS] [-l MAX_LINE] [-p MAX_PAYLOAD] [-t TARGET_MS] [-o DIR]
 *
 * Times are the thread's CPU time (the line's own cost; on a shared
 * machine the wall clock also counts the time other processes held the
 * core) and, for information, the largest wall-clock time. Exit status 1
 * when a line's maximum CPU time is above TARGET_MS (default 5). */
#include "proto.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct line {
    char name[48];
    struct buf b;
};

/* Fill b up to about max bytes: head, then item(i) repeated, then tail. */
static void fill(struct buf *b, size_t max, const char *head, const char *tail,
                 int (*item)(struct buf *b, size_t i))
{
    size_t i, tl = strlen(tail);

    buf_puts(b, head);
    for (i = 0; b->len + 64 + tl < max; i++)
        item(b, i);
    buf_puts(b, tail);
}

static int it_members(struct buf *b, size_t i) { return buf_printf(b, ",\"m%zu\":0", i); }
static int it_dup(struct buf *b, size_t i) { (void)i; return buf_puts(b, ",\"m\":0"); }
static int it_prefix(struct buf *b, size_t i)
{
    /* names sharing a 40-byte prefix: every comparison runs to its end */
    return buf_printf(b, ",\"%s%zu\":0", "pppppppppppppppppppppppppppppppppppppppp", i);
}
static int it_zero(struct buf *b, size_t i) { return buf_puts(b, i ? ",0" : "0"); }
static int it_obj(struct buf *b, size_t i) { return buf_puts(b, i ? ",{}" : "{}"); }
static int it_uesc(struct buf *b, size_t i) { (void)i; return buf_puts(b, "\\u00e9"); }
static int it_nul(struct buf *b, size_t i) { (void)i; return buf_puts(b, "\\\\\\\\u0000"); }
static int it_bs(struct buf *b, size_t i) { (void)i; return buf_puts(b, "\\\\"); }
static int it_utf8(struct buf *b, size_t i) { (void)i; return buf_puts(b, "\xf0\x9f\x98\x80"); }
static int it_num(struct buf *b, size_t i) { return buf_puts(b, i ? ",1e999" : "1e999"); }
static int it_pmembers(struct buf *b, size_t i) { return buf_printf(b, "%s\"k%zu\":0", i ? "," : "", i); }
static int it_nest(struct buf *b, size_t i) { return buf_puts(b, i ? ",[[[[[[[[[[1]]]]]]]]]]" : "[[[[[[[[[[1]]]]]]]]]]"); }
static int it_strs(struct buf *b, size_t i) { return buf_puts(b, i ? ",\"\"" : "\"\""); }

static size_t build(struct line *L, size_t max_line, size_t max_payload)
{
    size_t n = 0, pl = max_payload - 16;

#define ADD(nm) (memset(&L[n], 0, sizeof L[n]), snprintf(L[n].name, sizeof L[n].name, "%s", nm), &L[n++].b)
    fill(ADD("members-distinct"), max_line, "{\"op\":\"ping\"", "}", it_members);
    fill(ADD("members-repeated"), max_line, "{\"op\":\"ping\"", "}", it_dup);
    fill(ADD("members-long-prefix"), max_line, "{\"op\":\"ping\"", "}", it_prefix);
    fill(ADD("members-op-last"), max_line, "{\"a\":0", ",\"op\":\"ping\"}", it_members);
    fill(ADD("put-members"), max_line, "{\"op\":\"endpoint.put\",\"name\":\"x\"", "}", it_members);
    fill(ADD("array-of-zeros"), max_line, "{\"op\":\"ping\",\"x\":[", "]}", it_zero);
    fill(ADD("array-of-objects"), max_line, "{\"op\":\"ping\",\"x\":[", "]}", it_obj);
    fill(ADD("array-of-strings"), max_line, "{\"op\":\"ping\",\"x\":[", "]}", it_strs);
    fill(ADD("array-of-nests"), max_line, "{\"op\":\"ping\",\"x\":[", "]}", it_nest);
    fill(ADD("numbers-overflow"), max_line, "{\"op\":\"ping\",\"x\":[", "]}", it_num);
    fill(ADD("string-u-escapes"), max_line, "{\"op\":\"ping\",\"x\":\"", "\"}", it_uesc);
    fill(ADD("string-nul-escapes"), max_line, "{\"op\":\"ping\",\"x\":\"", "\"}", it_nul);
    fill(ADD("string-backslashes"), max_line, "{\"op\":\"ping\",\"x\":\"", "\"}", it_bs);
    fill(ADD("string-utf8"), max_line, "{\"op\":\"ping\",\"x\":\"", "\"}", it_utf8);
    fill(ADD("payload-zeros"), pl, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":[", "]}", it_zero);
    fill(ADD("payload-members"), pl, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":{", "}}", it_pmembers);
    fill(ADD("payload-nul-escapes"), pl, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":[\"", "\"]}", it_nul);
    fill(ADD("payload-too-large"), max_line, "{\"op\":\"enqueue\",\"endpoint\":\"a\",\"payload\":[", "]}", it_zero);
    {
        /* 999 levels (cJSON's limit is 1000) repeated as siblings */
        struct buf *b = ADD("deep-nesting");
        size_t i;
        buf_puts(b, "{\"op\":\"ping\",\"x\":[");
        while (b->len + 2100 < max_line) {
            for (i = 0; i < 998; i++)
                buf_puts(b, "[");
            for (i = 0; i < 998; i++)
                buf_puts(b, "]");
            buf_puts(b, ",");
        }
        buf_puts(b, "0]}");
    }
    {
        /* a few member names of 100 KiB each, equal but for the last byte */
        struct buf *b = ADD("long-names");
        size_t k, nl = max_line / 12;
        buf_puts(b, "{\"op\":\"ping\"");
        for (k = 0; k < 10; k++) {
            buf_puts(b, ",\"");
            buf_reserve(b, nl);
            memset(b->p + b->len, 'n', nl);
            b->len += nl;
            b->p[b->len] = '\0';
            buf_printf(b, "%zu\":0", k);
        }
        buf_puts(b, "}");
    }
#undef ADD
    return n;
}

int main(int argc, char **argv)
{
    struct proto_limits lim = {.max_payload = 256 << 10};
    size_t max_line = 1 << 20, n, i;
    int rounds = 11, opt, r, fail = 0;
    double target = 5.0, worst = 0, worst_max = 0;
    const char *outdir = NULL, *worst_name = "";
    struct line L[32];

    while ((opt = getopt(argc, argv, "n:l:p:t:o:")) != -1) {
        switch (opt) {
        case 'n': rounds = atoi(optarg); break;
        case 'l': max_line = (size_t)atol(optarg); break;
        case 'p': lim.max_payload = (size_t)atol(optarg); break;
        case 't': target = atof(optarg); break;
        case 'o': outdir = optarg; break;
        default:
            fprintf(stderr, "usage: worstline [-n ROUNDS] [-l MAX_LINE] [-p MAX_PAYLOAD] [-t TARGET_MS] [-o DIR]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 101 || max_line < 4096 || lim.max_payload < 64 || lim.max_payload >= max_line) {
        fprintf(stderr, "worstline: bad arguments\n");
        return 2;
    }
    n = build(L, max_line, lim.max_payload);
    printf("%-22s %9s %9s %9s %9s  %s\n", "line", "bytes", "cpu_med", "cpu_max", "wall_max", "reply");
    for (i = 0; i < n; i++) {
        double t[101], mx = 0, wmx = 0, med;
        const char *code = "ok";
        int k, j;
        for (r = 0; r < rounds; r++) {
            struct proto_req req;
            struct proto_err err;
            double w0 = now_ms(CLOCK_MONOTONIC), t0 = now_ms(CLOCK_THREAD_CPUTIME_ID), w;
            int rc = proto_parse(L[i].b.p, L[i].b.len, &lim, &req, &err);
            t[r] = now_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
            w = now_ms(CLOCK_MONOTONIC) - w0;
            if (rc == 0)
                proto_req_free(&req);
            else
                code = err.code;
            mx = t[r] > mx ? t[r] : mx;
            wmx = w > wmx ? w : wmx;
        }
        for (k = 1; k < rounds; k++)   /* insertion sort: at most 101 */
            for (j = k; j > 0 && t[j - 1] > t[j]; j--) {
                double x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        med = t[rounds / 2];
        printf("%-22s %9zu %9.3f %9.3f %9.3f  %s\n", L[i].name, L[i].b.len, med, mx, wmx, code);
        if (mx > worst) {
            worst = mx;
            worst_name = L[i].name;
        }
        worst_max = wmx > worst_max ? wmx : worst_max;
        if (outdir) {
            char path[4096];
            FILE *f;
            snprintf(path, sizeof path, "%s/worst_%s", outdir, L[i].name);
            if ((f = fopen(path, "wb")) != NULL) {
                fwrite(L[i].b.p, 1, L[i].b.len, f);
                fclose(f);
            }
        }
        buf_free(&L[i].b);
    }
    fail = worst > target;
    printf("worst line: %s, %.3f ms CPU per line at most, %.3f ms wall-clock at most (target %.1f ms CPU, "
           "max_line %zu): %s\n", worst_name, worst, worst_max, target, max_line, fail ? "ABOVE TARGET" : "ok");
    return fail;
}
