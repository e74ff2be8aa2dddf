/* Unit tests for metrics.c: exact exposition text for known numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "breaker.h"
#include "metrics.h"
#include "util.h"

static const struct store_endpoint_info sample_eps[] = {
    {.name = "alpha",
     .h = {.state = BREAKER_CLOSED, .has_latency = 1, .p50_ms = 12, .p95_ms = 2500, .p99_ms = 10001, .sample_count = 40,
           .concurrency_limit = 32}},
    /* a name the config would refuse, to exercise escaping anyway */
    {.name = "we\"ird\\na\nme", .h = {.state = BREAKER_OPEN, .has_latency = 0, .sample_count = 0}},
    {.name = "probe",
     .h = {.state = BREAKER_HALF_OPEN, .has_latency = 1, .p50_ms = 0, .p95_ms = 5, .p99_ms = 999, .sample_count = 3}},
};

/* per sample_eps entry: the filter counter shows only where non-zero */
static const uint64_t sample_filtered[] = {5, 0, 0};

static void sample(struct metrics_snapshot *m)
{
    memset(m, 0, sizeof *m);
    m->version = "1.2.3";
    m->queue[MSG_PENDING] = 7;
    m->queue[MSG_FAILED] = 2;
    m->queue[MSG_IN_FLIGHT] = 1;
    m->queue[MSG_DELIVERED] = 1000;
    m->queue[MSG_DEAD_LETTER] = 4;
    m->scheduled = 3;
    m->has_oldest_pending = 1;
    m->oldest_pending_age_ms = 61500;
    m->outcomes[0] = 10;
    m->outcomes[1] = 3;
    m->outcomes[2] = 1;
    m->outcomes[3] = 0;
    /* per bucket, not cumulative: 2 at <=5ms, 1 at <=25ms, 4 at <=1s,
     * 1 above 10s */
    m->bucket[0] = 2;
    m->bucket[2] = 1;
    m->bucket[7] = 4;
    m->bucket[METRICS_NBUCKETS] = 1;
    m->sum_ms = 23456;
    m->ahead[1] = 900;
    m->ahead[0] = 5;
    m->eps = sample_eps;
    m->neps = sizeof sample_eps / sizeof sample_eps[0];
    m->filtered = sample_filtered;
}

