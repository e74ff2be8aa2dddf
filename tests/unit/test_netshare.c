/* test_netshare.c - the TLS session and DNS shares of the delivery
 * threads: one per host bucket, the same for a host whichever thread asks
 * (also when threads race to make it), usable by easy handles, and freed
 * cleanly. */
#include <curl/curl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "netshare.h"

static void one_share_per_bucket(void **state)
{
    struct netshare *ns = netshare_new();
    CURLSH *a, *b;

    (void)state;
    assert_non_null(ns);
    a = netshare_for(ns, 0x1234);
    assert_non_null(a);
    assert_ptr_equal(netshare_for(ns, 0x1234), a);
    b = netshare_for(ns, 0x1235);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    /* the bucket is the hash's low bits: 4096 apart is the same share */
    assert_ptr_equal(netshare_for(ns, 0x1234 + 4096), a);
    netshare_free(ns);
}

struct race {
    struct netshare *ns;
    pthread_barrier_t *go;
    CURLSH *got[64];
};

static void *asker(void *arg)
{
    struct race *r = arg;
    int i;

    pthread_barrier_wait(r->go);
    for (i = 0; i < 64; i++)
        r->got[i] = netshare_for(r->ns, (uint64_t)i * 7919);
    return NULL;
}

static void threads_racing_get_the_same_share(void **state)
{
    struct netshare *ns = netshare_new();
    pthread_barrier_t go;
    struct race r[4];
    pthread_t th[4];
    int i, k;

    (void)state;
    pthread_barrier_init(&go, NULL, 4);
    for (i = 0; i < 4; i++) {
        r[i].ns = ns;
        r[i].go = &go;
        assert_int_equal(pthread_create(&th[i], NULL, asker, &r[i]), 0);
    }
    for (i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (k = 0; k < 64; k++) {
        assert_non_null(r[0].got[k]);
        for (i = 1; i < 4; i++)
            assert_ptr_equal(r[i].got[k], r[0].got[k]);
    }
    pthread_barrier_destroy(&go);
    netshare_free(ns);
}

static void easy_handles_attach_and_switch(void **state)
{
    struct netshare *ns = netshare_new();
    CURL *h = curl_easy_init();

    (void)state;
    assert_non_null(h);
    assert_int_equal(curl_easy_setopt(h, CURLOPT_SHARE, netshare_for(ns, 1)), CURLE_OK);
    assert_int_equal(curl_easy_setopt(h, CURLOPT_SHARE, netshare_for(ns, 2)), CURLE_OK);
    /* the handle goes first: a share in use cannot be cleaned up */
    curl_easy_cleanup(h);
    netshare_free(ns);
    netshare_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_share_per_bucket),
        cmocka_unit_test(threads_racing_get_the_same_share),
        cmocka_unit_test(easy_handles_attach_and_switch),
    };
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
