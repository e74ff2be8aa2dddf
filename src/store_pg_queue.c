/* store_pg_queue.c - the queue's hot path on PostgreSQL: enqueue, claim
 * (one endpoint, or several at once), next due, settle. Writer
 * connection; every function runs inside the caller's transaction. The
 * rare writes (recovery, clock steps, requeue, purge, erase, retention,
 * import) are store_pg_admin.c. */
#define HOOKD_STORE_PG_PRIVATE
#include "store_pg.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct enq {
    struct store_enqueue *v;
    size_t n;
};

static int enqueued(void *ctx, size_t k, const PGresult *r)
{
    struct enq *q = ctx;
    struct store_enqueue *e = q->v + k;

    if (k >= q->n)
        return 0;   /* the notification */
    e->duplicate = PQntuples(r) == 0;
    e->id = e->duplicate ? 0 : pg_i64(r, 0, 0, 0);
    return 0;
}

/* The batch in one round trip; a duplicate's id is looked up after. */
int pg_enqueue(struct store *s, struct store_enqueue *v, size_t n, int64_t now)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_pipe pp;
    struct enq q = {v, n};
    int64_t ep = 0;
    size_t i;

    if (pg_pipe_begin(&pp, g, "enqueue", enqueued, &q) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        struct store_enqueue *e = &v[i];
        struct pg_params p;

        pg_p_init(&p);
        pg_p_i64(&p, e->endpoint_id);
        pg_p_text(&p, e->event_id);
        pg_p_text(&p, e->event_type);
        pg_p_bytes(&p, e->payload, e->payload_len);
        pg_p_i64(&p, e->max_attempts);
        pg_p_i64(&p, now);
        if (!e->claim) {   /* PG_INSERT's $7 and $8 */
            pg_p_text(&p, e->ordering_key);
            pg_p_i64(&p, e->due_at > now ? e->due_at : now);
        }
        pg_p_i64(&p, g->node_id);
        if (!e->claim)     /* PG_INSERT's $10 */
            pg_p_pos(&p, e->due_fixed && e->due_at > now ? e->due_at : 0);
        if (pg_pipe_add(&pp, e->claim ? PG_INSERT_CLAIMED : PG_INSERT, &p) < 0)
            break;
        /* rows left waiting: idle nodes may take them (one endpoint's
         * id, or 0 for a batch of several) */
        if (!e->claim)
            ep = ep == 0 || ep == e->endpoint_id ? e->endpoint_id : -1;
    }
    if (i == n && ep != 0) {
        struct pg_params p;
        pg_notify_params(&p, "hookd_due", ep > 0 ? ep : 0);
        pg_pipe_add(&pp, PG_NOTIFY, &p);
    }
    if (pg_pipe_end(&pp) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        struct store_enqueue *e = &v[i];
        struct pg_params p;
        PGresult *r;

        if (!e->duplicate)
            continue;
        pg_p_init(&p);
        pg_p_i64(&p, e->endpoint_id);
        pg_p_text(&p, e->event_id);
        if (!(r = pg_exec(g, PG_FIND, &p, 0, "enqueue: duplicate lookup")))
            return -1;
        if (PQntuples(r) != 1) {
            PQclear(r);
            return store_fail(s, STORE_E_OTHER, "enqueue: duplicate lookup found no row");
        }
        e->id = pg_i64(r, 0, 0, 0);
        PQclear(r);
    }
    return 0;
}

/* The claimed rows of one result, in order, to fn; 0, or -1 when fn
 * stopped (out of memory). */
static void claimed_row(const PGresult *r, int i, int64_t endpoint_id, struct store_claimed *row)
{
    row->id = pg_i64(r, i, 0, 0);
    row->endpoint_id = endpoint_id;
    row->event_id = pg_str(r, i, 1);
    row->payload = PQgetvalue(r, i, 2);
    row->payload_len = (size_t)PQgetlength(r, i, 2);
    row->attempt_count = (int)pg_i64(r, i, 3, 0);
    row->max_attempts = (int)pg_i64(r, i, 4, 0);
    row->created_at = pg_i64(r, i, 5, 0);
    row->event_type = pg_str(r, i, 6);
}

