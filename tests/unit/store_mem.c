/* store_mem.c - the in-memory storage backend of the unit tests. Simple
 * arrays and linear scans: correctness, not speed. Every semantic the
 * behaviour table (test_store.c) checks is implemented here the way
 * store.h states it, independently of the SQL. */
#include "store_mem.h"
#include "breaker.h"
#include "endpoint.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mem_msg {
    int64_t id, endpoint_id;
    char *event_id, *event_type, *payload;
    size_t payload_len;
    enum msg_status status;
    int attempt_count, max_attempts;
    int64_t created_at, next_attempt_at, claimed_at, delivered_at;
    int64_t deliver_at;          /* the enqueue's absolute time (0: none) */
    char *last_error, *last_error_class;
    int last_status_code;
    int64_t last_response_ms;
    char *ordering_key;
    int generation;              /* requeues so far */
    int64_t erased_at;           /* 0: not erased */
};

struct mem_attempt {
    int64_t endpoint_id, message_id, response_ms, at;
    int generation, attempt, status_code;
    char *error_class, *detail;
    char *method, *url, *response;
};

/* one slot of an endpoint's latency ring */
struct mem_sample {
    int64_t endpoint_id, slot, message_id, response_ms, at;
    int status_code;
};

struct mem_ep {
    int64_t id;
    struct ep_def def;
    int from_config;
    char *pause_reason;
};

struct mem_health {
    struct store_health h;
    char *url;
};

struct mem_state {
    struct mem_msg *msg;
    size_t nmsg;
    struct mem_attempt *att;
    size_t natt;
    struct mem_ep *ep;
    size_t nep;
    struct mem_health *hl;
    size_t nhl;
    struct mem_sample *ring;
    size_t nring;
    struct store_history *hist;
    size_t nhist;
    int64_t next_msg_id, next_ep_id, next_att_id;
};

struct mem_db {
    struct mem_state cur;
    struct mem_state saved;   /* at begin */
    int in_txn;
    char fail_op[32];
    enum store_errc fail_errc;
};

struct mem_store {
    struct store base;
    struct mem_db *db;
    enum store_role role;
};

#define DB(s) (((struct mem_store *)(s))->db)
#define ST(s) (&DB(s)->cur)

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void *grow(void *p, size_t n, size_t size)
{
    /* one more element; tests are small, abort on out of memory */
    void *np = realloc(p, (n + 1) * size);
    if (!np)
        abort();
    return np;
}

/* ---- deep copies (transactions) ---- */

static void state_free(struct mem_state *s)
{
    size_t i;

    for (i = 0; i < s->nmsg; i++) {
        free(s->msg[i].event_id);
        free(s->msg[i].event_type);
        free(s->msg[i].payload);
        free(s->msg[i].last_error);
        free(s->msg[i].last_error_class);
        free(s->msg[i].ordering_key);
    }
    for (i = 0; i < s->natt; i++) {
        free(s->att[i].error_class);
        free(s->att[i].detail);
        free(s->att[i].method);
        free(s->att[i].url);
        free(s->att[i].response);
    }
    for (i = 0; i < s->nep; i++) {
        ep_def_free(&s->ep[i].def);
        free(s->ep[i].pause_reason);
    }
    for (i = 0; i < s->nhl; i++)
        free(s->hl[i].url);
    free(s->msg);
    free(s->att);
    free(s->ep);
    free(s->hl);
    free(s->ring);
    free(s->hist);
    memset(s, 0, sizeof *s);
}

static void state_copy(struct mem_state *d, const struct mem_state *s)
{
    size_t i;

    *d = *s;
    d->msg = calloc(s->nmsg + 1, sizeof *d->msg);
    d->att = calloc(s->natt + 1, sizeof *d->att);
    d->ep = calloc(s->nep + 1, sizeof *d->ep);
    d->hl = calloc(s->nhl + 1, sizeof *d->hl);
    d->ring = calloc(s->nring + 1, sizeof *d->ring);
    d->hist = calloc(s->nhist + 1, sizeof *d->hist);
    if (!d->msg || !d->att || !d->ep || !d->hl || !d->ring || !d->hist)
        abort();
    if (s->nhist)
        memcpy(d->hist, s->hist, s->nhist * sizeof *s->hist);
    if (s->nring)   /* an empty ring is NULL: memcpy must not see it */
        memcpy(d->ring, s->ring, s->nring * sizeof *s->ring);
    for (i = 0; i < s->nmsg; i++) {
        struct mem_msg *m = &d->msg[i];
        *m = s->msg[i];
        m->event_id = dup_or_null(m->event_id);
        m->event_type = dup_or_null(m->event_type);
        m->payload = malloc(m->payload_len + 1);
        memcpy(m->payload, s->msg[i].payload, m->payload_len + 1);
        m->last_error = dup_or_null(m->last_error);
        m->last_error_class = dup_or_null(m->last_error_class);
        m->ordering_key = dup_or_null(m->ordering_key);
    }
    for (i = 0; i < s->natt; i++) {
        d->att[i] = s->att[i];
        d->att[i].error_class = dup_or_null(s->att[i].error_class);
        d->att[i].detail = dup_or_null(s->att[i].detail);
        d->att[i].method = dup_or_null(s->att[i].method);
        d->att[i].url = dup_or_null(s->att[i].url);
        d->att[i].response = dup_or_null(s->att[i].response);
    }
    for (i = 0; i < s->nep; i++) {
        d->ep[i] = s->ep[i];
        if (ep_def_copy(&d->ep[i].def, &s->ep[i].def) < 0)
            abort();
        d->ep[i].pause_reason = dup_or_null(s->ep[i].pause_reason);
    }
    for (i = 0; i < s->nhl; i++) {
        d->hl[i] = s->hl[i];
        d->hl[i].url = dup_or_null(s->hl[i].url);
        d->hl[i].h.endpoint_url = d->hl[i].url;
    }
}

void mem_fail_at(struct mem_db *db, const char *op, enum store_errc e)
{
    snprintf(db->fail_op, sizeof db->fail_op, "%s", op);
    db->fail_errc = e;
}

/* Does the test want op to fail now? */
static int injected(struct store *s, const char *op)
{
    struct mem_db *db = DB(s);

    if (!db->fail_op[0] || strcmp(db->fail_op, op) != 0)
        return 0;
    db->fail_op[0] = '\0';
    store_fail(s, db->fail_errc, "%s: injected failure", op);
    return 1;
}

static int writer_only(struct store *s, const char *op)
{
    if (((struct mem_store *)s)->role != STORE_WRITER)
        return store_fail(s, STORE_E_OTHER, "%s: a reader store does not write", op), 1;
    return injected(s, op);
}

/* ---- transactions ---- */

