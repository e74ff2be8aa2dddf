/* test_logbudget.c - the line budget for event storms, on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log.h"

static void lines_up_to_the_limit_then_one_count(void **state)
{
    struct log_budget b = {.window_ms = 10000, .limit = 3};
    int i, logged = 0;

    (void)state;
    for (i = 0; i < 1000; i++)
        logged += log_budget_take(&b, 1000 + i);
    assert_int_equal(logged, 3);
    assert_int_equal(log_budget_roll(&b, 10999), 0);       /* window not over */
    assert_int_equal(log_budget_roll(&b, 11000), 997);     /* every held line counted once */
    assert_int_equal(log_budget_roll(&b, 11001), 0);
    /* a new window: lines again */
    assert_int_equal(log_budget_take(&b, 11002), 1);
}

static void a_late_line_without_roll_is_still_counted(void **state)
{
    struct log_budget b = {.window_ms = 100, .limit = 1};

    (void)state;
    assert_int_equal(log_budget_take(&b, 1), 1);
    assert_int_equal(log_budget_take(&b, 2), 0);
    /* the window is over but nobody rolled: the summary is owed first,
     * this line goes into it rather than being lost */
    assert_int_equal(log_budget_take(&b, 500), 0);
    assert_int_equal(log_budget_roll(&b, 500), 2);
    assert_int_equal(log_budget_take(&b, 501), 1);
}

static void quiet_windows_report_nothing(void **state)
{
    struct log_budget b = {.window_ms = 100, .limit = 5};

    (void)state;
    assert_int_equal(log_budget_roll(&b, 50), 0);          /* never used */
    assert_int_equal(log_budget_take(&b, 60), 1);
    assert_int_equal(log_budget_roll(&b, 1000), 0);        /* used, nothing held */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_up_to_the_limit_then_one_count),
        cmocka_unit_test(a_late_line_without_roll_is_still_counted),
        cmocka_unit_test(quiet_windows_report_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
