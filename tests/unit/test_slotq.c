/* test_slotq.c - a delivery thread's slot counts: per-host limits, counting,
 * waiting lines in arrival order, hand-over of a freed slot, jobs parked
 * behind an endpoint's transfers, drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "deliver.h"
#include "slotq.h"

static struct ep_conf hosts[3];

static struct djob *job(int64_t id, int host)
{
    struct djob *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->id = id;
    j->ep = &hosts[host];
    return j;
}

static void setup_hosts(void)
{
    hosts[0].host_hash = 0x1111;
    hosts[1].host_hash = 0x2222;
    hosts[2].host_hash = 0x1111 + ((uint64_t)1 << 40);  /* same bucket bits, other host */
}

static void limit_per_host_and_fifo_hand_over(void **state)
{
    struct slotq *hc = slotq_new(2);
    struct djob *j[6], *n;
    int i;

    (void)state;
    setup_hosts();
    for (i = 0; i < 5; i++)
        j[i] = job(i, 0);
    j[5] = job(5, 1);
    assert_int_equal(slotq_admit(hc, j[0]->ep->host_hash, j[0]), 0);
    assert_int_equal(slotq_admit(hc, j[1]->ep->host_hash, j[1]), 0);
    assert_int_equal(slotq_admit(hc, j[2]->ep->host_hash, j[2]), 1);   /* third to host 0 waits */
    assert_int_equal(slotq_admit(hc, j[3]->ep->host_hash, j[3]), 1);
    assert_int_equal(slotq_admit(hc, j[5]->ep->host_hash, j[5]), 0);   /* another host is not held up */
    assert_int_equal(slotq_active(hc, 0x1111), 2);
    assert_int_equal(slotq_active(hc, 0x2222), 1);
    assert_int_equal((int)slotq_waiting(hc), 2);
    /* a freed slot goes to the oldest waiting job of that host, still counted */
    n = slotq_release(hc, 0x1111);
    assert_ptr_equal(n, j[2]);
    assert_null(n->next);
    assert_int_equal(slotq_active(hc, 0x1111), 2);
    assert_int_equal(slotq_admit(hc, j[4]->ep->host_hash, j[4]), 1);
    assert_ptr_equal(slotq_release(hc, 0x1111), j[3]);
    assert_ptr_equal(slotq_release(hc, 0x1111), j[4]);
    assert_int_equal((int)slotq_waiting(hc), 0);
    /* the other host's release frees nothing of host 0 */
    assert_null(slotq_release(hc, 0x2222));
    assert_int_equal(slotq_active(hc, 0x2222), 0);
    assert_null(slotq_release(hc, 0x1111));
    assert_null(slotq_release(hc, 0x1111));
    assert_int_equal(slotq_active(hc, 0x1111), 0);
    /* a release for a host with nothing counted is harmless */
    assert_null(slotq_release(hc, 0x9999));
    for (i = 0; i < 6; i++)
        free(j[i]);
    slotq_free(hc);
}

static void hosts_in_one_bucket_stay_apart(void **state)
{
    struct slotq *hc = slotq_new(1);
    struct djob *a = job(1, 0), *b = job(2, 2), *c = job(3, 2);

    (void)state;
    setup_hosts();
    assert_int_equal(slotq_admit(hc, a->ep->host_hash, a), 0);
    assert_int_equal(slotq_admit(hc, b->ep->host_hash, b), 0);
    assert_int_equal(slotq_admit(hc, c->ep->host_hash, c), 1);
    assert_null(slotq_release(hc, hosts[0].host_hash));
    assert_ptr_equal(slotq_release(hc, hosts[2].host_hash), c);
    free(a);
    free(b);
    free(c);
    slotq_free(hc);
}