static int claimed_rows(const PGresult *r, int64_t endpoint_id, int (*fn)(void *ctx, const struct store_claimed *row),
                        void *ctx, int *n)
{
    struct store_claimed row;
    int i, rows = PQntuples(r);

    for (i = 0; i < rows; i++) {
        claimed_row(r, i, endpoint_id, &row);
        if (fn(ctx, &row) != 0)
            return -1;
        (*n)++;
    }
    return 0;
}

/* checked: the endpoint's shared breaker was read under lock this
 * transaction (or the caller claims as asked): no PG_UNBLOCKED test */
static void claim_params(struct pg_params *p, const struct pg_store *g, int64_t endpoint_id, int64_t now, int limit,
                         int checked)
{
    pg_p_init(p);
    pg_p_i64(p, endpoint_id);
    pg_p_i64(p, now);
    pg_p_i64(p, limit);
    pg_p_i64(p, g->node_id);
    pg_p_i64(p, checked ? 1 : 0);
}

int pg_claim(struct store *s, int64_t endpoint_id, int64_t now, int limit, int ordered,
             int (*fn)(void *ctx, const struct store_claimed *row), void *ctx, int *n)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;
    int rc;

    *n = 0;
    claim_params(&p, g, endpoint_id, now, limit, 1);
    /* binary: the payload's bytes as they are, no hex to decode */
    if (!(r = pg_exec(g, ordered ? PG_CLAIM_ORDERED : PG_CLAIM, &p, 1, "claim")))
        return -1;
    rc = claimed_rows(r, endpoint_id, fn, ctx, n);
    PQclear(r);
    /* the caller rolls the transaction back */
    return rc < 0 ? store_fail(s, STORE_E_NOMEM, "claim: out of memory") : 0;
}

int pg_next_due(struct store *s, int64_t endpoint_id, int ordered, int64_t *at)
{
    struct pg_store *g = (struct pg_store *)s;
    struct pg_params p;
    PGresult *r;

    pg_p_init(&p);
    pg_p_i64(&p, endpoint_id);
    if (!(r = pg_exec(g, ordered ? PG_NEXT_DUE_ORDERED : PG_NEXT_DUE, &p, 0, "next due")))
        return -1;
    *at = PQntuples(r) > 0 ? pg_i64(r, 0, 0, INT64_MAX) : INT64_MAX;
    PQclear(r);
    return 0;
}

/* Array parameters in PostgreSQL's text form: {1,NULL,"a \"b\""}. */
static void arr_sep(struct buf *b)
{
    buf_puts(b, b->len && b->p[b->len - 1] != '{' ? "," : "");
}

static void arr_i64(struct buf *b, int64_t v)
{
    arr_sep(b);
    buf_printf(b, "%lld", (long long)v);
}

static void arr_pos(struct buf *b, int64_t v)
{
    if (v > 0)
        arr_i64(b, v);
    else {
        arr_sep(b);
        buf_puts(b, "NULL");
    }
}

static void arr_text(struct buf *b, const char *s)
{
    arr_sep(b);
    if (!s || !*s) {
        buf_puts(b, "NULL");
        return;
    }
    buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            buf_append(b, "\\", 1);
        buf_append(b, s, 1);
    }
    buf_puts(b, "\"");
}

enum { SA_ID, SA_STATUS, SA_ATTEMPTS, SA_NEXT, SA_AT, SA_ERROR, SA_LAST_STATUS, SA_MS, SA_CLASS, SA_EP,
       SA_SAMPLE, SA_ATT_STATUS, SA_DETAIL, SA_METHOD, SA_URL, SA_RESPONSE, SA_SLOT, SA__COUNT };

