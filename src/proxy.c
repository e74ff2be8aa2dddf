/* proxy.c - an endpoint's HTTP CONNECT proxy (see proxy.h). */
#include "proxy.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int port_of(const char *p, size_t n, int *port)
{
    long v = 0;
    size_t i;

    if (n == 0 || n > 5)
        return -1;
    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

/* A host as a URL carries it: a name or IPv4 address (letters, digits,
 * '.', '-'), or "[IPv6]". */
static int host_ok(const char *h, size_t n)
{
    char a6[INET6_ADDRSTRLEN + 1];
    unsigned char bin[16];
    size_t i;

    if (n == 0 || n > 255)
        return 0;
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']' || n - 2 >= sizeof a6)
            return 0;
        memcpy(a6, h + 1, n - 2);
        a6[n - 2] = '\0';
        return inet_pton(AF_INET6, a6, bin) == 1;
    }
    for (i = 0; i < n; i++)
        if (!isalnum((unsigned char)h[i]) && h[i] != '.' && h[i] != '-')
            return 0;
    return 1;
}

int proxy_parse(const char *value, struct proxy_url *p, char *err, size_t errlen)
{
    const char *rest, *at, *hp, *end, *colon;
    size_t n = strlen(value), ui;
    int port;

    memset(p, 0, sizeof *p);
    if (n >= PROXY_URL_MAX) {
        snprintf(err, errlen, "too long (max %d bytes)", PROXY_URL_MAX - 1);
        return -1;
    }
    if (strncasecmp(value, "http://", 7) != 0) {
        snprintf(err, errlen, "must be http://[user:password@]host:port (an HTTP proxy that tunnels with "
                              "CONNECT; no other scheme)");
        return -1;
    }
    rest = value + 7;
    end = rest + strcspn(rest, "/?#");
    if (*end && strcmp(end, "/") != 0) {
        snprintf(err, errlen, "must be http://[user:password@]host:port, with no path or query");
        return -1;
    }
    /* the last '@' ends the userinfo: a password may hold '@' unencoded */
    at = NULL;
    for (hp = rest; hp < end; hp++)
        if (*hp == '@')
            at = hp;
    hp = rest;
    if (at) {
        ui = (size_t)(at - rest);
        for (const char *q = rest; q < at; q++)
            if ((unsigned char)*q <= 0x20 || *q == 0x7f) {
                snprintf(err, errlen, "the credentials hold a blank or control character");
                return -1;
            }
        if (ui == 0) {
            snprintf(err, errlen, "empty credentials before '@'");
            return -1;
        }
        if (ui == strlen(PROXY_MASKED) && memcmp(rest, PROXY_MASKED, ui) == 0)
            p->masked = 1;
        else
            memcpy(p->auth, rest, ui);
        hp = at + 1;
    }
    /* host:port; an IPv6 host is bracketed, so the port follows ']' */
    colon = NULL;
    if (hp < end && hp[0] == '[') {
        const char *rb = memchr(hp, ']', (size_t)(end - hp));
        if (rb && rb + 1 < end && rb[1] == ':')
            colon = rb + 1;
    } else {
        colon = memchr(hp, ':', (size_t)(end - hp));
    }
    if (!colon) {
        snprintf(err, errlen, "must name a port: http://host:port");
        goto fail;
    }
    if (!host_ok(hp, (size_t)(colon - hp))) {
        snprintf(err, errlen, "the proxy host is not a host name or IP address");
        goto fail;
    }
    if (port_of(colon + 1, (size_t)(end - colon - 1), &port) < 0) {
        snprintf(err, errlen, "the proxy port must be 1-65535");
        goto fail;
    }
    snprintf(p->shown, sizeof p->shown, "http://%s%.*s:%d", at ? PROXY_MASKED "@" : "", (int)(colon - hp), hp,
             port);
    return 0;
fail:
    explicit_bzero(p->auth, sizeof p->auth);
    return -1;
}

int proxy_curl_url(const char *shown, const char *auth, char *out, size_t n)
{
    const char *hp = shown + 7;   /* after "http://" */
    const char *at = strchr(hp, '@');
    size_t o;

    if (strncmp(shown, "http://", 7) != 0 || n < 8)
        return -1;
    if (at)
        hp = at + 1;
    memcpy(out, "http://", 7);
    o = 7;
    /* libcurl's URL parser ends the userinfo at the first '@' (7.88:
     * "Unsupported proxy syntax"), proxy_parse at the last: a password's
     * own '@' goes percent-encoded, which libcurl decodes */
    for (; auth && *auth; auth++) {
        const char *c = *auth == '@' ? "%40" : auth;
        size_t l = *auth == '@' ? 3 : 1;
        if (o + l >= n)
            goto fail;
        memcpy(out + o, c, l);
        o += l;
    }
    if (o > 7) {
        if (o + 1 >= n)
            goto fail;
        out[o++] = '@';
    }
    if (o + strlen(hp) >= n)
        goto fail;
    memcpy(out + o, hp, strlen(hp) + 1);
    return 0;
fail:
    explicit_bzero(out, n);
    return -1;
}

