/* test_topview.c - `hookd top`'s rows, sorting and layout from a canned
 * endpoint.list reply, and the per-endpoint attempt window (fake clock). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "epstats.h"
#include "topview.h"

#define T0 ((int64_t)1800000000000)

static const char *REPLY =
    "{\"ok\":true,\"endpoints\":["
    "{\"name\":\"alpha\",\"state\":\"closed\",\"status\":\"active\",\"p50_ms\":12,\"p95_ms\":40,\"p99_ms\":95,"
    " \"concurrency_limit\":16,\"queue\":{\"pending\":3,\"failed\":1,\"in_flight\":2,\"delivered\":900,"
    " \"dead_letter\":0},\"last_10s\":{\"delivered\":250,\"failed\":0},\"oldest_pending_age_ms\":1500},"
    "{\"name\":\"beta-with-a-rather-long-name-indeed\",\"state\":\"open\",\"status\":\"active\",\"p50_ms\":null,"
    " \"p95_ms\":null,\"p99_ms\":null,\"concurrency_limit\":null,\"queue\":{\"pending\":250000,\"failed\":7,"
    " \"in_flight\":0,\"delivered\":0,\"dead_letter\":4},\"last_10s\":{\"delivered\":0,\"failed\":3},"
    " \"oldest_pending_age_ms\":7500000},"
    "{\"name\":\"gamma\",\"state\":\"half_open\",\"status\":\"disabled\",\"p50_ms\":20000,\"p95_ms\":123456,"
    " \"p99_ms\":9,\"concurrency_limit\":1,\"queue\":{\"pending\":0,\"failed\":0,\"in_flight\":1},"
    " \"last_10s\":{\"delivered\":1,\"failed\":1},\"oldest_pending_age_ms\":null}]}";

static void rows_from_reply(void **state)
{
    cJSON *r = cJSON_Parse(REPLY);
    struct top_frame f;

    assert_int_equal(top_parse(r, 10, &f), 0);
    assert_int_equal(f.n, 3);
    assert_string_equal(f.rows[0].state, "closed");
    assert_true(f.rows[0].dps == 25.0 && f.rows[0].fps == 0);
    assert_int_equal(f.rows[0].queue, 4);
    assert_int_equal(f.rows[0].limit, 16);
    assert_string_equal(f.rows[1].state, "OPEN");
    assert_int_equal(f.rows[1].p95, -1);
    assert_int_equal(f.rows[1].limit, -1);
    assert_string_equal(f.rows[2].state, "disabled");   /* the status says more */
    assert_int_equal(f.rows[2].oldest_ms, -1);
    /* totals: sums, the oldest wait, no percentile */
    assert_int_equal(f.total.in_flight, 3);
    assert_int_equal(f.total.limit, 17);
    assert_int_equal(f.total.queue, 250011);
    assert_int_equal(f.total.oldest_ms, 7500000);
    assert_true(f.total.fps > 0.39 && f.total.fps < 0.41);
    assert_int_equal(f.total.p95, -1);
    top_frame_free(&f);
    cJSON_Delete(r);
    /* malformed replies */
    r = cJSON_Parse("{\"ok\":true}");
    assert_int_equal(top_parse(r, 10, &f), -1);
    cJSON_Delete(r);
}

static void sort_any_column(void **state)
{
    cJSON *r = cJSON_Parse(REPLY);
    struct top_frame f;

    assert_int_equal(top_parse(r, 10, &f), 0);
    top_sort(&f, TOP_QUEUE, 1);
    assert_string_equal(f.rows[0].name, "beta-with-a-rather-long-name-indeed");
    top_sort(&f, TOP_DPS, 1);
    assert_string_equal(f.rows[0].name, "alpha");
    top_sort(&f, TOP_P95, 1);
    assert_string_equal(f.rows[0].name, "gamma");
    assert_string_equal(f.rows[2].name, "beta-with-a-rather-long-name-indeed");   /* none last */
    top_sort(&f, TOP_NAME, 0);
    assert_string_equal(f.rows[0].name, "alpha");
    assert_string_equal(f.rows[2].name, "gamma");
    assert_int_equal(top_col_parse("oldest"), TOP_OLDEST);
    assert_int_equal(top_col_parse("p99"), TOP_P99);
    assert_int_equal(top_col_parse("nope"), -1);
    assert_int_equal(top_col_key('1'), TOP_NAME);
    assert_int_equal(top_col_key('0'), TOP_OLDEST);
    assert_int_equal(top_col_key('x'), -1);
    assert_false(top_col_default_desc(TOP_NAME));
    assert_true(top_col_default_desc(TOP_FPS));
    top_frame_free(&f);
    cJSON_Delete(r);
}

