/* cron.h - the one list of periodic jobs, driven by the monotonic clock
 * (serverCron style). The writer thread runs it between rounds; every job
 * does a bounded amount of work so none can stall acknowledgements. */
#ifndef HOOKD_CRON_H
#define HOOKD_CRON_H
#include <stddef.h>
#include <stdint.h>

#define CRON_MAX_JOBS 16

typedef void (*cron_fn)(void *ctx, int64_t now_ms);

struct cron_job {
    const char *name;
    int64_t period_ms;
    int64_t next_mono;
    cron_fn fn;
    void *ctx;
    int64_t runs;
    int64_t worst_us;   /* longest run so far */
};

struct cron {
    struct cron_job jobs[CRON_MAX_JOBS];
    size_t n;
};

void cron_init(struct cron *s, int64_t now_mono);
/* First run one period after start. */
int cron_add(struct cron *s, const char *name, int64_t period_ms, cron_fn fn, void *ctx);
/* Bring a job's next run forward to now + in_ms (a chunked job with more to do). */
void cron_soon(struct cron *s, const char *name, int64_t in_ms);
/* Run every due job once; now_mono drives the timing, now_ms (wall clock)
 * is passed to the jobs. */
void cron_run(struct cron *s, int64_t now_mono, int64_t now_ms);
/* Earliest next_mono, INT64_MAX without jobs. */
int64_t cron_next(const struct cron *s);

#endif
