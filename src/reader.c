/* reader.c - the reader thread and its periodic jobs: the percentile
 * rollup, the health summary with the seed's three alerts, the free
 * space check, and the Prometheus textfile. Alerts that start are also
 * operational events, handed to the writer through the event sink. The query ops themselves are answered by query.c. */
#include "reader.h"
#include "breaker.h"
#include "log.h"
#include "opsev.h"
#include "percentile.h"
#include "query.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

struct reader {
    const struct config *c;
    struct store *st;
    struct cron *cron;
    reader_rollup_fn sink;
    reader_event_fn event_sink;
    void *sink_ctx;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* shared, under mu */
    struct req *inbox, **inbox_tail;
    int stop;
    /* reader thread only */
    int64_t *lat;          /* rollup scratch, reused between runs */
    size_t lat_cap;
    int have_prev_dead;
    int64_t prev_dead;
    /* alerts in force: an event goes out when one starts */
    int dead_growing, oldest_alert, low_space;
};

/* ---- the rollup ---- */

int64_t reader_percentile_ms(const int64_t *sorted, size_t n, double p)
{
    /* the seed stores int(percentile_cont(...)): latencies are never
     * negative, so truncation is floor */
    return (int64_t)percentile_cont(sorted, n, p);
}

struct ids {
    struct store_rollup *v;
    size_t n, cap;
};

static int add_id(void *arg, const struct store_endpoint_info *e)
{
    struct ids *x = arg;

    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 32;
        struct store_rollup *nv = realloc(x->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        x->v = nv;
        x->cap = nc;
    }
    memset(&x->v[x->n], 0, sizeof x->v[x->n]);
    x->v[x->n++].endpoint_id = e->id;
    return 0;
}

/* The previous and the current [history] bucket's percentiles, for the
 * report's time series: the samples of each bucket still in the ring. */
static int bucket_percentiles(struct reader *rd, struct store_rollup *r, int64_t now)
{
    int64_t step = rd->c->history_bucket_ms, cur = now - now % step;
    int b;

    for (b = 0; b < 2; b++) {
        int64_t from = b == 0 ? cur - step : cur, until = b == 0 ? cur : INT64_MAX;
        size_t k = 0;
        if (rd->st->ops->latency_window(rd->st, r->endpoint_id, from, until, &rd->lat, &rd->lat_cap, &k) < 0)
            return -1;
        r->bucket[b].bucket_at = from;
        r->bucket[b].sample_count = (int64_t)k;
        if (!k)
            continue;
        percentile_sort(rd->lat, k);
        r->bucket[b].has_latency = 1;
        r->bucket[b].p50_ms = reader_percentile_ms(rd->lat, k, 0.5);
        r->bucket[b].p95_ms = reader_percentile_ms(rd->lat, k, 0.95);
        r->bucket[b].p99_ms = reader_percentile_ms(rd->lat, k, 0.99);
    }
    return 0;
}

/* No snapshot over the whole rollup: each endpoint's window is read in its
 * own short read transaction, so the writer's checkpoints can reset the
 * WAL between them even when the window holds millions of rows. */
static void job_rollup(void *ctx, int64_t now)
{
    struct reader *rd = ctx;
    struct store *st = rd->st;
    struct ids x = {0};
    int64_t t0 = util_mono_ms(), since = now - rd->c->latency_window_ms, total = 0;
    size_t i;

    if (st->ops->endpoint_list(st, 0, add_id, &x) < 0)
        goto fail;
    for (i = 0; i < x.n; i++) {
        struct store_rollup *r = &x.v[i];
        size_t k = 0;
        if (st->ops->latency_window(st, r->endpoint_id, since, INT64_MAX, &rd->lat, &rd->lat_cap, &k) < 0)
            goto fail;
        if (k) {
            percentile_sort(rd->lat, k);
            r->has_latency = 1;
            r->p50_ms = reader_percentile_ms(rd->lat, k, 0.5);
            r->p95_ms = reader_percentile_ms(rd->lat, k, 0.95);
            r->p99_ms = reader_percentile_ms(rd->lat, k, 0.99);
        }
        r->sample_count = (int64_t)k;
        r->at = now;
        total += (int64_t)k;
        if (k && bucket_percentiles(rd, r, now) < 0)
            goto fail;
    }
    log_debug("rollup", "endpoints=%zu samples=%lld duration_ms=%lld", x.n, (long long)total,
              (long long)(util_mono_ms() - t0));
    rd->sink(rd->sink_ctx, x.v, x.n);   /* x.v is the sink's now */
    return;
fail:
    log_warn("rollup_failed", "err=\"%s\"", st->errmsg);
    free(x.v);
}

