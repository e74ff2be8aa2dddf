/* deliver.h - the delivery engine: a pool of threads, each driving a
 * libcurl multi handle with many concurrent transfers.
 *
 * Ownership: the dispatcher builds a djob for each claimed row and the
 * writer passes it to deliver_submit(); from then on the delivery thread
 * owns it until it hands the finished job (result filled in) to the done
 * callback, which gives it back to the writer. Jobs are never dropped: at
 * shutdown the ones that were not attempted come back with attempted = 0,
 * and so do jobs claimed ahead that found no place to start in. */
#ifndef HOOKD_DELIVER_H
#define HOOKD_DELIVER_H
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "endpoint.h"
#include "outcome.h"


struct djob {
    struct djob *next;
    int64_t id;              /* webhook_queue.id */
    struct ep_conf *ep;      /* reference held by the job */
    char *event_id;
    char *event_type;        /* only for endpoints whose templates may use it */
    char *payload;
    size_t payload_len;
    int attempt_count;       /* before this attempt */
    int max_attempts;
    int probe;               /* the breaker's half-open probe */
    int ahead;               /* claimed ahead (dispatch.h): it starts only in the
                              * place of a transfer to its endpoint that ended
                              * well on the same thread, else comes back untried */
    int took_slot;           /* it did start in such a place */
    int handed;              /* an ahead job started in this one's place */
    int ep_counted;          /* the delivery thread's own: in its per-endpoint count */
    int64_t claimed_mono_us;
    int64_t created_at;      /* enqueue time (ms), for first-attempt latency */
    /* result */
    int attempted;           /* 0: given back without a try (shutdown) */
    int http_status;         /* 0: no response */
    enum errclass errc;
    char error[200];         /* short, never includes body or secrets */
    int64_t response_ms;
    int sample;              /* the request reached the endpoint: response_ms
                              * is a latency sample (not for SSRF, DNS, connect) */
    int64_t retry_after_ms;  /* -1 when absent */
    int64_t started_at;      /* wall clock of the attempt */
    char *sent_url;          /* as logged (masked); NULL: the endpoint's shown_url */
    char *response;          /* the attempt log's excerpt of the body; NULL: none */
    int outcome;             /* set by the writer when settled: enum outcome, -1 untried */
};

void djob_free(struct djob *j);

struct deliver;

typedef void (*deliver_done_fn)(void *ctx, struct djob *list);

/* curl_global_init must have run. nthreads >= 1. */
int deliver_start(struct deliver **out, const struct config *c, int nthreads,
                  deliver_done_fn done, void *ctx);
/* Hand jobs (a linked list) to the pool. */
void deliver_submit(struct deliver *d, struct djob *list);
/* Stop: transfers in flight get grace_ms to finish, then are aborted;
 * every job comes back through the callback before this returns. */
void deliver_stop(struct deliver *d, int64_t grace_ms);
void deliver_free(struct deliver *d);

#endif
