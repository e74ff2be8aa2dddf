/* netpolicy.c - SSRF guard. Deliveries go to URLs chosen by tenants, so
 * every resolved address is judged before connecting (the daemon calls
 * netpolicy_check from curl's open-socket callback), and endpoint URLs are
 * validated when they are configured. */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

struct np_range {
    unsigned char net[16];
    unsigned prefix;
    const char *name;
};

/* The IANA IPv4 and IPv6 Special-Purpose Address Registries, whole,
 * and multicast: no webhook receiver lives in any of them, including the
 * blocks the registry calls globally reachable (anycast services such as
 * AS112, AMT, PCP and TURN). Where ranges nest the more specific comes
 * first, so its name is the one reported. */
static const struct np_range np_v4_blocks[] = {
    { { 0 },                 8, "this-network" },   /* 0.0.0.0/8 */
    { { 10 },                8, "private" },        /* 10.0.0.0/8 */
    { { 100, 64 },          10, "cgnat" },          /* 100.64.0.0/10 shared address space */
    { { 127 },               8, "loopback" },       /* 127.0.0.0/8 */
    { { 169, 254 },         16, "link-local" },     /* 169.254.0.0/16 */
    { { 172, 16 },          12, "private" },        /* 172.16.0.0/12 */
    /* 192.0.0.0/24 and within it DS-Lite /29, the dummy address, PCP and
     * TURN anycast, NAT64/DNS64 discovery */
    { { 192, 0, 0 },        24, "ietf-protocol" },
    { { 192, 0, 2 },        24, "documentation" },  /* TEST-NET-1 */
    { { 192, 31, 196 },     24, "as112" },          /* 192.31.196.0/24 AS112-v4 */
    { { 192, 52, 193 },     24, "amt" },            /* 192.52.193.0/24 AMT */
    { { 192, 88, 99 },      24, "6to4-relay" },     /* 192.88.99.0/24 (deprecated) */
    { { 192, 168 },         16, "private" },        /* 192.168.0.0/16 */
    { { 192, 175, 48 },     24, "as112" },          /* 192.175.48.0/24 direct delegation AS112 */
    { { 198, 18 },          15, "benchmarking" },   /* 198.18.0.0/15 */
    { { 198, 51, 100 },     24, "documentation" },  /* TEST-NET-2 */
    { { 203, 0, 113 },      24, "documentation" },  /* TEST-NET-3 */
    { { 224 },               4, "multicast" },      /* 224.0.0.0/4 */
    { { 255, 255, 255, 255 }, 32, "broadcast" },    /* inside 240/4 */
    { { 240 },               4, "reserved" },       /* 240.0.0.0/4 */
};

/* ::/128, ::1/128 and the forms with an IPv4 address inside
 * (::ffff:0:0/96, ::/96, 64:ff9b::/96, 2002::/16) are judged in
 * np_v6_block; after this table, anything outside 2000::/3 (the only
 * space IANA allocates for global unicast) is refused as reserved. */
