/* The control socket's limits on its clients (climit.c): who is admitted,
 * the user gate's hysteresis, the timeouts, with a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "climit.h"

static struct climit limits(int64_t max, int64_t per_user, int64_t reserve)
{
    struct config c;
    struct climit l;

    memset(&c, 0, sizeof c);
    c.max_clients = max;
    c.max_clients_per_user = per_user;
    c.admin_reserve = reserve;
    c.client_memory = 1 << 20;
    c.user_memory = 32 << 20;
    c.clients_memory = 64 << 20;
    c.max_line = 1 << 20;
    c.idle_timeout_ms = 600000;
    c.line_timeout_ms = 30000;
    c.send_timeout_ms = 30000;
    climit_init(&l, &c);
    return l;
}

static void test_admins_keep_their_slots(void **st)
{
    struct climit l = limits(100, 1000, 16);

    (void)st;
    /* non-admins stop at max_clients - admin_reserve, whoever they are */
    assert_int_equal(climit_admit(&l, 83, 0, 0), CLIMIT_ADMIT);
    assert_int_equal(climit_admit(&l, 84, 0, 0), CLIMIT_RESERVED);
    /* an admin gets the reserved slots, up to max_clients */
    assert_int_equal(climit_admit(&l, 84, 500, 1), CLIMIT_ADMIT);
    assert_int_equal(climit_admit(&l, 99, 0, 1), CLIMIT_ADMIT);
    assert_int_equal(climit_admit(&l, 100, 0, 1), CLIMIT_FULL);
    assert_int_equal(climit_admit(&l, 100, 0, 0), CLIMIT_FULL);
    assert_non_null(strstr(climit_refusal_text(CLIMIT_RESERVED), "admin_reserve"));
}

static void test_one_user_cannot_take_every_slot(void **st)
{
    struct climit l = limits(10000, 256, 16);

    (void)st;
    assert_int_equal(climit_admit(&l, 300, 255, 0), CLIMIT_ADMIT);
    assert_int_equal(climit_admit(&l, 300, 256, 0), CLIMIT_USER);
    /* another user still gets in */
    assert_int_equal(climit_admit(&l, 301, 0, 0), CLIMIT_ADMIT);
    /* admins have no per-user cap */
    assert_int_equal(climit_admit(&l, 300, 5000, 1), CLIMIT_ADMIT);
    assert_non_null(strstr(climit_refusal_text(CLIMIT_USER), "max_clients_per_user"));
}

static void test_reserve_is_at_most_half(void **st)
{
    struct climit l = limits(8, 256, 16);

    (void)st;
    assert_int_equal(l.reserve, 4);
    assert_int_equal(climit_admit(&l, 3, 0, 0), CLIMIT_ADMIT);
    assert_int_equal(climit_admit(&l, 4, 0, 0), CLIMIT_RESERVED);
    l = limits(1, 256, 16);
    assert_int_equal(l.reserve, 0);
    assert_int_equal(climit_admit(&l, 0, 0, 0), CLIMIT_ADMIT);
}

static void test_user_memory_fits_two_lines(void **st)
{
    struct config c;
    struct climit l;

    (void)st;
    memset(&c, 0, sizeof c);
    c.max_clients = 10;
    c.user_memory = 1 << 20;
    c.max_line = 4 << 20;
    c.clients_memory = 2 << 20;
    climit_init(&l, &c);
    assert_int_equal(l.user_memory, 8 << 20);
    assert_int_equal(l.clients_memory, 8 << 20);
}

static void test_user_gate_hysteresis(void **st)
{
    struct climit l = limits(100, 10, 0);
    size_t m = l.user_memory;

    (void)st;
    assert_int_equal(climit_gate(m, 0, m - 1), 0);
    assert_int_equal(climit_gate(m, 0, m), 1);
    /* closed, it stays closed down to three quarters */
    assert_int_equal(climit_gate(m, 1, m - 1), 1);
    assert_int_equal(climit_gate(m, 1, m / 4 * 3), 1);
    assert_int_equal(climit_gate(m, 1, m / 4 * 3 - 1), 0);
}

static void test_timeouts(void **st)
{
    struct climit l = limits(100, 10, 0);
    struct climit_conn t = {.active = 1000};

    (void)st;
    /* idle: nothing pending, silent for idle_timeout */
    assert_int_equal(climit_expired(&l, &t, 1000 + 600000 - 1), CLIMIT_LIVE);
    assert_int_equal(climit_expired(&l, &t, 1000 + 600000), CLIMIT_IDLE);
    /* a request in progress is not idle */
    t.busy = 1;
    assert_int_equal(climit_expired(&l, &t, 1000 + 600000), CLIMIT_LIVE);
    /* half a line since 5000 */
    t.line = 5000;
    assert_int_equal(climit_expired(&l, &t, 5000 + 29999), CLIMIT_LIVE);
    assert_int_equal(climit_expired(&l, &t, 5000 + 30000), CLIMIT_LINE);
    /* replies unread since 7000 */
    t.line = 0;
    t.out = 7000;
    assert_int_equal(climit_expired(&l, &t, 7000 + 30000), CLIMIT_SEND);
    assert_string_equal(climit_expiry_name(CLIMIT_SEND), "not_reading");
    /* 0 turns a timeout off */
    l.send_ms = 0;
    assert_int_equal(climit_expired(&l, &t, 7000 + 3000000), CLIMIT_LIVE);
}

static void test_sweep_interval(void **st)
{
    struct climit l = limits(100, 10, 0);

    (void)st;
    assert_int_equal(climit_sweep_ms(&l), 1000);
    l.line_ms = 400;
    assert_int_equal(climit_sweep_ms(&l), 100);
    l.line_ms = 100;
    assert_int_equal(climit_sweep_ms(&l), 50);
    l.idle_ms = l.line_ms = l.send_ms = 0;
    assert_int_equal(climit_sweep_ms(&l), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admins_keep_their_slots),
        cmocka_unit_test(test_one_user_cannot_take_every_slot),
        cmocka_unit_test(test_reserve_is_at_most_half),
        cmocka_unit_test(test_user_memory_fits_two_lines),
        cmocka_unit_test(test_user_gate_hysteresis),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_sweep_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
