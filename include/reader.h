/* reader.h - the reader thread: a read-only connection that answers the
 * query ops (get, stats, endpoint.list, dead_letters, slow, metrics) and
 * computes the percentile rollup, so no long read runs on the writer. */
#ifndef HOOKD_READER_H
#define HOOKD_READER_H
#include <stdint.h>

#include "config.h"
#include "req.h"

struct reader;
struct writer;

int reader_start(struct reader **out, const struct config *c, struct writer *w, char *err, size_t errlen);
void reader_submit(struct reader *rd, struct req *r);
/* Periodic work requested by the writer's scheduler. */
void reader_request_rollup(struct reader *rd, int64_t window_ms);
void reader_request_summary(struct reader *rd, int64_t now_ms);
void reader_request_metrics_file(struct reader *rd, const char *path);
void reader_stop(struct reader *rd);

/* Delivery counters for metrics, updated by the writer. */
void reader_count_outcome(int outcome, int64_t response_ms);

#endif
