/* postback.h - one attempt's request for an endpoint that is not a plain
 * signed JSON POST (affiliate postbacks): the URL from its template, the
 * body (json, form or none), the URL as shown in attempt logs; and what
 * an attempt log keeps of a response. Pure: the delivery threads call it
 * per attempt, the unit tests directly. */
#ifndef HOOKD_POSTBACK_H
#define HOOKD_POSTBACK_H
#include <stddef.h>
#include <stdint.h>

#include "endpoint.h"
#include "outcome.h"
#include "util.h"

/* what an attempt log keeps of a response body */
#define POSTBACK_EXCERPT 1024

struct postback_req {
    struct buf url;      /* as sent */
    struct buf shown;    /* as logged: {secret} and mask_params values masked */
    struct buf body;     /* form bodies */
    struct buf hidden;   /* the values shown masked ({secret}, {token},
                          * digests of them, hmac_*) as sent, each ended
                          * by a NUL: masked again in the URL curl reports */
    /* what to send, once built: the URL, and the body (the payload itself
     * for json, the form, or empty) */
    const char *send_url, *send_body;
    size_t send_len;
};

struct postback_msg {
    const char *event_id, *event_type;
    const char *payload;
    size_t payload_len;
    int attempt;         /* 1 for the first */
    int64_t ts;          /* Unix seconds of the attempt */
};

/* Build rq for message m to endpoint e (buffers reset first). 0, or -1
 * with *errc (ERRC_TEMPLATE_MISSING, ERRC_TEMPLATE, ERRC_TEMPLATE_UNSAFE,
 * ERRC_INTERNAL) and
 * why (names the macro, never a value). */
int postback_build(const struct ep_conf *e, const struct postback_msg *m, struct postback_req *rq,
                   enum errclass *errc, char *why, size_t whylen);
void postback_req_free(struct postback_req *rq);

/* The URL curl reports it requested (CURLINFO_EFFECTIVE_URL: dot
 * segments removed, the empty path as "/"), masked for the attempt log
 * like rq->shown: NULL when it is the URL as sent (sent: rq->url, or the
 * endpoint's url on the fast path) or out of memory, else a malloc'd
 * string. hidden: rq->hidden, or NULL on the fast path. */
char *postback_effective_shown(const struct ep_conf *e, const struct buf *hidden, const char *sent,
                               const char *effective);

/* The first POSTBACK_EXCERPT bytes of a response for the attempt log,
 * escaped as esc.h's ESC_TEXT (\n, \t, \xHH for C0 controls and bytes
 * that are not UTF-8, \uHHHH for C1 controls and bidi overrides). A
 * malloc'd string, NULL when n is 0 or out of memory. */
char *postback_excerpt(const char *s, size_t n);

/* Does the response body (its first bytes) hold success_body? */
int postback_body_ok(const char *want, const char *body, size_t n);

#endif
