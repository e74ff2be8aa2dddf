/*
 * curlfloor - the HTTP client's own floor, for the delivery bench.
 *
 *   curlfloor URL [-n N] [-c CONNS] [-C CAFILE] [-F]
 *
 * Issue 14 keeps libcurl as hookd's HTTP client. This is the least a
 * libcurl program can do per delivery: one thread, the multi interface,
 * CONNS keep-alive connections, each re-sending the same POST (the bench
 * payload and header set of a signed webhook) as soon as its answer is in.
 * No queue, no storage, no signing: what it costs per request is what
 * hookd's delivery threads cannot go below, and its rate beside wrk's (same
 * nginx, same run) is how far libcurl itself gets towards wrk's ceiling.
 * An https URL makes it the HTTPS floor: the same program, TLS verified
 * against CAFILE, each connection's handshake paid once. -F: a fresh
 * connection for every request (the server's idle close between a
 * partner's sparse events), its TLS session resumed from a share: the
 * floor of the many-hosts case.
 *
 * Prints one line: floor_rate (requests/s), floor_cpu_us (user + system
 * CPU per request), floor_fail (transfers that did not end in a 2xx).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"

static size_t discard(char *p, size_t size, size_t n, void *u)
{
    (void)p;
    (void)u;
    return size * n;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    long n = 200000, started = 0, done = 0, fail = 0;
    int conns = 64, opt, i, still, left, rc = 1;
    const char *cafile = NULL;
    int fresh = 0;
    CURLSH *share = NULL;
    char body[256];
    struct curl_slist *hdrs = NULL;
    CURL **easy = NULL;
    CURLM *multi = NULL;
    CURLMsg *m;
    double cpu0, t0, secs;

    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: curlfloor URL [-n N] [-c CONNS] [-C CAFILE] [-F]\n");
        return 2;
    }
    optind = 2;
    while ((opt = getopt(argc, argv, "n:c:C:F")) != -1) {
        if (opt == 'n')
            n = atol(optarg);
        else if (opt == 'c')
            conns = atoi(optarg);
        else if (opt == 'C')
            cafile = optarg;
        else if (opt == 'F')
            fresh = 1;
        else
            return 2;
    }
    if (n < 1 || conns < 1 || conns > 4096) {
        fprintf(stderr, "curlfloor: bad -n or -c\n");
        return 2;
    }
    bench_payload(body, sizeof body, 1);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    /* the headers hookd sends with a signed JSON webhook, same sizes */
    const char *h[] = {"Content-Type: application/json", "User-Agent: hookd/bench", "Expect:",
                       "webhook-id: msg_0000000000000001",
                       "webhook-timestamp: 1796000000",
                       "webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="};
    for (i = 0; i < (int)(sizeof h / sizeof h[0]); i++) {
        struct curl_slist *x = curl_slist_append(hdrs, h[i]);
        if (!x)
            goto out;
        hdrs = x;
    }
    /* one thread: the share needs no lock callbacks */
    if (fresh && (!(share = curl_share_init()) ||
                  curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK))
        goto out;
    multi = curl_multi_init();
    easy = calloc((size_t)conns, sizeof *easy);
    if (!multi || !easy)
        goto out;
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)conns);
    for (i = 0; i < conns; i++) {
        if (!(easy[i] = curl_easy_init()))
            goto out;
        curl_easy_setopt(easy[i], CURLOPT_URL, argv[1]);
        curl_easy_setopt(easy[i], CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy[i], CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(easy[i], CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy[i], CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy[i], CURLOPT_PROXY, "");
        curl_easy_setopt(easy[i], CURLOPT_TIMEOUT_MS, 30000L);
        if (fresh) {
            curl_easy_setopt(easy[i], CURLOPT_FORBID_REUSE, 1L);
            curl_easy_setopt(easy[i], CURLOPT_SHARE, share);
        }
        if (cafile) {
            curl_easy_setopt(easy[i], CURLOPT_CAINFO, cafile);
            curl_easy_setopt(easy[i], CURLOPT_CAPATH, NULL);
        }
    }
    cpu0 = cpu_seconds();
    t0 = (double)bench_mono_us() / 1e6;
    for (i = 0; i < conns && started < n; i++, started++)
        curl_multi_add_handle(multi, easy[i]);
    while (done < n) {
        if (curl_multi_perform(multi, &still) != CURLM_OK)
            goto out;
        while ((m = curl_multi_info_read(multi, &left))) {
            long code = 0;

            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *e = m->easy_handle;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
            if (m->data.result != CURLE_OK || code < 200 || code > 299)
                fail++;
            curl_multi_remove_handle(multi, e);
            done++;
            if (started < n) {
                curl_multi_add_handle(multi, e);
                started++;
            }
        }
        if (done < n && curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
            goto out;
    }
    secs = (double)bench_mono_us() / 1e6 - t0;
    printf("floor_n=%ld floor_conns=%d floor_s=%.3f floor_rate=%.0f floor_cpu_us=%.1f floor_fail=%ld\n", n, conns,
           secs, (double)n / secs, (cpu_seconds() - cpu0) * 1e6 / (double)n, fail);
    rc = fail ? 1 : 0;
out:
    if (rc && !fail)
        fprintf(stderr, "curlfloor: libcurl setup or transfer failed\n");
    for (i = 0; easy && i < conns; i++)
        if (easy[i]) {
            curl_multi_remove_handle(multi, easy[i]);
            curl_easy_cleanup(easy[i]);
        }
    free(easy);
    if (multi)
        curl_multi_cleanup(multi);
    curl_slist_free_all(hdrs);
    if (share)
        curl_share_cleanup(share);
    curl_global_cleanup();
    return rc;
}
