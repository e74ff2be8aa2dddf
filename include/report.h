/* report.h - `hookd report --html`: the report op's reply drawn as one
 * self-contained HTML page with inline SVG charts (deliveries and
 * failures per hour, breaker openings on a timeline, dead letters by
 * error class, slow endpoints, p50/p95/p99 over time per endpoint). No
 * script, font or file outside the page. Pure. */
#ifndef HOOKD_REPORT_H
#define HOOKD_REPORT_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "util.h"

/* -1 on a reply that is not a report, or out of memory. */
int report_html(const cJSON *reply, int64_t generated_at, struct buf *out);
/* The axis top: 1, 2 or 5 x 10^k at or above v. */
double report_nice_max(double v);

#endif