static int m_begin(struct store *s, int durable)
{
    struct mem_db *db = DB(s);

    (void)durable;   /* memory survives nothing: all or none alike */
    if (writer_only(s, "begin"))
        return -1;
    if (db->in_txn)
        return store_fail(s, STORE_E_OTHER, "begin: already in a transaction");
    state_copy(&db->saved, &db->cur);
    db->in_txn = 1;
    return 0;
}

static int m_commit(struct store *s)
{
    struct mem_db *db = DB(s);

    if (writer_only(s, "commit"))
        return -1;   /* the caller rolls back */
    if (!db->in_txn)
        return store_fail(s, STORE_E_OTHER, "commit: no transaction");
    state_free(&db->saved);
    db->in_txn = 0;
    return 0;
}

static void m_rollback(struct store *s)
{
    struct mem_db *db = DB(s);

    if (!db->in_txn)
        return;
    state_free(&db->cur);
    db->cur = db->saved;
    memset(&db->saved, 0, sizeof db->saved);
    db->in_txn = 0;
}

/* ---- lookups ---- */

static struct mem_msg *msg_by_id(struct mem_state *st, int64_t id)
{
    size_t i;

    for (i = 0; i < st->nmsg; i++)
        if (st->msg[i].id == id)
            return &st->msg[i];
    return NULL;
}

static struct mem_ep *ep_by_id(struct mem_state *st, int64_t id)
{
    size_t i;

    for (i = 0; i < st->nep; i++)
        if (st->ep[i].id == id)
            return &st->ep[i];
    return NULL;
}

static struct mem_health *health_by_id(struct mem_state *st, int64_t id)
{
    size_t i;

    for (i = 0; i < st->nhl; i++)
        if (st->hl[i].h.endpoint_id == id)
            return &st->hl[i];
    return NULL;
}

static void set_str(char **slot, const char *v)
{
    free(*slot);
    *slot = v && *v ? strdup(v) : NULL;
}

static int waiting(const struct mem_msg *m)
{
    return m->status == MSG_PENDING || m->status == MSG_FAILED;
}

/* ---- start-up ---- */

static int m_recover(struct store *s, int64_t now, int64_t *n)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "recover"))
        return -1;
    *n = 0;
    for (i = 0; i < st->nmsg; i++)
        if (st->msg[i].status == MSG_IN_FLIGHT) {
            st->msg[i].status = st->msg[i].erased_at           ? MSG_DEAD_LETTER
                                : st->msg[i].attempt_count > 0 ? MSG_FAILED
                                                               : MSG_PENDING;
            st->msg[i].next_attempt_at = now;
            (*n)++;
        }
    for (i = 0; i < st->nmsg; i++) {
        struct mem_msg *m = &st->msg[i];
        if (!waiting(m) || ep_by_id(st, m->endpoint_id))
            continue;
        m->status = MSG_DEAD_LETTER;   /* waiting for a deleted endpoint */
        m->next_attempt_at = now;
        set_str(&m->last_error, "endpoint deleted");
        set_str(&m->last_error_class, "endpoint_deleted");
    }
    return 0;
}

static int m_clock_step(struct store *s, int64_t step_ms, int mine_only, int64_t *rows)
{
    struct mem_state *st = ST(s);
    size_t i;

    (void)mine_only;   /* one process */
    if (writer_only(s, "clock_step"))
        return -1;
    *rows = 0;
    for (i = 0; i < st->nmsg; i++)
        if (waiting(&st->msg[i]) || st->msg[i].status == MSG_IN_FLIGHT) {
            /* a deliver_at not yet tried is a time on the clock */
            if (!(st->msg[i].attempt_count == 0 && st->msg[i].deliver_at &&
                  st->msg[i].next_attempt_at == st->msg[i].deliver_at))
                st->msg[i].next_attempt_at += step_ms;
            st->msg[i].created_at += step_ms;
            (*rows)++;
        }
    for (i = 0; i < st->nhl; i++) {
        if (st->hl[i].h.opened_at > 0)
            st->hl[i].h.opened_at += step_ms;
        if (st->hl[i].h.failing_since > 0)
            st->hl[i].h.failing_since += step_ms;
    }
    return 0;
}

static int m_endpoints_load(struct store *s, int (*fn)(void *, int64_t, int, const struct ep_def *), void *ctx)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (injected(s, "endpoints_load"))
        return -1;
    for (i = 0; i < st->nep; i++)
        if (fn(ctx, st->ep[i].id, st->ep[i].from_config, &st->ep[i].def) != 0)
            return store_fail(s, STORE_E_NOMEM, "load endpoints: stopped");
    return 0;
}

static int m_health_load(struct store *s, int (*fn)(void *, const struct store_health *), void *ctx)
{
    struct mem_state *st = ST(s);
    size_t i;

    for (i = 0; i < st->nhl; i++)
        if (fn(ctx, &st->hl[i].h) != 0)
            return store_fail(s, STORE_E_NOMEM, "load health: stopped");
    return 0;
}

/* ---- the queue ---- */

/* The row of (endpoint, event_id), or NULL */
static struct mem_msg *msg_find(struct mem_state *st, int64_t endpoint_id, const char *event_id)
{
    size_t k;

    for (k = 0; k < st->nmsg; k++)
        if (st->msg[k].endpoint_id == endpoint_id && strcmp(st->msg[k].event_id, event_id) == 0)
            return &st->msg[k];
    return NULL;
}

/* A new row with its identity and payload; the rest zero */
static struct mem_msg *msg_add(struct mem_state *st, int64_t endpoint_id, const char *event_id, const char *event_type,
                               const char *payload, size_t len)
{
    struct mem_msg *m;

    st->msg = grow(st->msg, st->nmsg, sizeof *st->msg);
    m = &st->msg[st->nmsg++];
    memset(m, 0, sizeof *m);
    m->id = ++st->next_msg_id;
    m->endpoint_id = endpoint_id;
    m->event_id = strdup(event_id);
    m->event_type = event_type && *event_type ? strdup(event_type) : NULL;
    m->payload = malloc(len + 1);
    memcpy(m->payload, payload, len);
    m->payload[len] = '\0';
    m->payload_len = len;
    m->last_response_ms = -1;
    return m;
}

static int m_enqueue(struct store *s, struct store_enqueue *v, size_t n, int64_t now)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "enqueue"))
        return -1;
    for (i = 0; i < n; i++) {
        struct mem_msg *m = msg_find(st, v[i].endpoint_id, v[i].event_id);
        v[i].duplicate = m != NULL;
        if (m) {
            v[i].id = m->id;
            continue;
        }
        m = msg_add(st, v[i].endpoint_id, v[i].event_id, v[i].event_type, v[i].payload, v[i].payload_len);
        m->status = v[i].claim ? MSG_IN_FLIGHT : MSG_PENDING;
        m->claimed_at = v[i].claim ? now : 0;
        m->max_attempts = v[i].max_attempts;
        m->created_at = m->next_attempt_at = now;
        if (!v[i].claim && v[i].due_at > now)
            m->next_attempt_at = v[i].due_at;
        m->deliver_at = !v[i].claim && v[i].due_fixed ? v[i].due_at : 0;
        m->ordering_key = v[i].claim ? NULL : dup_or_null(v[i].ordering_key);
        v[i].id = m->id;
    }
    return 0;
}