/* One result as the next element of each array. */
static void settle_elems(struct buf *a, const struct store_settle *v)
{
    int ok = v->verdict == SETTLE_DELIVERED;

    arr_i64(&a[SA_ID], v->id);
    arr_text(&a[SA_STATUS], ok ? "delivered" : v->verdict == SETTLE_RETRY ? "failed" : "dead_letter");
    arr_i64(&a[SA_ATTEMPTS], v->attempts);
    arr_i64(&a[SA_NEXT], v->next_attempt_at);
    arr_i64(&a[SA_AT], v->at);
    arr_text(&a[SA_ERROR], ok ? NULL : v->error);
    if (ok)
        arr_i64(&a[SA_LAST_STATUS], v->status_code);
    else
        arr_pos(&a[SA_LAST_STATUS], v->status_code);
    arr_i64(&a[SA_MS], v->response_ms);
    arr_text(&a[SA_CLASS], ok ? NULL : v->error_class);
    arr_i64(&a[SA_EP], v->endpoint_id);
    arr_i64(&a[SA_SAMPLE], v->sample ? 1 : 0);
    arr_pos(&a[SA_ATT_STATUS], v->status_code);
    arr_text(&a[SA_DETAIL], ok ? NULL : v->error);
    arr_text(&a[SA_METHOD], v->method);
    arr_text(&a[SA_URL], v->url);
    arr_text(&a[SA_RESPONSE], v->response);
    arr_i64(&a[SA_SLOT], v->ring_slot);
}

static int released(void *ctx, size_t k, const PGresult *r)
{
    struct store_settle **v = ctx;

    v[k]->applied = pg_changed(r) > 0;
    return 0;
}

/* Results of a round: every verdict but release in one statement (one
 * round trip, one executor start), releases (a shutdown's untried rows)
 * one by one in a pipeline. */
int pg_settle(struct store *s, struct store_settle *v, size_t n)
{
    struct pg_store *g = (struct pg_store *)s;
    struct buf a[SA__COUNT];
    struct store_settle **rel = NULL;
    struct pg_params p;
    struct pg_pipe pp;
    size_t i, nset = 0, nrel = 0;
    int k, rc = -1;
    PGresult *r = NULL;

    memset(a, 0, sizeof a);
    for (k = 0; k < SA__COUNT; k++)
        buf_puts(&a[k], "{");
    for (i = 0; i < n; i++) {
        v[i].applied = 0;
        if (v[i].verdict == SETTLE_RELEASE)
            nrel++;
        else {
            settle_elems(a, &v[i]);
            nset++;
        }
    }
    pg_p_init(&p);
    for (k = 0; k < SA__COUNT; k++) {
        buf_puts(&a[k], "}");
        if (a[k].failed) {
            store_fail(s, STORE_E_NOMEM, "settle: out of memory");
            goto out;
        }
        pg_p_text(&p, a[k].p);
    }
    pg_p_i64(&p, g->node_id);
    if (nset > 0) {
        size_t *map = NULL, m = 0;
        int rows, j;
        /* the statement numbers its rows 1..nset in the order they were
         * added: map them back to v */
        if (!(map = malloc(nset * sizeof *map))) {
            store_fail(s, STORE_E_NOMEM, "settle: out of memory");
            goto out;
        }
        for (i = 0; i < n; i++)
            if (v[i].verdict != SETTLE_RELEASE)
                map[m++] = i;
        if (!(r = pg_exec(g, PG_SETTLE, &p, 0, "settle"))) {
            free(map);
            goto out;
        }
        rows = PQntuples(r);
        for (j = 0; j < rows; j++) {
            int64_t num = pg_i64(r, j, 0, 0);
            if (num >= 1 && (size_t)num <= nset)
                v[map[num - 1]].applied = 1;
        }
        free(map);
    }
    if (nrel > 0) {
        size_t m = 0;
        if (!(rel = malloc(nrel * sizeof *rel))) {
            store_fail(s, STORE_E_NOMEM, "settle: out of memory");
            goto out;
        }
        for (i = 0; i < n; i++)
            if (v[i].verdict == SETTLE_RELEASE)
                rel[m++] = &v[i];
        if (pg_pipe_begin(&pp, g, "settle", released, rel) < 0)
            goto out;
        for (i = 0; i < nrel; i++) {
            pg_p_init(&p);
            pg_p_i64(&p, rel[i]->id);
            pg_p_i64(&p, rel[i]->next_attempt_at);
            pg_p_i64(&p, g->node_id);
            if (pg_pipe_add(&pp, PG_RELEASE, &p) < 0)
                break;
        }
        if (pg_pipe_end(&pp) < 0)
            goto out;
    }
    rc = 0;
out:
    PQclear(r);
    free(rel);
    for (k = 0; k < SA__COUNT; k++)
        buf_free(&a[k]);
    return rc;
}

