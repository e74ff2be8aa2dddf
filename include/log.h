/* log.h - one event per line on stderr, key=value (journald takes it).
 * Never pass payloads, signatures or secrets to these functions. */
#ifndef HOOKD_LOG_H
#define HOOKD_LOG_H
#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level l);
int log_level_parse(const char *s, enum log_level *out);
int log_enabled(enum log_level l);

/* Writes "ts=... level=... event=<event> " + the formatted rest + "\n"
 * with one write(2), so lines from threads never interleave. */
void log_event(enum log_level l, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Quote a value for key=value output: returns out, which holds s in
 * double quotes with control characters, quotes and backslashes escaped,
 * truncated to fit n. */
const char *log_q(const char *s, char *out, size_t n);

#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)
#define log_warn(ev, ...)  log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_info(ev, ...)  log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_debug(ev, ...) do { if (log_enabled(LOG_DEBUG)) log_event(LOG_DEBUG, ev, __VA_ARGS__); } while (0)

#endif
