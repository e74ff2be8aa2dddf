/* Unit tests for an endpoint's proxy (proxy.c): the key's syntax, the
 * credentials kept out of the shown form, the URL libcurl gets, the
 * CONNECT_TO entry, and the address picked past the SSRF guard.
 * Expected strings are written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "proxy.h"

static void test_parse_good(void **state)
{
    static const struct {
        const char *in, *shown, *auth;
        int masked;
    } cases[] = {
        {"http://proxy.internal:3128", "http://proxy.internal:3128", "", 0},
        {"HTTP://10.0.0.5:8080/", "http://10.0.0.5:8080", "", 0},
        {"http://[::1]:3128", "http://[::1]:3128", "", 0},
        {"http://alice:s3cr%40t@proxy:3128", "http://***@proxy:3128", "alice:s3cr%40t", 0},
        /* the last '@' ends the credentials */
        {"http://bob:p@ss@[2001:db8::7]:1", "http://***@[2001:db8::7]:1", "bob:p@ss", 0},
        {"http://token@proxy:65535", "http://***@proxy:65535", "token", 0},
        /* the stored form reads back, credentials held elsewhere */
        {"http://***@proxy:3128", "http://***@proxy:3128", "", 1},
    };
    struct proxy_url p;
    char err[200];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(proxy_parse(cases[i].in, &p, err, sizeof err), 0);
        assert_string_equal(p.shown, cases[i].shown);
        assert_string_equal(p.auth, cases[i].auth);
        assert_int_equal(p.masked, cases[i].masked);
    }
}

static void test_parse_bad(void **state)
{
    static const struct {
        const char *in, *why;
    } cases[] = {
        {"https://proxy:3128", "no other scheme"},
        {"socks5://proxy:1080", "no other scheme"},
        {"proxy:3128", "no other scheme"},
        {"http://proxy", "port"},
        {"http://proxy:", "port"},
        {"http://proxy:0", "1-65535"},
        {"http://proxy:65536", "1-65535"},
        {"http://proxy:31x8", "1-65535"},
        {"http://proxy:3128/path", "no path"},
        {"http://proxy:3128?a=1", "no path"},
        {"http://[::1]", "port"},
        {"http://[::zz]:1", "not a host"},
        {"http://pro_xy:1", "not a host"},
        {"http://:3128", "not a host"},
        {"http://@proxy:3128", "empty credentials"},
        {"http://us er:hunter2@proxy:3128", "blank or control"},
    };
    struct proxy_url p;
    char err[200];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = '\0';
        assert_int_equal(proxy_parse(cases[i].in, &p, err, sizeof err), -1);
        assert_non_null(strstr(err, cases[i].why));
        /* the credentials are never echoed */
        assert_null(strstr(err, "hunter2"));
        assert_string_equal(p.auth, "");
    }
}

static void test_parse_too_long(void **state)
{
    char v[PROXY_URL_MAX + 10], err[200];
    struct proxy_url p;

    (void)state;
    memset(v, 'a', sizeof v - 1);
    v[sizeof v - 1] = '\0';
    memcpy(v, "http://", 7);
    assert_int_equal(proxy_parse(v, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "too long"));
}

static void test_curl_url(void **state)
{
    char out[PROXY_URL_MAX];

    (void)state;
    assert_int_equal(proxy_curl_url("http://***@proxy:3128", "alice:s3cr%40t", out, sizeof out), 0);
    assert_string_equal(out, "http://alice:s3cr%40t@proxy:3128");
    /* a raw '@' in the password (proxy_parse takes the last '@') goes
     * encoded: libcurl would end the userinfo at the first */
    assert_int_equal(proxy_curl_url("http://***@proxy:3128", "bob:p@ss", out, sizeof out), 0);
    assert_string_equal(out, "http://bob:p%40ss@proxy:3128");
    assert_int_equal(proxy_curl_url("http://***@proxy:3128", "bob:p@ss", out, 28), -1);
    assert_int_equal(proxy_curl_url("http://***@proxy:3128", "bob:p@ss", out, 29), 0);
    {
        /* the longest key, its password all '@', fits PROXY_CURL_URL_MAX */
        char in[PROXY_URL_MAX], big[PROXY_CURL_URL_MAX];
        struct proxy_url p;
        char err[200];
        size_t n = sizeof in - 1 - strlen("http://u:@h:1");
        memset(in, 0, sizeof in);
        memcpy(in, "http://u:", 9);
        memset(in + 9, '@', n);
        memcpy(in + 9 + n, "@h:1", 4);
        assert_int_equal(proxy_parse(in, &p, err, sizeof err), 0);
        assert_int_equal(proxy_curl_url(p.shown, p.auth, big, sizeof big), 0);
        assert_int_equal(strlen(big), strlen(in) + 2 * n);
    }
    assert_int_equal(proxy_curl_url("http://proxy:3128", NULL, out, sizeof out), 0);
    assert_string_equal(out, "http://proxy:3128");
    /* masked but the credentials lost: none are sent, "***" is not one */
    assert_int_equal(proxy_curl_url("http://***@[::1]:3128", "", out, sizeof out), 0);
    assert_string_equal(out, "http://[::1]:3128");
    assert_int_equal(proxy_curl_url("http://***@proxy:3128", "alice:pw", out, 20), -1);
}

