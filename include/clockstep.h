/* clockstep.h - noticing steps of the wall clock (pure: every function
 * takes the clock readings, so the unit tests drive it with a fake one).
 *
 * hookd stores its times as wall-clock epoch ms (the seed's columns) and
 * waits on some of them: a retry's next_attempt_at, a breaker's
 * opened_at + cooldown, a 429's hold. A step of the wall clock (NTP or
 * an operator setting it, a VM resumed with a stale clock) would move
 * every one of those waits by the step: back 1 h, due rows wait an hour;
 * forward 1 h, retries go early. So the writer reads the wall clock
 * beside CLOCK_BOOTTIME (elapsed time, suspend included, never stepped)
 * at every look; when the wall clock moved more than
 * CLOCKSTEP_THRESHOLD_MS further, either way, than elapsed time since
 * the previous look, that is a step, and the waits are shifted by it.
 * Slewing (NTP's gradual correction, at most 0.5 ms per second) stays
 * far below the threshold between looks a second or so apart. */
#ifndef HOOKD_CLOCKSTEP_H
#define HOOKD_CLOCKSTEP_H
#include <stdint.h>

#define CLOCKSTEP_THRESHOLD_MS 1000

struct clockstep {
    int64_t wall, boot;   /* the previous look */
    int primed;           /* 0: no look yet */
};

void clockstep_init(struct clockstep *c);
/* One look at both clocks: the step the wall clock took since the last
 * look (ms, negative: backward), 0 when none (or the first look). */
int64_t clockstep_observe(struct clockstep *c, int64_t wall_ms, int64_t boot_ms);
/* A stored time moved by step: 0 (none) and INT64_MAX (never) stay as
 * they are; the sum saturates. */
int64_t clockstep_shift(int64_t t, int64_t step_ms);

#endif