static int m_import_rows(struct store *s, struct store_row *v, size_t n)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "import"))
        return -1;
    for (i = 0; i < n; i++) {
        struct mem_msg *m;
        if ((v[i].duplicate = msg_find(st, v[i].endpoint_id, v[i].event_id) != NULL))
            continue;
        m = msg_add(st, v[i].endpoint_id, v[i].event_id, v[i].event_type, v[i].payload, v[i].payload_len);
        m->status = v[i].status;
        m->attempt_count = v[i].attempt_count;
        m->max_attempts = v[i].max_attempts;
        m->created_at = v[i].created_at;
        m->next_attempt_at = v[i].next_attempt_at;
        m->deliver_at = v[i].deliver_at;
        m->last_error = dup_or_null(v[i].last_error);
        m->last_error_class = dup_or_null(v[i].last_error_class);
        m->last_status_code = v[i].last_status_code;
        m->last_response_ms = v[i].last_response_ms;
        m->ordering_key = dup_or_null(v[i].ordering_key);
    }
    return 0;
}

static int m_export_rows(struct store *s, int64_t now, int (*fn)(void *ctx, const struct store_row *r), void *ctx)
{
    struct mem_state *st = ST(s);
    size_t i;

    for (i = 0; i < st->nmsg; i++) {
        const struct mem_msg *m = &st->msg[i];
        struct store_row r;
        if (m->status == MSG_DELIVERED)
            continue;
        memset(&r, 0, sizeof r);
        r.endpoint_id = m->endpoint_id;
        r.event_id = m->event_id;
        r.event_type = m->event_type;
        r.payload = m->payload;
        r.payload_len = m->payload_len;
        r.status = m->status;
        r.attempt_count = m->attempt_count;
        r.max_attempts = m->max_attempts;
        r.created_at = m->created_at;
        r.next_attempt_at = m->next_attempt_at;
        r.last_error = m->last_error;
        r.last_error_class = m->last_error_class;
        r.last_status_code = m->last_status_code;
        r.last_response_ms = m->last_response_ms;
        r.ordering_key = m->ordering_key;
        r.deliver_at = m->deliver_at;
        if (r.status == MSG_IN_FLIGHT) {
            r.status = r.attempt_count > 0 ? MSG_FAILED : MSG_PENDING;
            r.next_attempt_at = now;
        }
        if (fn(ctx, &r) != 0)
            return store_fail(s, STORE_E_NOMEM, "export: out of memory");
    }
    return 0;
}

/* An older row of m's ordering key is waiting or in flight. */
static int held_back(const struct mem_state *st, const struct mem_msg *m)
{
    size_t i;

    if (!m->ordering_key)
        return 0;
    for (i = 0; i < st->nmsg; i++) {
        const struct mem_msg *o = &st->msg[i];
        if (o->id < m->id && o->endpoint_id == m->endpoint_id && o->ordering_key &&
            strcmp(o->ordering_key, m->ordering_key) == 0 &&
            (waiting(o) || o->status == MSG_IN_FLIGHT))
            return 1;
    }
    return 0;
}

static int m_claim(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
                   int (*fn)(void *, const struct store_claimed *), void *ctx, int *n)
{
    struct mem_state *st = ST(s);

    *n = 0;
    if (writer_only(s, "claim"))
        return -1;
    while (*n < limit) {
        struct mem_msg *best = NULL;
        struct store_claimed row;
        size_t i;
        for (i = 0; i < st->nmsg; i++) {
            struct mem_msg *m = &st->msg[i];
            if (m->endpoint_id != endpoint_id || !waiting(m) || m->next_attempt_at > now ||
                (ordered && held_back(st, m)))
                continue;
            if (!best || m->next_attempt_at < best->next_attempt_at ||
                (m->next_attempt_at == best->next_attempt_at && m->id < best->id))
                best = m;
        }
        if (!best)
            break;
        best->status = MSG_IN_FLIGHT;
        best->claimed_at = now;
        row.id = best->id;
        row.endpoint_id = endpoint_id;
        row.event_id = best->event_id;
        row.event_type = best->event_type;
        row.payload = best->payload;
        row.payload_len = best->payload_len;
        row.attempt_count = best->attempt_count;
        row.max_attempts = best->max_attempts;
        row.created_at = best->created_at;
        if (fn(ctx, &row) != 0)
            return store_fail(s, STORE_E_NOMEM, "claim: out of memory");
        (*n)++;
    }
    return 0;
}

static int m_next_due(struct store *s, int64_t endpoint_id, int ordered, int64_t *at)
{
    struct mem_state *st = ST(s);
    size_t i;

    *at = INT64_MAX;
    for (i = 0; i < st->nmsg; i++)
        if (st->msg[i].endpoint_id == endpoint_id && waiting(&st->msg[i]) && st->msg[i].next_attempt_at < *at &&
            !(ordered && held_back(st, &st->msg[i])))
            *at = st->msg[i].next_attempt_at;
    return 0;
}