static void many_hosts_grow_the_table_and_are_forgotten(void **state)
{
    enum { N = 5000 };
    struct slotq *hc = slotq_new(1);
    static struct ep_conf eps[N];
    struct djob *js[N], *w[N];
    int i;

    (void)state;
    for (i = 0; i < N; i++) {
        eps[i].host_hash = (uint64_t)i * 7919u + 1;
        js[i] = calloc(1, sizeof **js);
        w[i] = calloc(1, sizeof **w);
        js[i]->ep = w[i]->ep = &eps[i];
        assert_int_equal(slotq_admit(hc, js[i]->ep->host_hash, js[i]), 0);
        assert_int_equal(slotq_admit(hc, w[i]->ep->host_hash, w[i]), 1);
    }
    assert_int_equal((int)slotq_waiting(hc), N);
    for (i = 0; i < N; i++)
        assert_ptr_equal(slotq_release(hc, eps[i].host_hash), w[i]);
    for (i = 0; i < N; i++) {
        assert_null(slotq_release(hc, eps[i].host_hash));
        assert_int_equal(slotq_active(hc, eps[i].host_hash), 0);
        free(js[i]);
        free(w[i]);
    }
    slotq_free(hc);
}

static void drain_returns_every_waiting_job(void **state)
{
    struct slotq *hc = slotq_new(1);
    struct djob *j[4], *l;
    int i, n = 0;

    (void)state;
    setup_hosts();
    for (i = 0; i < 4; i++)
        j[i] = job(i, i % 2);
    for (i = 0; i < 4; i++)
        slotq_admit(hc, j[i]->ep->host_hash, j[i]);
    l = slotq_drain(hc);
    for (; l; l = l->next) {
        assert_true(l == j[2] || l == j[3]);
        n++;
    }
    assert_int_equal(n, 2);
    assert_int_equal((int)slotq_waiting(hc), 0);
    /* the running ones release normally; nothing waits any more */
    assert_null(slotq_release(hc, 0x1111));
    assert_null(slotq_release(hc, 0x2222));
    for (i = 0; i < 4; i++)
        free(j[i]);
    slotq_free(hc);
}

/* Parking ignores the limit but needs a counted transfer of the key to
 * end; a freed slot goes to the oldest parked job; take hands them all
 * back uncounted. */
static void parked_jobs_follow_counted_transfers(void **state)
{
    struct slotq *q = slotq_new(1000);
    struct djob *a = job(1, 0), *b = job(2, 0), *p[3];
    int i;

    (void)state;
    setup_hosts();
    for (i = 0; i < 3; i++)
        p[i] = job(10 + i, 0);
    assert_int_equal(slotq_park(q, 7, p[0]), -1);   /* nothing of key 7 runs */
    assert_int_equal(slotq_active(q, 7), 0);
    assert_int_equal(slotq_admit(q, 7, a), 0);
    assert_int_equal(slotq_admit(q, 7, b), 0);
    for (i = 0; i < 3; i++)
        assert_int_equal(slotq_park(q, 7, p[i]), 0);
    assert_int_equal(slotq_park(q, 8, a), -1);       /* another key */
    assert_int_equal((int)slotq_waiting(q), 3);
    assert_ptr_equal(slotq_release(q, 7), p[0]);     /* a ended: p[0] in its place */
    assert_int_equal(slotq_active(q, 7), 2);
    assert_ptr_equal(slotq_take(q, 7), p[1]);        /* b failed: the rest go back */
    assert_ptr_equal(p[1]->next, p[2]);
    assert_null(p[2]->next);
    assert_int_equal((int)slotq_waiting(q), 0);
    assert_null(slotq_take(q, 7));
    assert_int_equal(slotq_active(q, 7), 2);
    assert_null(slotq_release(q, 7));
    assert_null(slotq_release(q, 7));
    assert_int_equal(slotq_active(q, 7), 0);
    assert_int_equal(slotq_park(q, 7, p[0]), -1);    /* forgotten with its last transfer */
    free(a);
    free(b);
    for (i = 0; i < 3; i++)
        free(p[i]);
    slotq_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limit_per_host_and_fifo_hand_over),
        cmocka_unit_test(hosts_in_one_bucket_stay_apart),
        cmocka_unit_test(many_hosts_grow_the_table_and_are_forgotten),
        cmocka_unit_test(drain_returns_every_waiting_job),
        cmocka_unit_test(parked_jobs_follow_counted_transfers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
