/* xfer.c - one HTTP attempt on a reusable easy handle (see xfer.h). */
#include "xfer.h"
#include "netshare.h"
#include "outcome.h"
#include "retry_after.h"
#include "tlsid.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* beyond this the body is not worth reading: the status line decided
 * (and success_body looks no further) */
#define BODY_CAP (64 * 1024)

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct xfer *x = clientp;
    const char *reason = NULL;

    (void)purpose;
    /* through a proxy the only connection is to the proxy, which the
     * operator chose and may be private; the target was checked before
     * (via_proxy) */
    if (!x->proxied && netpolicy_check(x->np, &a->addr, &reason) < 0) {
        x->blocked = 1;
        x->block_reason = reason;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n, take;

    if (x->snip_len < sizeof x->snippet - 1) {
        take = sizeof x->snippet - 1 - x->snip_len;
        if (take > len)
            take = len;
        memcpy(x->snippet + x->snip_len, p, take);
        x->snip_len += take;
    }
    if (x->job->ep->def.rq.success_body && x->seen.len < BODY_CAP) {
        take = BODY_CAP - x->seen.len;
        buf_append(&x->seen, p, take < len ? take : len);
    }
    x->body_seen += len;
    if (x->body_seen > BODY_CAP) {
        x->body_capped = 1;
        return 0;  /* stop reading: an endless body must not hold the slot */
    }
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n;

    if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        size_t v = len - 12;
        if (v >= sizeof x->retry_after)
            v = sizeof x->retry_after - 1;
        memcpy(x->retry_after, p + 12, v);
        x->retry_after[v] = '\0';
        x->retry_after[strcspn(x->retry_after, "\r\n")] = '\0';
    }
    return len;
}

static int add_header(struct curl_slist **l, const char *h)
{
    struct curl_slist *n = curl_slist_append(*l, h);

    if (!n)
        return -1;
    *l = n;
    return 0;
}

/* The headers every attempt to this endpoint carries. */
static int fixed_headers(struct xfer *x, struct ep_conf *e)
{
    size_t i;

    if (x->hdr_ep == e)
        return 0;
    curl_slist_free_all(x->fixed_hdrs);
    x->fixed_hdrs = NULL;
    ep_conf_unref(x->hdr_ep);
    x->hdr_ep = NULL;
    if ((e->body == EP_BODY_JSON && add_header(&x->fixed_hdrs, "Content-Type: application/json") < 0) ||
        (e->body == EP_BODY_FORM &&
         add_header(&x->fixed_hdrs, "Content-Type: application/x-www-form-urlencoded") < 0) ||
        add_header(&x->fixed_hdrs, "User-Agent: hookd/" HOOKD_VERSION) < 0 ||
        add_header(&x->fixed_hdrs, "Expect:") < 0)
        return -1;
    for (i = 0; i < e->def.nheaders; i++)
        if (add_header(&x->fixed_hdrs, e->def.headers[i]) < 0)
            return -1;
    x->hdr_ep = ep_conf_ref(e);
    return 0;
}

/* body: the bytes sent, which the signature covers (a GET's are none) */
static int build_headers(struct xfer *x, int64_t ts, const char *body, size_t blen)
{
    struct djob *j = x->job;
    struct ep_conf *e = j->ep;
    int n;

    if (fixed_headers(x, e) < 0)
        return -1;
    if (e->def.rq.sign == EP_SIGN_NONE || (e->def.rq.sign == EP_SIGN_HUB && !e->nkeys)) {
        x->hdrs = x->fixed_hdrs;
        return 0;
    }
    if (e->def.rq.sign == EP_SIGN_HUB) {
        n = snprintf(x->sig_line, sizeof x->sig_line, "%s: ",
                     e->def.rq.signature_header ? e->def.rq.signature_header : SIGN_HUB_HEADER);
        if (sign_hub_value(e->keys, e->nkeys, body, blen, x->sig_line + n, sizeof x->sig_line - (size_t)n) < 0)
            return -1;
        x->dyn[2].data = x->sig_line;
        x->dyn[2].next = x->fixed_hdrs;
        x->hdrs = &x->dyn[2];
        return 0;
    }
    x->hdrs = &x->dyn[0];
    snprintf(x->id_line, sizeof x->id_line, "webhook-id: %s", j->event_id);
    snprintf(x->ts_line, sizeof x->ts_line, "webhook-timestamp: %lld", (long long)ts);
    x->dyn[0].data = x->id_line;
    x->dyn[0].next = &x->dyn[1];
    x->dyn[1].data = x->ts_line;
    x->dyn[1].next = x->fixed_hdrs;
    if (e->nkeys) {
        n = snprintf(x->sig_line, sizeof x->sig_line, "webhook-signature: ");
        if (sign_header_value(e->keys, e->nkeys, j->event_id, ts, body, blen, x->sig_line + n,
                              sizeof x->sig_line - (size_t)n) < 0)
            return -1;
        x->dyn[1].next = &x->dyn[2];
        x->dyn[2].data = x->sig_line;
        x->dyn[2].next = x->fixed_hdrs;
    }
    return 0;
}

