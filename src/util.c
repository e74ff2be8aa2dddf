/* util.c - clocks, checked buffers, unit parsing. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t util_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_boot_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t util_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int buf_reserve(struct buf *b, size_t extra)
{
    size_t need, ncap;
    char *np;

    if (b->failed)
        return -1;
    if (extra > SIZE_MAX - b->len - 1)
        goto fail;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) {
            ncap = need;
            break;
        }
        ncap *= 2;
    }
    np = realloc(b->p, ncap);
    if (!np)
        goto fail;
    b->p = np;
    b->cap = ncap;
    return 0;
fail:
    b->failed = 1;
    return -1;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    size_t room;
    int n;

    if (b->failed)
        return -1;
    /* format straight into the free space; only a text that does not
     * fit is formatted twice (replies are built of many short pieces) */
    room = b->p ? b->cap - b->len : 0;
    va_copy(cp, ap);
    n = room ? vsnprintf(b->p + b->len, room, fmt, cp) : vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0) {
        b->failed = 1;
        if (b->p)
            b->p[b->len] = '\0';
        return -1;
    }
    if ((size_t)n < room) {
        b->len += (size_t)n;
        return 0;
    }
    if (buf_reserve(b, (size_t)n) < 0) {
        if (b->p)
            b->p[b->len] = '\0';   /* the partial text is not part of the content */
        return -1;
    }
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_esc(struct buf *b, const char *s, size_t n, enum esc_style st)
{
    char rep[ESC_REP_MAX];
    size_t i = 0, run = 0;

    /* safe runs are copied whole: most text has nothing to escape */
    while (i < n) {
        size_t k = esc_next(s + i, n - i, st, rep);
        if (rep[0]) {
            buf_append(b, s + run, i - run);
            buf_puts(b, rep);
            run = i + k;
        }
        i += k;
    }
    buf_append(b, s + run, n - run);
    return b->failed ? -1 : 0;
}

int buf_json_str(struct buf *b, const char *s)
{
    if (!s)
        s = "";
    buf_puts(b, "\"");
    buf_esc(b, s, strlen(s), ESC_JSON);
    buf_puts(b, "\"");
    return b->failed ? -1 : 0;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->p, b->p + n, b->len - n);
        b->len -= n;
    }
    if (b->p)
        b->p[b->len] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->p)
        b->p[0] = '\0';
}

int util_parse_int(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* number followed by a unit from the table; mult scales to the base unit */
struct unit {
    const char *name;
    int64_t mult;
};

static int parse_with_units(const char *s, const struct unit *units, int64_t bare_mult,
                            int64_t *out)
{
    char *end;
    double v;
    int64_t mult = bare_mult;
    size_t i;

    if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
        return -1;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s)
        return -1;
    while (*end == ' ')
        end++;
    if (*end) {
        for (i = 0; units[i].name; i++)
            if (strcasecmp(end, units[i].name) == 0)
                break;
        if (!units[i].name)
            return -1;
        mult = units[i].mult;
    }
    v *= (double)mult;
    if (v < 0 || v > 9.0e18)
        return -1;
    *out = (int64_t)(v + 0.5);
    return 0;
}

int util_parse_duration_ms(const char *s, int64_t *out)
{
    static const struct unit units[] = {
        {"ms", 1}, {"s", 1000}, {"sec", 1000}, {"m", 60000}, {"min", 60000},
        {"h", 3600000}, {"d", 86400000}, {NULL, 0},
    };
    return parse_with_units(s, units, 1000, out);
}

int util_parse_size(const char *s, int64_t *out)
{
    static const struct unit units[] = {
        {"b", 1}, {"k", 1024}, {"kb", 1024}, {"kib", 1024},
        {"m", 1048576}, {"mb", 1048576}, {"mib", 1048576},
        {"g", 1073741824}, {"gb", 1073741824}, {"gib", 1073741824}, {NULL, 0},
    };
    return parse_with_units(s, units, 1, out);
}

int util_parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on") ||
        !strcmp(s, "1")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off") ||
        !strcmp(s, "0")) {
        *out = 0;
        return 0;
    }
    return -1;
}

void util_fmt_duration(int64_t ms, char *out, size_t n)
{
    if (ms % 86400000 == 0 && ms)
        snprintf(out, n, "%lldd", (long long)(ms / 86400000));
    else if (ms % 3600000 == 0 && ms)
        snprintf(out, n, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0 && ms)
        snprintf(out, n, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0 && ms)
        snprintf(out, n, "%llds", (long long)(ms / 1000));
    else
        snprintf(out, n, "%lldms", (long long)ms);
}

void util_fmt_time(int64_t epoch_ms, char *out, size_t n)
{
    time_t t;
    struct tm tm;

    if (epoch_ms <= 0) {
        snprintf(out, n, "-");
        return;
    }
    t = (time_t)(epoch_ms / 1000);
    gmtime_r(&t, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(epoch_ms % 1000));
}

void util_random_id(const char *prefix, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char rnd[12];
    char tail[25];
    size_t i;

    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        /* getrandom on Linux >= 3.17 does not fail for 12 bytes once the
         * pool is initialised; fall back to time so ids stay unique-ish */
        uint64_t t = (uint64_t)util_mono_us() ^ ((uint64_t)util_now_ms() << 20);
        for (i = 0; i < sizeof rnd; i++)
            rnd[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)i;
    }
    for (i = 0; i < sizeof rnd; i++) {
        tail[2 * i] = hex[rnd[i] >> 4];
        tail[2 * i + 1] = hex[rnd[i] & 15];
    }
    tail[24] = '\0';
    snprintf(out, n, "%s%s", prefix, tail);
}

uint64_t util_hash(const char *s, size_t n, int fold)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (fold && c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        h = (h ^ c) * 1099511628211ull;
    }
    return h;
}

int util_word_listed(const char *list, const char *s, size_t n)
{
    const char *p = list;

    while (p && *p) {
        size_t len;
        p += strspn(p, ", \t");
        len = strcspn(p, ", \t");
        if (len && len == n && strncasecmp(p, s, n) == 0)
            return 1;
        p += len;
    }
    return 0;
}

void util_strlcpy(char *dst, const char *src, size_t n)
{
    size_t l;

    if (!n)
        return;
    l = strlen(src);
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = '\0';
}

int util_utf8_valid(const char *s, size_t n)
{
    size_t i = 0, k;
    unsigned cp;

    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {   /* most of every request: no decoding call per byte */
            i++;
            continue;
        }
        if ((k = esc_utf8(s + i, n - i, &cp)) == 0)
            return 0;
        i += k;
    }
    return 1;
}

void util_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = ' ';
}

int util_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int util_fsync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC), rc, e;

    if (fd < 0)
        return -1;
    rc = fsync(fd);
    e = errno;
    close(fd);
    errno = e;
    return rc;
}

int util_fsync_parent(const char *path)
{
    char *d = strdup(path);
    int rc = d ? util_fsync_path(dirname(d), 1) : -1;

    free(d);
    return rc;
}
