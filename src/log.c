/* log.c - key=value lines on stderr, one write(2) per event. */
#include "log.h"
#include "esc.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* atomic: a SIGHUP reload sets it on the main thread while every thread reads it */
static int log_level_cur = LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level l)
{
    __atomic_store_n(&log_level_cur, (int)l, __ATOMIC_RELAXED);
}

int log_enabled(enum log_level l)
{
    return (int)l <= __atomic_load_n(&log_level_cur, __ATOMIC_RELAXED);
}

int log_level_parse(const char *s, enum log_level *out)
{
    size_t i;

    for (i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    return -1;
}

void log_event(enum log_level l, const char *event, const char *fmt, ...)
{
    char line[2048], ts[32];
    va_list ap;
    int n, m;

    if (!log_enabled(l))
        return;
    util_fmt_time(util_now_ms(), ts, sizeof ts);
    n = snprintf(line, sizeof line, "ts=%s level=%s event=%s", ts, level_names[l], event);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    if (fmt && *fmt && (size_t)n < sizeof line - 2) {
        line[n++] = ' ';
        va_start(ap, fmt);
        m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
        if (m > 0)
            n += m;
        if ((size_t)n >= sizeof line - 1)
            n = sizeof line - 2;
    }
    line[n++] = '\n';
    /* a failed log write has nowhere to be reported */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

const char *log_q(const char *s, char *out, size_t n)
{
    size_t o;

    if (n < 3) {
        if (n)
            out[0] = '\0';
        return out;
    }
    out[0] = '"';
    o = 1 + esc_str(out + 1, n - 2, s, ESC_QUOTED);
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

int log_budget_take(struct log_budget *b, int64_t now)
{
    if (b->start == 0 || now - b->start >= b->window_ms) {
        if (b->suppressed) {
            b->suppressed++;   /* a summary is owed first (log_budget_roll) */
            return 0;
        }
        b->start = now;
        b->used = 0;
    }
    if (b->used < b->limit) {
        b->used++;
        return 1;
    }
    b->suppressed++;
    return 0;
}

long log_budget_roll(struct log_budget *b, int64_t now)
{
    long n;

    if (b->start == 0 || now - b->start < b->window_ms)
        return 0;
    n = b->suppressed;
    b->suppressed = 0;
    b->start = now;
    b->used = 0;
    return n;
}
