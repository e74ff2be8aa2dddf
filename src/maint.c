/* maint.c - the writer's periodic jobs. */
#include "maint.h"
#include "log.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void failed(struct maint *m, const char *job)
{
    m->failed = m->st->errc;
    log_warn("job_failed", "job=%s err=\"%s\"", job, m->st->errmsg);
    m->st->ops->rollback(m->st);
}

static void job_checkpoint(void *ctx, int64_t now)
{
    struct maint *m = ctx;

    (void)now;
    if (m->st->ops->checkpoint(m->st, 0) < 0)
        failed(m, "checkpoint");
}

void maint_checkpoint_due(struct maint *m)
{
    if (store_checkpoint_if_due(m->st) < 0)
        failed(m, "checkpoint");
}

int maint_expire(struct maint *m, int64_t now)
{
    static const struct {
        enum store_expiry what;
        const char *name;
    } kinds[] = {{EXPIRE_DELIVERED, "delivered"}, {EXPIRE_DEAD_LETTERS, "dead_letters"},
                 {EXPIRE_HISTORY, "history"}, {EXPIRE_PAYLOADS, "payloads"}};
    const struct config *c = m->c;
    int64_t before[4], n[4] = {0, 0, 0, 0};
    size_t i;
    int more = 0;

    before[0] = now - c->keep_delivered_ms;
    before[1] = now - c->keep_dead_letter_ms;
    before[2] = now - c->history_keep_ms;
    before[3] = now - c->keep_payload_ms;
    for (i = 0; i < 4; i++) {
        struct store *st = m->st;
        /* [retention] payload: off (0), or no shorter than the rows' own */
        if (i == 3 && (!c->keep_payload_ms || c->keep_payload_ms >= c->keep_delivered_ms))
            break;
        if (st->ops->begin(st, 0) < 0 || st->ops->expire(st, kinds[i].what, before[i], c->cleanup_chunk, &n[i]) < 0 ||
            st->ops->commit(st) < 0) {
            failed(m, "cleanup");
            return -1;
        }
        more |= n[i] == c->cleanup_chunk;
    }
    if (n[0] || n[1] || n[2] || n[3])
        log_debug("cleanup", "%s=%lld %s=%lld %s=%lld %s=%lld", kinds[0].name, (long long)n[0], kinds[1].name,
                  (long long)n[1], kinds[2].name, (long long)n[2], kinds[3].name, (long long)n[3]);
    return more;
}

static void job_cleanup(void *ctx, int64_t now)
{
    struct maint *m = ctx;

    /* a full chunk means more is waiting: the next chunk runs after the
     * next writer round, so retention keeps up with delivery while every
     * round of acks still goes between two chunks */
    if (maint_expire(m, now) > 0)
        cron_soon(m->cron, "cleanup", util_mono_ms(), 0);
}

/* The seed's get_slow_endpoints every slow_scan_interval: over slow_p95
 * an endpoint is logged; over critical_p95 its failure threshold is
 * halved until p95 recovers, and that is kept in its health row. */
void maint_slow_scan(struct maint *m, int64_t now)
{
    const struct config *c = m->c;
    struct registry *r = m->reg;
    int64_t *ids = NULL;
    size_t i, n = 0;

    for (i = 0; i < r->n; i++) {
        struct endpoint *e = r->v[i];
        int enough = e->samples >= c->min_samples, critical = enough && e->p95_ms > c->critical_p95_ms;
        if (enough && e->p95_ms > c->slow_p95_ms)
            log_warn("endpoint_slow", "endpoint=%s p95_ms=%lld samples=%lld threshold_ms=%lld%s", e->conf->def.name,
                     (long long)e->p95_ms, (long long)e->samples, (long long)c->slow_p95_ms,
                     critical ? " failure_threshold=halved" : "");
        if (critical == (e->slow_since != 0))
            continue;
        if (!ids && !(ids = malloc(r->n * sizeof *ids))) {
            log_warn("job_failed", "job=slow_scan err=\"out of memory\"");
            return;
        }
        ids[n++] = e->id;
    }
    if (!n)
        return;
    registry_round_begin(r);
    /* shared: the breaker rows are read under lock before they are saved */
    if (m->st->ops->begin(m->st, 0) < 0 || cluster_lock(m->cl, ids, n) < 0)
        goto fail;
    for (i = 0; i < n; i++) {
        struct endpoint *e = registry_by_id(r, ids[i]);
        int critical = e->samples >= c->min_samples && e->p95_ms > c->critical_p95_ms;
        registry_mark_health(r, e);
        e->slow_since = critical ? now : 0;
        if (!critical)
            log_info("endpoint_recovered", "endpoint=%s p95_ms=%lld failure_threshold=%u", e->conf->def.name,
                     (long long)e->p95_ms, endpoint_threshold(e));
    }
    if (registry_save_health(r, m->st, now) < 0 || m->st->ops->commit(m->st) < 0)
        goto fail;
    registry_round_commit(r);
    free(ids);
    return;
fail:
    failed(m, "slow_scan");
    registry_round_undo(r);
    free(ids);
}