int proxy_connect_to(const struct sockaddr *sa, int port, char *out, size_t n)
{
    char a[INET6_ADDRSTRLEN];
    int w;

    if (sa->sa_family == AF_INET) {
        if (!inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof a))
            return -1;
        w = snprintf(out, n, "::%s:%d", a, port);
    } else if (sa->sa_family == AF_INET6) {
        if (!inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof a))
            return -1;
        w = snprintf(out, n, "::[%s]:%d", a, port);
    } else {
        return -1;
    }
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int proxy_pick(const struct sockaddr_storage *a, size_t n, const struct netpolicy *np, unsigned turn,
               struct sockaddr_storage *out, const char **reason)
{
    const char *first = NULL, *why;
    size_t i, ok = 0, pick = 0;

    /* two passes: count the allowed addresses, then take the turn-th */
    for (i = 0; i < n; i++) {
        if (a[i].ss_family != AF_INET && a[i].ss_family != AF_INET6)
            continue;
        why = NULL;
        if (netpolicy_check(np, (const struct sockaddr *)&a[i], &why) == 0) {
            ok++;
            continue;
        }
        if (!first)
            first = why ? why : "blocked";
    }
    if (!ok) {
        *reason = first;
        return -1;
    }
    turn %= (unsigned)ok;
    for (i = 0; i < n; i++) {
        if ((a[i].ss_family != AF_INET && a[i].ss_family != AF_INET6) ||
            netpolicy_check(np, (const struct sockaddr *)&a[i], &why) != 0)
            continue;
        if (pick++ == turn) {
            *out = a[i];
            return 0;
        }
    }
    *reason = first;
    return -1;
}

/* The resolved addresses of recent names, one slot per host hash (a
 * collision replaces the older name): a fixed table, so names from any
 * number of endpoints hold no more memory. A name that does not resolve
 * is kept too, for PROXY_DNS_NEG_TTL_MS: an endpoint whose name is gone
 * costs one lookup per that time, not one per attempt. Addresses past
 * their minute still serve (up to PROXY_DNS_STALE_MS) while a lookup in
 * the background refreshes them.
 *
 * getaddrinfo has no timeout of its own (a dead resolver: 5 s per try
 * and server, and more per search domain), and the delivery thread
 * waiting for it waits with all its other transfers. So the lookup runs
 * on a thread of its own; the caller waits at most wait_ms and fails the
 * attempt as a DNS error when it has not come back; the lookup goes on
 * and fills the cache for the next attempt. Callers asking for a name
 * already being looked up wait for that lookup; at most DNS_INFLIGHT_MAX
 * lookups run at once (beyond that an attempt fails as a DNS error). */
#define DNS_SLOTS 64
#define DNS_ADDRS 8
#define DNS_INFLIGHT_MAX 16
struct dns_job {
    char host[256];
    int refs;                    /* the lookup thread and each waiter */
    int done;
    size_t n;
    struct sockaddr_storage a[DNS_ADDRS];
};
struct dns_slot {
    char host[256];
    int64_t at_ms;               /* monotonic; 0: empty */
    size_t n;                    /* 0: the name did not resolve */
    struct sockaddr_storage a[DNS_ADDRS];
    struct dns_job *pending;     /* a lookup of host under way */
};
static struct dns_slot dns[DNS_SLOTS];
static int dns_inflight;
static pthread_mutex_t dns_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dns_cv;
static pthread_once_t dns_once = PTHREAD_ONCE_INIT;
static proxy_gai_fn *dns_gai = getaddrinfo;
static proxy_fai_fn *dns_fai = freeaddrinfo;
static int64_t (*dns_now)(void) = util_mono_ms;

static void dns_init(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&dns_cv, &ca);
    pthread_condattr_destroy(&ca);
}

void proxy_dns_hook(proxy_gai_fn *gai, proxy_fai_fn *fai, int64_t (*now)(void))
{
    pthread_mutex_lock(&dns_mu);
    dns_gai = gai ? gai : getaddrinfo;
    dns_fai = fai ? fai : freeaddrinfo;
    dns_now = now ? now : util_mono_ms;
    pthread_mutex_unlock(&dns_mu);
}

static size_t dns_slot_of(const char *host)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */

    for (; *host; host++)
        h = (h ^ (unsigned char)*host) * 1099511628211ULL;
    return (size_t)(h % DNS_SLOTS);
}

