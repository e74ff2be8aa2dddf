/* log.h - one event per line on stderr, key=value (journald takes it).
 * Never pass payloads, signatures or secrets to these functions. */
#ifndef HOOKD_LOG_H
#define HOOKD_LOG_H
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level l);
int log_level_parse(const char *s, enum log_level *out);
int log_enabled(enum log_level l);

/* Writes "ts=... level=... event=<event> " + the formatted rest + "\n"
 * with one write(2), so lines from threads never interleave. */
void log_event(enum log_level l, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Quote a value for key=value output: returns out, which holds s in
 * double quotes escaped as esc.h's ESC_QUOTED (controls, C1, bidi
 * overrides, quotes and backslashes), cut to fit n. */
const char *log_q(const char *s, char *out, size_t n);

/* A budget of lines per window for events that come in storms (the
 * breakers of thousands of endpoints opening at once): the caller logs a
 * line only when log_budget_take() says so, and logs one summary line of
 * the rest when log_budget_roll() reports them. Pure: the caller passes
 * the clock. */
struct log_budget {
    int64_t window_ms;
    int limit;          /* lines per window */
    int64_t start;      /* of the current window; 0: none yet */
    int used;
    long suppressed;
};

/* 1: log this line; 0: it is counted as suppressed. */
int log_budget_take(struct log_budget *b, int64_t now);
/* Once the window is over: the lines it suppressed (0: none), and a new
 * window begins. Before that: 0. */
long log_budget_roll(struct log_budget *b, int64_t now);

#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)
#define log_warn(ev, ...)  log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_info(ev, ...)  log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_debug(ev, ...) do { if (log_enabled(LOG_DEBUG)) log_event(LOG_DEBUG, ev, __VA_ARGS__); } while (0)

#endif