void xfer_fail(struct djob *j, enum errclass c, const char *msg)
{
    j->attempted = 1;
    j->sample = 0;
    j->errc = c;
    j->http_status = 0;
    j->response_ms = 0;
    util_strlcpy(j->error, msg, sizeof j->error);
}

typedef void (*seclevel_fn)(void *ssl_ctx, int level);

/* OpenSSL: the security level pinned in each new SSL_CTX, by the libssl
 * libcurl itself loaded. One store, where a cipher list string
 * ("DEFAULT:@SECLEVEL=2") is parsed again for every TLS connection
 * (about 190k instructions each, measured on reconnects). */
static CURLcode on_ssl_ctx(CURL *h, void *ssl_ctx, void *arg)
{
    seclevel_fn set;

    (void)h;
    memcpy(&set, arg, sizeof set);
    set(ssl_ctx, 2);
    return CURLE_OK;
}

static int tls_openssl;          /* set once by tls_detect */
static seclevel_fn tls_seclevel;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_detect(void)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    void *p;

    tls_openssl = v && v->ssl_version && strncmp(v->ssl_version, "OpenSSL", 7) == 0;
    p = tls_openssl ? dlsym(RTLD_DEFAULT, "SSL_CTX_set_security_level") : NULL;
    if (p)
        memcpy(&tls_seclevel, &p, sizeof tls_seclevel);   /* POSIX: dlsym gives functions so */
}

/* The TLS policy both builds apply (Debian's libcurl on OpenSSL, the
 * static one on mbedTLS): TLS 1.2 or later; no SHA-1 signatures and no
 * RSA key under 2048 bits in a chain (OpenSSL's security level 2, pinned
 * here so a host's openssl.cnf cannot lower it; the static build's
 * libcurl is patched to the same profile, packaging/patches/). Which CAs:
 * trust() below. */
static void tls_policy(CURL *h)
{
    pthread_once(&tls_once, tls_detect);
    curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (tls_openssl && !(tls_seclevel && curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx) == CURLE_OK &&
                         curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, (void *)&tls_seclevel) == CURLE_OK))
        curl_easy_setopt(h, CURLOPT_SSL_CIPHER_LIST, "DEFAULT:@SECLEVEL=2");
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
#if LIBCURL_VERSION_NUM >= 0x075700
    /* OpenSSL's libcurl keeps a loaded CA store 24 h by default, blind
     * to the file changing: a replaced ca_file would not be trusted until
     * a restart. A minute costs one load per delivery thread a minute. */
    curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 60L);
#endif
}

/* The CAs an attempt trusts: the endpoint's ca_file, else [delivery]
 * ca_file, either replacing the system store (Debian's libcurl would add
 * its CA directory, /etc/ssl/certs, to a CAINFO), else the system store.
 * Set only when it changes; libcurl keeps connections and TLS sessions
 * apart per CA file. */
static void trust(struct xfer *x, const char *ca)
{
    if (!ca)
        ca = "";
    if (x->ca_set && strcmp(ca, x->ca) == 0)
        return;
    if (strlen(ca) >= sizeof x->ca) {
        x->ca_set = 0;   /* not cached: set each time */
    } else {
        util_strlcpy(x->ca, ca, sizeof x->ca);
        x->ca_set = 1;
    }
    curl_easy_setopt(x->easy, CURLOPT_CAINFO, *ca ? ca : x->ca_default);
    curl_easy_setopt(x->easy, CURLOPT_CAPATH, *ca ? NULL : x->capath_default);
}

