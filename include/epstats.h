/* epstats.h - each endpoint's attempts of the last EPSTATS_SECS seconds
 * (delivered and failed), for `hookd endpoints` and `hookd top`.
 *
 * The window (struct epwin) is pure: one bucket per second, a fake clock
 * drives it in the unit tests. The table of windows is process-wide, as
 * the counters are: the writer adds committed results, the reader reads
 * when it answers; one mutex, held for a lookup and a few additions. */
#ifndef HOOKD_EPSTATS_H
#define HOOKD_EPSTATS_H
#include <stdint.h>

#define EPSTATS_SECS 10

struct epwin {
    int64_t sec[EPSTATS_SECS];   /* the second each bucket counts (epoch s) */
    uint32_t ok[EPSTATS_SECS], fail[EPSTATS_SECS];
};

/* Count one attempt at now_ms. Pure. */
void epwin_add(struct epwin *w, int ok, int64_t now_ms);
/* Attempts of the EPSTATS_SECS seconds up to now_ms (this one included). */
void epwin_sum(const struct epwin *w, int64_t now_ms, uint32_t *ok, uint32_t *fail);

/* The process-wide table. */
void epstats_note(int64_t endpoint_id, int ok, int64_t now_ms);
void epstats_get(int64_t endpoint_id, int64_t now_ms, uint32_t *ok, uint32_t *fail);

#endif
