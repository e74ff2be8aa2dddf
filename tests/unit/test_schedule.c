/* Unit tests for delayed delivery (schedule.c): the enqueue members,
 * RFC 3339 times (expected values from Python's datetime), due times and
 * the 30-day bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "schedule.h"

static void test_rfc3339(void **state)
{
    int64_t ms;

    (void)state;
    assert_int_equal(sched_rfc3339("2026-12-03T10:30:00Z", &ms), 0);
    assert_int_equal(ms, 1796293800000LL);
    /* the same instant plus 250 ms, written at +02:00 */
    assert_int_equal(sched_rfc3339("2026-12-03T12:30:00.250+02:00", &ms), 0);
    assert_int_equal(ms, 1796293800250LL);
    assert_int_equal(sched_rfc3339("2026-12-03t10:30:00.2z", &ms), 0);
    assert_int_equal(ms, 1796293800200LL);
    assert_int_equal(sched_rfc3339("2026-12-03 10:30:00.123456-00:00", &ms), 0);
    assert_int_equal(ms, 1796293800123LL);
    assert_int_equal(sched_rfc3339("2024-02-29T00:00:00Z", &ms), 0);
    assert_int_equal(ms, 1709164800000LL);
    static const char *const bad[] = {
        "2026-12-03T10:30:00",         /* no zone */
        "2026-12-03",                  /* no time */
        "2026-02-30T00:00:00Z",        /* no such day */
        "2025-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-12-03T24:00:00Z",
        "2026-12-03T10:30:00.Z",
        "2026-12-03T10:30:00+0200",
        "2026-12-03T10:30:00Z trailing",
        "1969-12-31T23:59:59Z",
        "tomorrow",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (sched_rfc3339(bad[i], &ms) == 0)
            fail_msg("accepted '%s'", bad[i]);
}

static int members(const char *json, int64_t *delay, int64_t *at, char *msg)
{
    cJSON *o = cJSON_Parse(json);
    int r;

    assert_non_null(o);
    r = sched_members(o, delay, at, msg, 200);
    cJSON_Delete(o);
    return r;
}

static void test_members(void **state)
{
    int64_t delay, at;
    char msg[200];

    (void)state;
    assert_int_equal(members("{}", &delay, &at, msg), 0);
    assert_int_equal(delay, -1);
    assert_int_equal(at, 0);
    assert_int_equal(members("{\"delay\":\"5m\"}", &delay, &at, msg), 0);
    assert_int_equal(delay, 300000);
    assert_int_equal(members("{\"delay\":1500}", &delay, &at, msg), 0);
    assert_int_equal(delay, 1500);
    assert_int_equal(members("{\"delay\":0,\"deliver_at\":null}", &delay, &at, msg), 0);
    assert_int_equal(delay, 0);
    assert_int_equal(members("{\"deliver_at\":1796293800000}", &delay, &at, msg), 0);
    assert_int_equal(at, 1796293800000LL);
    assert_int_equal(members("{\"deliver_at\":\"2026-12-03T10:30:00Z\"}", &delay, &at, msg), 0);
    assert_int_equal(at, 1796293800000LL);
    assert_int_equal(members("{\"delay\":\"30d\"}", &delay, &at, msg), 0);
    assert_int_equal(members("{\"delay\":\"31d\"}", &delay, &at, msg), -1);
    assert_non_null(strstr(msg, "30 days"));
    assert_int_equal(members("{\"delay\":-1}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"delay\":1.5}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"delay\":\"soon\"}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"delay\":[1]}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"deliver_at\":\"nope\"}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"deliver_at\":-5}", &delay, &at, msg), -1);
    assert_int_equal(members("{\"delay\":\"1s\",\"deliver_at\":5}", &delay, &at, msg), -1);
    assert_non_null(strstr(msg, "not both"));
}

static void test_due(void **state)
{
    const int64_t now = 1796293800000LL, day = 86400000;
    int64_t due;
    char msg[200];

    (void)state;
    assert_int_equal(sched_due(now, -1, 0, 0, &due, msg, sizeof msg), 0);
    assert_int_equal(due, 0);
    assert_int_equal(sched_due(now, -1, 0, 60000, &due, msg, sizeof msg), 0);   /* the endpoint's */
    assert_int_equal(due, now + 60000);
    assert_int_equal(sched_due(now, 0, 0, 60000, &due, msg, sizeof msg), 0);    /* the request's 0 wins */
    assert_int_equal(due, 0);
    assert_int_equal(sched_due(now, 5000, 0, 60000, &due, msg, sizeof msg), 0);
    assert_int_equal(due, now + 5000);
    assert_int_equal(sched_due(now, -1, now + 7, 60000, &due, msg, sizeof msg), 0);
    assert_int_equal(due, now + 7);
    assert_int_equal(sched_due(now, -1, now - 7, 60000, &due, msg, sizeof msg), 0);   /* past: now */
    assert_int_equal(due, 0);
    assert_int_equal(sched_due(now, -1, now + 30 * day, 0, &due, msg, sizeof msg), 0);
    assert_int_equal(sched_due(now, -1, now + 30 * day + 1, 0, &due, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "30 days"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
