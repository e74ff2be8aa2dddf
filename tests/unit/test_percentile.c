/* test_percentile.c - percentile_cont against PostgreSQL's own results
 * (fixtures/percentile_pg.txt, made by fixtures/make_percentile_fixtures.sh)
 * and percentile_sort against qsort. Run with working directory tests/unit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "percentile.h"

#define FIXTURE "fixtures/percentile_pg.txt"

static void assert_close(double got, double want, const char *what)
{
    /* relative 1e-9; absolute near zero so that 0 vs 1e-300 is not a miss */
    double tol = 1e-9 * fmax(fabs(want), 1.0);
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: got %.17g want %.17g", what, got, want);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ---- hand-checked values ---- */

static void test_empty_and_single(void **state)
{
    (void)state;
    assert_true(percentile_cont(NULL, 0, 0.5) == 0.0);
    const int64_t one[] = {-17};
    assert_true(percentile_cont(one, 1, 0) == -17.0);
    assert_true(percentile_cont(one, 1, 0.5) == -17.0);
    assert_true(percentile_cont(one, 1, 1) == -17.0);
}

static void test_interpolation_by_hand(void **state)
{
    (void)state;
    const int64_t v[] = {1, 2, 3, 4};
    assert_true(percentile_cont(v, 4, 0.5) == 2.5);      /* pos 1.5 */
    assert_true(percentile_cont(v, 4, 0.0) == 1.0);
    assert_true(percentile_cont(v, 4, 1.0) == 4.0);
    assert_true(percentile_cont(v, 4, 0.25) == 1.75);    /* pos 0.75 */
    assert_close(percentile_cont(v, 4, 1.0 / 3.0), 2.0, "p=1/3"); /* pos 1 */
    const int64_t w[] = {10, 20};
    assert_true(percentile_cont(w, 2, 0.25) == 12.5);
    assert_true(percentile_cont(w, 2, 0.95) == 19.5);
    /* 100 values 1..100: p95 at pos 94.05 -> 95.05 */
    int64_t h[100];
    for (int i = 0; i < 100; i++)
        h[i] = i + 1;
    assert_close(percentile_cont(h, 100, 0.95), 95.05, "p95 of 1..100");
    assert_close(percentile_cont(h, 100, 0.99), 99.01, "p99 of 1..100");
    assert_close(percentile_cont(h, 100, 0.5), 50.5, "p50 of 1..100");
}

static void test_p_clamped(void **state)
{
    (void)state;
    const int64_t v[] = {3, 8, 20};
    assert_true(percentile_cont(v, 3, -0.5) == 3.0);
    assert_true(percentile_cont(v, 3, -INFINITY) == 3.0);
    assert_true(percentile_cont(v, 3, 1.5) == 20.0);
    assert_true(percentile_cont(v, 3, INFINITY) == 20.0);
    assert_true(percentile_cont(v, 3, NAN) == 3.0);
}

/* ---- PostgreSQL fixtures ---- */

#define MAX_SETS 32

struct dataset {
    char name[64];
    int64_t *v;   /* sorted after loading */
    size_t n;
    int pcts;     /* pct lines checked against this set */
};

static int64_t skew_value(int64_t i)
{
    int64_t x = (i * 7919) % 100003;
    return x * x / 10007 + i % 13;
}

static struct dataset *find_set(struct dataset *sets, int nsets, const char *name)
{
    for (int i = 0; i < nsets; i++)
        if (strcmp(sets[i].name, name) == 0)
            return &sets[i];
    return NULL;
}

static int parse_values(char *list, int64_t **out, size_t *n)
{
    size_t cap = 16, len = 0;
    int64_t *v = malloc(cap * sizeof *v);
    char *p = list;
    if (!v)
        return -1;
    for (;;) {
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p) {
            free(v);
            return -1;
        }
        if (len == cap) {
            cap *= 2;
            int64_t *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[len++] = x;
        if (*end != ',')
            break;
        p = end + 1;
    }
    *out = v;
    *n = len;
    return 0;
}