/* under dns_mu */
static void dns_job_put(struct dns_job *j)
{
    if (--j->refs == 0)
        free(j);
}

static void *dns_run(void *arg)
{
    struct dns_job *j = arg;
    struct dns_slot *s = &dns[dns_slot_of(j->host)];
    struct addrinfo hints, *ai = NULL, *p;
    proxy_gai_fn *gai;
    proxy_fai_fn *fai;
    size_t n = 0;

    pthread_mutex_lock(&dns_mu);
    gai = dns_gai;
    fai = dns_fai;
    pthread_mutex_unlock(&dns_mu);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (gai(j->host, NULL, &hints, &ai) == 0) {
        for (p = ai; p && n < DNS_ADDRS; p = p->ai_next)
            if ((p->ai_family == AF_INET || p->ai_family == AF_INET6) && p->ai_addrlen <= sizeof j->a[0]) {
                memset(&j->a[n], 0, sizeof j->a[n]);
                memcpy(&j->a[n], p->ai_addr, p->ai_addrlen);
                n++;
            }
        fai(ai);
    }
    pthread_mutex_lock(&dns_mu);
    j->n = n;
    j->done = 1;
    if (s->pending == j) {
        int64_t now = dns_now();
        s->pending = NULL;
        util_strlcpy(s->host, j->host, sizeof s->host);
        s->at_ms = now ? now : 1;
        s->n = n;
        memcpy(s->a, j->a, n * sizeof j->a[0]);
    }
    dns_inflight--;
    pthread_cond_broadcast(&dns_cv);
    dns_job_put(j);
    pthread_mutex_unlock(&dns_mu);
    return NULL;
}

/* A lookup of host started (or the one under way joined), under dns_mu,
 * its reference taken for the caller. NULL: none could be started. */
static struct dns_job *dns_start(struct dns_slot *s, const char *host)
{
    struct dns_job *j = s->pending;
    pthread_attr_t at;
    pthread_t t;
    int rc;

    if (j && strcmp(j->host, host) == 0) {
        j->refs++;
        return j;
    }
    if (dns_inflight >= DNS_INFLIGHT_MAX || !(j = calloc(1, sizeof *j)))
        return NULL;
    util_strlcpy(j->host, host, sizeof j->host);
    j->refs = 2;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &at, dns_run, j);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        free(j);
        return NULL;
    }
    dns_inflight++;
    if (!s->pending)   /* a colliding name's lookup keeps the slot */
        s->pending = j;
    return j;
}

/* host's addresses into a (at most DNS_ADDRS): from the cache, else from
 * a lookup waited for at most wait_ms. The number; 0 when the name does
 * not resolve (*timed_out 0) or not in time (*timed_out 1). */
static size_t dns_lookup(const char *host, int wait_ms, struct sockaddr_storage *a, int *timed_out)
{
    struct dns_slot *s = &dns[dns_slot_of(host)];
    struct dns_job *j;
    int64_t now;
    struct timespec until;
    size_t n = 0;

    *timed_out = 0;
    if (strlen(host) >= sizeof s->host)
        return 0;
    pthread_once(&dns_once, dns_init);
    pthread_mutex_lock(&dns_mu);
    now = dns_now();
    if (s->at_ms && strcmp(s->host, host) == 0 &&
        now - s->at_ms < (s->n ? PROXY_DNS_STALE_MS : PROXY_DNS_NEG_TTL_MS)) {
        n = s->n;
        memcpy(a, s->a, n * sizeof *a);
        /* past its minute: this attempt takes the addresses it has (the
         * guard judges them all the same), a lookup in the background
         * refreshes them; only a name's first lookup is waited for */
        if (n && now - s->at_ms >= PROXY_DNS_TTL_MS && (j = dns_start(s, host)))
            dns_job_put(j);
        pthread_mutex_unlock(&dns_mu);
        return n;
    }
    if (!(j = dns_start(s, host))) {
        pthread_mutex_unlock(&dns_mu);
        *timed_out = 1;
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!j->done && pthread_cond_timedwait(&dns_cv, &dns_mu, &until) == 0)
        ;
    if (j->done) {
        n = j->n;
        memcpy(a, j->a, n * sizeof *a);
    } else {
        *timed_out = 1;
    }
    dns_job_put(j);
    pthread_mutex_unlock(&dns_mu);
    return n;
}

int proxy_resolve(const char *host, const struct netpolicy *np, int wait_ms, unsigned turn,
                  struct sockaddr_storage *out, const char **reason)
{
    struct sockaddr_storage a[DNS_ADDRS];
    int timed_out;
    size_t n = dns_lookup(host, wait_ms, a, &timed_out);

    if (!n)
        return timed_out ? -3 : -2;
    return proxy_pick(a, n, np, turn, out, reason);
}