/* ---- the health summary ---- */

struct summary {
    const struct config *c;
    int64_t endpoints, open;
};

static int count_endpoint(void *arg, const struct store_endpoint_info *e)
{
    struct summary *s = arg;

    s->endpoints++;
    s->open += e->h.state == BREAKER_OPEN;
    return 0;
}

static int alert_p95(void *arg, const struct store_endpoint_info *e)
{
    struct summary *s = arg;
    char nm[ENDPOINT_NAME_MAX * 2 + 8];

    log_warn("alert_p95", "endpoint=%s p95_ms=%lld samples=%lld threshold_ms=%lld", log_q(e->name, nm, sizeof nm),
             (long long)e->h.p95_ms, (long long)e->h.sample_count, (long long)s->c->slow_p95_ms);
    return 0;
}

/* The seed's one-row health summary every summary_interval, and its three
 * alerts: dead letters growing, the oldest pending too old, an endpoint's
 * p95 over its threshold. */
static void job_summary(void *ctx, int64_t now)
{
    struct reader *rd = ctx;
    struct store *st = rd->st;
    struct summary s = {rd->c, 0, 0};
    struct store_stats q;
    struct opsev ev;
    char age[32];
    int growing, old;

    if (st->ops->snapshot_begin(st) < 0)
        goto fail;
    if (st->ops->queue_stats(st, now, 0, &q) < 0 || st->ops->endpoint_list(st, 0, count_endpoint, &s) < 0) {
        st->ops->snapshot_end(st);
        goto fail;
    }
    if (q.has_oldest)
        snprintf(age, sizeof age, "%lld", (long long)(now > q.oldest_pending ? now - q.oldest_pending : 0));
    else
        snprintf(age, sizeof age, "none");
    log_info("health_summary",
             "pending=%lld awaiting_retry=%lld in_flight=%lld dead_letter=%lld delivered_last_hour=%lld "
             "failed_last_hour=%lld oldest_pending_age_ms=%s endpoints=%lld open_breakers=%lld",
             (long long)q.n[MSG_PENDING], (long long)q.n[MSG_FAILED], (long long)q.n[MSG_IN_FLIGHT],
             (long long)q.n[MSG_DEAD_LETTER], (long long)q.delivered_last_hour, (long long)q.failed_last_hour, age,
             (long long)s.endpoints, (long long)s.open);
    growing = rd->have_prev_dead && q.n[MSG_DEAD_LETTER] > rd->prev_dead;
    if (growing) {
        log_warn("alert_dead_letters_growing", "dead_letter=%lld previous=%lld", (long long)q.n[MSG_DEAD_LETTER],
                 (long long)rd->prev_dead);
        if (!rd->dead_growing) {
            opsev_init(&ev, OPSEV_DEAD_LETTERS, now, NULL, "dead letters grew from %lld to %lld since the last "
                       "summary", (long long)rd->prev_dead, (long long)q.n[MSG_DEAD_LETTER]);
            opsev_fig(&ev, "dead_letter", q.n[MSG_DEAD_LETTER]);
            opsev_fig(&ev, "previous", rd->prev_dead);
            opsev_fig(&ev, "summary_interval_ms", rd->c->summary_interval_ms);
            rd->event_sink(rd->sink_ctx, &ev);
        }
    }
    rd->dead_growing = growing;
    rd->prev_dead = q.n[MSG_DEAD_LETTER];
    rd->have_prev_dead = 1;
    old = q.has_oldest && now - q.oldest_pending > rd->c->oldest_pending_alert_ms;
    if (old) {
        log_warn("alert_oldest_pending", "oldest_pending_age_ms=%lld threshold_ms=%lld",
                 (long long)(now - q.oldest_pending), (long long)rd->c->oldest_pending_alert_ms);
        if (!rd->oldest_alert) {
            opsev_init(&ev, OPSEV_OLDEST_PENDING, now, NULL, "the oldest pending message waited longer than "
                       "oldest_pending_alert");
            opsev_fig(&ev, "oldest_pending_age_ms", now - q.oldest_pending);
            opsev_fig(&ev, "threshold_ms", rd->c->oldest_pending_alert_ms);
            opsev_fig(&ev, "pending", q.n[MSG_PENDING]);
            opsev_fig(&ev, "awaiting_retry", q.n[MSG_FAILED]);
            rd->event_sink(rd->sink_ctx, &ev);
        }
    }
    rd->oldest_alert = old;
    if (st->ops->slow_endpoints(st, rd->c->slow_p95_ms, rd->c->min_samples, alert_p95, &s) < 0) {
        st->ops->snapshot_end(st);
        goto fail;
    }
    st->ops->snapshot_end(st);
    return;
fail:
    log_warn("health_summary_failed", "err=\"%s\"", st->errmsg);
}