/* ---- several endpoints' claims at once ---- */

struct many {
    struct store_claim_want *w;
    size_t *idx;          /* statement's number (from 0) -> index in w */
    int (*fn)(void *ctx, size_t k, const struct store_claimed *row);
    void *ctx;
    size_t k;             /* the want whose rows claimed_rows is handing out */
};

static int many_row(void *arg, const struct store_claimed *row)
{
    struct many *m = arg;

    return m->fn(m->ctx, m->k, row);
}

/* an ordered endpoint's claim, one per pipeline statement */
static int many_claimed(void *arg, size_t k, const PGresult *r)
{
    struct many *m = arg;

    m->k = m->idx[k];
    m->w[m->k].n = 0;
    return claimed_rows(r, m->w[m->k].endpoint_id, many_row, m, &m->w[m->k].n);
}

static int many_due(void *arg, size_t k, const PGresult *r)
{
    struct many *m = arg;

    struct store_claim_want *w = &m->w[m->idx[k]];

    w->next_due = PQntuples(r) > 0 ? pg_i64(r, 0, 0, INT64_MAX) : INT64_MAX;
    w->blocked = !w->checked && PQntuples(r) > 0 && pg_i64(r, 0, 1, 0) != 0;
    return 0;
}

/* Unordered endpoints (nearly all) in one claim statement over arrays;
 * endpoints with an ordering key one statement each, pipelined. */
static int claim_unordered(struct pg_store *g, int64_t now, struct many *m, size_t nu)
{
    struct store_claim_want *w = m->w;
    struct buf eps = {0}, lims = {0}, chk = {0};
    struct pg_params p;
    PGresult *r = NULL;
    size_t i;
    int rows, k, rc = -1;

    buf_puts(&eps, "{");
    buf_puts(&lims, "{");
    buf_puts(&chk, "{");
    for (i = 0; i < nu; i++) {
        arr_i64(&eps, w[m->idx[i]].endpoint_id);
        arr_i64(&lims, w[m->idx[i]].limit);
        arr_i64(&chk, w[m->idx[i]].checked ? 1 : 0);
    }
    buf_puts(&eps, "}");
    buf_puts(&lims, "}");
    buf_puts(&chk, "}");
    if (eps.failed || lims.failed || chk.failed) {
        store_fail(&g->base, STORE_E_NOMEM, "claim: out of memory");
        goto out;
    }
    pg_p_init(&p);
    pg_p_text(&p, eps.p);
    pg_p_text(&p, lims.p);
    pg_p_i64(&p, now);
    pg_p_i64(&p, g->node_id);
    pg_p_text(&p, chk.p);
    if (!(r = pg_exec(g, PG_CLAIM_MANY, &p, 1, "claim")))
        goto out;
    rows = PQntuples(r);
    for (k = 0; k < rows; k++) {
        int64_t ord = pg_i64(r, k, 7, 0);
        struct store_claimed row;
        size_t wi;
        if (ord < 1 || (size_t)ord > nu)
            continue;   /* cannot happen: the numbers are the array's */
        wi = m->idx[ord - 1];
        claimed_row(r, k, w[wi].endpoint_id, &row);
        if (m->fn(m->ctx, wi, &row) != 0) {
            store_fail(&g->base, STORE_E_NOMEM, "claim: out of memory");
            goto out;
        }
        w[wi].n++;
    }
    rc = 0;
out:
    PQclear(r);
    buf_free(&eps);
    buf_free(&lims);
    buf_free(&chk);
    return rc;
}

