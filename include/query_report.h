/* query_report.h - the report op's answer (query_report.c): history time
 * series of the busiest endpoints, totals per bucket, dead letters by
 * error class, slow endpoints. Same error convention as query.h. */
#ifndef HOOKD_QUERY_REPORT_H
#define HOOKD_QUERY_REPORT_H
#include <stdint.h>

#include "config.h"
#include "req.h"
#include "store.h"

/* endpoints drawn one by one; the rest count in the totals only */
#define QUERY_REPORT_ENDPOINTS 20
/* the longest period, in [history] buckets (35 days of 5-minute ones) */
#define QUERY_REPORT_BUCKETS 10080

int query_report(struct store *st, const struct config *c, struct req *r, int64_t now);

#endif