static const char expected[] =
    "# HELP hookd_up 1 while the daemon is serving.\n"
    "# TYPE hookd_up gauge\n"
    "hookd_up 1\n"
    "# HELP hookd_build_info Build information; the value is always 1.\n"
    "# TYPE hookd_build_info gauge\n"
    "hookd_build_info{version=\"1.2.3\"} 1\n"
    "# HELP hookd_queue_messages Messages in the queue by status.\n"
    "# TYPE hookd_queue_messages gauge\n"
    "hookd_queue_messages{status=\"pending\"} 7\n"
    "hookd_queue_messages{status=\"failed\"} 2\n"
    "hookd_queue_messages{status=\"in_flight\"} 1\n"
    "hookd_queue_messages{status=\"delivered\"} 1000\n"
    "hookd_queue_messages{status=\"dead_letter\"} 4\n"
    "hookd_queue_messages{status=\"scheduled\"} 3\n"
    "# HELP hookd_dead_letters Messages in the dead letter queue.\n"
    "# TYPE hookd_dead_letters gauge\n"
    "hookd_dead_letters 4\n"
    "# HELP hookd_oldest_pending_age_seconds Age of the oldest pending or awaiting-retry message; 0 when none.\n"
    "# TYPE hookd_oldest_pending_age_seconds gauge\n"
    "hookd_oldest_pending_age_seconds 61.5\n"
    "# HELP hookd_deliveries_total Delivery attempts since start by outcome.\n"
    "# TYPE hookd_deliveries_total counter\n"
    "hookd_deliveries_total{outcome=\"delivered\"} 10\n"
    "hookd_deliveries_total{outcome=\"retry\"} 3\n"
    "hookd_deliveries_total{outcome=\"dead_letter\"} 1\n"
    "hookd_deliveries_total{outcome=\"gone\"} 0\n"
    "# HELP hookd_claimed_ahead_total Jobs claimed ahead of a free slot: started in a finished request's place, or returned untried.\n"
    "# TYPE hookd_claimed_ahead_total counter\n"
    "hookd_claimed_ahead_total{result=\"started\"} 900\n"
    "hookd_claimed_ahead_total{result=\"returned\"} 5\n"
    "# HELP hookd_attempt_duration_seconds Delivery attempt response time since start.\n"
    "# TYPE hookd_attempt_duration_seconds histogram\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.005\"} 2\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.01\"} 2\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.025\"} 3\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.05\"} 3\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.1\"} 3\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.25\"} 3\n"
    "hookd_attempt_duration_seconds_bucket{le=\"0.5\"} 3\n"
    "hookd_attempt_duration_seconds_bucket{le=\"1\"} 7\n"
    "hookd_attempt_duration_seconds_bucket{le=\"2.5\"} 7\n"
    "hookd_attempt_duration_seconds_bucket{le=\"5\"} 7\n"
    "hookd_attempt_duration_seconds_bucket{le=\"10\"} 7\n"
    "hookd_attempt_duration_seconds_bucket{le=\"+Inf\"} 8\n"
    "hookd_attempt_duration_seconds_sum 23.456\n"
    "hookd_attempt_duration_seconds_count 8\n"
    "# HELP hookd_breaker_state Circuit breaker state per endpoint (0 closed, 1 half_open, 2 open).\n"
    "# TYPE hookd_breaker_state gauge\n"
    "hookd_breaker_state{endpoint=\"alpha\"} 0\n"
    "hookd_breaker_state{endpoint=\"we\\\"ird\\\\na\\nme\"} 2\n"
    "hookd_breaker_state{endpoint=\"probe\"} 1\n"
    "# HELP hookd_endpoint_concurrency_limit Requests that may be in flight to the endpoint now (the adaptive limit).\n"
    "# TYPE hookd_endpoint_concurrency_limit gauge\n"
    "hookd_endpoint_concurrency_limit{endpoint=\"alpha\"} 32\n"
    "# HELP hookd_endpoint_latency_seconds Attempt response time percentiles per endpoint over the latency window.\n"
    "# TYPE hookd_endpoint_latency_seconds gauge\n"
    "hookd_endpoint_latency_seconds{endpoint=\"alpha\",percentile=\"50\"} 0.012\n"
    "hookd_endpoint_latency_seconds{endpoint=\"alpha\",percentile=\"95\"} 2.5\n"
    "hookd_endpoint_latency_seconds{endpoint=\"alpha\",percentile=\"99\"} 10.001\n"
    "hookd_endpoint_latency_seconds{endpoint=\"probe\",percentile=\"50\"} 0\n"
    "hookd_endpoint_latency_seconds{endpoint=\"probe\",percentile=\"95\"} 0.005\n"
    "hookd_endpoint_latency_seconds{endpoint=\"probe\",percentile=\"99\"} 0.999\n"
    "# HELP hookd_endpoint_latency_samples Attempts in the latency window behind the percentiles per endpoint.\n"
    "# TYPE hookd_endpoint_latency_samples gauge\n"
    "hookd_endpoint_latency_samples{endpoint=\"alpha\"} 40\n"
    "hookd_endpoint_latency_samples{endpoint=\"we\\\"ird\\\\na\\nme\"} 0\n"
    "hookd_endpoint_latency_samples{endpoint=\"probe\"} 3\n"
    "# HELP hookd_endpoint_filtered_total Messages the endpoint's filter kept out since start (absent until the "
    "first).\n"
    "# TYPE hookd_endpoint_filtered_total counter\n"
    "hookd_endpoint_filtered_total{endpoint=\"alpha\"} 5\n";

static char *render(const struct metrics_snapshot *m)
{
    struct buf b = {0};

    assert_int_equal(metrics_render(m, &b), 0);
    assert_non_null(b.p);
    return b.p;
}

/* Does text hold exactly this line? */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    const char *p = text;

    while ((p = strstr(p, line)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
        p += n;
    }
    return 0;
}

static void test_exact_text(void **state)
{
    struct metrics_snapshot m;
    char *t;

    (void)state;
    sample(&m);
    t = render(&m);
    if (strcmp(t, expected) != 0) {
        /* the first differing line says more than two walls of text */
        size_t i = 0, line = 1;
        while (t[i] && t[i] == expected[i]) {
            if (t[i] == '\n')
                line++;
            i++;
        }
        fail_msg("output differs at line %zu: got \"%.60s\"", line, t + i);
    }
    free(t);
}

static void test_label_escaping(void **state)
{
    struct buf b = {0};

    (void)state;
    assert_int_equal(metrics_label_escape(&b, "a\"b\\c\nd"), 0);
    assert_string_equal(b.p, "a\\\"b\\\\c\\nd");
    b.len = 0;
    assert_int_equal(metrics_label_escape(&b, "plain.name-1_x"), 0);
    assert_string_equal(b.p, "plain.name-1_x");
    buf_free(&b);
}

static void test_bucket_index(void **state)
{
    (void)state;
    /* bounds are inclusive: an observation equal to le is in that bucket */
    assert_int_equal(metrics_bucket_index(-1), 0);
    assert_int_equal(metrics_bucket_index(0), 0);
    assert_int_equal(metrics_bucket_index(5), 0);
    assert_int_equal(metrics_bucket_index(6), 1);
    assert_int_equal(metrics_bucket_index(10), 1);
    assert_int_equal(metrics_bucket_index(1000), 7);
    assert_int_equal(metrics_bucket_index(1001), 8);
    assert_int_equal(metrics_bucket_index(10000), 10);
    assert_int_equal(metrics_bucket_index(10001), METRICS_NBUCKETS);
    assert_int_equal(metrics_bucket_index(INT64_MAX), METRICS_NBUCKETS);
}

