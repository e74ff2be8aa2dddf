/* opsev.h - hookd's own operational events ([ops] endpoint): their
 * types, the JSON payload an ops endpoint receives, which types an
 * operator chose, the free-space rule, and the quiet-period rule that
 * turns a flapping breaker into one summary instead of an event per
 * transition. Pure (no I/O, times passed in): the unit tests drive it
 * with a fake clock. Queueing the events is notify.c's. */
#ifndef HOOKD_OPSEV_H
#define HOOKD_OPSEV_H
#include <stddef.h>
#include <stdint.h>

#include "epdef.h"
#include "util.h"

enum opsev_type {
    OPSEV_NONE = 0,
    OPSEV_BREAKER_OPENED,
    OPSEV_BREAKER_CLOSED,
    OPSEV_PAUSED,
    OPSEV_DISABLED,
    OPSEV_ENABLED,
    OPSEV_OLDEST_PENDING,
    OPSEV_DEAD_LETTERS,
    OPSEV_LOW_SPACE,
    OPSEV__COUNT
};
#define OPSEV_BIT(t) (1u << (t))
#define OPSEV_ALL (((1u << OPSEV__COUNT) - 1) & ~1u)

#define OPSEV_FIGURES_MAX 8
#define OPSEV_REASON_MAX 160

/* One event. Figures are integers under static key names; text is one
 * optional string figure (an error class, a path). */
struct opsev {
    enum opsev_type type;
    int64_t at;                            /* wall ms */
    char endpoint[ENDPOINT_NAME_MAX + 1];  /* "": not about an endpoint */
    char reason[OPSEV_REASON_MAX];
    struct {
        const char *key;
        int64_t v;
    } fig[OPSEV_FIGURES_MAX];
    int nfig;
    const char *text_key;                  /* NULL: no string figure */
    char text[128];
};

/* "endpoint.breaker_opened", ...; NULL for a bad type. */
const char *opsev_type_name(enum opsev_type t);
/* "*" or a comma-separated list of type names -> mask of OPSEV_BIT()s.
 * 0, or -1 naming the unknown type in err. */
int opsev_parse_types(const char *s, unsigned *mask, char *err, size_t errlen);

/* Start an event (the rest zeroed); reason printf-style. */
void opsev_init(struct opsev *e, enum opsev_type t, int64_t at, const char *endpoint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Add an integer figure (ignored past OPSEV_FIGURES_MAX). key: static. */
void opsev_fig(struct opsev *e, const char *key, int64_t v);
/* The JSON body sent to the ops endpoint. -1 out of memory. */
int opsev_payload(const struct opsev *e, struct buf *out);

/* [ops] min_free: "10%", "2GiB", or both ("10%, 1GiB": whichever is
 * smaller). pct < 0 or bytes < 0: that part not given. 0 / -1. */
struct opsev_min_free {
    double pct;
    int64_t bytes;
};
int opsev_parse_min_free(const char *s, struct opsev_min_free *out);
/* Is free space below the rule on a file system of total bytes? */
int opsev_low_space(const struct opsev_min_free *m, uint64_t free_bytes, uint64_t total_bytes);

/* The quiet period of one endpoint's breaker events: the first change
 * is sent at once; changes within quiet_ms of the last one sent are held
 * and summarised in one event once the period is over. Zeroed: nothing
 * sent yet. */
struct opsev_flap {
    int64_t sent_at;
    uint8_t sent_type, held_type;
    uint32_t held;          /* transitions held since sent_at */
};
/* A breaker event of type t happened: 1 send it now, 0 held. */
int opsev_flap_note(struct opsev_flap *f, enum opsev_type t, int64_t now, int64_t quiet_ms);
/* Held events whose period is over: their summary's type (the state the
 * breaker is in after the last one), with *held the count, and the
 * period starts again; OPSEV_NONE when nothing is due. */
enum opsev_type opsev_flap_due(struct opsev_flap *f, int64_t now, int64_t quiet_ms, uint32_t *held);

#endif
