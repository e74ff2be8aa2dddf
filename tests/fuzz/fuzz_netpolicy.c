/* fuzz_netpolicy.c - libFuzzer target for the SSRF guard (src/netpolicy.c):
 * netpolicy_parse (allow_networks CIDR lists), netpolicy_check and
 * netpolicy_default_block (resolved addresses), netpolicy_url_check (URLs).
 *
 * Input: byte 0 picks the mode, the rest is the data.
 *   'U' ...  a URL for netpolicy_url_check
 *   'L' ...  an allow_networks list, then each parsed net is checked
 *   other    16 address bytes, then an allow_networks list
 *
 * Properties:
 *  - a parsed list has <= NETPOLICY_MAX_NETS entries, prefixes in range,
 *    host bits cleared, and every network address is allowed by it;
 *  - the IPv4 verdict carries over to every IPv6 spelling of the same
 *    address that hookd judges by its IPv4 part: ::ffff:a.b.c.d (mapped),
 *    ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64), 2002:AABB:CCDD::
 *    (6to4): a default-blocked IPv4 address is blocked in each form, and
 *    with an IPv4-only allow list the mapped form is refused whenever the
 *    IPv4 form is;
 *  - with an empty allow list, check() refuses exactly what
 *    default_block() names, and names the same range;
 *  - an accepted URL is http(s)://, <= 2048 bytes, ASCII without blanks,
 *    controls, backslash, '#', and has no '@' before the path. */
#include "fuzz_common.h"
#include "netpolicy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>

static void sa4(struct sockaddr_storage *ss, const unsigned char a[4])
{
    struct sockaddr_in in;
    memset(ss, 0, sizeof *ss);
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons(443);
    memcpy(&in.sin_addr.s_addr, a, 4);
    memcpy(ss, &in, sizeof in);
}

static void sa6(struct sockaddr_storage *ss, const unsigned char a[16])
{
    struct sockaddr_in6 in6;
    memset(ss, 0, sizeof *ss);
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(443);
    memcpy(in6.sin6_addr.s6_addr, a, 16);
    memcpy(ss, &in6, sizeof in6);
}

static int refused(const struct netpolicy *np, const struct sockaddr_storage *ss, const char **why)
{
    const char *r = NULL;
    int rc = netpolicy_check(np, (const struct sockaddr *)ss, &r);
    FUZZ_CHECK(rc == 0 || rc == -1, "check rc %d", rc);
    FUZZ_CHECK((rc == 0) == (r == NULL), "rc %d with reason %s", rc, r ? r : "(null)");
    if (why)
        *why = r;
    return rc != 0;
}

static void check_address(const struct netpolicy *np, int v4only, const unsigned char *a16)
{
    static const struct netpolicy empty;
    struct sockaddr_storage ss;
    unsigned char v4[4], v6[16];
    const char *b4, *b, *why;
    int ref4;

    /* the 16 bytes as an IPv6 address, then the first 4 as IPv4 */
    sa6(&ss, a16);
    b = netpolicy_default_block((const struct sockaddr *)&ss);
    refused(&empty, &ss, &why);
    FUZZ_CHECK((b == NULL) == (why == NULL) && (!b || strcmp(b, why) == 0), "v6 empty-policy verdict");
    refused(np, &ss, NULL);

    memcpy(v4, a16, 4);
    sa4(&ss, v4);
    b4 = netpolicy_default_block((const struct sockaddr *)&ss);
    refused(&empty, &ss, &why);
    FUZZ_CHECK((b4 == NULL) == (why == NULL) && (!b4 || strcmp(b4, why) == 0), "v4 empty-policy verdict");
    ref4 = refused(np, &ss, NULL);

    /* ::ffff:a.b.c.d */
    memset(v6, 0, sizeof v6);
    v6[10] = v6[11] = 0xff;
    memcpy(v6 + 12, v4, 4);
    sa6(&ss, v6);
    b = netpolicy_default_block((const struct sockaddr *)&ss);
    FUZZ_CHECK(!b4 || b, "%u.%u.%u.%u is blocked (%s) but its mapped form is not", v4[0], v4[1], v4[2], v4[3], b4);
    if (v4only && ref4)
        FUZZ_CHECK(refused(np, &ss, NULL), "%u.%u.%u.%u refused, ::ffff:%u.%u.%u.%u allowed by a v4 list",
                   v4[0], v4[1], v4[2], v4[3], v4[0], v4[1], v4[2], v4[3]);
    if (!v4only || !ref4) {
        /* an IPv4 allow entry covers the mapped spelling as well */
        if (v4only && !ref4 && b)
            FUZZ_CHECK(!refused(np, &ss, NULL), "%u.%u.%u.%u allowed, its mapped form refused", v4[0], v4[1],
                       v4[2], v4[3]);
    }

    /* ::a.b.c.d (compatible) */
    memset(v6, 0, sizeof v6);
    memcpy(v6 + 12, v4, 4);
    sa6(&ss, v6);
    b = netpolicy_default_block((const struct sockaddr *)&ss);
    FUZZ_CHECK(!b4 || b, "%u.%u.%u.%u blocked (%s), ::%u.%u.%u.%u not", v4[0], v4[1], v4[2], v4[3], b4, v4[0],
               v4[1], v4[2], v4[3]);

    /* 64:ff9b::a.b.c.d */
    memset(v6, 0, sizeof v6);
    v6[1] = 0x64, v6[2] = 0xff, v6[3] = 0x9b;
    memcpy(v6 + 12, v4, 4);
    sa6(&ss, v6);
    b = netpolicy_default_block((const struct sockaddr *)&ss);
    FUZZ_CHECK(!b4 || b, "%u.%u.%u.%u blocked (%s), its NAT64 form not", v4[0], v4[1], v4[2], v4[3], b4);

    /* 2002:AABB:CCDD::/48 (6to4) */
    memset(v6, 0, sizeof v6);
    v6[0] = 0x20, v6[1] = 0x02;
    memcpy(v6 + 2, v4, 4);
    memcpy(v6 + 6, a16 + 6, 10);
    sa6(&ss, v6);
    b = netpolicy_default_block((const struct sockaddr *)&ss);
    FUZZ_CHECK(!b4 || b, "%u.%u.%u.%u blocked (%s), its 6to4 form not", v4[0], v4[1], v4[2], v4[3], b4);
}