/* ---- free space ---- */

/* storage.low_space when the database's file system has less free
 * space than [ops] min_free (a full disk stops enqueues: the operator
 * should hear of it before). */
static void job_space(void *ctx, int64_t now)
{
    struct reader *rd = ctx;
    struct opsev_min_free mf = {rd->c->ops_min_free_pct, rd->c->ops_min_free_bytes};
    char dir[1024], *slash, qd[1100];
    struct statvfs sv;
    uint64_t avail, total;
    int low;

    util_strlcpy(dir, rd->c->db_path, sizeof dir);
    slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (statvfs(dir, &sv) < 0) {
        log_warn("space_check_failed", "dir=%s err=\"%s\"", log_q(dir, qd, sizeof qd), strerror(errno));
        return;
    }
    avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    total = (uint64_t)sv.f_blocks * sv.f_frsize;
    low = opsev_low_space(&mf, avail, total);
    if (low && !rd->low_space) {
        struct opsev ev;
        char qm[160];
        log_warn("storage_low_space", "dir=%s free_bytes=%llu total_bytes=%llu min_free=%s",
                 log_q(dir, qd, sizeof qd), (unsigned long long)avail, (unsigned long long)total,
                 log_q(rd->c->ops_min_free, qm, sizeof qm));
        opsev_init(&ev, OPSEV_LOW_SPACE, now, NULL, "free space under min_free (%s)", rd->c->ops_min_free);
        opsev_fig(&ev, "free_bytes", (int64_t)avail);
        opsev_fig(&ev, "total_bytes", (int64_t)total);
        ev.text_key = "path";
        util_strlcpy(ev.text, dir, sizeof ev.text);
        rd->event_sink(rd->sink_ctx, &ev);
    } else if (!low && rd->low_space) {
        log_info("storage_space_ok", "dir=%s free_bytes=%llu", log_q(dir, qd, sizeof qd), (unsigned long long)avail);
    }
    rd->low_space = low;
}

/* ---- the metrics file ---- */

/* Render and replace the file atomically: a textfile collector must never
 * read a half-written file, so write path.tmp in the same directory,
 * fsync, rename. Failures are logged and the next run tries again. */
static void job_metrics_file(void *ctx, int64_t now)
{
    struct reader *rd = ctx;
    const char *path = rd->c->metrics_file;
    struct buf text = {0}, tmp = {0};
    char why[256], qp[512], qw[300];
    const char *step = "render";
    int fd = -1, ok = 0;

    (void)now;
    if (query_metrics_text(rd->st, &text) < 0) {
        snprintf(why, sizeof why, "%s", rd->st->errmsg);
        goto out;
    }
    step = "write";
    snprintf(why, sizeof why, "out of memory");
    if (buf_printf(&tmp, "%s.tmp", path) < 0)
        goto out;
    fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || util_write_all(fd, text.p, text.len) < 0 || fsync(fd) < 0)
        goto out_errno;
    if (close(fd) < 0) {
        fd = -1;
        goto out_errno;
    }
    fd = -1;
    step = "rename";
    if (rename(tmp.p, path) < 0)
        goto out_errno;
    ok = 1;
    goto out;
out_errno:
    snprintf(why, sizeof why, "%s", strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp.p);
out:
    if (!ok)
        log_warn("metrics_file_failed", "path=%s step=%s err=%s", log_q(path, qp, sizeof qp), step,
                 log_q(why, qw, sizeof qw));
    buf_free(&text);
    buf_free(&tmp);
}

