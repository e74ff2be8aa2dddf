/* clockstep.c - noticing steps of the wall clock. */
#include "clockstep.h"

void clockstep_init(struct clockstep *c)
{
    c->wall = 0;
    c->boot = 0;
    c->primed = 0;
}

int64_t clockstep_observe(struct clockstep *c, int64_t wall_ms, int64_t boot_ms)
{
    int64_t d;

    if (!c->primed) {
        c->primed = 1;
        c->wall = wall_ms;
        c->boot = boot_ms;
        return 0;
    }
    /* compared with the previous look, not a fixed origin: a slewing
     * clock drifts from elapsed time by seconds a day, never by a
     * second between two looks */
    d = (wall_ms - c->wall) - (boot_ms - c->boot);
    c->wall = wall_ms;
    c->boot = boot_ms;
    return d > CLOCKSTEP_THRESHOLD_MS || d < -CLOCKSTEP_THRESHOLD_MS ? d : 0;
}

int64_t clockstep_shift(int64_t t, int64_t step_ms)
{
    if (t == 0 || t == INT64_MAX)
        return t;
    if (step_ms > 0 && t > INT64_MAX - step_ms)
        return INT64_MAX;
    if (step_ms < 0 && t < INT64_MIN - step_ms)
        return INT64_MIN;
    return t + step_ms;
}
