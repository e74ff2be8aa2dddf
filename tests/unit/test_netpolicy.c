/* Unit tests for netpolicy.c. Expected ranges come from the IANA IPv4 and
 * IPv6 special-purpose address registries (RFC 6890 and successors), not
 * from the implementation's tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <cmocka.h>

#include "netpolicy.h"

/* A sockaddr big enough for either family, filled from text. */
static struct sockaddr_storage mk(const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(443);
        if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1)
            fail_msg("test bug: bad address %s", ip);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(443);
        if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1)
            fail_msg("test bug: bad address %s", ip);
    }
    return ss;
}

struct blk { const char *ip; const char *want; /* NULL = allowed */ };

static void check_table(const struct blk *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sockaddr_storage ss = mk(t[i].ip);
        const char *got = netpolicy_default_block((const struct sockaddr *)&ss);
        if (t[i].want == NULL && got != NULL)
            fail_msg("%s: blocked as '%s', expected allowed", t[i].ip, got);
        if (t[i].want != NULL && (got == NULL || strcmp(got, t[i].want) != 0))
            fail_msg("%s: got '%s', expected '%s'", t[i].ip, got ? got : "(allowed)", t[i].want);
        /* netpolicy_check with no allow list agrees. */
        const char *reason = "unset";
        struct netpolicy empty = { .n = 0 };
        int rc = netpolicy_check(&empty, (const struct sockaddr *)&ss, &reason);
        assert_int_equal(rc, t[i].want ? -1 : 0);
        if (t[i].want)
            assert_string_equal(reason, t[i].want);
        else
            assert_null(reason);
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_v4_ranges(void **state)
{
    (void)state;
    static const struct blk t[] = {
        { "0.0.0.0", "this-network" }, { "0.255.255.255", "this-network" },
        { "1.0.0.0", NULL },
        { "9.255.255.255", NULL }, { "10.0.0.0", "private" },
        { "10.255.255.255", "private" }, { "11.0.0.0", NULL },
        { "100.63.255.255", NULL }, { "100.64.0.0", "cgnat" },
        { "100.127.255.255", "cgnat" }, { "100.128.0.0", NULL },
        { "126.255.255.255", NULL }, { "127.0.0.0", "loopback" },
        { "127.0.0.1", "loopback" }, { "127.255.255.255", "loopback" },
        { "128.0.0.0", NULL },
        { "169.253.255.255", NULL }, { "169.254.0.0", "link-local" },
        { "169.254.169.254", "link-local" }, /* cloud metadata service */
        { "169.254.255.255", "link-local" }, { "169.255.0.0", NULL },
        { "172.15.255.255", NULL }, { "172.16.0.0", "private" },
        { "172.31.255.255", "private" }, { "172.32.0.0", NULL },
        { "191.255.255.255", NULL }, { "192.0.0.0", "ietf-protocol" },
        { "192.0.0.255", "ietf-protocol" }, { "192.0.1.0", NULL },
        { "192.0.1.255", NULL }, { "192.0.2.0", "documentation" },
        { "192.0.2.255", "documentation" }, { "192.0.3.0", NULL },
        { "192.88.98.255", NULL }, { "192.88.99.0", "6to4-relay" },
        { "192.88.99.255", "6to4-relay" }, { "192.88.100.0", NULL },
        { "192.167.255.255", NULL }, { "192.168.0.0", "private" },
        { "192.168.255.255", "private" }, { "192.169.0.0", NULL },
        { "198.17.255.255", NULL }, { "198.18.0.0", "benchmarking" },
        { "198.19.255.255", "benchmarking" }, { "198.20.0.0", NULL },
        { "198.51.99.255", NULL }, { "198.51.100.0", "documentation" },
        { "198.51.100.255", "documentation" }, { "198.51.101.0", NULL },
        { "203.0.112.255", NULL }, { "203.0.113.0", "documentation" },
        { "203.0.113.255", "documentation" }, { "203.0.114.0", NULL },
        { "223.255.255.255", NULL }, { "224.0.0.0", "multicast" },
        { "239.255.255.255", "multicast" }, { "240.0.0.0", "reserved" },
        { "255.255.255.254", "reserved" }, { "255.255.255.255", "broadcast" },
        { "8.8.8.8", NULL }, { "1.1.1.1", NULL }, { "93.184.216.34", NULL },
    };
    check_table(t, N(t));
}

static void test_v6_ranges(void **state)
{
    (void)state;
    static const struct blk t[] = {
        { "::", "unspecified" }, { "::1", "loopback" },
        { "::0.0.0.1", "loopback" },
        /* IPv4-mapped: the embedded address decides. */
        { "::ffff:127.0.0.1", "loopback" }, { "::ffff:10.0.0.1", "private" },
        { "::ffff:169.254.169.254", "link-local" }, { "::ffff:0.0.0.0", "this-network" },
        { "::ffff:255.255.255.255", "broadcast" }, { "::ffff:8.8.8.8", NULL },
        { "::ffff:7f00:1", "loopback" },
        /* IPv4-compatible (deprecated ::/96). */
        { "::2", "this-network" }, { "::127.0.0.1", "loopback" },
        { "::10.1.2.3", "private" }, { "::8.8.8.8", NULL },
        /* NAT64 well-known prefix. */
        { "64:ff9b::7f00:1", "loopback" }, { "64:ff9b::10.0.0.1", "private" },
        { "64:ff9b::c0a8:101", "private" }, { "64:ff9b::8.8.8.8", NULL },
        { "64:ff9b:0:0:0:1::", "reserved" }, /* outside the /96: unallocated 0000::/8 */
        /* 6to4: the IPv4 address sits in bits 16..47. */
        { "2002::", "this-network" }, { "2002:7f00:1::", "loopback" },
        { "2002:a00:1::1", "private" }, { "2002:c0a8:101::1", "private" },
        { "2002:808:808::", NULL }, { "2003::", NULL },
        { "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
        /* Unique local fc00::/7. */
        { "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved" },
        { "fc00::", "unique-local" }, { "fd12:3456::1", "unique-local" },
        { "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local" },
        { "fe00::", "reserved" }, { "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved" },
        /* Link-local fe80::/10, site-local fec0::/10. */
        { "fe80::", "link-local" }, { "fe80::1", "link-local" },
        { "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local" },
        { "fec0::", "site-local" },
        { "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local" },
        /* Multicast ff00::/8. */
        { "ff00::", "multicast" }, { "ff02::1", "multicast" },
        { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast" },
        /* Documentation 2001:db8::/32. */
        { "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
        { "2001:db8::", "documentation" },
        { "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation" },
        { "2001:db9::", NULL },
        /* Discard-only 100::/64. */
        { "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved" },
        { "100::", "discard" }, { "100::ffff:ffff:ffff:ffff", "discard" },
        { "100:0:0:1::", "dummy" },
        /* IETF protocol assignments 2001::/23 (Teredo, benchmarking, ...). */
        { "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
        { "2001::", "teredo" }, { "2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo" },
        { "2001:2::1", "benchmarking" },
        { "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "ietf-protocol" },
        { "2001:200::", NULL },
        /* Ordinary global unicast. */
        { "2606:4700:4700::1111", NULL }, { "2a00:1450:4001:81b::200e", NULL },
    };
    check_table(t, N(t));
}

/* Every block of the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries, multicast, and the space IANA does not allocate for
 * unicast: a first and a last address inside, and an address just
 * outside that is ordinary public space. */
struct range { const char *cidr, *first, *last, *outside, *want; };

static void check_ranges(const struct range *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct blk b[3] = { { t[i].first, t[i].want }, { t[i].last, t[i].want }, { t[i].outside, NULL } };
        check_table(b, t[i].outside ? 3 : 2);
    }
}

static void test_special_purpose_v4(void **state)
{
    (void)state;
    static const struct range t[] = {
        { "0.0.0.0/8", "0.0.0.0", "0.255.255.255", "1.0.0.0", "this-network" },
        { "10.0.0.0/8", "10.0.0.0", "10.255.255.255", "11.0.0.0", "private" },
        { "100.64.0.0/10", "100.64.0.0", "100.127.255.255", "100.128.0.0", "cgnat" },
        { "127.0.0.0/8", "127.0.0.0", "127.255.255.255", "128.0.0.0", "loopback" },
        { "169.254.0.0/16", "169.254.0.0", "169.254.255.255", "169.255.0.0", "link-local" },
        { "172.16.0.0/12", "172.16.0.0", "172.31.255.255", "172.32.0.0", "private" },
        { "192.0.0.0/24", "192.0.0.0", "192.0.0.255", "192.0.1.0", "ietf-protocol" },
        { "192.0.0.0/29 DS-Lite", "192.0.0.1", "192.0.0.7", NULL, "ietf-protocol" },
        { "192.0.0.8/32 dummy, .9 PCP, .10 TURN", "192.0.0.8", "192.0.0.10", NULL, "ietf-protocol" },
        { "192.0.0.170/31 NAT64 discovery", "192.0.0.170", "192.0.0.171", NULL, "ietf-protocol" },
        { "192.0.2.0/24", "192.0.2.0", "192.0.2.255", "192.0.3.0", "documentation" },
        { "192.31.196.0/24", "192.31.196.0", "192.31.196.255", "192.31.197.0", "as112" },
        { "192.52.193.0/24", "192.52.193.0", "192.52.193.255", "192.52.192.255", "amt" },
        { "192.88.99.0/24", "192.88.99.0", "192.88.99.255", "192.88.100.0", "6to4-relay" },
        { "192.168.0.0/16", "192.168.0.0", "192.168.255.255", "192.169.0.0", "private" },
        { "192.175.48.0/24", "192.175.48.0", "192.175.48.255", "192.175.49.0", "as112" },
        { "198.18.0.0/15", "198.18.0.0", "198.19.255.255", "198.20.0.0", "benchmarking" },
        { "198.51.100.0/24", "198.51.100.0", "198.51.100.255", "198.51.101.0", "documentation" },
        { "203.0.113.0/24", "203.0.113.0", "203.0.113.255", "203.0.114.0", "documentation" },
        { "224.0.0.0/4", "224.0.0.0", "239.255.255.255", "223.255.255.255", "multicast" },
        { "240.0.0.0/4", "240.0.0.0", "255.255.255.254", "223.255.255.254", "reserved" },
        { "255.255.255.255/32", "255.255.255.255", "255.255.255.255", NULL, "broadcast" },
    };
    check_ranges(t, N(t));
}

static void test_special_purpose_v6(void **state)
{
    (void)state;
    static const struct range t[] = {
        { "::/128", "::", "::", "2606:4700::1", "unspecified" },
        { "::1/128", "::1", "::1", "2606:4700::1", "loopback" },
        /* forms with an IPv4 address inside: that address decides */
        { "::ffff:0:0/96", "::ffff:127.0.0.1", "::ffff:127.255.255.255", "::ffff:8.8.8.8", "loopback" },
        { "64:ff9b::/96", "64:ff9b::127.0.0.1", "64:ff9b::127.255.255.255", "64:ff9b::1.1.1.1", "loopback" },
        { "2002::/16 (6to4)", "2002:a9fe:a9fe::", "2002:a9fe:a9fe:ffff:ffff:ffff:ffff:ffff", "2002:808:808::1",
          "link-local" },
        { "64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "nat64-local" },
        { "100::/64", "100::", "100::ffff:ffff:ffff:ffff", "2606:4700::1", "discard" },
        { "100:0:0:1::/64", "100:0:0:1::", "100:0:0:1:ffff:ffff:ffff:ffff", "2606:4700::1", "dummy" },
        { "2001::/32", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", NULL, "teredo" },
        { "2001:1::1/128 PCP .. ::3 DNS-SD", "2001:1::1", "2001:1::3", NULL, "ietf-protocol" },
        { "2001:2::/48", "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", NULL, "benchmarking" },
        { "2001:3::/32", "2001:3::", "2001:3:ffff:ffff:ffff:ffff:ffff:ffff", NULL, "amt" },
        { "2001:4:112::/48", "2001:4:112::", "2001:4:112:ffff:ffff:ffff:ffff:ffff", NULL, "as112" },
        { "2001:10::/28", "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", NULL, "orchid" },
        { "2001:20::/28", "2001:20::", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", NULL, "orchid" },
        { "2001:30::/28", "2001:30::", "2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", NULL, "drone-det" },
        { "2001::/23", "2001:40::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::", "ietf-protocol" },
        { "2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::", "documentation" },
        { "2620:4f:8000::/48", "2620:4f:8000::", "2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "2620:4f:8001::",
          "as112" },
        { "3fff::/20", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::", "documentation" },
        { "5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "srv6-sid" },
        { "fc00::/7", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "unique-local" },
        { "fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "link-local" },
        { "fec0::/10", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "site-local" },
        { "ff00::/8", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1", "multicast" },
        /* outside 2000::/3 */
        { "0000::/8 rest", "::1:0:0:0", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2000::", "reserved" },
        { "4000::/3", "4000::", "5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::", "reserved" },
        { "e000::/4, f000::/5, f800::/6", "e000::", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
          "reserved" },
    };
    check_ranges(t, N(t));
}

static void test_unsupported_family(void **state)
{
    (void)state;
    struct sockaddr_un sun;
    struct netpolicy np;
    const char *reason = NULL;
    char err[128];
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, "/run/x.sock");
    assert_non_null(netpolicy_default_block((const struct sockaddr *)&sun));
    assert_int_equal(netpolicy_parse(&np, "0.0.0.0/0 ::/0", err, sizeof(err)), 0);
    assert_int_equal(netpolicy_check(&np, (const struct sockaddr *)&sun, &reason), -1);
    assert_non_null(reason);
    assert_non_null(netpolicy_default_block(NULL));
}

static void test_misaligned_sockaddr(void **state)
{
    (void)state;
    /* curl hands us whatever it has; the policy must not assume alignment. */
    unsigned char buf[sizeof(struct sockaddr_in6) + 8];
    struct sockaddr_storage ss = mk("::ffff:127.0.0.1");
    memcpy(buf + 1, &ss, sizeof(struct sockaddr_in6));
    assert_string_equal(netpolicy_default_block((const struct sockaddr *)(void *)(buf + 1)),
                        "loopback");
    ss = mk("10.9.8.7");
    memcpy(buf + 3, &ss, sizeof(struct sockaddr_in));
    assert_string_equal(netpolicy_default_block((const struct sockaddr *)(void *)(buf + 3)),
                        "private");
}

static int check_ip(const struct netpolicy *np, const char *ip, const char **reason)
{
    struct sockaddr_storage ss = mk(ip);
    return netpolicy_check(np, (const struct sockaddr *)&ss, reason);
}

static void test_allow_list(void **state)
{
    (void)state;
    struct netpolicy np;
    char err[128] = "";
    const char *reason = NULL;

    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8, ::1/128", err, sizeof(err)), 0);
    assert_int_equal(np.n, 2);
    assert_int_equal(check_ip(&np, "127.0.0.1", &reason), 0);
    assert_null(reason);
    assert_int_equal(check_ip(&np, "127.255.255.255", &reason), 0);
    assert_int_equal(check_ip(&np, "::1", &reason), 0);
    /* The v4 entry also opens the IPv4-mapped spelling. */
    assert_int_equal(check_ip(&np, "::ffff:127.0.0.1", &reason), 0);
    /* Other blocked ranges stay blocked. */
    assert_int_equal(check_ip(&np, "10.0.0.1", &reason), -1);
    assert_string_equal(reason, "private");
    assert_int_equal(check_ip(&np, "::ffff:10.0.0.1", &reason), -1);
    assert_string_equal(reason, "private");
    assert_int_equal(check_ip(&np, "169.254.169.254", &reason), -1);
    assert_string_equal(reason, "link-local");
    assert_int_equal(check_ip(&np, "::2", &reason), -1);
    /* Only mapped addresses borrow the v4 entries, not NAT64 or 6to4. */
    assert_int_equal(check_ip(&np, "64:ff9b::7f00:1", &reason), -1);
    assert_string_equal(reason, "loopback");
    assert_int_equal(check_ip(&np, "2002:7f00:1::", &reason), -1);
    /* Public addresses are allowed regardless. */
    assert_int_equal(check_ip(&np, "8.8.8.8", &reason), 0);
    assert_null(reason);
    /* A NULL reason pointer is fine. */
    assert_int_equal(check_ip(&np, "10.0.0.1", NULL), -1);
    assert_int_equal(check_ip(&np, "127.0.0.1", NULL), 0);
}

static void test_allow_list_hosts_and_v6(void **state)
{
    (void)state;
    struct netpolicy np;
    char err[128] = "";
    const char *reason;

    assert_int_equal(netpolicy_parse(&np, "10.1.2.3 fd00::/8\t192.168.10.0/24", err, sizeof(err)), 0);
    assert_int_equal(np.n, 3);
    assert_int_equal(check_ip(&np, "10.1.2.3", &reason), 0);
    assert_int_equal(check_ip(&np, "10.1.2.4", &reason), -1);
    assert_int_equal(check_ip(&np, "10.1.2.2", &reason), -1);
    assert_int_equal(check_ip(&np, "fd12::1", &reason), 0);
    assert_int_equal(check_ip(&np, "fdff::1", &reason), 0);
    assert_int_equal(check_ip(&np, "fc00::1", &reason), -1);
    assert_string_equal(reason, "unique-local");
    assert_int_equal(check_ip(&np, "192.168.10.255", &reason), 0);
    assert_int_equal(check_ip(&np, "192.168.11.0", &reason), -1);
    assert_int_equal(check_ip(&np, "::ffff:192.168.10.7", &reason), 0);

    /* 0.0.0.0/0 opens all of IPv4 but not IPv6 loopback. */
    assert_int_equal(netpolicy_parse(&np, "0.0.0.0/0", err, sizeof(err)), 0);
    assert_int_equal(check_ip(&np, "127.0.0.1", &reason), 0);
    assert_int_equal(check_ip(&np, "255.255.255.255", &reason), 0);
    assert_int_equal(check_ip(&np, "::1", &reason), -1);
    assert_string_equal(reason, "loopback");

    /* A NULL policy means no allow list. */
    assert_int_equal(netpolicy_check(NULL, NULL, &reason), -1);
    assert_int_equal(netpolicy_check(&np, NULL, &reason), -1);
    assert_non_null(reason);
    assert_int_equal(check_ip(NULL, "127.0.0.1", &reason), -1);
    assert_int_equal(check_ip(NULL, "8.8.4.4", &reason), 0);
}

static void test_numeric_tricks_resolve_to_blocked(void **state)
{
    (void)state;
    /* "http://2130706433/" and "http://0x7f.1/" are turned into 127.0.0.1
     * by curl; what reaches the policy is the sockaddr, which is refused. */
    const char *reason;
    assert_int_equal(check_ip(NULL, "127.0.0.1", &reason), -1);
    assert_string_equal(reason, "loopback");
    char err[128];
    assert_int_equal(netpolicy_url_check("http://2130706433/", err, sizeof(err)), 0);
    assert_int_equal(netpolicy_url_check("http://0x7f.1/", err, sizeof(err)), 0);
}

static void test_parse_fields(void **state)
{
    (void)state;
    struct netpolicy np;
    char err[128] = "";
    const unsigned char v4_10[4] = { 10, 0, 0, 0 };
    const unsigned char v4_host[4] = { 192, 168, 1, 1 };
    const unsigned char v6_loop[16] = { [15] = 1 };
    const unsigned char v6_fe80[16] = { 0xfe, 0x80 };

    assert_int_equal(netpolicy_parse(&np, "10.0.0.0/8,192.168.1.1 ::1/128\tfe80::/10", err, sizeof(err)), 0);
    assert_int_equal(np.n, 4);
    assert_int_equal(np.nets[0].family, AF_INET);
    assert_int_equal(np.nets[0].prefix, 8);
    assert_memory_equal(np.nets[0].addr, v4_10, 4);
    assert_int_equal(np.nets[1].family, AF_INET);
    assert_int_equal(np.nets[1].prefix, 32);
    assert_memory_equal(np.nets[1].addr, v4_host, 4);
    assert_int_equal(np.nets[2].family, AF_INET6);
    assert_int_equal(np.nets[2].prefix, 128);
    assert_memory_equal(np.nets[2].addr, v6_loop, 16);
    assert_int_equal(np.nets[3].family, AF_INET6);
    assert_int_equal(np.nets[3].prefix, 10);
    assert_memory_equal(np.nets[3].addr, v6_fe80, 16);

    /* Bare IPv6 address is a /128. */
    assert_int_equal(netpolicy_parse(&np, "2001:db8::5", err, sizeof(err)), 0);
    assert_int_equal(np.n, 1);
    assert_int_equal(np.nets[0].prefix, 128);
}

static void test_parse_clears_host_bits(void **state)
{
    (void)state;
    struct netpolicy np;
    char err[128] = "";
    const unsigned char a[4] = { 10, 0, 0, 0 };
    const unsigned char b[4] = { 172, 16, 0, 0 };
    const unsigned char c[4] = { 10, 1, 2, 0 };
    const unsigned char zero[16] = { 0 };
    const unsigned char fe80[16] = { 0xfe, 0x80 };

    assert_int_equal(netpolicy_parse(&np, "10.1.2.3/8 172.31.255.255/12 10.1.2.3/30 "
                                          "1.2.3.4/0 fe80::1234/10 ::1/0", err, sizeof(err)), 0);
    assert_int_equal(np.n, 6);
    assert_memory_equal(np.nets[0].addr, a, 4);
    assert_memory_equal(np.nets[1].addr, b, 4);
    assert_memory_equal(np.nets[2].addr, c, 4);
    assert_memory_equal(np.nets[3].addr, zero, 4);
    assert_memory_equal(np.nets[4].addr, fe80, 16);
    assert_memory_equal(np.nets[5].addr, zero, 16);
}

static void test_parse_empty(void **state)
{
    (void)state;
    struct netpolicy np;
    char err[128] = "";
    np.n = 5;
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof(err)), 0);
    assert_int_equal(np.n, 0);
    np.n = 5;
    assert_int_equal(netpolicy_parse(&np, NULL, err, sizeof(err)), 0);
    assert_int_equal(np.n, 0);
    assert_int_equal(netpolicy_parse(&np, " ,, \t,\n", err, sizeof(err)), 0);
    assert_int_equal(np.n, 0);
    assert_int_equal(netpolicy_parse(&np, ",10.0.0.0/8,,", err, sizeof(err)), 0);
    assert_int_equal(np.n, 1);
}

static void parse_bad(const char *list, const char *want1, const char *want2)
{
    struct netpolicy np;
    char err[160] = "";
    const char *dummy;
    /* A previously good list must survive a failed parse. */
    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8", err, sizeof(err)), 0);
    if (netpolicy_parse(&np, list, err, sizeof(err)) != -1)
        fail_msg("'%s' accepted", list);
    if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("'%s': error '%s' lacks '%s'/'%s'", list, err, want1, want2 ? want2 : "");
    assert_int_equal(np.n, 1);
    assert_int_equal(check_ip(&np, "127.0.0.1", &dummy), 0);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_bad("10.0.0.0/33", "'10.0.0.0/33'", "0..32");
    parse_bad("::1/129", "'::1/129'", "0..128");
    parse_bad("10.0.0.0/-1", "'10.0.0.0/-1'", NULL);
    parse_bad("10.0.0.0/+8", "'10.0.0.0/+8'", NULL);
    parse_bad("10.0.0.0/", "'10.0.0.0/'", NULL);
    parse_bad("10.0.0.0/8a", "'10.0.0.0/8a'", NULL);
    parse_bad("10.0.0.0/0008", "'10.0.0.0/0008'", NULL);
    parse_bad("10.0.0.0/8/8", "'10.0.0.0/8/8'", NULL);
    parse_bad("/8", "'/8'", NULL);
    /* Strict dotted quad: no shorthand, octal-looking or hex forms. */
    parse_bad("127.1", "'127.1'", "IPv4");
    parse_bad("0x7f.0.0.1", "'0x7f.0.0.1'", NULL);
    parse_bad("2130706433", "'2130706433'", NULL);
    parse_bad("256.0.0.1", "'256.0.0.1'", NULL);
    parse_bad("10.0.0.0.0", "'10.0.0.0.0'", NULL);
    parse_bad("example.com", "'example.com'", NULL);
    parse_bad("fe80::1%eth0", "'fe80::1%eth0'", "IPv6");
    parse_bad("::1::2", "'::1::2'", NULL);
    /* The bad token is named even after good ones; ';' is no separator. */
    parse_bad("10.0.0.0/8, 192.168.0.0/16; 172.16.0.0/12", "'192.168.0.0/16;'", NULL);
    parse_bad("10.0.0.0/8 bogus ::1", "'bogus'", NULL);
    parse_bad("1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb/128", "too long", NULL);
    parse_bad("1111:2222:3333:4444:5555:6666:7777:8888:9999/128", "not an IPv6", NULL);
}

static void test_parse_cap(void **state)
{
    (void)state;
    char list[NETPOLICY_MAX_NETS * 20 + 32];
    char err[128] = "";
    struct netpolicy np;
    size_t pos = 0;
    for (int i = 0; i < NETPOLICY_MAX_NETS; i++)
        pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "10.0.%d.0/24,", i);
    assert_int_equal(netpolicy_parse(&np, list, err, sizeof(err)), 0);
    assert_int_equal(np.n, NETPOLICY_MAX_NETS);
    const char *reason;
    assert_int_equal(check_ip(&np, "10.0.63.200", &reason), 0);
    assert_int_equal(check_ip(&np, "10.0.64.1", &reason), -1);
    snprintf(list + pos, sizeof(list) - pos, "10.1.0.0/16");
    assert_int_equal(netpolicy_parse(&np, list, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many"));
    assert_non_null(strstr(err, "64"));
}

static void url_ok(const char *url)
{
    char err[160] = "";
    if (netpolicy_url_check(url, err, sizeof(err)) != 0)
        fail_msg("'%s' rejected: %s", url, err);
}

static void url_bad(const char *url, const char *want)
{
    char err[160] = "";
    if (netpolicy_url_check(url, err, sizeof(err)) != -1)
        fail_msg("'%s' accepted", url ? url : "(null)");
    if (!strstr(err, want))
        fail_msg("'%s': error '%s' lacks '%s'", url ? url : "(null)", err, want);
}

static void test_url_ok(void **state)
{
    (void)state;
    url_ok("https://example.com:8443/path?q=1");
    url_ok("http://example.com");
    url_ok("https://example.com/");
    url_ok("HTTPS://Example.COM/Hooks");
    url_ok("hTtP://example.com/x");
    url_ok("http://[::1]:8080/");
    url_ok("http://127.0.0.1:1/");
    url_ok("http://example.com:65535/");
    url_ok("https://api.example.com/v1/postback?click_id=abc&amount=12.50&cur=EUR");
    url_ok("https://example.com/a%20b");
    url_ok("https://example.com?x=1");
}

static void test_url_scheme(void **state)
{
    (void)state;
    url_bad("ftp://example.com/", "scheme must be http or https");
    url_bad("file:///etc/passwd", "scheme must be http or https");
    url_bad("gopher://127.0.0.1:25/", "scheme must be http or https");
    url_bad("httpx://example.com/", "scheme must be http or https");
    url_bad("htt://example.com/", "scheme must be http or https");
    url_bad("example.com/hook", "http:// or https://");
    url_bad("//example.com/hook", "http:// or https://");
    url_bad("http:/example.com/", "http:// or https://");
    url_bad("http:example.com", "http:// or https://");
    url_bad("mailto:a@example.com", "http:// or https://");
}

static void test_url_host_and_userinfo(void **state)
{
    (void)state;
    url_bad("http://", "no host");
    url_bad("http:///path", "no host");
    url_bad("https://?q=1", "no host");
    url_bad("http://user:pw@example.com/", "credentials");
    url_bad("http://user@example.com/", "credentials");
    url_bad("http://:pw@example.com/", "credentials");
    url_bad("http://@example.com/", "credentials");
    url_bad("http://example.com@127.0.0.1/", "credentials");
    url_bad("http://ex%41mple.com/", "percent");
    url_bad("http://[fe80::1%25eth0]/", "percent");
    url_bad("http://[::1/", "not valid");
    /* The error must not echo the credentials. */
    char err[160] = "";
    assert_int_equal(netpolicy_url_check("https://admin:s3cr3t@example.com/", err, sizeof(err)), -1);
    assert_null(strstr(err, "s3cr3t"));
}

static void test_url_port(void **state)
{
    (void)state;
    url_bad("http://example.com:0/", "1..65535");
    url_bad("http://example.com:65536/", "1..65535");
    url_bad("http://example.com:99999/", "1..65535");
    url_bad("http://example.com:-1/", "1..65535");
    url_bad("http://example.com:8080x/", "1..65535");
    url_bad("http://example.com:http/", "1..65535");
}

static void test_url_chars(void **state)
{
    (void)state;
    url_bad("http://example.com/a b", "blanks");
    url_bad("http://exa mple.com/", "blanks");
    url_bad(" http://example.com/", "blanks");
    url_bad("http://example.com/\t", "blanks");
    url_bad("http://example.com/\r\nX-Injected: 1", "control");
    url_bad("http://example.com/\x01", "control");
    url_bad("http://example.com/\x7f", "control");
    url_bad("http://ex\xc3\xa4mple.com/", "ASCII");
    url_bad("http://example.com/#frag", "fragment");
    url_bad("http://example.com#", "fragment");
    url_bad("http://example.com\\@evil.com/", "backslash");
    url_bad("", "empty");
    url_bad(NULL, "empty");
}

static void test_url_length(void **state)
{
    (void)state;
    char url[3001];
    const char *prefix = "https://example.com/";
    size_t pl = strlen(prefix);

    memcpy(url, prefix, pl);
    memset(url + pl, 'a', sizeof(url) - 1 - pl);
    url[3000] = '\0';
    url_bad(url, "URL too long (max 2048)");

    url[NETPOLICY_URL_MAX] = '\0';         /* exactly 2048 bytes */
    url_ok(url);
    url[NETPOLICY_URL_MAX] = 'a';
    url[NETPOLICY_URL_MAX + 1] = '\0';     /* 2049 bytes */
    url_bad(url, "too long");
}

static void test_url_err_buffer(void **state)
{
    (void)state;
    char small[8];
    assert_int_equal(netpolicy_url_check("ftp://x/", small, sizeof(small)), -1);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_int_equal(netpolicy_url_check("ftp://x/", NULL, 0), -1);
    assert_int_equal(netpolicy_url_check("http://x/", NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4_ranges),
        cmocka_unit_test(test_v6_ranges),
        cmocka_unit_test(test_special_purpose_v4),
        cmocka_unit_test(test_special_purpose_v6),
        cmocka_unit_test(test_unsupported_family),
        cmocka_unit_test(test_misaligned_sockaddr),
        cmocka_unit_test(test_allow_list),
        cmocka_unit_test(test_allow_list_hosts_and_v6),
        cmocka_unit_test(test_numeric_tricks_resolve_to_blocked),
        cmocka_unit_test(test_parse_fields),
        cmocka_unit_test(test_parse_clears_host_bits),
        cmocka_unit_test(test_parse_empty),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_cap),
        cmocka_unit_test(test_url_ok),
        cmocka_unit_test(test_url_scheme),
        cmocka_unit_test(test_url_host_and_userinfo),
        cmocka_unit_test(test_url_port),
        cmocka_unit_test(test_url_chars),
        cmocka_unit_test(test_url_length),
        cmocka_unit_test(test_url_err_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
