/* netpolicy.h - SSRF guard: which resolved addresses deliveries may reach,
 * and URL validation. Pure: no DNS, no sockets. */
#ifndef HOOKD_NETPOLICY_H
#define HOOKD_NETPOLICY_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NETPOLICY_MAX_NETS 64
#define NETPOLICY_URL_MAX 2048

struct netpolicy_net {
    int family;              /* AF_INET or AF_INET6 */
    unsigned char addr[16];  /* network address, host bits cleared */
    unsigned prefix;         /* 0..32 or 0..128 */
};

struct netpolicy {
    size_t n;
    struct netpolicy_net nets[NETPOLICY_MAX_NETS];  /* allow_networks */
};

/* Parse a comma- and/or blank-separated CIDR list ("127.0.0.0/8, ::1/128";
 * a bare address means /32 or /128) into np (replacing its content).
 * Empty string gives an empty list. Returns 0, or -1 with a reason. */
int netpolicy_parse(struct netpolicy *np, const char *list, char *err, size_t errlen);

/* Is this address in a range refused by default: every block of the
 * IANA IPv4 and IPv6 Special-Purpose Address Registries (loopback,
 * private, link-local, CGNAT, documentation, benchmarking, AS112, AMT,
 * Teredo, ORCHID, NAT64 local-use, SRv6 SIDs, ...), multicast, IPv4
 * reserved and broadcast, IPv6 outside 2000::/3, and the IPv4-mapped,
 * -compatible, NAT64 (64:ff9b::/96) and 6to4 forms of blocked IPv4
 * addresses? Returns a short range name ("loopback", "private", ...) or
 * NULL. */
const char *netpolicy_default_block(const struct sockaddr *sa);

/* 0: connecting to sa is allowed (not default-blocked, or inside an
 * allow_networks entry). -1: refused; *reason names the range. */
int netpolicy_check(const struct netpolicy *np, const struct sockaddr *sa,
                    const char **reason);

/* Validate an endpoint URL: http:// or https:// only, a host, at most
 * NETPOLICY_URL_MAX bytes, no user:password, no blanks or control
 * characters, a valid port. Returns 0, or -1 with a reason. */
int netpolicy_url_check(const char *url, char *err, size_t errlen);

/* A URL that passes netpolicy_url_check: the host libcurl connects to
 * (an IPv6 one without brackets) and the port (the scheme's default
 * when it has none), read by libcurl's own URL parser. 0, or -1. */
int netpolicy_url_target(const char *url, char *host, size_t hostlen, int *port);

#endif
