/* reader.h - the reader thread: a read-only store that answers the query
 * ops (query.c) and runs the read-heavy periodic jobs (percentile rollup,
 * health summary, metrics file), so no long read runs on the writer.
 * Rollups go to whoever computes with them through the sink given at
 * start: the reader calls no other thread's functions. */
#ifndef HOOKD_READER_H
#define HOOKD_READER_H
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cron.h"
#include "opsev.h"
#include "req.h"
#include "store.h"

struct reader;

/* A finished rollup; ownership of v moves to the sink. */
typedef void (*reader_rollup_fn)(void *ctx, struct store_rollup *v, size_t n);
/* An alert that started (operational event); the sink copies it. */
typedef void (*reader_event_fn)(void *ctx, const struct opsev *ev);

/* Opens its own reader store, registers its jobs in cron (runner
 * CRON_READER) and starts the thread. */
int reader_start(struct reader **out, const struct config *c, struct cron *cron, reader_rollup_fn sink,
                 reader_event_fn event_sink, void *sink_ctx, char *err, size_t errlen);
void reader_submit(struct reader *rd, struct req *r);
/* Answer what is queued with shutting_down, join, free. */
void reader_stop(struct reader *rd);

/* p of the sorted samples as PostgreSQL's percentile_cont, truncated to
 * whole ms as the seed stores it (int()). Pure; for the unit tests. */
int64_t reader_percentile_ms(const int64_t *sorted, size_t n, double p);

#endif