static int parse_list(struct netpolicy *np, const uint8_t *data, size_t size, int *v4only)
{
    char err[256];
    char *s = fuzz_strndup(data, size);
    int rc;

    np->n = 0;
    err[0] = '\0';
    rc = netpolicy_parse(np, s, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(np->n <= NETPOLICY_MAX_NETS, "%zu nets", np->n);
        *v4only = 1;
        for (size_t i = 0; i < np->n; i++) {
            const struct netpolicy_net *n = &np->nets[i];
            unsigned maxp = n->family == AF_INET ? 32 : 128;
            struct sockaddr_storage ss;
            FUZZ_CHECK(n->family == AF_INET || n->family == AF_INET6, "family %d", n->family);
            FUZZ_CHECK(n->prefix <= maxp, "prefix %u", n->prefix);
            for (unsigned bit = n->prefix; bit < maxp; bit++)
                FUZZ_CHECK(!(n->addr[bit / 8] & (0x80u >> (bit % 8))), "host bit %u set in net %zu", bit, i);
            if (n->family == AF_INET6)
                *v4only = 0;
            if (n->family == AF_INET)
                sa4(&ss, n->addr);
            else
                sa6(&ss, n->addr);
            FUZZ_CHECK(!refused(np, &ss, NULL), "net %zu's own address is refused", i);
        }
    } else {
        FUZZ_CHECK(rc == -1, "rc %d", rc);
        FUZZ_CHECK(err[0] != '\0', "refused list without a reason");
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL, "reason not terminated");
    }
    free(s);
    return rc;
}

static void fuzz_url(const uint8_t *data, size_t size)
{
    char err[256];
    char *url = fuzz_strndup(data, size);
    size_t len = strlen(url);

    err[0] = '\0';
    if (netpolicy_url_check(url, err, sizeof err) == 0) {
        const char *auth, *end;
        FUZZ_CHECK(len <= NETPOLICY_URL_MAX, "accepted %zu bytes", len);
        FUZZ_CHECK(strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0,
                   "accepted scheme: %.80s", url);
        for (const char *p = url; *p; p++) {
            unsigned char c = (unsigned char)*p;
            FUZZ_CHECK(c > 0x20 && c < 0x7f && c != '\\' && c != '#', "accepted byte 0x%02x", c);
        }
        auth = strstr(url, "://") + 3;
        end = auth + strcspn(auth, "/?");
        FUZZ_CHECK(end > auth, "accepted an empty authority");
        FUZZ_CHECK(!memchr(auth, '@', (size_t)(end - auth)), "accepted credentials: %.80s", url);
    } else {
        FUZZ_CHECK(err[0] != '\0', "refused URL without a reason");
    }
    free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct netpolicy np;
    int v4only = 1;

    if (size < 1)
        return 0;
    if (data[0] == 'U') {
        fuzz_url(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 'L') {
        parse_list(&np, data + 1, size - 1, &v4only);
        return 0;
    }
    if (size < 1 + 16) {
        unsigned char a[16] = {0};
        memcpy(a, data + 1, size - 1);
        np.n = 0;
        check_address(&np, 1, a);
        return 0;
    }
    if (parse_list(&np, data + 17, size - 17, &v4only) != 0)
        np.n = 0, v4only = 1;
    check_address(&np, v4only, data + 1);
    return 0;
}