static const struct np_range np_v6_blocks[] = {
    { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, "nat64-local" },   /* 64:ff9b:1::/48 local-use NAT64 */
    { { 0x01, 0x00 },       64, "discard" },        /* 100::/64 */
    { { 0x01, 0x00, 0, 0, 0, 0, 0, 0x01 }, 64, "dummy" },            /* 100:0:0:1::/64 */
    { { 0x20, 0x01, 0x00, 0x00 }, 32, "teredo" },    /* 2001::/32; hides an obfuscated IPv4 address */
    { { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, "benchmarking" },  /* 2001:2::/48 */
    { { 0x20, 0x01, 0x00, 0x03 }, 32, "amt" },       /* 2001:3::/32 */
    { { 0x20, 0x01, 0x00, 0x04, 0x01, 0x12 }, 48, "as112" },         /* 2001:4:112::/48 */
    { { 0x20, 0x01, 0x00, 0x10 }, 28, "orchid" },    /* 2001:10::/28 (deprecated) */
    { { 0x20, 0x01, 0x00, 0x20 }, 28, "orchid" },    /* 2001:20::/28 ORCHIDv2 */
    { { 0x20, 0x01, 0x00, 0x30 }, 28, "drone-det" }, /* 2001:30::/28 */
    /* the rest of 2001::/23: PCP, TURN and DNS-SD SRP anycast
     * (2001:1::1-3), and what the IETF assigns next */
    { { 0x20, 0x01 },       23, "ietf-protocol" },
    { { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation" }, /* 2001:db8::/32 */
    { { 0x26, 0x20, 0x00, 0x4f, 0x80, 0x00 }, 48, "as112" },         /* 2620:4f:8000::/48 */
    { { 0x3f, 0xff },       20, "documentation" },  /* 3fff::/20 */
    { { 0x5f, 0x00 },       16, "srv6-sid" },       /* 5f00::/16 segment routing SIDs */
    { { 0xfc },              7, "unique-local" },   /* fc00::/7 */
    { { 0xfe, 0x80 },       10, "link-local" },     /* fe80::/10 */
    { { 0xfe, 0xc0 },       10, "site-local" },     /* fec0::/10 (deprecated) */
    { { 0xff },              8, "multicast" },      /* ff00::/8 */
};

static const unsigned char np_v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
static const unsigned char np_nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

static void np_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen > 0)
        snprintf(err, errlen, "%s", msg);
}

static int np_prefix_match(const unsigned char *a, const unsigned char *net, unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

static const char *np_table_lookup(const struct np_range *t, size_t n, const unsigned char *a)
{
    for (size_t i = 0; i < n; i++)
        if (np_prefix_match(a, t[i].net, t[i].prefix))
            return t[i].name;
    return NULL;
}

static const char *np_v4_block(const unsigned char a[4])
{
    return np_table_lookup(np_v4_blocks, sizeof(np_v4_blocks) / sizeof(np_v4_blocks[0]), a);
}

static int np_is_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* IPv6 forms that carry an IPv4 address the kernel or a translator will
 * end up talking to: judge that address instead. */
static const char *np_v6_block(const unsigned char a[16])
{
    const char *name;

    if (np_is_zero(a, 15) && a[15] <= 1)  /* ::/128, ::1/128 */
        return a[15] ? "loopback" : "unspecified";
    if (memcmp(a, np_v4mapped, 12) == 0)   /* ::ffff:0:0/96 */
        return np_v4_block(a + 12);
    if (np_is_zero(a, 12))                 /* ::/96 IPv4-compatible */
        return np_v4_block(a + 12);
    if (memcmp(a, np_nat64, 12) == 0)      /* 64:ff9b::/96 */
        return np_v4_block(a + 12);
    if (a[0] == 0x20 && a[1] == 0x02)      /* 2002::/16 6to4 */
        return np_v4_block(a + 2);
    if ((name = np_table_lookup(np_v6_blocks, sizeof(np_v6_blocks) / sizeof(np_v6_blocks[0]), a)))
        return name;
    return (a[0] & 0xe0) == 0x20 ? NULL : "reserved";   /* outside 2000::/3 */
}

/* curl passes the address inside its own buffers; read it with memcpy so
 * nothing here assumes alignment. */
static int np_family(const struct sockaddr *sa)
{
    sa_family_t f;
    memcpy(&f, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(f));
    return f;
}

const char *netpolicy_default_block(const struct sockaddr *sa)
{
    if (!sa)
        return "no address";
    if (np_family(sa) == AF_INET) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof(in));
        return np_v4_block((const unsigned char *)&in.sin_addr.s_addr);
    }
    if (np_family(sa) == AF_INET6) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof(in6));
        return np_v6_block(in6.sin6_addr.s6_addr);
    }
    /* Unix sockets and the like are never a webhook destination. */
    return "unsupported address family";
}

static int np_allowed(const struct netpolicy *np, int family, const unsigned char *a)
{
    for (size_t i = 0; i < np->n && i < NETPOLICY_MAX_NETS; i++) {
        const struct netpolicy_net *net = &np->nets[i];
        if (net->family == family && np_prefix_match(a, net->addr, net->prefix))
            return 1;
    }
    return 0;
}

int netpolicy_check(const struct netpolicy *np, const struct sockaddr *sa,
                    const char **reason)
{
    const char *blocked = netpolicy_default_block(sa);
    int ok = 0;

    if (!blocked) {
        ok = 1;
    } else if (!sa || !np) {
        ok = 0;
    } else if (np_family(sa) == AF_INET) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof(in));
        ok = np_allowed(np, AF_INET, (const unsigned char *)&in.sin_addr.s_addr);
    } else if (np_family(sa) == AF_INET6) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof(in6));
        const unsigned char *a = in6.sin6_addr.s6_addr;
        ok = np_allowed(np, AF_INET6, a);
        /* A dual-stack socket reaches 127.0.0.1 as ::ffff:127.0.0.1, so an
         * IPv4 allow entry has to cover that spelling too. */
        if (!ok && memcmp(a, np_v4mapped, 12) == 0)
            ok = np_allowed(np, AF_INET, a + 12);
    }
    if (reason)
        *reason = ok ? NULL : blocked;
    return ok ? 0 : -1;
}