static int m_settle(struct store *s, struct store_settle *v, size_t n)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "settle"))
        return -1;
    for (i = 0; i < n; i++) {
        struct store_settle *r = &v[i];
        struct mem_msg *m = msg_by_id(st, r->id);
        struct mem_attempt *a;
        size_t k;
        r->applied = m && m->status == MSG_IN_FLIGHT;
        if (!r->applied)
            continue;
        switch (r->verdict) {
        case SETTLE_RELEASE:
            m->status = m->erased_at ? MSG_DEAD_LETTER : m->attempt_count > 0 ? MSG_FAILED : MSG_PENDING;
            m->next_attempt_at = r->next_attempt_at;
            continue;
        case SETTLE_DELIVERED:
            m->status = MSG_DELIVERED;
            m->delivered_at = r->at;
            set_str(&m->last_error, NULL);
            set_str(&m->last_error_class, NULL);
            break;
        case SETTLE_RETRY:
            /* an erased row is not sent again */
            m->status = m->erased_at ? MSG_DEAD_LETTER : MSG_FAILED;
            m->next_attempt_at = r->next_attempt_at;
            set_str(&m->last_error, m->erased_at ? NULL : r->error);
            set_str(&m->last_error_class, r->error_class);
            break;
        case SETTLE_DEAD:
            m->status = MSG_DEAD_LETTER;
            set_str(&m->last_error, m->erased_at ? NULL : r->error);
            set_str(&m->last_error_class, r->error_class);
            break;
        }
        m->attempt_count = r->attempts;
        m->last_status_code = r->status_code;
        m->last_response_ms = r->response_ms;
        /* an attempt made again in its generation replaces its entry, as
         * the real backends' upsert does */
        for (a = NULL, k = 0; k < st->natt && !a; k++)
            if (st->att[k].message_id == r->id && st->att[k].generation == m->generation &&
                st->att[k].attempt == r->attempts)
                a = &st->att[k];
        if (a) {
            free(a->error_class);
            free(a->detail);
            free(a->method);
            free(a->url);
            free(a->response);
        } else {
            st->att = grow(st->att, st->natt, sizeof *st->att);
            a = &st->att[st->natt++];
        }
        a->endpoint_id = r->endpoint_id;
        a->message_id = r->id;
        a->generation = m->generation;
        a->attempt = r->attempts;
        a->response_ms = r->sample ? r->response_ms : -1;
        a->at = r->at;
        a->status_code = r->status_code;
        a->error_class = dup_or_null(r->error_class);
        a->detail = r->verdict == SETTLE_DELIVERED || m->erased_at ? NULL : dup_or_null(r->error);
        a->method = dup_or_null(r->method);
        a->url = m->erased_at ? NULL : dup_or_null(r->url);
        a->response = m->erased_at ? NULL : dup_or_null(r->response);
        if (r->sample && r->ring_slot >= 0) {
            struct mem_sample *x = NULL;
            for (k = 0; k < st->nring && !x; k++)
                if (st->ring[k].endpoint_id == r->endpoint_id && st->ring[k].slot == r->ring_slot)
                    x = &st->ring[k];
            if (!x) {
                st->ring = grow(st->ring, st->nring, sizeof *st->ring);
                x = &st->ring[st->nring++];
            }
            x->endpoint_id = r->endpoint_id;
            x->slot = r->ring_slot;
            x->message_id = r->id;
            x->response_ms = r->response_ms;
            x->at = r->at;
            x->status_code = r->status_code;
        }
    }
    return 0;
}

static int in_filter(const struct mem_msg *m, const struct store_filter *f, unsigned statuses)
{
    return (statuses & MSG_BIT(m->status)) && (!f->id || m->id == f->id) &&
           (!f->endpoint_id || m->endpoint_id == f->endpoint_id) && m->created_at >= f->since;
}

static int m_requeue(struct store *s, const struct store_filter *f, int64_t now, int64_t *n, int64_t *gone)
{
    struct mem_state *st = ST(s);
    /* never pending or in_flight rows */
    unsigned ok = f->statuses & (MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER));
    size_t i;

    if (writer_only(s, "requeue"))
        return -1;
    *n = *gone = 0;
    for (i = 0; i < st->nmsg; i++) {
        struct mem_msg *m = &st->msg[i];
        struct mem_attempt *a;
        if (!in_filter(m, f, ok) || m->erased_at)
            continue;
        if (!ep_by_id(st, m->endpoint_id)) {
            (*gone)++;
            continue;
        }
        /* the requeue is attempt 0 of the next generation */
        m->generation++;
        st->att = grow(st->att, st->natt, sizeof *st->att);
        a = &st->att[st->natt++];
        memset(a, 0, sizeof *a);
        a->endpoint_id = m->endpoint_id;
        a->message_id = m->id;
        a->generation = m->generation;
        a->at = now;
        a->response_ms = -1;
        a->detail = dup_or_null("requeued");
        m->status = MSG_PENDING;
        m->attempt_count = 0;
        m->next_attempt_at = now;
        set_str(&m->last_error, NULL);
        set_str(&m->last_error_class, NULL);
        (*n)++;
    }
    return 0;
}

static void attempts_drop(struct mem_state *st, int64_t message_id)
{
    size_t i = 0;

    while (i < st->natt)
        if (st->att[i].message_id == message_id) {
            free(st->att[i].error_class);
            free(st->att[i].detail);
            free(st->att[i].method);
            free(st->att[i].url);
            free(st->att[i].response);
            st->att[i] = st->att[--st->natt];
        } else {
            i++;
        }
}

static void msg_drop(struct mem_state *st, size_t i)
{
    attempts_drop(st, st->msg[i].id);
    free(st->msg[i].event_id);
    free(st->msg[i].event_type);
    free(st->msg[i].payload);
    free(st->msg[i].last_error);
    free(st->msg[i].last_error_class);
    free(st->msg[i].ordering_key);
    st->msg[i] = st->msg[--st->nmsg];
}

static int m_purge(struct store *s, const struct store_filter *f, int64_t *n)
{
    struct mem_state *st = ST(s);
    size_t i = 0;

    if (writer_only(s, "purge"))
        return -1;
    *n = 0;
    while (i < st->nmsg)
        if (in_filter(&st->msg[i], f, MSG_BIT(MSG_DEAD_LETTER))) {
            msg_drop(st, i);
            (*n)++;
        } else {
            i++;
        }
    return 0;
}

static void erase_msg(struct mem_state *st, struct mem_msg *m, int64_t now)
{
    size_t k;

    m->payload[0] = '\0';
    m->payload_len = 0;
    if (!m->erased_at)
        m->erased_at = now;
    set_str(&m->last_error, NULL);
    if (m->status == MSG_PENDING || m->status == MSG_FAILED) {
        m->status = MSG_DEAD_LETTER;
        set_str(&m->last_error_class, "erased");
    }
    for (k = 0; k < st->natt; k++)
        if (st->att[k].message_id == m->id) {
            free(st->att[k].detail);
            free(st->att[k].url);
            free(st->att[k].response);
            st->att[k].detail = st->att[k].url = st->att[k].response = NULL;
        }
}

static int m_erase(struct store *s, int64_t id, int64_t now, int64_t *n)
{
    struct mem_state *st = ST(s);
    struct mem_msg *m;

    if (writer_only(s, "erase"))
        return -1;
    m = msg_by_id(st, id);
    *n = m != NULL;
    if (m)
        erase_msg(st, m, now);
    return 0;
}

static int m_expire(struct store *s, enum store_expiry what, int64_t before, int64_t limit, int64_t *n)
{
    struct mem_state *st = ST(s);
    size_t i = 0;

    if (writer_only(s, "expire"))
        return -1;
    *n = 0;
    while (i < st->nmsg && *n < limit) {
        struct mem_msg *m = &st->msg[i];
        if (what == EXPIRE_HISTORY)
            break;
        if (what == EXPIRE_PAYLOADS) {
            if (m->status == MSG_DELIVERED && !m->erased_at && m->delivered_at < before) {
                erase_msg(st, m, before);
                (*n)++;
            }
            i++;
            continue;
        }
        if ((what == EXPIRE_DELIVERED && m->status == MSG_DELIVERED && m->delivered_at < before) ||
            (what == EXPIRE_DEAD_LETTERS && m->status == MSG_DEAD_LETTER && m->created_at < before)) {
            msg_drop(st, i);
            (*n)++;
        } else {
            i++;
        }
    }
    for (i = 0; what == EXPIRE_HISTORY && i < st->nhist && *n < limit;)
        if (st->hist[i].bucket_at < before) {
            st->hist[i] = st->hist[--st->nhist];
            (*n)++;
        } else {
            i++;
        }
    return 0;
}

