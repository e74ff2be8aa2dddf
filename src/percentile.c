/* percentile.c - percentile_cont as PostgreSQL computes it, and a sort. */
#include "percentile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double percentile_cont(const int64_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    if (!(p > 0)) /* also NaN */
        p = 0;
    if (p > 1)
        p = 1;
    /* Same steps and operation order as PostgreSQL's
     * percentile_cont_final_common() + float8_lerp(), with the values cast
     * to float8 first as the ORDER BY expression is, so results match it
     * bit for bit rather than merely closely. */
    double pos = p * (double)(n - 1);
    double first = floor(pos), second = ceil(pos);
    double lo = (double)sorted[(size_t)first];
    if (second <= first)
        return lo;
    double hi = (double)sorted[(size_t)second];
    return lo + (hi - lo) * (pos - first);
}

/* Below this, the radix sort's fixed 8 x 256 histogram work dominates. */
#define RADIX_MIN 256

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* LSD radix sort, 8 passes of 8 bits over keys with the sign bit flipped
 * (so unsigned byte order is signed order). Passes where every key has the
 * same byte are skipped, which for latencies (small non-negative numbers)
 * leaves 2-3 passes. Stable, O(n), one n-sized scratch buffer. */
void percentile_sort(int64_t *v, size_t n)
{
    if (n < 2)
        return;
    uint64_t *tmp = n >= RADIX_MIN ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) { /* small input, or no memory: qsort needs none */
        qsort(v, n, sizeof *v, cmp_i64);
        return;
    }
    const uint64_t flip = (uint64_t)1 << 63;
    _Static_assert(sizeof(int64_t) == sizeof(uint64_t), "same width");
    uint64_t *a = (uint64_t *)(void *)v, *b = tmp;

    size_t count[8][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        memcpy(&k, &v[i], sizeof k);
        k ^= flip;
        a[i] = k;
        for (int d = 0; d < 8; d++)
            count[d][(k >> (8 * d)) & 0xff]++;
    }
    for (int d = 0; d < 8; d++) {
        size_t *c = count[d];
        uint64_t first_byte = (a[0] >> (8 * d)) & 0xff;
        if (c[first_byte] == n)
            continue;
        size_t sum = 0;
        for (int i = 0; i < 256; i++) {
            size_t t = c[i];
            c[i] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            b[c[(a[i] >> (8 * d)) & 0xff]++] = a[i];
        uint64_t *s = a;
        a = b;
        b = s;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t k = a[i] ^ flip;
        memcpy(&v[i], &k, sizeof k);
    }
    free(tmp);
}
