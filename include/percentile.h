/* percentile.h - PostgreSQL percentile_cont semantics (pure). */
#ifndef HOOKD_PERCENTILE_H
#define HOOKD_PERCENTILE_H
#include <stddef.h>
#include <stdint.h>

/* Linear interpolation at position p*(n-1) over an ascending array.
 * n == 0 returns 0. p is clamped to [0, 1]. */
double percentile_cont(const int64_t *sorted, size_t n, double p);

/* Sort in place ascending (radix or qsort; must handle 100k+ quickly). */
void percentile_sort(int64_t *v, size_t n);

#endif