/* ---- endpoints and health ---- */

static int m_endpoint_put(struct store *s, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                          int *created)
{
    struct mem_state *st = ST(s);
    struct mem_ep *e = NULL;
    size_t i;
    int paused;

    (void)now;
    if (writer_only(s, "endpoint_put"))
        return -1;
    for (i = 0; i < st->nep; i++)
        if (strcmp(st->ep[i].def.name, d->name) == 0)
            e = &st->ep[i];
    if (created)
        *created = e == NULL;
    if (!e) {
        st->ep = grow(st->ep, st->nep, sizeof *st->ep);
        e = &st->ep[st->nep++];
        memset(e, 0, sizeof *e);
        e->id = ++st->next_ep_id;
        paused = d->paused;
    } else {
        /* paused changes only when the definition says it */
        paused = d->paused_given ? d->paused : e->def.paused;
        if (d->paused_given && d->paused != e->def.paused) {
            free(e->pause_reason);
            e->pause_reason = d->paused ? strdup(from_config ? "config" : "operator") : NULL;
        }
        ep_def_free(&e->def);
    }
    if (ep_def_copy(&e->def, d) < 0)
        abort();
    e->def.paused = paused;
    e->from_config = from_config;
    *id = e->id;
    return 0;
}

static int m_endpoint_delete(struct store *s, int64_t id, int64_t now, int64_t *dead)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "endpoint_delete"))
        return -1;
    *dead = 0;
    for (i = 0; i < st->nmsg; i++) {
        struct mem_msg *m = &st->msg[i];
        if (m->endpoint_id != id || !(waiting(m) || m->status == MSG_IN_FLIGHT))
            continue;
        m->status = MSG_DEAD_LETTER;
        m->next_attempt_at = now;
        set_str(&m->last_error, "endpoint deleted");
        set_str(&m->last_error_class, "endpoint_deleted");
        (*dead)++;
    }
    for (i = 0; i < st->nep; i++)
        if (st->ep[i].id == id) {
            ep_def_free(&st->ep[i].def);
            free(st->ep[i].pause_reason);
            st->ep[i] = st->ep[--st->nep];
            break;
        }
    for (i = 0; i < st->nhl; i++)
        if (st->hl[i].h.endpoint_id == id) {
            free(st->hl[i].url);
            st->hl[i] = st->hl[--st->nhl];
            break;
        }
    for (i = 0; i < st->nring;)
        if (st->ring[i].endpoint_id == id)
            st->ring[i] = st->ring[--st->nring];
        else
            i++;
    for (i = 0; i < st->nhist;)
        if (st->hist[i].endpoint_id == id)
            st->hist[i] = st->hist[--st->nhist];
        else
            i++;
    return 0;
}

static int m_latency_ring_size(struct store *s, int64_t slots)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "latency_ring_size"))
        return -1;
    for (i = 0; i < st->nring;)
        if (st->ring[i].slot >= slots)
            st->ring[i] = st->ring[--st->nring];
        else
            i++;
    return 0;
}

static int m_endpoint_pause(struct store *s, int64_t id, int paused, const char *reason, int64_t now)
{
    struct mem_ep *e = ep_by_id(ST(s), id);

    (void)now;
    if (writer_only(s, "endpoint_pause"))
        return -1;
    if (e) {
        e->def.paused = paused;
        set_str(&e->pause_reason, paused ? reason : NULL);
    }
    return 0;
}

static int m_health_save(struct store *s, const struct store_health *v, size_t n)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "health_save"))
        return -1;
    for (i = 0; i < n; i++) {
        struct mem_health *h = health_by_id(st, v[i].endpoint_id);
        struct store_health keep = {0};
        if (!h) {
            st->hl = grow(st->hl, st->nhl, sizeof *st->hl);
            h = &st->hl[st->nhl++];
            memset(h, 0, sizeof *h);
        } else {
            keep = h->h;
        }
        free(h->url);
        h->url = strdup(v[i].endpoint_url ? v[i].endpoint_url : "");
        h->h = v[i];
        h->h.endpoint_url = h->url;
        /* the rollup's columns are not the breaker's to change */
        h->h.has_latency = keep.has_latency;
        h->h.p50_ms = keep.p50_ms;
        h->h.p95_ms = keep.p95_ms;
        h->h.p99_ms = keep.p99_ms;
        h->h.sample_count = keep.sample_count;
    }
    return 0;
}

static int m_rollup_save(struct store *s, const struct store_rollup *v, size_t n)
{
    struct mem_state *st = ST(s);
    size_t i;

    if (writer_only(s, "rollup_save"))
        return -1;
    for (i = 0; i < n; i++) {
        struct mem_health *h = health_by_id(st, v[i].endpoint_id);
        if (!h)
            continue;   /* as the SQL: an UPDATE of the health row */
        h->h.has_latency = v[i].has_latency;
        h->h.p50_ms = v[i].p50_ms;
        h->h.p95_ms = v[i].p95_ms;
        h->h.p99_ms = v[i].p99_ms;
        h->h.sample_count = v[i].sample_count;
    }
    return 0;
}

static int m_checkpoint(struct store *s, int full)
{
    (void)full;
    return injected(s, "checkpoint") ? -1 : 0;
}

static int m_backup(struct store *s, const char *path)
{
    (void)path;
    return store_fail(s, STORE_E_OTHER, "backup: the memory backend has no file");
}

/* ---- reads ---- */

static int m_snapshot_begin(struct store *s)
{
    return injected(s, "snapshot") ? -1 : 0;
}

static void m_snapshot_end(struct store *s)
{
    (void)s;
}

static void msg_out(struct mem_state *st, const struct mem_msg *m, struct store_message *o);

static int m_message_get(struct store *s, int64_t id, int (*fn)(void *, const struct store_message *), void *ctx,
                         int *found)
{
    struct mem_state *st = ST(s);
    struct mem_msg *m = msg_by_id(st, id);
    struct store_message out;

    *found = m != NULL;
    if (!m)
        return 0;
    msg_out(st, m, &out);
    return fn(ctx, &out) ? store_fail(s, STORE_E_NOMEM, "get: stopped") : 0;
}

/* newest first: ids grow, and the array keeps insertion order except
 * where drops moved rows, so each step looks for the next lower id */
