/* cron.c - periodic jobs on the monotonic clock. */
#include "cron.h"
#include "log.h"
#include "util.h"

#include <string.h>

void cron_init(struct cron *s, int64_t now_mono)
{
    memset(s, 0, sizeof *s);
    s->base_mono = now_mono;
    atomic_init(&s->lead, 1);
}

void cron_set_lead(struct cron *s, int lead)
{
    atomic_store(&s->lead, lead ? 1 : 0);
}

int cron_lead(struct cron *s)
{
    return atomic_load(&s->lead);
}

int cron_add(struct cron *s, const char *name, enum cron_runner runner, int64_t period_ms, cron_fn fn, void *ctx)
{
    struct cron_job *j;

    if (s->n >= CRON_MAX_JOBS || period_ms <= 0)
        return -1;
    j = &s->jobs[s->n++];
    memset(j, 0, sizeof *j);
    j->name = name;
    j->runner = runner;
    j->period_ms = period_ms;
    j->next_mono = s->base_mono + period_ms;
    j->fn = fn;
    j->ctx = ctx;
    return 0;
}

int cron_add_cluster(struct cron *s, const char *name, enum cron_runner runner, int64_t period_ms, cron_fn fn,
                     void *ctx)
{
    if (cron_add(s, name, runner, period_ms, fn, ctx) < 0)
        return -1;
    s->jobs[s->n - 1].cluster = 1;
    return 0;
}

void cron_soon(struct cron *s, const char *name, int64_t now_mono, int64_t in_ms)
{
    size_t i;
    int64_t at = now_mono + in_ms;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->jobs[i].name, name) == 0 && s->jobs[i].next_mono > at)
            s->jobs[i].next_mono = at;
}

void cron_run(struct cron *s, enum cron_runner runner, int64_t now_mono, int64_t now_ms)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        struct cron_job *j = &s->jobs[i];
        int64_t t0, dt;
        if (j->runner != runner || j->next_mono > now_mono)
            continue;
        /* next run one period from now: a late job does not fire in bursts */
        j->next_mono = now_mono + j->period_ms;
        if (j->cluster && !atomic_load(&s->lead))
            continue;   /* another node runs it */
        t0 = util_mono_us();
        j->fn(j->ctx, now_ms);
        dt = util_mono_us() - t0;
        j->runs++;
        if (dt > j->worst_us)
            j->worst_us = dt;
        if (dt > 50000)
            log_warn("job_slow", "job=%s duration_ms=%lld", j->name, (long long)(dt / 1000));
    }
}

int64_t cron_next(const struct cron *s, enum cron_runner runner)
{
    int64_t m = INT64_MAX;
    size_t i;

    for (i = 0; i < s->n; i++)
        if (s->jobs[i].runner == runner && s->jobs[i].next_mono < m)
            m = s->jobs[i].next_mono;
    return m;
}
