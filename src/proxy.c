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

int proxy_pick(const struct sockaddr_storage *a, size_t n, const struct netpolicy *np,
               struct sockaddr_storage *out, const char **reason)
{
    const char *first = NULL, *why;
    size_t i;

    for (i = 0; i < n; i++) {
        if (a[i].ss_family != AF_INET && a[i].ss_family != AF_INET6)
            continue;
        why = NULL;
        if (netpolicy_check(np, (const struct sockaddr *)&a[i], &why) == 0) {
            *out = a[i];
            return 0;
        }
        if (!first)
            first = why ? why : "blocked";
    }
    *reason = first;
    return -1;
}

/* The resolved addresses of recent names, one slot per host hash (a
 * collision replaces the older name). */
#define DNS_SLOTS 64
#define DNS_ADDRS 8
struct dns_slot {
    char host[256];
    int64_t at_ms;               /* monotonic; 0: empty */
    size_t n;
    struct sockaddr_storage a[DNS_ADDRS];
};
static struct dns_slot dns[DNS_SLOTS];
static pthread_mutex_t dns_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t dns_slot_of(const char *host)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */

    for (; *host; host++)
        h = (h ^ (unsigned char)*host) * 1099511628211ULL;
    return (size_t)(h % DNS_SLOTS);
}

/* host's addresses into a (at most DNS_ADDRS): from the cache, else
 * getaddrinfo (outside the lock). The number, or 0 when it does not
 * resolve. */
static size_t dns_lookup(const char *host, struct sockaddr_storage *a)
{
    struct dns_slot *s = &dns[dns_slot_of(host)];
    struct addrinfo hints, *ai = NULL, *p;
    int64_t now = util_mono_ms();
    size_t n = 0;

    pthread_mutex_lock(&dns_mu);
    if (s->at_ms && now - s->at_ms < PROXY_DNS_TTL_MS && strcmp(s->host, host) == 0) {
        n = s->n;
        memcpy(a, s->a, n * sizeof *a);
    }
    pthread_mutex_unlock(&dns_mu);
    if (n)
        return n;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0)
        return 0;
    for (p = ai; p && n < DNS_ADDRS; p = p->ai_next)
        if ((p->ai_family == AF_INET || p->ai_family == AF_INET6) && p->ai_addrlen <= sizeof *a) {
            memset(&a[n], 0, sizeof a[n]);
            memcpy(&a[n], p->ai_addr, p->ai_addrlen);
            n++;
        }
    freeaddrinfo(ai);
    if (n && strlen(host) < sizeof s->host) {
        pthread_mutex_lock(&dns_mu);
        util_strlcpy(s->host, host, sizeof s->host);
        s->at_ms = now ? now : 1;
        s->n = n;
        memcpy(s->a, a, n * sizeof *a);
        pthread_mutex_unlock(&dns_mu);
    }
    return n;
}

int proxy_resolve(const char *host, const struct netpolicy *np, struct sockaddr_storage *out,
                  const char **reason)
{
    struct sockaddr_storage a[DNS_ADDRS];
    size_t n = dns_lookup(host, a);

    if (!n)
        return -2;
    return proxy_pick(a, n, np, out, reason);
}

int proxy_target(const char *url, char *host, size_t hostlen, int *port)
{
    const char *hp, *end, *colon = NULL, *hend;
    int https;

    if (strncasecmp(url, "http://", 7) == 0) {
        https = 0;
        hp = url + 7;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        https = 1;
        hp = url + 8;
    } else {
        return -1;
    }
    end = hp + strcspn(hp, "/?#");
    if (memchr(hp, '@', (size_t)(end - hp)))   /* netpolicy_url_check refuses userinfo */
        return -1;
    if (*hp == '[') {
        const char *rb = memchr(hp, ']', (size_t)(end - hp));
        if (!rb)
            return -1;
        if (rb + 1 < end && rb[1] == ':')
            colon = rb + 1;
        else if (rb + 1 != end)
            return -1;
        hp++;
        hend = rb;
    } else {
        colon = memchr(hp, ':', (size_t)(end - hp));
        hend = colon ? colon : end;
    }
    if (hend == hp || (size_t)(hend - hp) >= hostlen)
        return -1;
    memcpy(host, hp, (size_t)(hend - hp));
    host[hend - hp] = '\0';
    if (colon)
        return port_of(colon + 1, (size_t)(end - colon - 1), port);
    *port = https ? 443 : 80;
    return 0;
}