static int m_message_scan(struct store *s, const struct store_scan *sc,
                          int (*fn)(void *, const struct store_message *, const char *, size_t), void *ctx)
{
    struct mem_state *st = ST(s);
    int64_t n = 0, below = sc->before ? sc->before : INT64_MAX;
    const char *event_id = sc->event_id;
    int stop = 0, with_payload = sc->with_payload;

    while (!stop && n < sc->limit) {
        struct mem_msg *best = NULL;
        struct store_message out;
        size_t i;
        for (i = 0; i < st->nmsg; i++) {
            struct mem_msg *m = &st->msg[i];
            struct mem_ep *e = ep_by_id(st, m->endpoint_id);
            if (m->id < below && m->id >= sc->floor && (!event_id || strcmp(m->event_id, event_id) == 0) &&
                (event_id || !sc->dead_letters || m->status == MSG_DEAD_LETTER) &&
                (event_id || !sc->endpoint || (e && strcmp(e->def.name, sc->endpoint) == 0)) &&
                (!best || m->id > best->id))
                best = m;
        }
        if (!best)
            break;
        below = best->id;
        msg_out(st, best, &out);
        stop = fn(ctx, &out, with_payload ? best->payload : NULL, with_payload ? best->payload_len : 0);
        n++;
    }
    return stop < 0 ? store_fail(s, STORE_E_NOMEM, "search: stopped") : 0;
}

static void msg_out(struct mem_state *st, const struct mem_msg *m, struct store_message *o)
{
    struct mem_ep *e = ep_by_id(st, m->endpoint_id);
    struct store_message out;

    memset(&out, 0, sizeof out);
    out.id = m->id;
    out.endpoint_id = m->endpoint_id;
    out.endpoint = e ? e->def.name : NULL;
    out.event_id = m->event_id;
    out.event_type = m->event_type;
    out.status = m->status;
    out.attempt_count = m->attempt_count;
    out.max_attempts = m->max_attempts;
    out.created_at = m->created_at;
    out.next_attempt_at = m->next_attempt_at;
    out.claimed_at = m->claimed_at;
    out.delivered_at = m->delivered_at;
    out.last_error = m->last_error;
    out.last_error_class = m->last_error_class;
    out.last_status_code = m->last_status_code;
    out.last_response_ms = m->last_response_ms;
    out.payload_bytes = (int64_t)m->payload_len;
    out.erased_at = m->erased_at;
    *o = out;
}

static int m_message_attempts(struct store *s, const struct store_message *m, int limit,
                              int (*fn)(void *, const struct store_attempt *), void *ctx)
{
    struct mem_state *st = ST(s);
    size_t i;
    int n = 0;

    int want, gen;
    const struct mem_msg *mm = msg_by_id(st, m->id);

    /* in generation and attempt order (the array is not: drops move
     * rows); a generation has at most max_attempts attempts */
    for (gen = 0; mm && gen <= mm->generation; gen++)
    for (want = 0; want <= mm->max_attempts + 1 && n < limit; want++)
    for (i = 0; i < st->natt && n < limit; i++) {
        struct store_attempt a;
        if (st->att[i].message_id != m->id || st->att[i].generation != gen || st->att[i].attempt != want)
            continue;
        a.generation = gen;
        a.attempt = want;
        a.at = st->att[i].at;
        a.response_ms = st->att[i].response_ms;
        a.status_code = st->att[i].status_code;
        a.error_class = st->att[i].error_class;
        a.detail = st->att[i].detail;
        a.method = st->att[i].method;
        a.url = st->att[i].url;
        a.response = st->att[i].response;
        if (fn(ctx, &a))
            return store_fail(s, STORE_E_NOMEM, "attempts: stopped");
        n++;
    }
    return 0;
}

static int m_queue_stats(struct store *s, int64_t now, int with_delivered, struct store_stats *out)
{
    struct mem_state *st = ST(s);
    int64_t sum = 0, oldest_id = INT64_MAX;
    size_t i;

    memset(out, 0, sizeof *out);
    if (injected(s, "queue_stats"))
        return -1;
    for (i = 0; i < st->nmsg; i++) {
        const struct mem_msg *m = &st->msg[i];
        int sched = m->status == MSG_PENDING && m->next_attempt_at > now;
        if (sched)
            out->scheduled++;
        else if (m->status != MSG_DELIVERED || with_delivered)
            out->n[m->status]++;
        if (m->status == MSG_DELIVERED && m->delivered_at >= now - 3600000) {
            out->delivered_last_hour++;
            sum += m->last_response_ms;
        }
        if ((m->status == MSG_FAILED || m->status == MSG_DEAD_LETTER) && m->created_at >= now - 3600000)
            out->failed_last_hour++;
        if (waiting(m) && !sched && m->id < oldest_id) {
            oldest_id = m->id;
            out->has_oldest = 1;
            out->oldest_pending = m->status == MSG_PENDING && m->next_attempt_at > m->created_at
                                      ? m->next_attempt_at
                                      : m->created_at;
        }
    }
    if (out->delivered_last_hour) {
        out->has_avg = 1;
        out->avg_delivery_ms = (double)sum / (double)out->delivered_last_hour;
    }
    return 0;
}

static char *header_names(const struct ep_def *d)
{
    cJSON *a = cJSON_CreateArray();
    char *out, name[ENDPOINT_HEADER_MAX + 1];
    size_t i;

    for (i = 0; i < d->nheaders; i++) {
        const char *c = strchr(d->headers[i], ':');
        size_t n = c ? (size_t)(c - d->headers[i]) : 0;
        memcpy(name, d->headers[i], n);
        name[n] = '\0';
        cJSON_AddItemToArray(a, cJSON_CreateString(name));
    }
    out = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return out;
}

static void fill_info(struct mem_state *st, const struct mem_ep *e, int with_queue, struct store_endpoint_info *out)
{
    struct mem_health *h = health_by_id(st, e->id);
    size_t i;

    memset(out, 0, sizeof *out);
    out->id = e->id;
    out->name = e->def.name;
    out->url = e->def.url;
    out->from_config = e->from_config;
    out->paused = e->def.paused;
    out->pause_reason = e->pause_reason;
    out->event_types = e->def.event_types;
    out->nsecrets = (int)e->def.nsecrets;
    if (h)
        out->h = h->h;
    out->h.endpoint_id = e->id;
    out->h.endpoint_url = e->def.url;
    for (i = 0; with_queue && i < st->nmsg; i++)
        if (st->msg[i].endpoint_id == e->id) {
            out->queue[st->msg[i].status]++;
            if (waiting(&st->msg[i]) && (!out->oldest_waiting || st->msg[i].created_at < out->oldest_waiting))
                out->oldest_waiting = st->msg[i].created_at;
        }
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct mem_ep *const *)a)->def.name, (*(const struct mem_ep *const *)b)->def.name);
}

