/* Unit tests for retry_after.c.
 *
 * Epoch values were computed independently with Python 3:
 *   calendar.timegm(email.utils.parsedate("Sun, 06 Nov 1994 08:49:37 GMT"))
 *     == 784111777
 *   calendar.timegm((2000, 2, 29, 12, 0, 0)) == 951825600
 *   calendar.timegm((2026, 7, 1, 10, 0, 0)) == 1782900000
 *   calendar.timegm((2030, 5, 5, 0, 0, 0))  == 1904169600
 *   calendar.timegm((2024, 2, 29, 0, 0, 0)) == 1709164800
 *   calendar.timegm((2038, 1, 19, 3, 14, 8)) == 2147483648
 *   10 * 365 * 86400 == 315360000 (the cap)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* setenv, tzset */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <locale.h>
#include <cmocka.h>

#include "retry_after.h"

#define RFC_EPOCH 784111777LL          /* Sun, 06 Nov 1994 08:49:37 GMT */
#define NOW_2026 (1782900000LL * 1000)  /* Wed, 01 Jul 2026 10:00:00 GMT */
#define CAP_MS (315360000LL * 1000)
#define SENTINEL ((int64_t)-424242)

static int64_t ok(const char *v, int64_t now_ms)
{
    int64_t d = SENTINEL;
    if (retry_after_parse(v, now_ms, &d) != 0)
        fail_msg("'%s' rejected", v);
    assert_true(d >= 0);
    return d;
}

static void bad(const char *v, int64_t now_ms)
{
    int64_t d = SENTINEL;
    if (retry_after_parse(v, now_ms, &d) != -1)
        fail_msg("'%s' accepted (%lld ms)", v ? v : "(null)", (long long)d);
    assert_int_equal(d, SENTINEL);  /* left alone on error */
}

static void test_delta_seconds(void **state)
{
    (void)state;
    assert_int_equal(ok("120", NOW_2026), 120000);
    assert_int_equal(ok("0", NOW_2026), 0);
    assert_int_equal(ok("1", 0), 1000);
    assert_int_equal(ok("007", NOW_2026), 7000);
    assert_int_equal(ok("  5  ", NOW_2026), 5000);
    assert_int_equal(ok("\t30\t", NOW_2026), 30000);
    /* The delta does not depend on the clock. */
    assert_int_equal(ok("86400", -5), 86400000LL);
}

static void test_delta_cap(void **state)
{
    (void)state;
    assert_int_equal(ok("315359999", NOW_2026), 315359999LL * 1000);
    assert_int_equal(ok("315360000", NOW_2026), CAP_MS);
    assert_int_equal(ok("315360001", NOW_2026), CAP_MS);
    assert_int_equal(ok("9223372036854775807", NOW_2026), CAP_MS);
    assert_int_equal(ok("99999999999999999999999999999999999999999", NOW_2026), CAP_MS);
    assert_int_equal(ok("000000000000000000000000000000000000000042", NOW_2026), 42000);
}

static void test_delta_rejects(void **state)
{
    (void)state;
    bad(NULL, NOW_2026);
    bad("", NOW_2026);
    bad("   ", NOW_2026);
    bad("-1", NOW_2026);
    bad("+1", NOW_2026);
    bad("1.5", NOW_2026);
    bad("12abc", NOW_2026);
    bad("1 2", NOW_2026);
    bad("0x10", NOW_2026);
    bad("1e3", NOW_2026);
    bad("abc", NOW_2026);
    bad("120\n", NOW_2026);
    bad("99999999999999999999999x", NOW_2026);
    assert_int_equal(retry_after_parse("5", 0, NULL), -1);
}

static void test_three_date_forms(void **state)
{
    (void)state;
    int64_t now = RFC_EPOCH * 1000 - 60000;  /* one minute before */
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", now), 60000);
    assert_int_equal(ok("Sunday, 06-Nov-94 08:49:37 GMT", now), 60000);
    assert_int_equal(ok("Sun Nov  6 08:49:37 1994", now), 60000);
    assert_int_equal(ok("Sun Nov 06 08:49:37 1994", now), 60000);
    assert_int_equal(ok("  Sun, 06 Nov 1994 08:49:37 GMT\t", now), 60000);
    /* Sub-second clock: the delay keeps the milliseconds. */
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EPOCH * 1000 - 1), 1);
}

