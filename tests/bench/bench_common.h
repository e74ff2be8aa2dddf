/* bench_common.h - shared by the benchmark tools in tests/bench: clocks,
 * the payload every tool sends or inserts (identical bytes, so hookd and
 * the raw SQLite baseline store the same rows), percentiles. */
#ifndef HOOKD_BENCH_COMMON_H
#define HOOKD_BENCH_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int64_t bench_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* wall clock, same clock as hookd's created_at / delivered_at */
static inline int64_t bench_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The event id of message i sent on connection c of run `tag`. */
static inline int bench_event_id(char *buf, size_t n, const char *tag, int c, long i)
{
    return snprintf(buf, n, "%s-%d-%ld", tag, c, i);
}

/* The payload of message i: the body of ../shared/bench/post.lua with a
 * per-message event id (so 80 to 90 bytes, like a real postback). */
static inline int bench_payload(char *buf, size_t n, long i)
{
    return snprintf(buf, n, "{\"event_id\":\"evt_%06ld\",\"type\":\"conversion\",\"click_id\":\"c_123456\",\"amount\":42}", i);
}

static inline int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array (p in 0..100). */
static inline int64_t bench_pct(const int64_t *v, size_t n, double p)
{
    size_t k;
    if (!n)
        return -1;
    k = (size_t)((p / 100.0) * (double)n + 0.999999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

#endif
