/* topview.h - what `hookd top` shows, as text: the endpoints reply of the
 * daemon turned into rows (breaker state, in flight / limit, deliveries
 * and failures per second over the last 10 s, p50/p95/p99, queue depth,
 * oldest pending age), sorted by any column, a totals line, and a frame
 * laid out for a given terminal size. Pure (no I/O, no curses): top.c
 * draws it, `hookd top --once` prints it, the unit tests read it. */
#ifndef HOOKD_TOPVIEW_H
#define HOOKD_TOPVIEW_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "epdef.h"
#include "util.h"

enum top_col {
    TOP_NAME = 0,
    TOP_STATE,
    TOP_INFLIGHT,
    TOP_DPS,
    TOP_FPS,
    TOP_P50,
    TOP_P95,
    TOP_P99,
    TOP_QUEUE,
    TOP_OLDEST,
    TOP__NCOLS
};

struct top_row {
    char name[ENDPOINT_NAME_MAX + 1];
    char state[12];          /* closed, OPEN, half, paused, disabled */
    int64_t in_flight, limit;   /* limit -1: not known yet */
    double dps, fps;         /* per second over the window */
    int64_t p50, p95, p99;   /* -1: no samples */
    int64_t queue;           /* pending + awaiting retry */
    int64_t oldest_ms;       /* -1: nothing waiting */
};

struct top_frame {
    struct top_row *rows;
    size_t n;
    struct top_row total;
    enum top_col sort;
    int desc;
};

/* The column a --sort name or a key names: "p95", '7'. -1 if none. */
int top_col_parse(const char *name);
int top_col_key(int key);
const char *top_col_name(enum top_col c);
/* Numbers sort largest first, names A to Z. */
int top_col_default_desc(enum top_col c);

/* Rows of an endpoint.list reply (window_s: the seconds its last_10s
 * counts cover). 0, or -1 on a malformed reply / out of memory. */
int top_parse(const cJSON *reply, int window_s, struct top_frame *out);
void top_frame_free(struct top_frame *f);
void top_sort(struct top_frame *f, enum top_col by, int desc);

/* The frame as lines of at most width columns: a title, the column
 * header, up to max_rows endpoint rows (0: all), the totals, the keys.
 * title: the first line (time, socket). */
int top_render(const struct top_frame *f, const char *title, int width, size_t max_rows, struct buf *out);
/* The lines top_render adds around the rows. */
#define TOP_CHROME_LINES 4

#endif
