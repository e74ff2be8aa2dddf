/* slotq.h - counted transfers per key, and the jobs waiting for one of
 * their slots: the bookkeeping of a delivery thread, used twice.
 *
 * Per host (scheme, name, port): each delivery thread holds one slotq
 * with its share of max_host_connections, and libcurl keeps the thread's
 * connections (idle ones too) to that share, so the threads together
 * never hold more than the limit. A job over it waits here, in arrival
 * order per host, before it is handed to libcurl: curl's own
 * CURLMOPT_MAX_HOST_CONNECTIONS queue would start the transfer's timeout
 * while it waits, and the partner would be charged with timeouts it
 * never saw.
 *
 * Per endpoint (no limit): the thread's transfers to each endpoint, and
 * the jobs claimed ahead for it (slotq_park), each of which starts in
 * the place of one that ended well (see dispatch.h).
 *
 * Ownership: a job that waits is owned by the slotq until
 * slotq_release(), slotq_take() or slotq_drain() hands it back. Not
 * thread safe (each thread has its own). No I/O. */
#ifndef HOOKD_SLOTQ_H
#define HOOKD_SLOTQ_H
#include <stddef.h>
#include <stdint.h>

struct djob;
struct slotq;

/* limit >= 1 counted transfers per key. NULL when out of memory. */
struct slotq *slotq_new(int limit);
/* Frees the table; jobs still waiting must have been drained. */
void slotq_free(struct slotq *q);
/* 0: the job may start now (it is counted); 1: it waits (held here);
 * -1: out of memory (not counted, not held: start it anyway). */
int slotq_admit(struct slotq *q, uint64_t key, struct djob *j);
/* Hold j until one of the key's counted transfers ends (0), whatever the
 * limit; -1: nothing is counted for the key, j is not held. */
int slotq_park(struct slotq *q, uint64_t key, struct djob *j);
/* A counted transfer of the key ended. Returns the key's next waiting
 * job, now counted in its place and owned by the caller again, or NULL. */
struct djob *slotq_release(struct slotq *q, uint64_t key);
/* The key's waiting jobs as one list, handed back uncounted. */
struct djob *slotq_take(struct slotq *q, uint64_t key);
/* Every waiting job as one list (at shutdown); counts stay. */
struct djob *slotq_drain(struct slotq *q);
size_t slotq_waiting(const struct slotq *q);
/* transfers counted for the key */
int slotq_active(const struct slotq *q, uint64_t key);

#endif
