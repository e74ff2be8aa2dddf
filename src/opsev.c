/* opsev.c - operational events: names, payloads, the operator's choice
 * of types, the free-space rule and the breaker's quiet period. */
#include "opsev.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[OPSEV__COUNT] = {
    [OPSEV_BREAKER_OPENED] = "endpoint.breaker_opened",
    [OPSEV_BREAKER_CLOSED] = "endpoint.breaker_closed",
    [OPSEV_PAUSED] = "endpoint.paused",
    [OPSEV_DISABLED] = "endpoint.disabled",
    [OPSEV_ENABLED] = "endpoint.enabled",
    [OPSEV_OLDEST_PENDING] = "queue.oldest_pending_alert",
    [OPSEV_DEAD_LETTERS] = "dead_letters.growing",
    [OPSEV_LOW_SPACE] = "storage.low_space",
};

const char *opsev_type_name(enum opsev_type t)
{
    return (int)t > 0 && t < OPSEV__COUNT ? names[t] : NULL;
}

int opsev_parse_types(const char *s, unsigned *mask, char *err, size_t errlen)
{
    unsigned m = 0;
    const char *p = s;

    while (*p) {
        size_t n;
        int t, found = 0;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        n = strcspn(p, ", \t");
        if (!n)
            break;
        if (n == 1 && *p == '*') {
            m |= OPSEV_ALL;
            found = 1;
        }
        for (t = 1; t < OPSEV__COUNT && !found; t++)
            if (strlen(names[t]) == n && strncmp(names[t], p, n) == 0) {
                m |= OPSEV_BIT(t);
                found = 1;
            }
        if (!found) {
            snprintf(err, errlen, "unknown event type '%.*s' (known: endpoint.breaker_opened, "
                     "endpoint.breaker_closed, endpoint.paused, endpoint.disabled, endpoint.enabled, "
                     "queue.oldest_pending_alert, dead_letters.growing, storage.low_space, or *)",
                     (int)(n > 64 ? 64 : n), p);
            return -1;
        }
        p += n;
    }
    *mask = m;
    return 0;
}

void opsev_init(struct opsev *e, enum opsev_type t, int64_t at, const char *endpoint, const char *fmt, ...)
{
    va_list ap;

    memset(e, 0, sizeof *e);
    e->type = t;
    e->at = at;
    if (endpoint)
        util_strlcpy(e->endpoint, endpoint, sizeof e->endpoint);
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
}

void opsev_fig(struct opsev *e, const char *key, int64_t v)
{
    if (e->nfig >= OPSEV_FIGURES_MAX)
        return;
    e->fig[e->nfig].key = key;
    e->fig[e->nfig].v = v;
    e->nfig++;
}

int opsev_payload(const struct opsev *e, struct buf *out)
{
    char when[40];
    int i;

    util_fmt_time(e->at, when, sizeof when);
    buf_puts(out, "{\"type\":");
    buf_json_str(out, opsev_type_name(e->type) ? opsev_type_name(e->type) : "unknown");
    buf_printf(out, ",\"time\":\"%s\",\"endpoint\":", when);
    if (e->endpoint[0])
        buf_json_str(out, e->endpoint);
    else
        buf_puts(out, "null");
    buf_puts(out, ",\"reason\":");
    buf_json_str(out, e->reason);
    buf_puts(out, ",\"figures\":{");
    for (i = 0; i < e->nfig; i++) {
        buf_printf(out, "%s", i ? "," : "");
        buf_json_str(out, e->fig[i].key);
        buf_printf(out, ":%lld", (long long)e->fig[i].v);
    }
    if (e->text_key) {
        buf_printf(out, "%s", e->nfig ? "," : "");
        buf_json_str(out, e->text_key);
        buf_puts(out, ":");
        buf_json_str(out, e->text);
    }
    buf_puts(out, "}}");
    return out->failed ? -1 : 0;
}

int opsev_parse_min_free(const char *s, struct opsev_min_free *out)
{
    struct opsev_min_free m = {-1, -1};
    char part[64];
    const char *p = s;

    while (*p) {
        size_t n;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        n = strcspn(p, ",");
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (!n)
            break;
        if (n >= sizeof part)
            return -1;
        memcpy(part, p, n);
        part[n] = '\0';
        if (part[n - 1] == '%') {
            char *end;
            double v;
            part[n - 1] = '\0';
            if (!isdigit((unsigned char)part[0]) || m.pct >= 0)
                return -1;
            v = strtod(part, &end);
            if (*end || v < 0 || v > 100)
                return -1;
            m.pct = v;
        } else {
            int64_t b;
            if (m.bytes >= 0 || util_parse_size(part, &b) < 0 || b < 0)
                return -1;
            m.bytes = b;
        }
        p += strcspn(p, ",");
    }
    *out = m;
    return 0;
}

int opsev_low_space(const struct opsev_min_free *m, uint64_t free_bytes, uint64_t total_bytes)
{
    double floor_b = -1;

    if (m->pct >= 0)
        floor_b = (double)total_bytes * m->pct / 100.0;
    if (m->bytes >= 0 && (floor_b < 0 || (double)m->bytes < floor_b))
        floor_b = (double)m->bytes;
    return floor_b >= 0 && (double)free_bytes < floor_b;
}

int opsev_flap_note(struct opsev_flap *f, enum opsev_type t, int64_t now, int64_t quiet_ms)
{
    if (!f->held && (!f->sent_type || now - f->sent_at >= quiet_ms)) {
        f->sent_at = now;
        f->sent_type = (uint8_t)t;
        return 1;
    }
    /* within the quiet period, or a summary is already waiting: this
     * change joins it, and the summary reports the state after it */
    f->held++;
    f->held_type = (uint8_t)t;
    return 0;
}

enum opsev_type opsev_flap_due(struct opsev_flap *f, int64_t now, int64_t quiet_ms, uint32_t *held)
{
    enum opsev_type t;

    if (!f->held || now - f->sent_at < quiet_ms)
        return OPSEV_NONE;
    t = (enum opsev_type)f->held_type;
    *held = f->held;
    f->held = 0;
    f->held_type = 0;
    f->sent_at = now;
    f->sent_type = (uint8_t)t;
    return t;
}