static int m_endpoint_list(struct store *s, int with_queue, int (*fn)(void *, const struct store_endpoint_info *),
                           void *ctx)
{
    struct mem_state *st = ST(s);
    const struct mem_ep **v = calloc(st->nep + 1, sizeof *v);
    size_t i;
    int rc = 0;

    if (!v)
        abort();
    for (i = 0; i < st->nep; i++)
        v[i] = &st->ep[i];
    qsort(v, st->nep, sizeof *v, by_name);
    for (i = 0; i < st->nep && rc == 0; i++) {
        struct store_endpoint_info e;
        char *headers = header_names(&v[i]->def), *settings = ep_json_overrides(&v[i]->def);
        fill_info(st, v[i], with_queue, &e);
        e.header_names = headers;
        e.settings = settings;
        if (fn(ctx, &e) != 0)
            rc = store_fail(s, STORE_E_NOMEM, "endpoint list: stopped");
        free(headers);
        free(settings);
    }
    free(v);
    return rc;
}

struct mode {
    const char *s;
    int64_t n;
    int count;
};

static int m_dead_letters(struct store *s, int64_t since, int limit,
                          int (*fn)(void *, const struct store_dead_group *), void *ctx)
{
    struct mem_state *st = ST(s);
    struct store_dead_group *g = NULL;
    int64_t *ids = NULL, *sum = NULL;
    size_t ng = 0, i, k;
    int rc = 0;

    /* one group per endpoint (endpoints in id order, as first seen) */
    for (i = 0; i < st->nmsg; i++) {
        const struct mem_msg *m = &st->msg[i];
        if (m->status != MSG_DEAD_LETTER || m->created_at < since)
            continue;
        for (k = 0; k < ng && ids[k] != m->endpoint_id; k++)
            ;
        if (k == ng) {
            g = grow(g, ng, sizeof *g);
            ids = grow(ids, ng, sizeof *ids);
            sum = grow(sum, ng, sizeof *sum);
            memset(&g[ng], 0, sizeof g[ng]);
            ids[ng] = m->endpoint_id;
            sum[ng] = 0;
            g[ng].endpoint_id = m->endpoint_id;
            g[ng].first_dead = INT64_MAX;
            ng++;
        }
        g[k].dead_count++;
        sum[k] += m->attempt_count;
        if (m->created_at < g[k].first_dead)
            g[k].first_dead = m->created_at;
        if (m->created_at > g[k].last_dead)
            g[k].last_dead = m->created_at;
    }
    for (k = 0; k < ng; k++) {
        struct mem_ep *e = ep_by_id(st, ids[k]);
        const char *best = NULL;
        int bestn = 0, bestc = 0, bestcn = 0;
        int64_t newest = -1;
        g[k].endpoint = e ? e->def.name : NULL;
        g[k].avg_attempts = (sum[k] * 2 + g[k].dead_count) / (2 * g[k].dead_count);   /* round half up */
        /* mode() of the class and of the status code, ties to the smallest */
        for (i = 0; i < st->nmsg; i++) {
            const struct mem_msg *m = &st->msg[i], *o;
            size_t j;
            int cn = 0, sn = 0;
            if (m->status != MSG_DEAD_LETTER || m->created_at < since || m->endpoint_id != ids[k])
                continue;
            for (j = 0; j < st->nmsg; j++) {
                o = &st->msg[j];
                if (o->status != MSG_DEAD_LETTER || o->created_at < since || o->endpoint_id != ids[k])
                    continue;
                cn += m->last_error_class && o->last_error_class && strcmp(o->last_error_class, m->last_error_class) == 0;
                sn += m->last_status_code && o->last_status_code == m->last_status_code;
            }
            if (m->last_error_class &&
                (cn > bestn || (cn == bestn && best && strcmp(m->last_error_class, best) < 0))) {
                best = m->last_error_class;
                bestn = cn;
            }
            if (m->last_status_code && (sn > bestcn || (sn == bestcn && m->last_status_code < bestc))) {
                bestc = m->last_status_code;
                bestcn = sn;
            }
        }
        g[k].primary_error_class = best;
        g[k].primary_status_code = bestc;
        for (i = 0; best && i < st->nmsg; i++) {
            const struct mem_msg *m = &st->msg[i];
            if (m->status == MSG_DEAD_LETTER && m->created_at >= since && m->endpoint_id == ids[k] &&
                m->last_error_class && strcmp(m->last_error_class, best) == 0 && m->id > newest) {
                newest = m->id;
                g[k].example_error = m->last_error;
            }
        }
    }
    /* most dead letters first, then endpoint id */
    for (i = 0; i < ng; i++)
        for (k = i + 1; k < ng; k++)
            if (g[k].dead_count > g[i].dead_count ||
                (g[k].dead_count == g[i].dead_count && g[k].endpoint_id < g[i].endpoint_id)) {
                struct store_dead_group t = g[i];
                g[i] = g[k];
                g[k] = t;
            }
    for (i = 0; i < ng && (int)i < limit && rc == 0; i++)
        if (fn(ctx, &g[i]) != 0)
            rc = store_fail(s, STORE_E_NOMEM, "dead letters: stopped");
    free(g);
    free(ids);
    free(sum);
    return rc;
}

static int m_slow_endpoints(struct store *s, int64_t p95_ms, int64_t min_samples,
                            int (*fn)(void *, const struct store_endpoint_info *), void *ctx)
{
    struct mem_state *st = ST(s);
    struct store_endpoint_info *v = NULL;
    size_t n = 0, i, k;
    int rc = 0;

    for (i = 0; i < st->nep; i++) {
        struct mem_health *h = health_by_id(st, st->ep[i].id);
        if (!h || !h->h.has_latency || h->h.p95_ms <= p95_ms || h->h.sample_count < min_samples)
            continue;
        v = grow(v, n, sizeof *v);
        fill_info(st, &st->ep[i], 0, &v[n++]);
    }
    for (i = 0; i < n; i++)
        for (k = i + 1; k < n; k++)
            if (v[k].h.p95_ms > v[i].h.p95_ms || (v[k].h.p95_ms == v[i].h.p95_ms && strcmp(v[k].name, v[i].name) < 0)) {
                struct store_endpoint_info t = v[i];
                v[i] = v[k];
                v[k] = t;
            }
    for (i = 0; i < n && rc == 0; i++)
        if (fn(ctx, &v[i]) != 0)
            rc = store_fail(s, STORE_E_NOMEM, "slow: stopped");
    free(v);
    return rc;
}