static int np_is_sep(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Longest token worth looking at: an IPv6 address with embedded IPv4
 * plus "/128". */
#define NP_TOKEN_MAX (INET6_ADDRSTRLEN + 4)

static int np_parse_one(const char *tok, size_t len, struct netpolicy_net *out,
                        char *err, size_t errlen)
{
    char buf[NP_TOKEN_MAX + 1];
    const char *slash;
    unsigned maxp, prefix;
    size_t alen;

    if (len > NP_TOKEN_MAX) {
        if (err && errlen > 0)
            snprintf(err, errlen, "bad network '%.*s...': too long", 20, tok);
        return -1;
    }
    memcpy(buf, tok, len);
    buf[len] = '\0';
    slash = memchr(buf, '/', len);
    alen = slash ? (size_t)(slash - buf) : len;

    memset(out, 0, sizeof(*out));
    {
        char addr[NP_TOKEN_MAX + 1];
        memcpy(addr, buf, alen);
        addr[alen] = '\0';
        out->family = memchr(addr, ':', alen) ? AF_INET6 : AF_INET;
        if (inet_pton(out->family, addr, out->addr) != 1) {
            if (err && errlen > 0)
                snprintf(err, errlen, "bad network '%s': not an IPv%c address",
                         buf, out->family == AF_INET ? '4' : '6');
            return -1;
        }
    }
    maxp = out->family == AF_INET ? 32 : 128;
    prefix = maxp;
    if (slash) {
        const char *p = slash + 1;
        size_t nd = strlen(p);
        /* Digits only: strtoul would take "+8", " 8" or "0x8". */
        if (nd == 0 || nd > 3 || strspn(p, "0123456789") != nd) {
            if (err && errlen > 0)
                snprintf(err, errlen, "bad network '%s': prefix length must be a number", buf);
            return -1;
        }
        prefix = 0;
        for (; *p; p++)
            prefix = prefix * 10 + (unsigned)(*p - '0');
        if (prefix > maxp) {
            if (err && errlen > 0)
                snprintf(err, errlen, "bad network '%s': prefix length must be 0..%u",
                         buf, maxp);
            return -1;
        }
    }
    out->prefix = prefix;
    /* Clear host bits so matching can compare whole bytes. */
    for (unsigned bit = prefix; bit < maxp; bit++)
        out->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
    return 0;
}

int netpolicy_parse(struct netpolicy *np, const char *list, char *err, size_t errlen)
{
    struct netpolicy tmp;
    const char *p = list ? list : "";

    if (!np) {
        np_err(err, errlen, "no policy storage");
        return -1;
    }
    tmp.n = 0;
    while (*p) {
        const char *start;
        while (*p && np_is_sep(*p))
            p++;
        if (!*p)
            break;
        start = p;
        while (*p && !np_is_sep(*p))
            p++;
        if (tmp.n == NETPOLICY_MAX_NETS) {
            if (err && errlen > 0)
                snprintf(err, errlen, "too many networks (max %d)", NETPOLICY_MAX_NETS);
            return -1;
        }
        if (np_parse_one(start, (size_t)(p - start), &tmp.nets[tmp.n], err, errlen) != 0)
            return -1;
        tmp.n++;
    }
    /* Only replace np once the whole list is good. */
    np->n = tmp.n;
    memcpy(np->nets, tmp.nets, tmp.n * sizeof(tmp.nets[0]));
    return 0;
}

/* URL validation. Pre-checks by hand give precise reasons and close the
 * gaps where curl's parser is lenient ("http:/host", "http:///host",
 * backslashes); curl's own parser then decides host and port, so what we
 * validate is what curl will connect to. */

static void np_errf_curl(char *err, size_t errlen, CURLUcode uc)
{
    if (err && errlen > 0)
        snprintf(err, errlen, "URL is not valid: %s", curl_url_strerror(uc));
}

/* netpolicy_url_check, and with host non-NULL the host (IPv6 without
 * brackets) and port (the scheme's default when none) curl will connect
 * to. */
static int np_url_parse(const char *url, char *err, size_t errlen, char *hostout, size_t hostlen, int *portout)
{
    CURLU *u = NULL;
    CURLUcode uc;
    char *host = NULL, *port = NULL, *user = NULL, *pass = NULL;
    const char *p, *auth, *auth_end;
    size_t len, slen;
    int rc = -1;

    if (!url || !*url) {
        np_err(err, errlen, "URL is empty");
        goto out;
    }
    len = strnlen(url, NETPOLICY_URL_MAX + 1);
    if (len > NETPOLICY_URL_MAX) {
        if (err && errlen > 0)
            snprintf(err, errlen, "URL too long (max %d)", NETPOLICY_URL_MAX);
        goto out;
    }
    for (p = url; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == ' ' || c == '\t') {
            np_err(err, errlen, "URL must not contain blanks");
            goto out;
        }
        if (c < 0x20 || c == 0x7f) {
            np_err(err, errlen, "URL must not contain control characters");
            goto out;
        }
        if (c >= 0x80) {
            np_err(err, errlen, "URL must be ASCII (percent-encode or use punycode)");
            goto out;
        }
        if (c == '\\') {
            /* Parsers disagree on whether it is a path separator. */
            np_err(err, errlen, "URL must not contain backslashes");
            goto out;
        }
        if (c == '#') {
            np_err(err, errlen, "URL must not contain a fragment ('#')");
            goto out;
        }
    }

    slen = strcspn(url, ":/?");
    if (url[slen] != ':' || strncmp(url + slen, "://", 3) != 0) {
        np_err(err, errlen, "URL must start with http:// or https://");
        goto out;
    }
    if (!((slen == 4 && strncasecmp(url, "http", 4) == 0) ||
          (slen == 5 && strncasecmp(url, "https", 5) == 0))) {
        np_err(err, errlen, "scheme must be http or https");
        goto out;
    }
    auth = url + slen + 3;
    auth_end = auth + strcspn(auth, "/?");
    if (auth_end == auth) {
        np_err(err, errlen, "URL has no host");
        goto out;
    }
    if (memchr(auth, '@', (size_t)(auth_end - auth))) {
        /* Credentials would end up in logs, metrics labels and the DB. */
        np_err(err, errlen, "URL must not contain credentials (user:password@)");
        goto out;
    }
    if (memchr(auth, '%', (size_t)(auth_end - auth))) {
        /* Percent-encoded hosts and zone ids make the logged host differ
         * from the one connected to. */
        np_err(err, errlen, "URL host must not be percent-encoded");
        goto out;
    }

    u = curl_url();
    if (!u) {
        np_err(err, errlen, "out of memory");
        goto out;
    }
    uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
    if (uc == CURLUE_BAD_PORT_NUMBER) {
        np_err(err, errlen, "URL port must be a number 1..65535");
        goto out;
    }
    if (uc != CURLUE_OK) {
        np_errf_curl(err, errlen, uc);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK) {
        np_err(err, errlen, "URL must not contain credentials (user:password@)");
        goto out;
    }
    uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
    if (uc != CURLUE_OK || !host || !*host) {
        np_err(err, errlen, "URL has no host");
        goto out;
    }
    uc = curl_url_get(u, CURLUPART_PORT, &port, 0);
    if (uc == CURLUE_OK) {
        size_t nd = strlen(port);
        unsigned long v = 0;
        if (nd == 0 || nd > 5 || strspn(port, "0123456789") != nd) {
            np_err(err, errlen, "URL port must be a number 1..65535");
            goto out;
        }
        for (const char *d = port; *d; d++)
            v = v * 10 + (unsigned long)(*d - '0');
        if (v < 1 || v > 65535) {
            np_err(err, errlen, "URL port must be a number 1..65535");
            goto out;
        }
        if (portout)
            *portout = (int)v;
    } else if (uc != CURLUE_NO_PORT) {
        np_errf_curl(err, errlen, uc);
        goto out;
    } else if (portout) {
        *portout = slen == 5 ? 443 : 80;
    }
    if (hostout) {
        const char *h = host;
        size_t hl = strlen(host);
        if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
            h++;
            hl -= 2;
        }
        if (hl == 0 || hl >= hostlen) {
            np_err(err, errlen, "URL host too long");
            goto out;
        }
        memcpy(hostout, h, hl);
        hostout[hl] = '\0';
    }
    rc = 0;
out:
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_free(pass);
    curl_url_cleanup(u);
    return rc;
}

int netpolicy_url_check(const char *url, char *err, size_t errlen)
{
    return np_url_parse(url, err, errlen, NULL, 0, NULL);
}

int netpolicy_url_target(const char *url, char *host, size_t hostlen, int *port)
{
    char err[160];

    return np_url_parse(url, err, sizeof err, host, hostlen, port);
}