/* The history counts of every endpoint, about once a minute: the report
 * sees the current bucket, and a crash loses at most that much of them. */
static void job_history(void *ctx, int64_t now)
{
    struct maint *m = ctx;
    struct registry *r = m->reg;

    (void)now;
    registry_round_begin(r);
    registry_history_collect(r);
    if (!r->nhist_out) {
        registry_round_commit(r);
        return;
    }
    if (m->st->ops->begin(m->st, 0) < 0 || registry_history_flush(r, m->st) < 0 || m->st->ops->commit(m->st) < 0) {
        failed(m, "history");
        registry_round_undo(r);
        return;
    }
    registry_round_commit(r);
}

static void job_slow_scan(void *ctx, int64_t now)
{
    maint_slow_scan(ctx, now);
}

/* The rollup's bucket percentiles into the history rows (only buckets
 * that had samples: 10,000 quiet endpoints write nothing). */
static int history_latency(struct store *st, const struct store_rollup *v, size_t n)
{
    struct store_history h[64];
    size_t i, k = 0;
    int b;

    for (i = 0; i < n; i++)
        for (b = 0; b < 2; b++) {
            if (!v[i].bucket[b].bucket_at || !v[i].bucket[b].sample_count)
                continue;
            memset(&h[k], 0, sizeof h[k]);
            h[k].endpoint_id = v[i].endpoint_id;
            h[k].bucket_at = v[i].bucket[b].bucket_at;
            h[k].has_latency = v[i].bucket[b].has_latency;
            h[k].p50_ms = v[i].bucket[b].p50_ms;
            h[k].p95_ms = v[i].bucket[b].p95_ms;
            h[k].p99_ms = v[i].bucket[b].p99_ms;
            h[k].sample_count = v[i].bucket[b].sample_count;
            if (++k == sizeof h / sizeof h[0]) {
                if (st->ops->history_latency(st, h, k) < 0)
                    return -1;
                k = 0;
            }
        }
    return k ? st->ops->history_latency(st, h, k) : 0;
}

void maint_apply_rollup(struct maint *m, const struct store_rollup *v, size_t n)
{
    size_t i;

    if (!n)
        return;
    if (m->st->ops->begin(m->st, 0) < 0 || m->st->ops->rollup_save(m->st, v, n) < 0 ||
        history_latency(m->st, v, n) < 0 || m->st->ops->commit(m->st) < 0) {
        failed(m, "rollup");
        return;
    }
    for (i = 0; i < n; i++) {
        struct endpoint *e = registry_by_id(m->reg, v[i].endpoint_id);
        if (!e)
            continue;
        e->p95_ms = v[i].has_latency ? v[i].p95_ms : 0;
        e->samples = v[i].sample_count;
    }
}

int maint_register(struct maint *m, const struct config *c, struct store *st, struct registry *reg, struct cron *cron,
                   struct cluster *cl)
{
    m->c = c;
    m->cl = cl;
    m->st = st;
    m->reg = reg;
    m->cron = cron;
    m->failed = STORE_OK;
    if (cron_add(cron, "checkpoint", CRON_WRITER, c->checkpoint_interval_ms, job_checkpoint, m) < 0 ||
        cron_add_cluster(cron, "cleanup", CRON_WRITER, c->cleanup_interval_ms, job_cleanup, m) < 0 ||
        cron_add_cluster(cron, "slow_scan", CRON_WRITER, c->slow_scan_interval_ms, job_slow_scan, m) < 0 ||
        cron_add(cron, "history", CRON_WRITER, c->history_bucket_ms < 60000 ? c->history_bucket_ms : 60000,
                 job_history, m) < 0)
        return -1;
    return 0;
}
