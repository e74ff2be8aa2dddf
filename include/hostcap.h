/* hostcap.h - the per-host connection limit of a delivery thread.
 *
 * Transfers are counted per host (scheme, name, port). Each delivery
 * thread holds one hostcap with its share of max_host_connections, and
 * libcurl keeps the thread's connections (idle ones too) to that share,
 * so the threads together never hold more than the limit. A job over it
 * waits here, in arrival order per host, before it is handed to libcurl: curl's own CURLMOPT_MAX_HOST_CONNECTIONS
 * queue would start the transfer's timeout while it waits, and the
 * partner would be charged with timeouts it never saw.
 *
 * Ownership: a job that waits is owned by the hostcap until
 * hostcap_release() or hostcap_drain() hands it back. Not thread safe
 * (the caller locks). No I/O. */
#ifndef HOOKD_HOSTCAP_H
#define HOOKD_HOSTCAP_H
#include <stddef.h>
#include <stdint.h>

struct djob;
struct hostcap;

/* limit >= 1. NULL when out of memory. */
struct hostcap *hostcap_new(int limit);
/* Frees the table; jobs still waiting must have been drained. */
void hostcap_free(struct hostcap *hc);
/* 0: the job may start now (it is counted); 1: it waits (held here);
 * -1: out of memory (not counted, not held: start it anyway). */
int hostcap_admit(struct hostcap *hc, struct djob *j);
/* A counted transfer to host h ended. Returns the host's next waiting job,
 * now counted and owned by the caller again, or NULL. */
struct djob *hostcap_release(struct hostcap *hc, uint64_t h);
/* Every waiting job as one list (at shutdown); counts stay. */
struct djob *hostcap_drain(struct hostcap *hc);
size_t hostcap_waiting(const struct hostcap *hc);
/* transfers counted for host h */
int hostcap_active(const struct hostcap *hc, uint64_t h);

#endif