/* The local address the attempt's connection leaves from (partners that
 * admit senders by IP): the endpoint's, else [delivery] source_address,
 * else the kernel's choice. "host!": an address, never an interface name
 * to look up. Set only when it changes; libcurl reuses a connection only
 * for the same local address. */
static void source_address(struct xfer *x, const char *addr)
{
    char v[80];

    if (!addr)
        addr = "";
    if (strcmp(addr, x->src) == 0)
        return;
    util_strlcpy(x->src, addr, sizeof x->src);
    snprintf(v, sizeof v, "host!%s", addr);
    curl_easy_setopt(x->easy, CURLOPT_INTERFACE, *addr ? v : NULL);
}

/* What a handle's TLS identity option is set to when it is not known
 * (a new handle, or a copy that could not be made): set next time. */
static char unknown[1];

/* One TLS identity option (client certificate, key, pins), set only when
 * it changes, like trust(): libcurl keeps connections and TLS sessions
 * apart per client certificate and pin, and an unchanged option costs no
 * copy per attempt. */
static void tls_opt(struct xfer *x, CURLoption o, char **have, const char *want)
{
    if (*have != unknown && (*have == want || (*have && want && strcmp(*have, want) == 0)))
        return;
    if (*have != unknown)
        free(*have);
    *have = want ? strdup(want) : NULL;
    if (want && !*have)
        *have = unknown;
    curl_easy_setopt(x->easy, o, want);
}

/* Mutual TLS and public-key pins: the endpoint's client_cert and
 * client_key (PEM; checked when the endpoint was defined, so a file gone
 * since fails the attempt as tls_client_auth) and pinned_pubkey. */
static void identity(struct xfer *x, const struct ep_request *rq)
{
    tls_opt(x, CURLOPT_SSLCERT, &x->cert, rq->client_cert);
    tls_opt(x, CURLOPT_SSLKEY, &x->key, rq->client_key);
    tls_opt(x, CURLOPT_PINNEDPUBLICKEY, &x->pins, rq->pinned_pubkey);
}

static void ssrf_text(char *out, size_t n, const char *reason)
{
    snprintf(out, n, "address refused by SSRF guard (%s range; see allow_networks)", reason ? reason : "blocked");
}

/* The endpoint's proxy (proxy.h). hookd resolves the target and checks
 * the address here, then has the proxy CONNECT to that address: the
 * proxy never gets a name to resolve (a second answer could point
 * anywhere) nor, without the tunnel, a plain request to forward to a
 * host of its choosing, so even http:// targets are tunnelled. The Host
 * header and SNI keep the name. -1: j failed in place, the proxy not
 * contacted. Set only when it changes; libcurl keeps connections apart
 * per proxy and per CONNECT target. */
static int via_proxy(struct xfer *x, struct djob *j, const char *url)
{
    const struct ep_def *d = &j->ep->def;
    char host[256], pu[PROXY_CURL_URL_MAX], why[160];
    struct sockaddr_storage sa;
    const char *reason = NULL;
    int port, rc;

    /* the endpoint's own, else [delivery] proxy; "none": direct */
    x->proxied = d->rq.proxy ? strcmp(d->rq.proxy, PROXY_NONE) != 0 : x->proxy_dflt_on;
    if (!x->proxied) {
        if (x->proxy[0]) {
            curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
            curl_easy_setopt(x->easy, CURLOPT_HTTPPROXYTUNNEL, 0L);
            curl_easy_setopt(x->easy, CURLOPT_CONNECT_TO, NULL);
            explicit_bzero(x->proxy, sizeof x->proxy);
        }
        return 0;
    }
    if (netpolicy_url_target(url, host, sizeof host, &port) < 0) {
        xfer_fail(j, ERRC_INTERNAL, "cannot read the target host of the URL");
        return -1;
    }
    /* the endpoint's connect timeout bounds the lookup as it bounds
     * libcurl's own; each retry asks for the name's next address */
    rc = proxy_resolve(host, x->np, (int)j->ep->eff.connect_timeout_ms,
                       j->attempt_count > 0 ? (unsigned)j->attempt_count : 0u, &sa, &reason);
    if (rc == -2 || rc == -3) {
        xfer_fail(j, ERRC_DNS,
                  rc == -2 ? curl_easy_strerror(CURLE_COULDNT_RESOLVE_HOST) : "the name did not resolve in time");
        return -1;
    }
    if (rc < 0) {
        ssrf_text(why, sizeof why, reason);
        xfer_fail(j, ERRC_BLOCKED, why);
        return -1;
    }
    if (d->rq.proxy)
        rc = proxy_curl_url(d->rq.proxy, d->proxy_auth, pu, sizeof pu);
    else if (x->proxy_dflt[0])
        memcpy(pu, x->proxy_dflt, sizeof pu);
    else
        rc = -1;   /* set but unusable: never direct instead */
    if (rc < 0 || proxy_connect_to((struct sockaddr *)&sa, port, x->connect_to, sizeof x->connect_to) < 0) {
        explicit_bzero(pu, sizeof pu);
        xfer_fail(j, ERRC_INTERNAL, "cannot build the proxy request");
        return -1;
    }
    x->ct.data = x->connect_to;
    x->ct.next = NULL;
    curl_easy_setopt(x->easy, CURLOPT_CONNECT_TO, &x->ct);
    if (strcmp(pu, x->proxy) != 0) {
        memcpy(x->proxy, pu, sizeof x->proxy);
        curl_easy_setopt(x->easy, CURLOPT_PROXY, x->proxy);
        curl_easy_setopt(x->easy, CURLOPT_HTTPPROXYTUNNEL, 1L);
    }
    explicit_bzero(pu, sizeof pu);
    return 0;
}

