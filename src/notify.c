/* notify.c - operational events into the ops endpoint's queue. */
#include "notify.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

struct notify_item {
    struct notify_item *next;
    struct opsev ev;
    int round;      /* raised inside the current round */
    int flushed;    /* stored by the open transaction */
};

void notify_init(struct notify *n, const struct config *c)
{
    memset(n, 0, sizeof *n);
    n->endpoint = c->ops_endpoint ? c->ops_endpoint : "";
    n->mask = c->ops_event_mask;
    n->quiet_ms = c->ops_quiet_ms;
    n->tail = &n->head;
}

static void drop_if(struct notify *n, int (*pred)(const struct notify_item *))
{
    struct notify_item **pp = &n->head, *it;

    while ((it = *pp)) {
        if (pred(it)) {
            *pp = it->next;
            free(it);
            n->n--;
        } else {
            pp = &it->next;
        }
    }
    n->tail = &n->head;
    while (*n->tail)
        n->tail = &(*n->tail)->next;
}

static int all(const struct notify_item *it)
{
    (void)it;
    return 1;
}

void notify_free(struct notify *n)
{
    drop_if(n, all);
}

int notify_wanted(const struct notify *n, enum opsev_type t, const char *endpoint)
{
    if (!n->endpoint[0] || !(n->mask & OPSEV_BIT(t)))
        return 0;
    return !endpoint || strcmp(endpoint, n->endpoint) != 0;
}

int notify_emit(struct notify *n, const struct opsev *ev)
{
    struct notify_item *it;

    if (!notify_wanted(n, ev->type, ev->endpoint[0] ? ev->endpoint : NULL))
        return 0;
    if (!(it = calloc(1, sizeof *it))) {
        log_warn("ops_event_dropped", "type=%s err=\"out of memory\"", opsev_type_name(ev->type));
        return -1;
    }
    it->ev = *ev;
    it->round = n->in_round;
    *n->tail = it;
    n->tail = &it->next;
    n->n++;
    return 0;
}

void notify_round_begin(struct notify *n)
{
    n->in_round = 1;
}

int notify_flush(struct notify *n, struct store *st, int64_t ops_id, int max_attempts, int64_t now, size_t *stored)
{
    struct store_enqueue *rows = NULL;
    struct buf *bodies = NULL;
    char (*ids)[64] = NULL;
    struct notify_item *it;
    size_t k = 0, m = 0, i;
    int rc = -1;

    *stored = 0;
    for (it = n->head; it; it = it->next)
        m += !it->flushed;
    if (!m)
        return 0;
    if (!ops_id) {
        if (!n->warned_missing)
            log_warn("ops_endpoint_missing", "endpoint=%s dropped=%zu note=\"[ops] endpoint names no endpoint; "
                     "events are logged only\"", n->endpoint, m);
        n->warned_missing = 1;
        drop_if(n, all);
        return 0;
    }
    n->warned_missing = 0;
    rows = calloc(m, sizeof *rows);
    bodies = calloc(m, sizeof *bodies);
    ids = calloc(m, sizeof *ids);
    if (!rows || !bodies || !ids) {
        store_fail(st, STORE_E_NOMEM, "ops events: out of memory");
        goto out;
    }
    for (it = n->head; it; it = it->next) {
        if (it->flushed)
            continue;
        if (opsev_payload(&it->ev, &bodies[k]) < 0) {
            store_fail(st, STORE_E_NOMEM, "ops events: out of memory");
            goto out;
        }
        util_random_id("ops_", ids[k], sizeof ids[k]);
        rows[k].endpoint_id = ops_id;
        rows[k].event_id = ids[k];
        rows[k].event_type = opsev_type_name(it->ev.type);
        rows[k].payload = bodies[k].p;
        rows[k].payload_len = bodies[k].len;
        rows[k].max_attempts = max_attempts;
        k++;
    }
    if (st->ops->enqueue(st, rows, k, now) < 0)
        goto out;
    for (it = n->head; it; it = it->next)
        it->flushed = 1;
    *stored = k;
    rc = 0;
out:
    for (i = 0; bodies && i < m; i++)
        buf_free(&bodies[i]);
    free(bodies);
    free(rows);
    free(ids);
    return rc;
}

static int is_flushed(const struct notify_item *it)
{
    return it->flushed;
}

static int is_round(const struct notify_item *it)
{
    return it->round;
}

void notify_committed(struct notify *n)
{
    struct notify_item *it;

    drop_if(n, is_flushed);
    for (it = n->head; it; it = it->next)
        it->round = 0;   /* raised after the flush: the next one stores it */
    n->in_round = 0;
}

void notify_undo(struct notify *n)
{
    struct notify_item *it;

    drop_if(n, is_round);
    for (it = n->head; it; it = it->next)
        it->flushed = 0;
    n->in_round = 0;
}
