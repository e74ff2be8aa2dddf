/* cron.h - the one table of periodic jobs (serverCron style), on the
 * monotonic clock. The writer and the reader register their jobs into it
 * at start-up, each under its own runner, and each thread runs only its
 * own jobs between requests: nobody asks another thread to do periodic
 * work. Every job does a bounded amount of work so none can stall
 * acknowledgements.
 *
 * Several nodes on one database: a job marked once per cluster (retention,
 * the slow scan, the rollup, the health summary) runs only while this
 * node leads (cron_set_lead, from the heartbeat); elsewhere its turns pass
 * without running it, and a node that takes the lead over runs it at its
 * next turn.
 *
 * Threads: the table is built before the threads start; afterwards a
 * job's timing fields are touched only by its runner's thread. */
#ifndef HOOKD_CRON_H
#define HOOKD_CRON_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CRON_MAX_JOBS 16

enum cron_runner { CRON_WRITER = 0, CRON_READER };

typedef void (*cron_fn)(void *ctx, int64_t now_ms);

struct cron_job {
    const char *name;
    enum cron_runner runner;
    int64_t period_ms;
    int64_t next_mono;
    cron_fn fn;
    void *ctx;
    int64_t runs;
    int64_t worst_us;   /* longest run so far */
    int cluster;        /* once per cluster: only while this node leads */
};

struct cron {
    struct cron_job jobs[CRON_MAX_JOBS];
    size_t n;
    int64_t base_mono;
    atomic_int lead;    /* 1 (the default): this node runs the cluster's jobs */
};

void cron_init(struct cron *s, int64_t now_mono);
/* First run one period after start. -1 when the table is full or the
 * period is not positive. */
int cron_add(struct cron *s, const char *name, enum cron_runner runner, int64_t period_ms, cron_fn fn, void *ctx);
/* The same, for a job that runs once per cluster. */
int cron_add_cluster(struct cron *s, const char *name, enum cron_runner runner, int64_t period_ms, cron_fn fn,
                     void *ctx);
/* Does this node lead now? (Any thread.) */
void cron_set_lead(struct cron *s, int lead);
int cron_lead(struct cron *s);
/* Bring a job's next run forward to now_mono + in_ms (a chunked job with
 * more to do). From the job's runner only. */
void cron_soon(struct cron *s, const char *name, int64_t now_mono, int64_t in_ms);
/* Run the runner's due jobs once; now_mono drives the timing, now_ms (wall
 * clock) is passed to the jobs. */
void cron_run(struct cron *s, enum cron_runner runner, int64_t now_mono, int64_t now_ms);
/* The runner's earliest next_mono, INT64_MAX without jobs. */
int64_t cron_next(const struct cron *s, enum cron_runner runner);

#endif