static void test_past_and_now(void **state)
{
    (void)state;
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EPOCH * 1000), 0);
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EPOCH * 1000 + 1), 0);
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", NOW_2026), 0);
    assert_int_equal(ok("Thu, 01 Jan 1970 00:00:00 GMT", 0), 0);
    assert_int_equal(ok("Thu, 01 Jan 1970 00:00:01 GMT", 0), 1000);
    assert_int_equal(ok("Sat, 01 Jan 0000 00:00:00 GMT", NOW_2026), 0);
}

static void test_future_dates(void **state)
{
    (void)state;
    assert_int_equal(ok("Sun, 05 May 2030 00:00:00 GMT", NOW_2026),
                     1904169600LL * 1000 - NOW_2026);
    assert_int_equal(ok("Tue, 19 Jan 2038 03:14:08 GMT", 2147483648LL * 1000 - 5000), 5000);
    assert_int_equal(ok("Fri, 31 Dec 9999 23:59:59 GMT", NOW_2026), CAP_MS);
    /* Extreme clocks must not overflow. */
    assert_int_equal(ok("Fri, 31 Dec 9999 23:59:59 GMT", INT64_MIN), CAP_MS);
    assert_int_equal(ok("Fri, 31 Dec 9999 23:59:59 GMT", INT64_MAX), 0);
    assert_int_equal(ok("Sun Nov  6 08:49:37 1994", INT64_MIN), CAP_MS);
}

static void test_leap_days(void **state)
{
    (void)state;
    assert_int_equal(ok("Tue, 29 Feb 2000 12:00:00 GMT", 951825600LL * 1000 - 1000), 1000);
    assert_int_equal(ok("Thu, 29 Feb 2024 00:00:00 GMT", 1709164800LL * 1000 - 2000), 2000);
    bad("Wed, 29 Feb 2023 00:00:00 GMT", NOW_2026);
    bad("Mon, 29 Feb 2100 00:00:00 GMT", NOW_2026);  /* century, not leap */
    bad("Sun, 30 Feb 2020 00:00:00 GMT", NOW_2026);
    bad("Sun Feb 30 00:00:00 2020", NOW_2026);
    bad("Sunday, 30-Feb-20 00:00:00 GMT", NOW_2026);
}

static void test_invalid_fields(void **state)
{
    (void)state;
    bad("Fri, 31 Apr 2026 00:00:00 GMT", NOW_2026);
    bad("Fri, 32 Jan 2026 00:00:00 GMT", NOW_2026);
    bad("Fri, 00 Jan 2026 00:00:00 GMT", NOW_2026);
    bad("Fri, 02 Jan 2026 24:00:00 GMT", NOW_2026);
    bad("Fri, 02 Jan 2026 23:60:00 GMT", NOW_2026);
    bad("Fri, 02 Jan 2026 23:59:61 GMT", NOW_2026);
    /* A leap second is valid syntax. */
    assert_int_equal(ok("Thu, 31 Dec 2026 23:59:60 GMT", NOW_2026),
                     ok("Fri, 01 Jan 2027 00:00:00 GMT", NOW_2026));
    bad("Fri, 02 Xyz 2026 00:00:00 GMT", NOW_2026);
    bad("Fry, 02 Jan 2026 00:00:00 GMT", NOW_2026);
}

static void test_malformed_dates(void **state)
{
    (void)state;
    const int64_t now = RFC_EPOCH * 1000 - 60000;
    bad("Sun, 06 Nov 1994 08:49:37 GMTX", now);
    bad("Sun, 06 Nov 1994 08:49:37 GMT x", now);
    bad("Sun, 06 Nov 1994 08:49:37 UTC", now);
    bad("Sun, 06 Nov 1994 08:49:37 +0000", now);
    bad("Sun, 06 Nov 1994 08:49:37", now);
    bad("Sun 06 Nov 1994 08:49:37 GMT", now);
    bad("Sun, 6 Nov 1994 08:49:37 GMT", now);
    bad("Sun,  06 Nov 1994 08:49:37 GMT", now);
    bad("Sun, 06 Nov 94 08:49:37 GMT", now);
    bad("Sun, 06 Nov 1994 8:49:37 GMT", now);
    bad("Sun, 06 Nov 1994 08:49 GMT", now);
    bad("Sun, 06-Nov-1994 08:49:37 GMT", now);
    bad("Sunday, 06-Nov-1994 08:49:37 GMT", now);
    bad("Sunday, 06 Nov 94 08:49:37 GMT", now);
    bad("Sunday, 06-Nov-94 08:49:37", now);
    bad("Sun Nov 6 08:49:37 1994", now);
    bad("Sun Nov  6 08:49:37 94", now);
    bad("Sun Nov  6 08:49:37 1994 GMT", now);
    bad("Sun Nov   6 08:49:37 1994", now);
    bad("1994-11-06T08:49:37Z", now);
    bad("Sun, 06 Nov 1994 08:49:37 GMT\n", now);
    bad("Sun, 06 Nov 1994 08:49:37 GMT, 120", now);
    bad("120 Sun, 06 Nov 1994 08:49:37 GMT", now);
}