/* A failed proxied attempt the proxy is to blame for: it did not answer,
 * or answered the CONNECT with anything but 2xx. 1: j's error set. */
static int proxy_failed(struct xfer *x, struct djob *j, CURLcode rc)
{
    long code = 0;

    curl_easy_getinfo(x->easy, CURLINFO_HTTP_CONNECTCODE, &code);
    if (code && (code < 200 || code > 299))
        snprintf(j->error, sizeof j->error, "the proxy refused the CONNECT (HTTP %ld)", code);
    else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_PROXY)
        snprintf(j->error, sizeof j->error, "proxy unreachable: %s", curl_easy_strerror(rc));
    else
        return 0;
    j->errc = ERRC_PROXY;
    j->http_status = 0;
    j->sample = 0;
    return 1;
}

/* Does curl's error text hold the proxy's credentials? libcurl writes
 * the whole proxy URL into some of its messages ("Unsupported proxy
 * syntax in '...'"); proxy_failed replaces those it knows, this catches
 * any other before the text reaches the attempt log. */
static int names_proxy_auth(const struct xfer *x, const char *text)
{
    const char *ui = x->proxy + 7, *at = strrchr(ui, '@'), *colon;
    char part[PROXY_URL_MAX];
    size_t n;
    int hit;

    if (!x->proxied || strncmp(x->proxy, "http://", 7) != 0 || !at)
        return 0;
    n = (size_t)(at - ui);
    colon = memchr(ui, ':', n);
    /* the password alone, else the whole userinfo (a token) */
    if (colon && colon + 1 < at)
        ui = colon + 1;
    n = (size_t)(at - ui);
    memcpy(part, ui, n);
    part[n] = '\0';
    hit = strstr(text, part) != NULL;
    explicit_bzero(part, sizeof part);
    return hit;
}

struct xfer *xfer_new(const struct config *c, const struct netpolicy *np, struct netshare *ns)
{
    struct xfer *x = calloc(1, sizeof *x);
    CURL *h;

    if (!x)
        return NULL;
    h = x->easy = curl_easy_init();
    if (!h) {
        free(x);
        return NULL;
    }
    x->np = np;
    x->ns = ns;
    x->cert = x->key = x->pins = unknown;
    x->src_global = c->source_address && *c->source_address ? c->source_address : NULL;
    x->ca_global = c->ca_file && *c->ca_file ? c->ca_file : NULL;
    if (c->proxy && *c->proxy) {
        /* checked at load (config.c): it parses */
        x->proxy_dflt_on = 1;
        struct proxy_url p;
        char why[160];
        if (proxy_parse(c->proxy, &p, why, sizeof why) == 0)
            proxy_curl_url(p.shown, p.auth, x->proxy_dflt, sizeof x->proxy_dflt);
        explicit_bzero(&p, sizeof p);
    }
    /* what never changes between attempts is set once per handle */
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    /* HTTP/1.1 even where the receiver offers HTTP/2 (the static build has
     * no HTTP/2 at all). Debian's libcurl 7.88 fails a POST whose answer
     * came before the server read the body (nginx's "return 204": the
     * answer, then RST_STREAM NO_ERROR) with "Stream error in the HTTP/2
     * framing layer": a delivered event counted failed and sent again;
     * measured, a third of the attempts at 100 endpoints (make bench). */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_PROXY, "");   /* no proxy from the environment */
    curl_easy_setopt(h, CURLOPT_NOPROXY, ""); /* nor a no_proxy that skips an endpoint's */
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(h, CURLOPT_PRIVATE, x);
    tls_policy(h);
    /* libcurl's built-in system store, to go back to after an endpoint's own */
    {
        char *v = NULL;
        if (curl_easy_getinfo(h, CURLINFO_CAINFO, &v) == CURLE_OK && v && !(x->ca_default = strdup(v)))
            goto fail;
        v = NULL;
        if (curl_easy_getinfo(h, CURLINFO_CAPATH, &v) == CURLE_OK && v && !(x->capath_default = strdup(v)))
            goto fail;
    }
    return x;
