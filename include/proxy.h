/* proxy.h - an endpoint's HTTP proxy: the `proxy` key parsed and
 * validated, its credentials kept apart from the form people see, and
 * the CONNECT target built from an address hookd resolved and checked
 * itself.
 *
 * The security property: a proxied delivery never hands the proxy a
 * name. hookd resolves the target, picks an address the SSRF guard
 * allows (netpolicy.h) and has libcurl ask the proxy to CONNECT to that
 * address (CURLOPT_CONNECT_TO "::ADDR:PORT", always tunnelled, also for
 * http:// targets); the name stays in the Host header and in SNI. A
 * target the guard refuses fails before the proxy is contacted. The
 * proxy itself may sit on a private address (they usually do): the
 * guard judges where deliveries go, not the hop they take.
 *
 * Stored and shown form: "http://host:port", with PROXY_MASKED as its
 * userinfo when credentials are set; the credentials ("user:password" as written,
 * percent-encoded) ride apart, sealed with the endpoint's secrets.
 * Everything but proxy_resolve is pure. */
#ifndef HOOKD_PROXY_H
#define HOOKD_PROXY_H
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>

#include "netpolicy.h"

#define PROXY_URL_MAX 512     /* the whole key, credentials included */
#define PROXY_CURL_URL_MAX (3 * PROXY_URL_MAX)   /* proxy_curl_url's: each '@' of the credentials takes 3 */
#define PROXY_MASKED "***"    /* the userinfo of the shown form */
#define PROXY_NONE "none"     /* an endpoint's proxy: direct, whatever [delivery] proxy says */

struct proxy_url {
    char shown[PROXY_URL_MAX];   /* the stored and shown form */
    char auth[PROXY_URL_MAX];    /* "user:password" as given; "" none */
    int masked;                  /* the value said "***@": credentials held elsewhere */
};

/* Parse an endpoint's proxy: "http://[user[:password]@]host:port[/]";
 * host a name, an IPv4 address or a bracketed IPv6 one. Any other scheme
 * (https://, socks5://) is refused: only plain HTTP proxies that tunnel
 * with CONNECT. Returns 0, or -1 with a reason in err that never echoes
 * the credentials. */
int proxy_parse(const char *value, struct proxy_url *p, char *err, size_t errlen);

/* The URL libcurl is given (CURLOPT_PROXY): the shown form with the
 * credentials put back (auth NULL or "": none; a raw '@' in them
 * percent-encoded). 0, or -1 when it does
 * not fit in n. */
int proxy_curl_url(const char *shown, const char *auth, char *out, size_t n);

/* The CURLOPT_CONNECT_TO entry that sends any host's connection to the
 * address sa on port: "::127.0.0.1:443", "::[::1]:443". 0, or -1. */
int proxy_connect_to(const struct sockaddr *sa, int port, char *out, size_t n);

/* Of the n addresses a, the ones the guard allows, in order: the
 * turn-th of them (modulo their number) copied into out (its port
 * untouched). The caller passes the attempt number, so that a retry
 * after an unreachable address goes to the next one, as libcurl's own
 * connect walks the list when no proxy is used. 0; -1 when every one is
 * refused (*reason: the first one's range) or n is 0 (*reason NULL). */
int proxy_pick(const struct sockaddr_storage *a, size_t n, const struct netpolicy *np, unsigned turn,
               struct sockaddr_storage *out, const char **reason);

/* host ("example.com", "127.0.0.1", "::1" without brackets) resolved and
 * picked as proxy_pick does. The addresses of a name are kept
 * PROXY_DNS_TTL_MS (as libcurl's own DNS cache does), then refreshed in
 * the background while they still serve (up to PROXY_DNS_STALE_MS); a
 * name that does not resolve is kept PROXY_DNS_NEG_TTL_MS; all in a
 * fixed table. The guard judges the addresses at every use. The lookup (getaddrinfo, which has no
 * timeout) runs on a thread of its own and is waited for at most wait_ms:
 * a delivery thread never waits longer, and a late answer is cached for
 * the next attempt. Thread-safe. 0; -1 refused (*reason set); -2 the name
 * does not resolve; -3 no answer within wait_ms. */
#define PROXY_DNS_TTL_MS 60000
#define PROXY_DNS_NEG_TTL_MS 5000
#define PROXY_DNS_STALE_MS (10 * PROXY_DNS_TTL_MS)
int proxy_resolve(const char *host, const struct netpolicy *np, int wait_ms, unsigned turn,
                  struct sockaddr_storage *out, const char **reason);

/* Tests: the resolver and the monotonic clock (ms) proxy_resolve uses
 * (NULL: getaddrinfo, freeaddrinfo, util_mono_ms). */
struct addrinfo;
typedef int proxy_gai_fn(const char *, const char *, const struct addrinfo *, struct addrinfo **);
typedef void proxy_fai_fn(struct addrinfo *);
void proxy_dns_hook(proxy_gai_fn *gai, proxy_fai_fn *fai, int64_t (*now)(void));

#endif
