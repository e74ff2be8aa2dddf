/* timeshift.c - an LD_PRELOAD shim that steps the wall clock at run time,
 * without root: clock_gettime(CLOCK_REALTIME and _COARSE), gettimeofday
 * and time return the real clock plus an offset in milliseconds; every
 * other clock (CLOCK_MONOTONIC, CLOCK_BOOTTIME) is left alone, as an NTP
 * step or `date -s` would leave it.
 *
 * Control: $TIMESHIFT_FILE names a file of at least 64 bytes holding the
 * offset as a decimal number (e.g. "-3600000", padded with spaces). It is
 * mapped shared at load, so a test that rewrites it in place (open r+,
 * write at 0; not rename over) steps the clock of the running process at
 * once; no system call on the fast path. A value that does not parse
 * (caught mid-write) keeps the last good one.
 *
 * Evidence: at load, "$TIMESHIFT_FILE.loaded" is written with the pid
 * (a static binary ignores LD_PRELOAD: the test can tell, and skip). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAPLEN 64

static const volatile char *map;
static _Atomic int64_t last_good;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

static int parse(const char *b, int64_t *out)
{
    int64_t v = 0;
    int neg = 0, digits = 0;
    size_t i = 0;

    while (i < MAPLEN && b[i] == ' ')
        i++;
    if (i < MAPLEN && (b[i] == '-' || b[i] == '+'))
        neg = b[i++] == '-';
    for (; i < MAPLEN && b[i] >= '0' && b[i] <= '9' && digits < 17; i++, digits++)
        v = v * 10 + (b[i] - '0');
    if (!digits || (i < MAPLEN && b[i] != ' ' && b[i] != '\n' && b[i] != '\0'))
        return -1;
    *out = neg ? -v : v;
    return 0;
}

static int64_t offset_ms(void)
{
    char a[MAPLEN], b[MAPLEN];
    int64_t v, w;

    if (!map)
        return 0;
    /* two equal copies: not caught in the middle of a rewrite */
    for (int i = 0; i < MAPLEN; i++)
        a[i] = map[i];
    for (int i = 0; i < MAPLEN; i++)
        b[i] = map[i];
    if (memcmp(a, b, MAPLEN) == 0 && parse(a, &v) == 0 && parse(b, &w) == 0 && v == w)
        atomic_store(&last_good, v);
    return atomic_load(&last_good);
}

static void shift(struct timespec *ts, int64_t ms)
{
    int64_t ns = (int64_t)ts->tv_nsec + (ms % 1000) * 1000000;

    ts->tv_sec += (time_t)(ms / 1000);
    if (ns < 0) {
        ns += 1000000000;
        ts->tv_sec -= 1;
    } else if (ns >= 1000000000) {
        ns -= 1000000000;
        ts->tv_sec += 1;
    }
    ts->tv_nsec = (long)ns;
}

__attribute__((constructor)) static void timeshift_init(void)
{
    const char *path = getenv("TIMESHIFT_FILE");
    char lp[4096], pid[32];
    int fd;

    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    if (!path)
        return;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        void *m = mmap(NULL, MAPLEN, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED)
            map = m;
        close(fd);
    }
    snprintf(lp, sizeof lp, "%s.loaded", path);
    fd = open(lp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (write(fd, pid, (size_t)n) < 0) {
            /* nothing to do: the test then skips */
        }
        close(fd);
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int rc;

    if (!real_clock_gettime)
        real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    rc = real_clock_gettime(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
        shift(ts, offset_ms());
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;

    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    /* glibc declares tv nonnull */
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    time_t v;

    clock_gettime(CLOCK_REALTIME, &ts);
    v = ts.tv_sec;
    if (t)
        *t = v;
    return v;
}