fail:
    xfer_destroy(x);
    return NULL;
}

void xfer_reset(struct xfer *x)
{
    x->restarted = 0;
    x->body_seen = 0;
    x->body_capped = 0;
    x->blocked = 0;
    x->block_reason = NULL;
    x->snip_len = 0;
    buf_reset(&x->seen);
    x->retry_after[0] = '\0';
    x->errbuf[0] = '\0';
}

/* libcurl 7.88 retries a request by itself when a reused connection
 * turns out closed before anything came back (the server's idle close
 * crossed the request, or its close_notify, pending unread, made the
 * connection look alive), but counts those retries per easy handle and
 * never resets the count between transfers: every sixth one in a
 * handle's life fails its transfer ("Connection died, tried 5 times")
 * although no request reached the server. Such a transfer is started
 * again, once, as curl would have. */
int xfer_restartable(struct xfer *x, CURLcode rc)
{
    long status = 0, hdr = 0;

    if (rc != CURLE_SEND_ERROR || x->restarted || x->body_seen || strncmp(x->errbuf, "Connection died", 15) != 0)
        return 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x->easy, CURLINFO_HEADER_SIZE, &hdr);
    if (status || hdr)
        return 0;
    x->restarted = 1;
    x->retry_after[0] = '\0';
    x->errbuf[0] = '\0';
    return 1;
}

void xfer_destroy(struct xfer *x)
{
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->fixed_hdrs);
    ep_conf_unref(x->hdr_ep);
    buf_free(&x->seen);
    postback_req_free(&x->rq);
    free(x->ca_default);
    free(x->capath_default);
    if (x->cert != unknown)
        free(x->cert);
    if (x->key != unknown)
        free(x->key);
    if (x->pins != unknown)
        free(x->pins);
    explicit_bzero(x->proxy, sizeof x->proxy);
    explicit_bzero(x->proxy_dflt, sizeof x->proxy_dflt);
    free(x);
}

/* A templated request into x->rq, and the URL as the attempt log shows
 * it. -1: the job failed in place. */
static int request_of(struct xfer *x, struct djob *j)
{
    struct postback_msg m = {j->event_id, j->event_type, j->payload, j->payload_len, j->attempt_count + 1,
                             j->started_at / 1000};
    enum errclass ec = ERRC_INTERNAL;
    char why[200] = "out of memory";

    if (postback_build(j->ep, &m, &x->rq, &ec, why, sizeof why) < 0 ||
        (j->ep->url_tpl.nmacros && !(j->sent_url = strdup(x->rq.shown.p)))) {
        xfer_fail(j, ec, why);
        return -1;
    }
    return 0;
}

int xfer_prepare(struct xfer *x, struct djob *j)
{
    struct ep_conf *e = j->ep;
    const struct ep_settings *s = &e->eff;
    const char *url = e->def.url, *body = j->payload;
    size_t blen = j->payload_len;
    CURL *h = x->easy;

    x->job = j;
    if (!e->plain) {
        if (request_of(x, j) < 0)
            return -1;
        url = x->rq.send_url;
        body = x->rq.send_body;
        blen = x->rq.send_len;
    }
    if (build_headers(x, j->started_at / 1000, body, blen) < 0) {
        xfer_fail(j, ERRC_INTERNAL, "cannot build request headers");
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (via_proxy(x, j, url) < 0)
        return -1;
    source_address(x, e->def.rq.source_address ? e->def.rq.source_address : x->src_global);
    trust(x, e->def.rq.ca_file ? e->def.rq.ca_file : x->ca_global);
    identity(x, &e->def.rq);
    if (x->ns) {
        /* the host's TLS sessions and addresses, whichever thread and
         * handle connected last (a handle between transfers may switch) */
        CURLSH *sh = netshare_for(x->ns, e->host_hash);
        if (sh != x->share && curl_easy_setopt(h, CURLOPT_SHARE, sh) == CURLE_OK)
            x->share = sh;
    }
    if (e->def.rq.method == EP_GET) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        /* POSTFIELDS makes it a POST; PUT sends the same body */
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, e->def.rq.method == EP_PUT ? "PUT" : NULL);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)s->connect_timeout_ms);
    return 0;
}