static void test_connect_to(void **state)
{
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    char out[80];

    (void)state;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.10", &a4.sin_addr);
    assert_int_equal(proxy_connect_to((struct sockaddr *)&a4, 443, out, sizeof out), 0);
    assert_string_equal(out, "::192.0.2.10:443");
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "2001:db8::1", &a6.sin6_addr);
    assert_int_equal(proxy_connect_to((struct sockaddr *)&a6, 8080, out, sizeof out), 0);
    assert_string_equal(out, "::[2001:db8::1]:8080");
    assert_int_equal(proxy_connect_to((struct sockaddr *)&a6, 8080, out, 10), -1);
}

/* A resolver's answer: private first, then public. */
static void test_pick(void **state)
{
    struct sockaddr_storage a[2], out;
    struct netpolicy np;
    const char *reason = NULL;
    char err[100], txt[INET_ADDRSTRLEN];

    (void)state;
    memset(a, 0, sizeof a);
    for (int i = 0; i < 2; i++)
        a[i].ss_family = AF_INET;
    inet_pton(AF_INET, "10.1.2.3", &((struct sockaddr_in *)&a[0])->sin_addr);
    inet_pton(AF_INET, "93.184.216.34", &((struct sockaddr_in *)&a[1])->sin_addr);
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof err), 0);
    /* the refused one is passed over */
    assert_int_equal(proxy_pick(a, 2, &np, 0, &out, &reason), 0);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&out)->sin_addr, txt, sizeof txt);
    assert_string_equal(txt, "93.184.216.34");
    /* only refused ones: the first one's range */
    assert_int_equal(proxy_pick(a, 1, &np, 0, &out, &reason), -1);
    assert_string_equal(reason, "private");
    /* allowed by allow_networks */
    assert_int_equal(netpolicy_parse(&np, "10.0.0.0/8", err, sizeof err), 0);
    assert_int_equal(proxy_pick(a, 2, &np, 0, &out, &reason), 0);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&out)->sin_addr, txt, sizeof txt);
    assert_string_equal(txt, "10.1.2.3");
    /* the retries take the allowed ones in turn: attempt 1 the first,
     * attempt 2 the next, and round again */
    for (int t = 0; t < 4; t++) {
        assert_int_equal(proxy_pick(a, 2, &np, (unsigned)t, &out, &reason), 0);
        inet_ntop(AF_INET, &((struct sockaddr_in *)&out)->sin_addr, txt, sizeof txt);
        assert_string_equal(txt, t % 2 ? "93.184.216.34" : "10.1.2.3");
    }
    /* a refused address is never a turn: with the default guard every
     * turn gives the one public address */
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof err), 0);
    for (int t = 0; t < 3; t++) {
        assert_int_equal(proxy_pick(a, 2, &np, (unsigned)t, &out, &reason), 0);
        inet_ntop(AF_INET, &((struct sockaddr_in *)&out)->sin_addr, txt, sizeof txt);
        assert_string_equal(txt, "93.184.216.34");
    }
    /* nothing at all */
    reason = "x";
    assert_int_equal(proxy_pick(a, 0, &np, 0, &out, &reason), -1);
    assert_null(reason);
}

/* An IPv4 address spelt as IPv6 (::ffff:10.1.2.3) is judged as the IPv4
 * address it reaches, refused and allowed alike; the CONNECT names it as
 * resolved. */
static void test_pick_v4mapped(void **state)
{
    struct sockaddr_storage a, out;
    struct netpolicy np;
    const char *reason = NULL;
    char err[100], ct[80];

    (void)state;
    memset(&a, 0, sizeof a);
    a.ss_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:10.1.2.3", &((struct sockaddr_in6 *)&a)->sin6_addr);
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof err), 0);
    assert_int_equal(proxy_pick(&a, 1, &np, 0, &out, &reason), -1);
    assert_string_equal(reason, "private");
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &((struct sockaddr_in6 *)&a)->sin6_addr);
    assert_int_equal(proxy_pick(&a, 1, &np, 0, &out, &reason), -1);
    assert_string_equal(reason, "loopback");
    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8", err, sizeof err), 0);
    assert_int_equal(proxy_pick(&a, 1, &np, 0, &out, &reason), 0);
    assert_int_equal(proxy_connect_to((struct sockaddr *)&out, 8080, ct, sizeof ct), 0);
    assert_string_equal(ct, "::[::ffff:127.0.0.1]:8080");
}