static int count_lines(const char *p, int width)
{
    int n = 0;
    const char *s = p;

    while (*s) {
        const char *e = strchr(s, '\n');
        assert_non_null(e);
        assert_true(e - s <= width);
        n++;
        s = e + 1;
    }
    return n;
}

static void frame_fits_80x24(void **state)
{
    cJSON *r = cJSON_Parse(REPLY);
    struct top_frame f;
    struct buf b = {0};

    assert_int_equal(top_parse(r, 10, &f), 0);
    top_sort(&f, TOP_FPS, 1);
    assert_int_equal(top_render(&f, "title", 80, 20, &b), 0);
    assert_int_equal(count_lines(b.p, 80), 3 + TOP_CHROME_LINES);
    assert_non_null(strstr(b.p, "FAIL/s<"));
    assert_non_null(strstr(b.p, "beta-with-a-r"));      /* cut to its column */
    assert_non_null(strstr(b.p, "250k"));              /* big counts shortened */
    assert_non_null(strstr(b.p, " 2h"));               /* 7,500 s */
    assert_non_null(strstr(b.p, " 20s "));             /* p50 20,000 ms */
    assert_non_null(strstr(b.p, " 2m "));              /* p95 123,456 ms */
    assert_non_null(strstr(b.p, " 25.0 "));            /* per second */
    assert_non_null(strstr(b.p, "now fail desc"));
    buf_reset(&b);
    /* fewer rows than endpoints: the totals say how many are not shown */
    assert_int_equal(top_render(&f, "title", 80, 1, &b), 0);
    assert_int_equal(count_lines(b.p, 80), 1 + TOP_CHROME_LINES);
    assert_non_null(strstr(b.p, "(+2) TOTAL 3"));
    buf_reset(&b);
    /* narrow: still at most width columns */
    assert_int_equal(top_render(&f, "a title longer than the forty columns of this terminal", 40, 0, &b), 0);
    assert_int_equal(count_lines(b.p, 40), 3 + TOP_CHROME_LINES);
    buf_free(&b);
    top_frame_free(&f);
    cJSON_Delete(r);
}

static void window_counts_last_ten_seconds(void **state)
{
    struct epwin w;
    uint32_t ok, fail;
    int i;

    memset(&w, 0, sizeof w);
    for (i = 0; i < 20; i++)
        epwin_add(&w, i % 4 != 0, T0 + i * 500);   /* 10 s of attempts, 1 in 4 failing */
    epwin_sum(&w, T0 + 9999, &ok, &fail);
    assert_int_equal(ok + fail, 20);
    assert_int_equal(fail, 5);
    /* 5 s later, the first 5 s have left the window */
    epwin_sum(&w, T0 + 14999, &ok, &fail);
    assert_int_equal(ok + fail, 10);
    /* a bucket reused a lap later starts from zero */
    epwin_add(&w, 1, T0 + 20000);
    epwin_sum(&w, T0 + 20000, &ok, &fail);
    assert_int_equal(ok + fail, 1);
    epwin_sum(&w, T0 + 60000, &ok, &fail);
    assert_int_equal(ok + fail, 0);
    /* the process-wide table */
    epstats_note(42, 1, T0);
    epstats_note(42, 0, T0);
    epstats_note(43, 1, T0);
    for (i = 0; i < 1000; i++)
        epstats_note(1000 + i, 1, T0);   /* grows */
    epstats_get(42, T0 + 1, &ok, &fail);
    assert_true(ok == 1 && fail == 1);
    epstats_get(1999, T0 + 1, &ok, &fail);
    assert_true(ok == 1 && fail == 0);
    epstats_get(7, T0, &ok, &fail);
    assert_true(ok == 0 && fail == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_from_reply),
        cmocka_unit_test(sort_any_column),
        cmocka_unit_test(frame_fits_80x24),
        cmocka_unit_test(window_counts_last_ten_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
