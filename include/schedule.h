/* schedule.h - delayed delivery: an enqueue's "delay" (a duration) or
 * "deliver_at" (epoch ms or RFC 3339), an endpoint's default delay, and
 * the row's first due time from them. A delayed row is stored at enqueue
 * (so duplicates are found then) as pending with next_attempt_at at its
 * due time, the mechanism retries use; a time given as deliver_at is
 * marked (store_enqueue.due_fixed) so that a wall-clock step leaves it
 * where it is, while a delay moves with the step and keeps its length.
 * Pure: the caller passes the clock. */
#ifndef HOOKD_SCHEDULE_H
#define HOOKD_SCHEDULE_H
#include <stddef.h>
#include <stdint.h>

struct cJSON;

#define SCHED_MAX_MS (30LL * 24 * 3600 * 1000)   /* the farthest a row may be put off */

/* The members of an enqueue request: *delay_ms (-1 absent) and *at_ms (0
 * absent; epoch ms). "delay": a duration text ("90s", "5m") or an integer
 * of ms, at most SCHED_MAX_MS; "deliver_at": an integer of epoch ms or an
 * RFC 3339 text; not both. 0 / -1 with msg. */
int sched_members(const struct cJSON *o, int64_t *delay_ms, int64_t *at_ms, char *msg, size_t msglen);
/* "2026-12-03T10:30:00Z", "...T10:30:00.250+02:00" (a 't', 'z' or blank
 * separator accepted) into epoch ms. 0 / -1. */
int sched_rfc3339(const char *s, int64_t *ms);
/* The row's due time: at_ms when given, else now + the request's delay,
 * else now + the endpoint's (ep_delay_ms, 0 none). *due 0: due now (the
 * time is not in the future). -1 with msg when it lies beyond
 * now + SCHED_MAX_MS. */
int sched_due(int64_t now, int64_t delay_ms, int64_t at_ms, int64_t ep_delay_ms, int64_t *due, char *msg,
              size_t msglen);

#endif