static void test_resolve_literal(void **state)
{
    struct netpolicy np;
    struct sockaddr_storage out;
    const char *reason = NULL;
    char err[100];

    (void)state;
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof err), 0);
    assert_int_equal(proxy_resolve("127.0.0.1", &np, 5000, 0, &out, &reason), -1);
    assert_string_equal(reason, "loopback");
    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8", err, sizeof err), 0);
    assert_int_equal(proxy_resolve("127.0.0.1", &np, 5000, 0, &out, &reason), 0);
    assert_int_equal(out.ss_family, AF_INET);
    assert_int_equal(proxy_resolve("no-such-host.invalid", &np, 5000, 0, &out, &reason), -2);
    /* a cached name is judged again at every use */
    assert_int_equal(proxy_resolve("localhost", &np, 5000, 0, &out, &reason), 0);
    assert_int_equal(netpolicy_parse(&np, "", err, sizeof err), 0);
    assert_int_equal(proxy_resolve("localhost", &np, 5000, 0, &out, &reason), -1);
    assert_string_equal(reason, "loopback");
}

/* A resolver that counts its calls and, while held, blocks until let go. */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cv = PTHREAD_COND_INITIALIZER;
static int fake_calls, fake_held;

static int fake_gai(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    (void)hints;
    pthread_mutex_lock(&fake_mu);
    fake_calls++;
    pthread_cond_broadcast(&fake_cv);
    while (fake_held)
        pthread_cond_wait(&fake_cv, &fake_mu);
    pthread_mutex_unlock(&fake_mu);
    if (strncmp(node, "gone", 4) == 0)
        return EAI_NONAME;
    return getaddrinfo("127.0.0.1", service, NULL, res);
}

static int calls(void)
{
    int n;

    pthread_mutex_lock(&fake_mu);
    n = fake_calls;
    pthread_mutex_unlock(&fake_mu);
    return n;
}

static void hold(int on)
{
    pthread_mutex_lock(&fake_mu);
    fake_held = on;
    pthread_cond_broadcast(&fake_cv);
    pthread_mutex_unlock(&fake_mu);
}

static void test_resolve_bounded(void **state)
{
    struct netpolicy np;
    struct sockaddr_storage out;
    const char *reason = NULL;
    char err[100];
    int i;

    (void)state;
    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8", err, sizeof err), 0);
    proxy_dns_hook(fake_gai, freeaddrinfo, NULL);
    /* a resolver that does not answer: the caller gets -3 after its wait,
     * not when the resolver gives up; two callers, one lookup */
    hold(1);
    assert_int_equal(proxy_resolve("slow.example", &np, 50, 0, &out, &reason), -3);
    assert_int_equal(proxy_resolve("slow.example", &np, 50, 0, &out, &reason), -3);
    assert_int_equal(calls(), 1);
    /* its late answer serves the next attempt from the cache */
    hold(0);
    for (i = 0; i < 500 && proxy_resolve("slow.example", &np, 0, 0, &out, &reason) != 0; i++)
        proxy_resolve("slow.example", &np, 10, 0, &out, &reason);
    assert_int_equal(proxy_resolve("slow.example", &np, 0, 0, &out, &reason), 0);
    assert_int_equal(out.ss_family, AF_INET);
    assert_int_equal(calls(), 1);
    /* a name that does not resolve is looked up once per
     * PROXY_DNS_NEG_TTL_MS, not at every attempt */
    assert_int_equal(proxy_resolve("gone.example", &np, 5000, 0, &out, &reason), -2);
    assert_int_equal(proxy_resolve("gone.example", &np, 5000, 0, &out, &reason), -2);
    assert_int_equal(calls(), 2);
    proxy_dns_hook(NULL, NULL, NULL);
}

/* wait (at most 5 s) until the resolver has been called n times in all */
static int await_calls(int n)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&fake_mu);
    while (fake_calls < n && rc == 0)
        rc = pthread_cond_timedwait(&fake_cv, &fake_mu, &until);
    rc = fake_calls;
    pthread_mutex_unlock(&fake_mu);
    return rc;
}

static int64_t fake_ms = 1000;

static int64_t fake_now(void)
{
    return __atomic_load_n(&fake_ms, __ATOMIC_RELAXED);
}

/* Past their minute a name's addresses still serve while a lookup in the
 * background refreshes them: the attempt does not wait. Past
 * PROXY_DNS_STALE_MS the lookup is waited for again. */
