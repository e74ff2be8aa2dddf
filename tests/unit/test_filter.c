/* Unit tests for payload filters (filter.c): the grammar, precedence,
 * numeric and text comparisons, missing fields, and every refusal with
 * its position. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "epdef.h"
#include "filter.h"

static const char *P = "{\"status\": \"approved\", \"amount\": 12.50, \"goal\": \"sale\", \"n\": 7,"
                       " \"s_num\": \"100\", \"flag\": true, \"nul\": null, \"name\": \"O'Brien \\\"x\\\"\","
                       " \"data\": {\"country\": \"DE\", \"items\": [{\"sku\": \"a1\"}]}, \"big\": 1e3}";

static int m(const char *expr)
{
    struct filter f;
    char err[200];
    int r;

    if (filter_parse(&f, expr, err, sizeof err) < 0)
        fail_msg("'%s' refused: %s", expr, err);
    r = filter_match(&f, P, strlen(P));
    filter_free(&f);
    return r;
}

#define YES(e) assert_int_equal(m(e), 1)
#define NO(e) assert_int_equal(m(e), 0)

static void test_comparisons(void **state)
{
    (void)state;
    YES("status = approved");
    YES("status = 'approved'");
    YES("status = \"approved\"");
    NO("status = Approved");          /* text compares exactly */
    YES("status != rejected");
    YES("amount >= 10");
    YES("amount = 12.5");             /* numbers compare as numbers */
    NO("amount > 12.5");
    YES("amount < 12.51");
    YES("amount <= 12.50");
    YES("big = 1000");
    YES("n > 6.9 and n < 7.1");
    YES("s_num > 99");                /* a string that reads whole as a number */
    YES("s_num = '100'");
    NO("s_num = 100.0 and s_num = '100.0'");
    YES("flag = true");
    NO("flag = false");
    YES("name != \"O'Brien\" and name > N and name > 'O\"'");   /* one quote inside the other */
    YES("data.country = DE and data.items.0.sku = a1");
    YES("goal > rebill");             /* text order, byte by byte */
}

static void test_in_exists_and_missing(void **state)
{
    (void)state;
    YES("status in (approved, rebill)");
    YES("status IN ('rebill','approved')");
    NO("status in (rejected)");
    YES("status not in (rejected, chargeback)");
    YES("n in (1, 7.0, 9)");
    YES("status exists");
    NO("nul exists");
    NO("missing exists");
    /* a missing or null field fails every test but != and not in */
    NO("missing = x");
    NO("missing < 1");
    NO("missing >= 1");
    NO("missing in (x)");
    YES("missing != x");
    YES("nul != x");
    YES("missing not in (x)");
}

static void test_boolean_structure(void **state)
{
    (void)state;
    YES("status in (approved, rebill) and amount >= 10");
    /* and binds tighter than or */
    YES("status = rejected and amount > 100 or goal = sale");
    NO("status = rejected and (amount > 100 or goal = sale)");
    YES("not status = rejected");
    YES("NOT (status = rejected or goal = lead)");
    NO("not not status = rejected");
    YES("((((status = approved))))");
    YES("not missing exists and (status = approved or status = rebill)");
}

static void test_payloads_that_are_not_objects(void **state)
{
    struct filter f;
    char err[200];

    (void)state;
    assert_int_equal(filter_parse(&f, "a = 1 or a != 1", err, sizeof err), 0);
    assert_int_equal(filter_match(&f, "[1,2]", 5), 1);      /* a missing: != passes */
    assert_int_equal(filter_match(&f, "{\"a\": ", 6), 1);
    assert_int_equal(filter_match(&f, "", 0), 1);
    assert_int_equal(filter_match(&f, NULL, 0), 1);
    filter_free(&f);
}

static void test_refused_with_position(void **state)
{
    static const struct {
        const char *expr, *want;
    } bad[] = {
        {"", "empty filter"},
        {"   ", "empty filter"},
        {"status", "expected an operator (= != < <= > >= in exists) at position 7 (the end)"},
        {"status == x", "expected a value at position 9"},
        {"status = ", "expected a value at position 10 (the end)"},
        {"status = 'x", "unterminated quote at position 10"},
        {"status in approved", "expected '(' after 'in' at position 11"},
        {"status in (a b)", "expected ',' or ')' in the list at position 14"},
        {"status in ()", "expected a value at position 12"},
        {"status not = x", "expected 'in' after 'not' at position 12"},
        {"(status = x", "expected ')' at position 12 (the end)"},
        {"status = x)", "')' without '(' at position 11"},
        {"status = x y", "expected 'and', 'or' or the end at position 12"},
        {"a = 1 and", "expected a field name, 'not' or '(' at position 10 (the end)"},
        {"a..b = 1", "invalid field name (letters, digits, _ - and dots) at position 1"},
        {"a = 1 & b = 2", "expected 'and', 'or' or the end at position 7"},
        {"and = 1", "expected a field name, 'not' or '(' at position 1"},
        {"a ! b", "expected an operator"},
    };
    struct filter f;
    char err[200];
    size_t i;
    char deep[400], many[4000];

    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(filter_parse(&f, bad[i].expr, err, sizeof err), -1);
        if (!strstr(err, bad[i].want))
            fail_msg("'%s': got '%s', want '%s'", bad[i].expr, err, bad[i].want);
    }
    /* bounds: nesting, nodes, length */
    memset(deep, '(', 40);
    snprintf(deep + 40, sizeof deep - 40, "a = 1");
    assert_int_equal(filter_parse(&f, deep, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested too deeply"));
    many[0] = '\0';
    for (i = 0; i < 130; i++)
        strcat(many, i ? " or a=1" : "a=1");
    assert_int_equal(filter_parse(&f, many, err, sizeof err), -1);
    assert_true(strstr(err, "too many") || strstr(err, "too long"));
    memset(many, 'a', 1100);
    memcpy(many + 1100, " exists", 8);
    assert_int_equal(filter_parse(&f, many, err, sizeof err), -1);
    assert_non_null(strstr(err, "too long"));
}

static void test_event_type_patterns(void **state)
{
    struct ep_def d;
    char err[200];

    (void)state;
    ep_def_init(&d);
    assert_int_equal(ep_def_set(&d, "event_types", "order.*, *.refunded, user.created, a*b*c", err, sizeof err), 0);
    assert_true(ep_def_wants(&d, "order.created"));
    assert_true(ep_def_wants(&d, "order.paid.v2"));     /* '*' crosses dots */
    assert_false(ep_def_wants(&d, "order"));
    assert_false(ep_def_wants(&d, "orders.created"));
    assert_true(ep_def_wants(&d, "payment.refunded"));
    assert_false(ep_def_wants(&d, "payment.refunded.late"));
    assert_true(ep_def_wants(&d, "user.created"));
    assert_false(ep_def_wants(&d, "user.created2"));
    assert_true(ep_def_wants(&d, "abc"));
    assert_true(ep_def_wants(&d, "axxbyyc"));
    assert_false(ep_def_wants(&d, "axxbyycd"));
    assert_int_equal(ep_def_set(&d, "event_types", "*", err, sizeof err), 0);
    assert_true(ep_def_wants(&d, "anything.at.all"));
    ep_def_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons),
        cmocka_unit_test(test_in_exists_and_missing),
        cmocka_unit_test(test_boolean_structure),
        cmocka_unit_test(test_payloads_that_are_not_objects),
        cmocka_unit_test(test_refused_with_position),
        cmocka_unit_test(test_event_type_patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
