/* netshare.h - what the delivery threads' connections share across
 * threads: TLS sessions and resolved names, in libcurl share handles.
 *
 * libcurl keeps TLS sessions per easy handle (5 each) unless a share
 * holds them, and a share holds only 8. A delivery thread reconnects to
 * a host on whichever easy handle is free, often in another thread, so
 * per-handle caches rarely resume; one share for everything would keep
 * 8 hosts. So a host's connections use the share of its bucket (the
 * endpoint's host hash): every thread and handle finds the host's last
 * session there, and each bucket holds few hosts. Shares are made on
 * first use. Thread-safe. */
#ifndef HOOKD_NETSHARE_H
#define HOOKD_NETSHARE_H
#include <curl/curl.h>
#include <stdint.h>

struct netshare;

/* NULL when out of memory */
struct netshare *netshare_new(void);
/* The share for a host hash; NULL when it cannot be made (the transfer
 * then runs with its handle's own caches). */
CURLSH *netshare_for(struct netshare *ns, uint64_t host_hash);
/* After every easy handle that used a share is cleaned up. */
void netshare_free(struct netshare *ns);

#endif