/* ---- the thread ---- */

static void answer(struct reader *rd, struct req *r)
{
    if (query_answer(rd->st, rd->c, r) < 0)
        req_error(r, store_error_code(rd->st->errc), "storage error: %s", rd->st->errmsg);
    req_complete(r);
}

static void *reader_main(void *arg)
{
    struct reader *rd = arg;

    for (;;) {
        struct req *reqs, *r;
        int stop;

        pthread_mutex_lock(&rd->mu);
        while (!rd->inbox && !rd->stop) {
            int64_t mono = util_mono_ms(), until = cron_next(rd->cron, CRON_READER);
            struct timespec ts;
            if (until <= mono)
                break;
            if (until > mono + 1000)
                until = mono + 1000;
            ts.tv_sec = (time_t)(until / 1000);
            ts.tv_nsec = (long)(until % 1000) * 1000000L;
            pthread_cond_timedwait(&rd->cv, &rd->mu, &ts);
        }
        reqs = rd->inbox;
        rd->inbox = NULL;
        rd->inbox_tail = &rd->inbox;
        stop = rd->stop;
        pthread_mutex_unlock(&rd->mu);

        while ((r = reqs)) {
            reqs = r->next;
            r->next = NULL;
            if (stop) {
                req_error(r, PERR_SHUTTING_DOWN, "shutting down");
                req_complete(r);
            } else {
                answer(rd, r);
            }
        }
        if (stop)
            break;
        cron_run(rd->cron, CRON_READER, util_mono_ms(), util_now_ms());
    }
    return NULL;
}

static void reader_free(struct reader *rd)
{
    store_close(rd->st);
    pthread_cond_destroy(&rd->cv);
    pthread_mutex_destroy(&rd->mu);
    free(rd->lat);
    free(rd);
}

int reader_start(struct reader **out, const struct config *c, struct cron *cron, reader_rollup_fn sink,
                 reader_event_fn event_sink, void *sink_ctx, char *err, size_t errlen)
{
    struct reader *rd;
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    rd = calloc(1, sizeof *rd);
    if (!rd) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rd->c = c;
    rd->cron = cron;
    rd->sink = sink;
    rd->event_sink = event_sink;
    rd->sink_ctx = sink_ctx;
    rd->inbox_tail = &rd->inbox;
    pthread_mutex_init(&rd->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rd->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (store_open(c, STORE_READER, &rd->st, err, errlen) < 0)
        goto fail;
    if (cron_add_cluster(cron, "rollup", CRON_READER, c->rollup_interval_ms, job_rollup, rd) < 0 ||
        cron_add_cluster(cron, "health_summary", CRON_READER, c->summary_interval_ms, job_summary, rd) < 0 ||
        cron_add(cron, "space_check", CRON_READER, c->ops_space_interval_ms, job_space, rd) < 0 ||
        (c->metrics_file && *c->metrics_file &&
         cron_add(cron, "metrics_file", CRON_READER, c->metrics_interval_ms, job_metrics_file, rd) < 0)) {
        snprintf(err, errlen, "too many periodic jobs");
        goto fail;
    }
    rc = pthread_create(&rd->th, NULL, reader_main, rd);
    if (rc != 0) {
        snprintf(err, errlen, "reader: cannot start thread: %s", strerror(rc));
        goto fail;
    }
    pthread_setname_np(rd->th, "hookd-reader");
    rd->started = 1;
    *out = rd;
    return 0;
fail:
    reader_free(rd);
    return -1;
}

void reader_submit(struct reader *rd, struct req *r)
{
    r->next = NULL;
    pthread_mutex_lock(&rd->mu);
    if (rd->stop) {
        /* the thread is gone or going: answer here (any thread may) */
        pthread_mutex_unlock(&rd->mu);
        req_error(r, PERR_SHUTTING_DOWN, "shutting down");
        req_complete(r);
        return;
    }
    *rd->inbox_tail = r;
    rd->inbox_tail = &r->next;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

void reader_stop(struct reader *rd)
{
    if (!rd)
        return;
    pthread_mutex_lock(&rd->mu);
    rd->stop = 1;
    pthread_cond_signal(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
    if (rd->started)
        pthread_join(rd->th, NULL);
    reader_free(rd);
}