/* next_due of the unordered endpoints that got fewer than their limit */
static int due_unordered(struct pg_store *g, struct many *m, size_t nu)
{
    struct buf eps = {0};
    struct pg_params p;
    PGresult *r;
    size_t i;
    int k, rows;

    buf_puts(&eps, "{");
    for (i = 0; i < nu; i++)
        arr_i64(&eps, m->w[m->idx[i]].endpoint_id);
    buf_puts(&eps, "}");
    if (eps.failed) {
        buf_free(&eps);
        return store_fail(&g->base, STORE_E_NOMEM, "next due: out of memory");
    }
    pg_p_init(&p);
    pg_p_text(&p, eps.p);
    r = pg_exec(g, PG_NEXT_DUE_MANY, &p, 0, "next due");
    buf_free(&eps);
    if (!r)
        return -1;
    rows = PQntuples(r);
    for (k = 0; k < rows; k++) {
        int64_t ord = pg_i64(r, k, 0, 0);
        if (ord >= 1 && (size_t)ord <= nu) {
            struct store_claim_want *w = &m->w[m->idx[ord - 1]];
            w->next_due = pg_i64(r, k, 1, INT64_MAX);
            w->blocked = !w->checked && pg_i64(r, k, 2, 0) != 0;
        }
    }
    PQclear(r);
    return 0;
}

/* Ordered endpoints, one pipelined statement each (stmt: the claim or
 * next_due); m->idx lists them. */
static int pipe_ordered(struct pg_store *g, int64_t now, struct many *m, size_t no, int due)
{
    struct pg_pipe pp;
    struct pg_params p;
    size_t i;

    if (no == 0)
        return 0;
    if ((due ? pg_pipe_begin(&pp, g, "next due", many_due, m) : pg_pipe_begin_binary(&pp, g, "claim", many_claimed, m)) <
        0)
        return -1;
    for (i = 0; i < no; i++) {
        struct store_claim_want *w = &m->w[m->idx[i]];
        if (due) {
            pg_p_init(&p);
            pg_p_i64(&p, w->endpoint_id);
        } else {
            claim_params(&p, g, w->endpoint_id, now, w->limit, w->checked);
        }
        if (pg_pipe_add(&pp, due ? PG_NEXT_DUE_ORDERED : PG_CLAIM_ORDERED, &p) < 0)
            break;
    }
    return pg_pipe_end(&pp);
}

/* Which wants to run now: ordered or not, and (after the claims) only
 * those short of their limit; their indexes into m->idx. */
static size_t pick(struct many *m, size_t n, int ordered, int short_only)
{
    size_t k, c = 0;

    for (k = 0; k < n; k++)
        if ((m->w[k].ordered != 0) == ordered && (!short_only || m->w[k].n < m->w[k].limit))
            m->idx[c++] = k;
    return c;
}

/* At most four round trips whatever the number of endpoints: the
 * unordered claims in one statement and the ordered ones in a pipeline,
 * then next_due of those that got fewer than their limit, the same way. */
int pg_claim_many(struct store *s, int64_t now, struct store_claim_want *w, size_t n,
                  int (*fn)(void *ctx, size_t k, const struct store_claimed *row), void *ctx)
{
    struct pg_store *g = (struct pg_store *)s;
    struct many m = {w, NULL, fn, ctx, 0};
    size_t k, c;
    int rc = -1;

    if (n == 0)
        return 0;
    if (!(m.idx = malloc(n * sizeof *m.idx)))
        return store_fail(s, STORE_E_NOMEM, "claim: out of memory");
    for (k = 0; k < n; k++) {
        w[k].n = 0;
        w[k].next_due = INT64_MAX;
        w[k].blocked = 0;
    }
    if (((c = pick(&m, n, 0, 0)) > 0 && claim_unordered(g, now, &m, c) < 0) ||
        pipe_ordered(g, now, &m, pick(&m, n, 1, 0), 0) < 0 ||
        ((c = pick(&m, n, 0, 1)) > 0 && due_unordered(g, &m, c) < 0) ||
        pipe_ordered(g, now, &m, pick(&m, n, 1, 1), 1) < 0)
        goto out;
    rc = 0;
out:
    free(m.idx);
    return rc;
}