static void test_pg_fixtures(void **state)
{
    (void)state;
    FILE *f = fopen(FIXTURE, "r");
    if (!f)
        fail_msg("cannot open %s (run from tests/unit)", FIXTURE);

    static char line[1 << 16];
    struct dataset sets[MAX_SETS];
    int nsets = 0, npct = 0, ngen = 0, lineno = 0;
    memset(sets, 0, sizeof sets);

    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n' && !feof(f))
            fail_msg("line %d too long", lineno);
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0)
            continue;

        char kind[8], name[64];
        int off = 0;
        if (sscanf(line, "%7s %63s %n", kind, name, &off) != 2)
            fail_msg("line %d: bad line", lineno);
        char *rest = line + off;

        if (strcmp(kind, "data") == 0 || strcmp(kind, "gen") == 0) {
            assert_true(nsets < MAX_SETS);
            assert_null(find_set(sets, nsets, name));
            struct dataset *d = &sets[nsets++];
            snprintf(d->name, sizeof d->name, "%s", name);
            if (kind[0] == 'd') {
                if (parse_values(rest, &d->v, &d->n) != 0)
                    fail_msg("line %d: bad values", lineno);
            } else {
                char formula[16];
                long long n, sum, mn, mx;
                if (sscanf(rest, "%15s %lld %lld %lld %lld", formula, &n, &sum, &mn, &mx) != 5)
                    fail_msg("line %d: bad gen", lineno);
                assert_string_equal(formula, "skew");
                assert_true(n > 0 && n <= 10000000);
                d->n = (size_t)n;
                d->v = malloc(d->n * sizeof *d->v);
                assert_non_null(d->v);
                int64_t s = 0, lo = INT64_MAX, hi = INT64_MIN;
                for (int64_t i = 1; i <= n; i++) {
                    int64_t x = skew_value(i);
                    d->v[i - 1] = x;
                    s += x;
                    if (x < lo) lo = x;
                    if (x > hi) hi = x;
                }
                /* the C generator reproduces what PostgreSQL generated */
                assert_int_equal(s, sum);
                assert_int_equal(lo, mn);
                assert_int_equal(hi, mx);
                ngen++;
            }
            percentile_sort(d->v, d->n);
            for (size_t i = 1; i < d->n; i++)
                assert_true(d->v[i - 1] <= d->v[i]);
        } else if (strcmp(kind, "pct") == 0) {
            struct dataset *d = find_set(sets, nsets, name);
            if (!d)
                fail_msg("line %d: pct for unknown set %s", lineno, name);
            char *end;
            double p = strtod(rest, &end);
            if (end == rest)
                fail_msg("line %d: bad p", lineno);
            char *rest2 = end;
            double want = strtod(rest2, &end);
            if (end == rest2)
                fail_msg("line %d: bad result", lineno);
            char what[128];
            snprintf(what, sizeof what, "%s p=%g (line %d)", name, p, lineno);
            assert_close(percentile_cont(d->v, d->n, p), want, what);
            d->pcts++;
            npct++;
        } else {
            fail_msg("line %d: unknown kind %s", lineno, kind);
        }
    }
    fclose(f);

    /* The file must hold what the brief asked PostgreSQL for; a truncated
     * fixture must not pass quietly. */
    const char *need[] = {"n1", "n2", "odd7", "even10", "ties", "equal", "latency", "big",
                          "skew100k", "skew100001"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        struct dataset *d = find_set(sets, nsets, need[i]);
        if (!d)
            fail_msg("fixture lacks dataset %s", need[i]);
        assert_int_equal(d->pcts, 12);
    }
    assert_int_equal(find_set(sets, nsets, "n1")->n, 1);
    assert_int_equal(find_set(sets, nsets, "n2")->n, 2);
    assert_int_equal(find_set(sets, nsets, "skew100k")->n, 100000);
    assert_int_equal(ngen, 2);
    assert_true(npct >= 12 * 10);
    print_message("checked %d PostgreSQL percentiles over %d datasets\n", npct, nsets);
    for (int i = 0; i < nsets; i++)
        free(sets[i].v);
}

/* ---- sorting ---- */

static void check_sort(const int64_t *src, size_t n)
{
    int64_t *a = malloc((n ? n : 1) * sizeof *a);
    int64_t *b = malloc((n ? n : 1) * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    if (n) {
        memcpy(a, src, n * sizeof *a);
        memcpy(b, src, n * sizeof *b);
    }
    percentile_sort(a, n);
    qsort(b, n, sizeof *b, cmp_i64);
    if (n)
        assert_memory_equal(a, b, n * sizeof *a);
    free(a);
    free(b);
}

static void test_sort_matches_qsort(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, 2, 3, 255, 256, 257, 1000, 4097, 100000};
    uint64_t s = 42;
    int64_t *v = malloc(100000 * sizeof *v);
    assert_non_null(v);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++) /* full 64-bit range, both signs */
            v[i] = (int64_t)rng(&s);
        check_sort(v, n);
        for (size_t i = 0; i < n; i++) /* latency-like: small, many ties */
            v[i] = (int64_t)(rng(&s) % 5000);
        check_sort(v, n);
        for (size_t i = 0; i < n; i++) /* small signed around zero */
            v[i] = (int64_t)(rng(&s) % 2001) - 1000;
        check_sort(v, n);
        for (size_t i = 0; i < n; i++) /* descending */
            v[i] = (int64_t)(n - i) * 3;
        check_sort(v, n);
        for (size_t i = 0; i < n; i++) /* all equal: every pass skipped */
            v[i] = -7;
        check_sort(v, n);
    }
    free(v);
}

static void test_sort_extremes(void **state)
{
    (void)state;
    int64_t v[1000];
    uint64_t s = 7;
    const int64_t special[] = {INT64_MIN, INT64_MAX, -1, 0, 1, INT64_MIN + 1,
                               INT64_MAX - 1, (int64_t)1 << 32, -((int64_t)1 << 32)};
    for (size_t i = 0; i < 1000; i++)
        v[i] = special[rng(&s) % (sizeof special / sizeof *special)];
    check_sort(v, 1000);
    int64_t w[] = {INT64_MAX, INT64_MIN, 0, -1, 1};
    percentile_sort(w, 5);
    assert_int_equal(w[0], INT64_MIN);
    assert_int_equal(w[1], -1);
    assert_int_equal(w[2], 0);
    assert_int_equal(w[3], 1);
    assert_int_equal(w[4], INT64_MAX);
}

static void test_sort_million_fast(void **state)
{
    (void)state;
    const size_t n = 1000000;
    int64_t *v = malloc(n * sizeof *v);
    assert_non_null(v);
    uint64_t s = 99;
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)(rng(&s) >> 20); /* non-negative, ~44 bits */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    percentile_sort(v, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (size_t i = 1; i < n; i++)
        if (v[i - 1] > v[i])
            fail_msg("unsorted at %zu", i);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("sorted %zu values in %.3f s\n", n, sec);
    /* generous: sanitizer builds on a loaded 2-core box */
    assert_true(sec < 3.0);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_and_single),
        cmocka_unit_test(test_interpolation_by_hand),
        cmocka_unit_test(test_p_clamped),
        cmocka_unit_test(test_pg_fixtures),
        cmocka_unit_test(test_sort_matches_qsort),
        cmocka_unit_test(test_sort_extremes),
        cmocka_unit_test(test_sort_million_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