static void test_resolve_stale(void **state)
{
    struct netpolicy np;
    struct sockaddr_storage out;
    const char *reason = NULL;
    char err[100];
    int c0;

    (void)state;
    assert_int_equal(netpolicy_parse(&np, "127.0.0.0/8", err, sizeof err), 0);
    proxy_dns_hook(fake_gai, freeaddrinfo, fake_now);
    c0 = calls();
    assert_int_equal(proxy_resolve("stale.example", &np, 5000, 0, &out, &reason), 0);
    assert_int_equal(calls(), c0 + 1);
    /* within the minute: cached, no lookup */
    __atomic_store_n(&fake_ms, 1000 + PROXY_DNS_TTL_MS - 1, __ATOMIC_RELAXED);
    assert_int_equal(proxy_resolve("stale.example", &np, 0, 0, &out, &reason), 0);
    assert_int_equal(calls(), c0 + 1);
    /* past it, with a resolver that does not answer: served at once, one
     * refresh started */
    hold(1);
    __atomic_store_n(&fake_ms, 1000 + PROXY_DNS_TTL_MS, __ATOMIC_RELAXED);
    assert_int_equal(proxy_resolve("stale.example", &np, 0, 0, &out, &reason), 0);
    assert_int_equal(proxy_resolve("stale.example", &np, 0, 0, &out, &reason), 0);
    assert_int_equal(await_calls(c0 + 2), c0 + 2);
    hold(0);
    /* past PROXY_DNS_STALE_MS old addresses no longer serve: the lookup
     * is waited for (and here does not come in time) */
    assert_int_equal(proxy_resolve("old.example", &np, 5000, 0, &out, &reason), 0);
    __atomic_store_n(&fake_ms, fake_now() + PROXY_DNS_STALE_MS, __ATOMIC_RELAXED);
    hold(1);
    assert_int_equal(proxy_resolve("old.example", &np, 50, 0, &out, &reason), -3);
    hold(0);
    proxy_dns_hook(NULL, NULL, NULL);
}

/* Delivery threads resolving at once, names colliding in the table and
 * expiring: every answer is a whole one (make tsan runs this too). */
static void *resolver_thread(void *arg)
{
    struct netpolicy np;
    struct sockaddr_storage out;
    const char *reason;
    char err[100], host[32];
    int i, *bad = arg;

    netpolicy_parse(&np, "127.0.0.0/8", err, sizeof err);
    for (i = 0; i < 300; i++) {
        snprintf(host, sizeof host, "h%d.example", i % 97);
        if (proxy_resolve(host, &np, 5000, 0, &out, &reason) != 0 || out.ss_family != AF_INET ||
            ((struct sockaddr_in *)&out)->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
            (*bad)++;
    }
    return NULL;
}

static void test_resolve_threads(void **state)
{
    pthread_t t[4];
    int bad[4] = {0}, i;

    (void)state;
    proxy_dns_hook(fake_gai, freeaddrinfo, NULL);
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, resolver_thread, &bad[i]), 0);
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(bad[i], 0);
    }
    proxy_dns_hook(NULL, NULL, NULL);
}

static void test_target(void **state)
{
    static const struct {
        const char *url, *host;
        int port;
    } ok[] = {
        {"https://example.com/hook", "example.com", 443},
        {"http://example.com", "example.com", 80},
        {"HTTP://localhost:8080/x?y=1", "localhost", 8080},
        {"https://[::1]:8443/p", "::1", 8443},
        {"http://[2001:db8::1]/", "2001:db8::1", 80},
        {"https://127.0.0.1?q", "127.0.0.1", 443},
        /* an empty port is the default one, for curl too */
        {"http://h:/", "h", 80},
    };
    static const char *const bad[] = {"ftp://h/", "http:///p", "http://[::1/", "http://[::1]x/",
                                      "http://u:p@h/", "http://h:99999/", "http://[fe80::1%25eth0]/"};
    char host[256];
    int port;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(netpolicy_url_target(ok[i].url, host, sizeof host, &port), 0);
        assert_string_equal(host, ok[i].host);
        assert_int_equal(port, ok[i].port);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(netpolicy_url_target(bad[i], host, sizeof host, &port), -1);
    assert_int_equal(netpolicy_url_target("http://example.com/", host, 5, &port), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),    cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_too_long), cmocka_unit_test(test_curl_url),
        cmocka_unit_test(test_connect_to),    cmocka_unit_test(test_pick),
        cmocka_unit_test(test_pick_v4mapped), cmocka_unit_test(test_resolve_literal), cmocka_unit_test(test_resolve_bounded), cmocka_unit_test(test_resolve_threads), cmocka_unit_test(test_resolve_stale), cmocka_unit_test(test_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