/* Feed observations through metrics_bucket_index as the reader does and
 * check the rendered buckets are cumulative, monotone, +Inf == _count. */
static void test_histogram_cumulative(void **state)
{
    static const int64_t obs[] = {0, 3, 5, 9, 10, 11, 99, 100, 101, 2500, 9999, 10000, 10001, 60000, 1};
    struct metrics_snapshot m;
    uint64_t sum = 0, prev = 0, inf = 0, count = 0;
    char *t, *line;
    size_t i;

    (void)state;
    memset(&m, 0, sizeof m);
    m.version = "x";
    for (i = 0; i < sizeof obs / sizeof obs[0]; i++) {
        m.bucket[metrics_bucket_index(obs[i])]++;
        sum += (uint64_t)obs[i];
    }
    m.sum_ms = sum;
    t = render(&m);
    for (line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long v;
        if (sscanf(line, "hookd_attempt_duration_seconds_bucket{le=\"+Inf\"} %llu", &v) == 1) {
            assert_true(v >= prev);
            inf = v;
        } else if (strncmp(line, "hookd_attempt_duration_seconds_bucket{", 39) == 0) {
            const char *sp = strrchr(line, ' ');
            assert_non_null(sp);
            v = strtoull(sp + 1, NULL, 10);
            assert_true(v >= prev);
            prev = v;
        } else if (sscanf(line, "hookd_attempt_duration_seconds_count %llu", &v) == 1) {
            count = v;
        }
    }
    free(t);
    assert_int_equal(inf, sizeof obs / sizeof obs[0]);
    assert_int_equal(count, inf);

    t = render(&m);
    /* 0 3 5 1 | 9 10 | 11 | 99 100 | 101 | 2500 | 9999 10000 | 10001 60000 */
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"0.005\"} 4"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"0.01\"} 6"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"0.025\"} 7"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"0.1\"} 9"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"0.25\"} 10"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"2.5\"} 11"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"10\"} 13"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"+Inf\"} 15"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_sum 92.839"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_count 15"));
    free(t);
}

/* Every sample belongs to a family announced by # HELP and # TYPE first. */
static void test_help_and_type_precede_samples(void **state)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    struct metrics_snapshot m;
    char typed[64][80];
    size_t ntyped = 0, i, k;
    int saw_help = 0;
    char *t, *line;

    (void)state;
    sample(&m);
    t = render(&m);
    for (line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        char name[80];
        int found = 0;
        if (strncmp(line, "# HELP ", 7) == 0) {
            saw_help = 1;
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            assert_true(saw_help);   /* HELP comes right before TYPE */
            saw_help = 0;
            assert_int_equal(sscanf(line + 7, "%79s", typed[ntyped]), 1);
            ntyped++;
            assert_true(ntyped < 64);
            continue;
        }
        assert_int_equal(sscanf(line, "%79[a-z_]", name), 1);
        for (i = 0; i < ntyped && !found; i++) {
            if (strcmp(name, typed[i]) == 0)
                found = 1;
            for (k = 0; k < 3 && !found; k++) {
                size_t n = strlen(typed[i]);
                if (strncmp(name, typed[i], n) == 0 && strcmp(name + n, suffixes[k]) == 0)
                    found = 1;
            }
        }
        if (!found)
            fail_msg("sample without # TYPE: %s", line);
    }
    free(t);
}

static void test_empty_snapshot(void **state)
{
    struct metrics_snapshot m;
    char *t;

    (void)state;
    memset(&m, 0, sizeof m);
    m.version = "0";
    t = render(&m);
    /* no pending message: age 0 rather than an absent series */
    assert_true(has_line(t, "hookd_oldest_pending_age_seconds 0"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_bucket{le=\"+Inf\"} 0"));
    assert_true(has_line(t, "hookd_attempt_duration_seconds_sum 0"));
    assert_true(has_line(t, "# TYPE hookd_breaker_state gauge"));
    assert_null(strstr(t, "hookd_breaker_state{"));
    assert_null(strstr(t, "hookd_endpoint_latency_seconds{"));
    free(t);
}

static void test_appends(void **state)
{
    struct metrics_snapshot m;
    struct buf b = {0};

    (void)state;
    sample(&m);
    assert_int_equal(buf_puts(&b, "prefix\n"), 0);
    assert_int_equal(metrics_render(&m, &b), 0);
    assert_int_equal(strncmp(b.p, "prefix\n# HELP hookd_up ", 23), 0);
    assert_string_equal(b.p + 7, expected);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_text),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_bucket_index),
        cmocka_unit_test(test_histogram_cumulative),
        cmocka_unit_test(test_help_and_type_precede_samples),
        cmocka_unit_test(test_empty_snapshot),
        cmocka_unit_test(test_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
