/* test_report.c - the HTML report from canned report replies: every
 * section drawn, names escaped, no script or external reference, empty
 * periods said as such, malformed replies refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "report.h"

#define T0 1800000000000LL
#define H 3600000LL

static const char *FULL =
    "{\"ok\":true,\"report\":{\"since\":1799996400000,\"until\":1800000000000,\"bucket_ms\":300000,\"hours\":1,"
    "\"endpoints_total\":3,\"endpoints_active\":3,"
    "\"endpoints\":[{\"name\":\"<script>alert(1)</script>\",\"state\":\"open\",\"status\":\"active\","
    " \"attempts\":12,\"breaker_opens\":2,\"p50_ms\":null,\"p95_ms\":null,\"p99_ms\":null,"
    " \"series\":[[1799996400000,0,6,1,null,null,null],[1799997000000,0,6,1,40,90,120]]},"
    "{\"name\":\"b&b\",\"state\":\"closed\",\"status\":\"disabled\",\"attempts\":40,\"breaker_opens\":0,"
    " \"p50_ms\":3,\"p95_ms\":9,\"p99_ms\":20,"
    " \"series\":[[1799996400000,20,0,0,3,9,20],[1799996700000,20,0,0,4,10,30]]}],"
    "\"totals\":[[1799996400000,20,6,1],[1799996700000,20,0,0],[1799997000000,0,6,1]],"
    "\"dead_letters\":[[\"http_503\",7],[\"timeout\",2]],\"slow_p95_ms\":2000,"
    "\"slow\":[{\"name\":\"x<y\",\"p50_ms\":2500,\"p95_ms\":4000,\"p99_ms\":9000,\"sample_count\":50}]}}";

static const char *EMPTY =
    "{\"ok\":true,\"report\":{\"since\":1799913600000,\"until\":1800000000000,\"bucket_ms\":300000,\"hours\":24,"
    "\"endpoints_total\":0,\"endpoints_active\":0,\"endpoints\":[],\"totals\":[],\"dead_letters\":[],"
    "\"slow_p95_ms\":2000,\"slow\":[]}}";

static char *render(const char *json)
{
    cJSON *r = cJSON_Parse(json);
    struct buf b = {0};
    char *out;

    assert_non_null(r);
    assert_int_equal(report_html(r, T0, &b), 0);
    cJSON_Delete(r);
    buf_puts(&b, "");
    out = strdup(b.p);
    buf_free(&b);
    return out;
}

static void every_section_drawn_and_escaped(void **state)
{
    char *h = render(FULL);

    assert_non_null(strstr(h, "data-chart=\"hourly\""));
    assert_non_null(strstr(h, "data-chart=\"openings\""));
    assert_non_null(strstr(h, "data-chart=\"dead_letters\""));
    assert_non_null(strstr(h, "data-chart=\"latency\""));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_null(strstr(h, "<script"));
    assert_non_null(strstr(h, "<h3>b&amp;b</h3>"));
    assert_non_null(strstr(h, "<td>x&lt;y</td><td>2500 ms</td><td>4000 ms</td>"));
    assert_non_null(strstr(h, ">http_503</text>"));
    assert_non_null(strstr(h, "<title>40 delivered</title>"));   /* 20 + 20 in the one hour */
    assert_non_null(strstr(h, "<title>1 opened</title>"));     /* a mark per bucket */
    assert_non_null(strstr(h, "class=\"p95\""));                 /* a percentile line */
    assert_non_null(strstr(h, "st-disabled"));
    assert_non_null(strstr(h, "buckets of 5m"));
    assert_null(strstr(h, "src="));
    assert_null(strstr(h, "href="));
    assert_null(strstr(h, "url("));
    free(h);
}

static void empty_period_says_so(void **state)
{
    char *h = render(EMPTY);

    assert_non_null(strstr(h, "no data in this period"));
    assert_non_null(strstr(h, "no breaker opened in this period"));
    assert_non_null(strstr(h, "no dead letters in this period"));
    assert_non_null(strstr(h, "No endpoint had traffic in this period."));
    assert_non_null(strstr(h, "<h2>Slow endpoints (p95 over 2000 ms)</h2><p>None.</p>"));
    free(h);
}

static void malformed_refused_and_axis(void **state)
{
    static const char *bad[] = {"{\"ok\":true}", "{\"report\":{\"endpoints\":[]}}",
                                "{\"report\":{\"since\":5,\"until\":4,\"bucket_ms\":1,\"endpoints\":[]}}",
                                "{\"report\":{\"since\":1,\"until\":4,\"bucket_ms\":0,\"endpoints\":[]}}"};
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *r = cJSON_Parse(bad[i]);
        struct buf b = {0};
        assert_int_equal(report_html(r, T0, &b), -1);
        buf_free(&b);
        cJSON_Delete(r);
    }
    assert_true(report_nice_max(0) == 1);
    assert_true(report_nice_max(1) == 1);
    assert_true(report_nice_max(7) == 10);
    assert_true(report_nice_max(12) == 20);
    assert_true(report_nice_max(20) == 20);
    assert_true(report_nice_max(33) == 50);
    assert_true(report_nice_max(501) == 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_section_drawn_and_escaped),
        cmocka_unit_test(empty_period_says_so),
        cmocka_unit_test(malformed_refused_and_axis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
