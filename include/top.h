/* top.h - `hookd top`: a live full-screen view of the endpoints (ncurses),
 * refreshed every second, or one plain-text frame for scripts. */
#ifndef HOOKD_TOP_H
#define HOOKD_TOP_H
#include <stdint.h>

/* Full screen until q; returns the exit status. sort: enum top_col. */
int top_run(const char *sock, int64_t timeout_ms, int sort, int desc);
/* One frame, every endpoint, width columns, to stdout. */
int top_once(const char *sock, int64_t timeout_ms, int sort, int desc, int width);

#endif