static void test_robust_names(void **state)
{
    (void)state;
    const int64_t now = RFC_EPOCH * 1000 - 60000;
    /* Names are matched case-insensitively (RFC 9110 5.6.7 asks for
     * robustness), and the weekday is checked for syntax only. */
    assert_int_equal(ok("sun, 06 nov 1994 08:49:37 gmt", now), 60000);
    assert_int_equal(ok("SUNDAY, 06-NOV-94 08:49:37 GMT", now), 60000);
    assert_int_equal(ok("Mon, 06 Nov 1994 08:49:37 GMT", now), 60000);
}

static void test_rfc850_two_digit_year(void **state)
{
    (void)state;
    /* now = 2026: "30" is 2030 (4 years ahead), not 1930. */
    assert_int_equal(ok("Sunday, 05-May-30 00:00:00 GMT", NOW_2026),
                     1904169600LL * 1000 - NOW_2026);
    /* "94" would be 2094 (more than 50 years ahead): it is 1994, past. */
    assert_int_equal(ok("Sunday, 06-Nov-94 08:49:37 GMT", NOW_2026), 0);
    /* 2076 is exactly 50 years ahead and stays in this century (capped);
     * 2077 is more than 50 ahead, so 1977 (past). */
    assert_int_equal(ok("Wednesday, 01-Jul-76 10:00:00 GMT", NOW_2026), CAP_MS);
    assert_int_equal(ok("Thursday, 01-Jul-77 10:00:00 GMT", NOW_2026), 0);
    /* "26" is the current year. */
    assert_int_equal(ok("Wednesday, 01-Jul-26 10:00:05 GMT", NOW_2026), 5000);
    /* The current year is taken from now_ms around the century turn:
     * calendar.timegm((2000, 2, 15, 0, 0, 0)) == 950572800,
     * calendar.timegm((1999, 12, 31, 23, 59, 59)) == 946684799. */
    assert_int_equal(ok("Tuesday, 15-Feb-00 00:00:05 GMT", 950572800LL * 1000), 5000);
    /* In February 2000 the year is 2000 (not 1999), so "50" is 2050. */
    assert_int_equal(ok("Tuesday, 15-Feb-50 00:00:00 GMT", 950572800LL * 1000), CAP_MS);
    assert_int_equal(ok("Saturday, 01-Jan-00 00:00:01 GMT", 946684799LL * 1000), 2000);
    /* From 1999, "99" is this year, "49" is 2049 (50 ahead), "50" is 1950. */
    assert_int_equal(ok("Friday, 31-Dec-99 23:59:59 GMT", 946684799LL * 1000 - 3000), 3000);
    assert_int_equal(ok("Friday, 31-Dec-49 23:59:59 GMT", 946684799LL * 1000), CAP_MS);
    assert_int_equal(ok("Saturday, 31-Dec-50 23:59:59 GMT", 946684799LL * 1000), 0);
}

static void test_tz_and_locale_independent(void **state)
{
    (void)state;
    const int64_t now = RFC_EPOCH * 1000 - 60000;
    setenv("TZ", "America/New_York", 1);
    tzset();
    setlocale(LC_ALL, "");
    assert_int_equal(ok("Sun, 06 Nov 1994 08:49:37 GMT", now), 60000);
    assert_int_equal(ok("Sun Nov  6 08:49:37 1994", now), 60000);
    setenv("TZ", "Asia/Kolkata", 1);
    tzset();
    assert_int_equal(ok("Sunday, 06-Nov-94 08:49:37 GMT", now), 60000);
    unsetenv("TZ");
    tzset();
    setlocale(LC_ALL, "C");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_seconds),
        cmocka_unit_test(test_delta_cap),
        cmocka_unit_test(test_delta_rejects),
        cmocka_unit_test(test_three_date_forms),
        cmocka_unit_test(test_past_and_now),
        cmocka_unit_test(test_future_dates),
        cmocka_unit_test(test_leap_days),
        cmocka_unit_test(test_invalid_fields),
        cmocka_unit_test(test_malformed_dates),
        cmocka_unit_test(test_robust_names),
        cmocka_unit_test(test_rfc850_two_digit_year),
        cmocka_unit_test(test_tz_and_locale_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
