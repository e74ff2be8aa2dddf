/* xfer.h - one HTTP attempt on a reusable libcurl easy handle: the
 * request built from a job (URL or template, body, Standard Webhooks
 * headers and signature), the callbacks that read the answer, and the
 * job's result filled in from it. The delivery threads (deliver.c) own
 * the handles, the multi handle and the scheduling; an xfer is used by
 * one thread only. No logging: bodies and signatures stay in memory. */
#ifndef HOOKD_XFER_H
#define HOOKD_XFER_H
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "deliver.h"
#include "netpolicy.h"
#include "postback.h"
#include "proxy.h"
#include "proto.h"
#include "sign.h"
#include "util.h"

struct xfer {
    struct xfer *next, *prev;   /* deliver.c: its active list or spare pool */
    CURL *easy;                 /* configured once; per-job options only */
    struct djob *job;
    const struct netpolicy *np; /* the SSRF guard, checked at connect */
    struct netshare *ns;        /* TLS session and DNS caches across threads (may be NULL) */
    CURLSH *share;              /* the share the handle uses now */
    const char *src_global;     /* [delivery] source_address, or NULL */
    char src[64];               /* the local address the handle is set to ("": none) */
    const char *ca_global;      /* [delivery] ca_file, or NULL */
    char *ca_default, *capath_default;  /* libcurl's system store (NULL: none) */
    char ca[512];               /* the CA file the handle is set to ("": the system store) */
    int ca_set;                 /* ca holds it */
    char *cert, *key, *pins;    /* the client certificate, key and pins the handle
                                 * is set to (NULL: none; xfer.c's `unknown`: not known) */
    char proxy[PROXY_CURL_URL_MAX];  /* the proxy the handle is set to, credentials and all ("": none) */
    char proxy_dflt[PROXY_CURL_URL_MAX];  /* [delivery] proxy as libcurl takes it */
    int proxy_dflt_on;          /* [delivery] proxy is set (proxy_dflt "": not usable, fail) */
    char connect_to[80];        /* the attempt's CONNECT target, "::ADDR:PORT" (proxy.h) */
    struct curl_slist ct;       /* connect_to as curl's list of one */
    /* headers: three per-attempt nodes in front of the endpoint's fixed
     * ones, so an attempt allocates nothing (curl only reads the list) */
    struct ep_conf *hdr_ep;     /* reference: its address cannot be reused */
    struct curl_slist *fixed_hdrs;
    struct curl_slist dyn[3];
    struct curl_slist *hdrs;    /* the attempt's list: dyn[0], or fixed_hdrs when unsigned */
    char id_line[PROTO_EVENT_ID_MAX + 16];
    char ts_line[48];
    char sig_line[80 + SIGN_MAX_SECRETS * (SIGN_HUB_LEN + 1)];   /* either scheme's */
    /* per attempt */
    size_t body_seen;
    int body_capped;
    int blocked;
    int proxied;                /* through the endpoint's proxy */
    int counted;                /* deliver.c: holds one of its host's slots (slotq) */
    int restarted;              /* started again after a dead reused connection */
    const char *block_reason;
    char snippet[POSTBACK_EXCERPT + 1];
    size_t snip_len;
    struct buf seen;            /* the body, for success_body */
    struct postback_req rq;     /* templated requests; buffers reused */
    char retry_after[64];
    char errbuf[CURL_ERROR_SIZE];
};

struct netshare;
/* A handle with everything that never changes between attempts set;
 * ns (or NULL) outlives it. NULL when out of memory. */
struct xfer *xfer_new(const struct config *c, const struct netpolicy *np, struct netshare *ns);
/* Clear what one attempt left behind, before the next. */
void xfer_reset(struct xfer *x);
void xfer_destroy(struct xfer *x);
/* Finish j in place as failed before anything was sent. */
void xfer_fail(struct djob *j, enum errclass c, const char *msg);
/* Set x up to send j (j->started_at set; x->job = j). -1: j failed in
 * place (its template, its headers), nothing to send. */
int xfer_prepare(struct xfer *x, struct djob *j);
/* The attempt ended with rc on a dead reused connection, nothing received,
 * and may be started again (once per attempt; see xfer.c): 1, x ready. */
int xfer_restartable(struct xfer *x, CURLcode rc);
/* The attempt ended with rc: its status, timing, Retry-After, excerpt
 * and verdict into x->job. */
void xfer_result(struct xfer *x, CURLcode rc);

#endif