/* The attempt log holds the URL curl requested, which is not always the
 * one handed to it (curl removes "/../" segments). */
static void record_effective_url(struct xfer *x, struct djob *j)
{
    const char *eff = NULL;
    char *shown;

    if (curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &eff) != CURLE_OK)
        return;
    shown = postback_effective_shown(j->ep, j->ep->plain ? NULL : &x->rq.hidden,
                                     j->ep->plain ? j->ep->def.url : x->rq.url.p, eff);
    if (shown) {
        free(j->sent_url);
        j->sent_url = shown;
    }
}

void xfer_result(struct xfer *x, CURLcode rc)
{
    struct djob *j = x->job;
    curl_off_t total_us = 0, pretransfer_us = 0;
    long status = 0;

    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &total_us);
    curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
    record_effective_url(x, j);
    j->attempted = 1;
    j->response_ms = (int64_t)(total_us / 1000);
    /* a latency sample only when the request reached the endpoint: a 0 ms
     * "sample" from a refused connect would drag p50 down exactly when
     * the endpoint is broken */
    j->sample = status > 0 || (pretransfer_us > 0 && !x->blocked);
    j->retry_after_ms = -1;
    if (x->retry_after[0]) {
        int64_t d;
        if (retry_after_parse(x->retry_after, util_now_ms(), &d) == 0)
            j->retry_after_ms = d;
    }
    free(j->response);
    j->response = postback_excerpt(x->snippet, x->snip_len);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && x->body_capped && status > 0)) {
        const struct ep_conf *e = j->ep;
        int ok = e->has_ok ? outcome_ok_has(&e->ok, (int)status) : status >= 200 && status < 300;
        j->http_status = (int)status;
        j->errc = ERRC_NONE;
        j->error[0] = '\0';
        if (ok && e->def.rq.success_body && !postback_body_ok(e->def.rq.success_body, x->seen.p, x->seen.len)) {
            j->errc = ERRC_BODY_MISMATCH;
            snprintf(j->error, sizeof j->error, "the response lacks the expected success_body");
        } else if (!ok) {
            x->snippet[x->snip_len] = '\0';
            util_printable(x->snippet);
            util_strlcpy(j->error, x->snippet, 121);
            /* an answer about the client certificate only means that over
             * TLS: from a plain-HTTP receiver it is an ordinary 400 */
            {
                const char *scheme = NULL;
                curl_easy_getinfo(x->easy, CURLINFO_SCHEME, &scheme);
                j->errc = scheme && strcasecmp(scheme, "https") == 0
                              ? tlsid_refine(ERRC_NONE, (int)status, x->snippet)
                              : ERRC_NONE;
            }
        }
    } else if (x->blocked) {
        j->http_status = 0;
        j->errc = ERRC_BLOCKED;
        ssrf_text(j->error, sizeof j->error, x->block_reason);
    } else if (x->proxied && proxy_failed(x, j, rc)) {
        /* j's error set */
    } else {
        j->http_status = 0;
        j->errc = tlsid_refine(outcome_errclass_from_curl((int)rc), 0, x->errbuf);
        /* timeouts and refused connects: curl's detail carries elapsed
         * times and byte counts, which would make every dead letter's
         * error unique; the dead-letter analysis groups by this text */
        if (j->errc == ERRC_TIMEOUT || j->errc == ERRC_CONNECT || !x->errbuf[0] || names_proxy_auth(x, x->errbuf))
            util_strlcpy(j->error, curl_easy_strerror(rc), sizeof j->error);
        else
            util_strlcpy(j->error, x->errbuf, sizeof j->error);
        util_printable(j->error);
    }
}