static int m_latency_window(struct store *s, int64_t endpoint_id, int64_t since, int64_t until, int64_t **buf,
                            size_t *cap, size_t *n)
{
    struct mem_state *st = ST(s);
    size_t i;

    *n = 0;
    for (i = 0; i < st->nring; i++) {
        const struct mem_sample *a = &st->ring[i];
        if (a->endpoint_id != endpoint_id || a->at < since || a->at >= until)
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *buf = realloc(*buf, *cap * sizeof **buf);
            if (!*buf)
                abort();
        }
        (*buf)[(*n)++] = a->response_ms;
    }
    return 0;
}

static struct store_history *hist_row(struct mem_state *st, int64_t id, int64_t at)
{
    size_t i;
    struct store_history *h;

    for (i = 0; i < st->nhist; i++)
        if (st->hist[i].endpoint_id == id && st->hist[i].bucket_at == at)
            return &st->hist[i];
    st->hist = grow(st->hist, st->nhist, sizeof *st->hist);
    h = &st->hist[st->nhist++];
    memset(h, 0, sizeof *h);
    h->endpoint_id = id;
    h->bucket_at = at;
    return h;
}

static int m_history_add(struct store *s, const struct store_history *v, size_t n)
{
    size_t i;

    if (writer_only(s, "history_add"))
        return -1;
    for (i = 0; i < n; i++) {
        struct store_history *h = hist_row(ST(s), v[i].endpoint_id, v[i].bucket_at);
        h->delivered += v[i].delivered;
        h->failed += v[i].failed;
        h->breaker_opens += v[i].breaker_opens;
    }
    return 0;
}

static int m_history_latency(struct store *s, const struct store_history *v, size_t n)
{
    size_t i;

    if (writer_only(s, "history_latency"))
        return -1;
    for (i = 0; i < n; i++) {
        struct store_history *h = hist_row(ST(s), v[i].endpoint_id, v[i].bucket_at);
        h->has_latency = v[i].has_latency;
        h->p50_ms = v[i].has_latency ? v[i].p50_ms : 0;
        h->p95_ms = v[i].has_latency ? v[i].p95_ms : 0;
        h->p99_ms = v[i].has_latency ? v[i].p99_ms : 0;
        h->sample_count = v[i].sample_count;
    }
    return 0;
}

static int cmp_hist(const void *a, const void *b)
{
    const struct store_history *x = a, *y = b;

    if (x->endpoint_id != y->endpoint_id)
        return x->endpoint_id < y->endpoint_id ? -1 : 1;
    return x->bucket_at < y->bucket_at ? -1 : x->bucket_at > y->bucket_at;
}

static int m_history(struct store *s, int64_t since, int (*fn)(void *ctx, const struct store_history *h), void *ctx)
{
    struct mem_state *st = ST(s);
    struct store_history *v = calloc(st->nhist + 1, sizeof *v);
    size_t i, k = 0;
    int rc = 0;

    if (!v)
        abort();
    for (i = 0; i < st->nhist; i++)
        if (st->hist[i].bucket_at >= since)
            v[k++] = st->hist[i];
    qsort(v, k, sizeof *v, cmp_hist);
    for (i = 0; i < k && rc == 0; i++)
        if (fn(ctx, &v[i]) != 0)
            rc = store_fail(s, STORE_E_NOMEM, "history: stopped");
    free(v);
    return rc;
}

static int m_dead_classes(struct store *s, int64_t since, int (*fn)(void *ctx, const char *error_class, int64_t n),
                          void *ctx)
{
    struct mem_state *st = ST(s);
    const char *cls[64];
    int64_t cnt[64];
    size_t i, j, k = 0;

    for (i = 0; i < st->nmsg; i++) {
        const struct mem_msg *m = &st->msg[i];
        const char *c = m->last_error_class ? m->last_error_class : "unknown";
        if (m->status != MSG_DEAD_LETTER || m->created_at < since)
            continue;
        for (j = 0; j < k && strcmp(cls[j], c) != 0; j++)
            ;
        if (j == k) {
            if (k == 64)
                continue;
            cls[k] = c;
            cnt[k++] = 0;
        }
        cnt[j]++;
    }
    /* most first, ties by name: the SQL's order */
    for (i = 0; i < k; i++)
        for (j = i + 1; j < k; j++)
            if (cnt[j] > cnt[i] || (cnt[j] == cnt[i] && strcmp(cls[j], cls[i]) < 0)) {
                const char *tc = cls[i];
                int64_t tn = cnt[i];
                cls[i] = cls[j];
                cnt[i] = cnt[j];
                cls[j] = tc;
                cnt[j] = tn;
            }
    for (i = 0; i < k; i++)
        if (fn(ctx, cls[i], cnt[i]) != 0)
            return store_fail(s, STORE_E_NOMEM, "dead classes: stopped");
    return 0;
}

static void m_close(struct store *s)
{
    free(s);
}

static const struct store_ops mem_ops = {
    .name = "memory",
    .close = m_close,
    .begin = m_begin,
    .commit = m_commit,
    .rollback = m_rollback,
    .recover = m_recover,
    .endpoints_load = m_endpoints_load,
    .health_load = m_health_load,
    .enqueue = m_enqueue,
    .claim = m_claim,
    .next_due = m_next_due,
    .settle = m_settle,
    .requeue = m_requeue,
    .purge = m_purge,
    .expire = m_expire,
    .erase = m_erase,
    .endpoint_put = m_endpoint_put,
    .endpoint_delete = m_endpoint_delete,
    .endpoint_pause = m_endpoint_pause,
    .health_save = m_health_save,
    .rollup_save = m_rollup_save,
    .latency_ring_size = m_latency_ring_size,
    .clock_step = m_clock_step,
    .checkpoint = m_checkpoint,
    .backup = m_backup,
    .snapshot_begin = m_snapshot_begin,
    .snapshot_end = m_snapshot_end,
    .message_get = m_message_get,
    .message_scan = m_message_scan,
    .message_attempts = m_message_attempts,
    .queue_stats = m_queue_stats,
    .endpoint_list = m_endpoint_list,
    .dead_letters = m_dead_letters,
    .slow_endpoints = m_slow_endpoints,
    .latency_window = m_latency_window,
    .history = m_history,
    .dead_classes = m_dead_classes,
    .import_rows = m_import_rows,
    .export_rows = m_export_rows,
    .history_add = m_history_add,
    .history_latency = m_history_latency,
};

struct mem_db *mem_db_new(void)
{
    struct mem_db *db = calloc(1, sizeof *db);

    if (!db)
        abort();
    return db;
}

void mem_db_free(struct mem_db *db)
{
    if (!db)
        return;
    if (db->in_txn)
        state_free(&db->saved);
    state_free(&db->cur);
    free(db);
}

struct store *mem_store_open(struct mem_db *db, enum store_role role)
{
    struct mem_store *s = calloc(1, sizeof *s);

    if (!s)
        abort();
    s->base.ops = &mem_ops;
    s->db = db;
    s->role = role;
    return &s->base;
}
