/* test_store.c - the storage behaviour table. Every case runs against
 * every backend (the in-memory fake and SQLite; PostgreSQL joins when it
 * exists), so their semantics cannot drift: what store.h promises is
 * checked here, not in each backend's own terms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breaker.h"
#include "config.h"
#include "endpoint.h"
#include "msgsel.h"
#include "store.h"
#include "store_mem.h"
#include "store_sqlite.h"

#define T0 1800000000000LL

struct fx {
    struct store *w, *r;
    struct mem_db *mem;
    struct config cfg;
    char dir[64];
    int sqlite;
    char pg_schema[32];   /* postgres: this case's own schema, dropped after it */
};

/* ---- backends ---- */

static int setup_mem(void **state)
{
    struct fx *f = calloc(1, sizeof *f);

    f->mem = mem_db_new();
    f->w = mem_store_open(f->mem, STORE_WRITER);
    f->r = mem_store_open(f->mem, STORE_READER);
    *state = f;
    return 0;
}

static int setup_sqlite(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    char err[512];

    f->sqlite = 1;
    strcpy(f->dir, "/tmp/hookd-store-XXXXXX");
    if (!mkdtemp(f->dir) || config_init(&f->cfg) < 0)
        return -1;
    free(f->cfg.db_path);
    f->cfg.db_path = malloc(128);
    snprintf(f->cfg.db_path, 128, "%s/t.db", f->dir);
    f->cfg.synchronous = CFG_SYNC_OFF;
    if (store_open(&f->cfg, STORE_WRITER, &f->w, err, sizeof err) < 0 ||
        store_open(&f->cfg, STORE_READER, &f->r, err, sizeof err) < 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

#ifdef HOOKD_WITH_PG
#include <libpq-fe.h>

/* One SQL command on the test cluster (HOOKD_TEST_PG, started by
 * tests/pg/cluster.sh); 0 / -1. */
static int pg_admin(const char *sql)
{
    PGconn *c = PQconnectdb(getenv("HOOKD_TEST_PG"));
    PGresult *r;

    PQclear(PQexec(c, "SET client_min_messages = warning"));
    r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;

    if (!ok)
        fprintf(stderr, "pg: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

/* Each case on an empty schema of its own: the backend creates its
 * tables there (search_path), as it would in a fresh database. */
static int setup_pg(void **state)
{
    static int seq;
    struct fx *f = calloc(1, sizeof *f);
    char sql[96], err[512];

    snprintf(f->pg_schema, sizeof f->pg_schema, "t%d_%d", (int)getpid(), ++seq);
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", f->pg_schema);
    if (config_init(&f->cfg) < 0 || pg_admin(sql) < 0)
        return -1;
    f->cfg.backend = CFG_BACKEND_POSTGRES;
    free(f->cfg.pg_node_name);
    f->cfg.pg_node_name = strdup("n1");
    free(f->cfg.pg_conninfo);
    f->cfg.pg_conninfo = malloc(512);
    snprintf(f->cfg.pg_conninfo, 512, "%s options='-c search_path=%s'", getenv("HOOKD_TEST_PG"), f->pg_schema);
    /* the key sealing endpoint secrets: a file of its own (seal.h) */
    strcpy(f->dir, "/tmp/hookd-store-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    free(f->cfg.db_path);
    f->cfg.db_path = malloc(128);
    snprintf(f->cfg.db_path, 128, "%s/unused.db", f->dir);
    if (store_open(&f->cfg, STORE_WRITER, &f->w, err, sizeof err) < 0 ||
        store_open(&f->cfg, STORE_READER, &f->r, err, sizeof err) < 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}
#endif

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];

    store_close(f->r);
    store_close(f->w);
#ifdef HOOKD_WITH_PG
    if (f->pg_schema[0]) {
        snprintf(cmd, sizeof cmd, "DROP SCHEMA %s CASCADE", f->pg_schema);
        if (pg_admin(cmd) < 0)
            return -1;
        config_free(&f->cfg);
        snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
        if (system(cmd) != 0)
            return -1;
    }
#endif
    mem_db_free(f->mem);
    if (f->sqlite) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
        if (system(cmd) != 0)
            return -1;
        config_free(&f->cfg);
    }
    free(f);
    return 0;
}

/* ---- helpers ---- */

#define OK(call) assert_int_equal((call), 0)

static void begin(struct fx *f)
{
    OK(f->w->ops->begin(f->w, 1));
}

static void commit(struct fx *f)
{
    OK(f->w->ops->commit(f->w));
}

static int64_t put_endpoint(struct fx *f, const char *name, int from_config)
{
    struct ep_def d;
    char err[256];
    int64_t id;
    int created;

    ep_def_init(&d);
    snprintf(d.name, sizeof d.name, "%s", name);
    OK(ep_def_set(&d, "url", "https://hooks.example.com/in", err, sizeof err));
    OK(ep_def_set(&d, "secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", err, sizeof err));
    OK(ep_def_set(&d, "header", "X-Token: hush", err, sizeof err));
    OK(ep_def_set(&d, "rate", "100/m, 1000/h", err, sizeof err));
    OK(ep_def_set(&d, "max_attempts", "3", err, sizeof err));
    begin(f);
    OK(f->w->ops->endpoint_put(f->w, &d, from_config, T0, &id, &created));
    commit(f);
    ep_def_free(&d);
    return id;
}

static int64_t enqueue_at(struct fx *f, int64_t ep, const char *eid, int64_t now, int *dup)
{
    struct store_enqueue e = {ep, eid, "conversion", "{\"a\":1}", 7, 3, NULL, 0, 0, 0, 0, 0};

    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, now));
    commit(f);
    if (dup)
        *dup = e.duplicate;
    return e.id;
}

struct claimed {
    int64_t id[64];
    int attempts[64];
    int n;
};

static int take(void *ctx, const struct store_claimed *row)
{
    struct claimed *c = ctx;

    assert_true(c->n < 64);
    assert_int_equal(row->payload_len, 7);
    assert_memory_equal(row->payload, "{\"a\":1}", 7);
    c->attempts[c->n] = row->attempt_count;
    c->id[c->n++] = row->id;
    return 0;
}

static struct claimed claim_as(struct fx *f, int64_t ep, int64_t now, int limit, int ordered)
{
    struct claimed c = {{0}, {0}, 0};
    int n = -1;

    begin(f);
    OK(f->w->ops->claim(f->w, ep, now, limit, ordered, take, &c, &n));
    commit(f);
    assert_int_equal(n, c.n);
    return c;
}

static struct claimed claim(struct fx *f, int64_t ep, int64_t now, int limit)
{
    return claim_as(f, ep, now, limit, 0);
}

static int settle(struct fx *f, int64_t id, int64_t ep, enum store_verdict v, int attempts, int64_t at, int status,
                  int sample, const char *cls, const char *err)
{
    /* a message's own id as its ring slot: unique in these small tests */
    struct store_settle s = {.id = id, .endpoint_id = ep, .verdict = v, .attempts = attempts,
                             .next_attempt_at = at + 1000, .at = at, .status_code = status, .response_ms = 42,
                             .sample = sample, .ring_slot = id, .error_class = cls, .error = err, .applied = -1};

    begin(f);
    OK(f->w->ops->settle(f->w, &s, 1));
    commit(f);
    return s.applied;
}

struct got {
    struct store_message m;
    char status[16], err[128], cls[32];
    int found;
    struct store_attempt a[16];
    char a_method[16][8], a_url[16][96], a_resp[16][64];
    int na;
};

static int keep_msg(void *ctx, const struct store_message *m)
{
    struct got *g = ctx;

    g->m = *m;
    snprintf(g->status, sizeof g->status, "%s", msg_status_name(m->status));
    snprintf(g->err, sizeof g->err, "%s", m->last_error ? m->last_error : "");
    snprintf(g->cls, sizeof g->cls, "%s", m->last_error_class ? m->last_error_class : "");
    g->m.endpoint = g->m.event_id = g->m.event_type = g->m.last_error = g->m.last_error_class = NULL;
    return 0;
}

static int keep_attempt(void *ctx, const struct store_attempt *a)
{
    struct got *g = ctx;

    g->a[g->na] = *a;
    g->a[g->na].error_class = g->a[g->na].detail = NULL;
    snprintf(g->a_method[g->na], sizeof g->a_method[0], "%s", a->method ? a->method : "(null)");
    snprintf(g->a_url[g->na], sizeof g->a_url[0], "%s", a->url ? a->url : "(null)");
    snprintf(g->a_resp[g->na], sizeof g->a_resp[0], "%s", a->response ? a->response : "(null)");
    g->a[g->na].method = g->a[g->na].url = g->a[g->na].response = NULL;
    g->na++;
    return 0;
}

static struct got get(struct fx *f, int64_t id)
{
    struct got g;

    memset(&g, 0, sizeof g);
    OK(f->r->ops->message_get(f->r, id, keep_msg, &g, &g.found));
    if (g.found)
        OK(f->r->ops->message_attempts(f->r, &g.m, 16, keep_attempt, &g));
    return g;
}

static const char *status_of(struct fx *f, int64_t id)
{
    static char s[16];
    struct got g = get(f, id);

    snprintf(s, sizeof s, "%s", g.found ? g.status : "gone");
    return s;
}

/* ---- the table ---- */

static void enqueue_dedups_per_endpoint(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0);
    int dup;
    int64_t i1 = enqueue_at(f, a, "e1", T0, &dup), i2, i3;
    struct store_enqueue two[2] = {{a, "e2", NULL, "[1]", 3, 5, NULL, 0, 0, 0, 0, 0}, {a, "e2", NULL, "[2]", 3, 5, NULL, 0, 0, 0, 0, 0}};

    assert_false(dup);
    i2 = enqueue_at(f, a, "e1", T0 + 5, &dup);
    assert_true(dup);
    assert_int_equal(i2, i1);
    i3 = enqueue_at(f, b, "e1", T0, &dup);   /* same event id, other endpoint: its own row */
    assert_false(dup);
    assert_true(i3 > i1);
    /* within one batch too */
    begin(f);
    OK(f->w->ops->enqueue(f->w, two, 2, T0));
    commit(f);
    assert_false(two[0].duplicate);
    assert_true(two[1].duplicate);
    assert_int_equal(two[1].id, two[0].id);
}

static void claim_takes_due_rows_oldest_first(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), at;
    int64_t x = enqueue_at(f, a, "x", T0, NULL), y = enqueue_at(f, a, "y", T0 + 10, NULL);
    struct claimed c;

    enqueue_at(f, b, "z", T0, NULL);
    c = claim(f, a, T0 + 5, 10);   /* y not due yet */
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], x);
    assert_string_equal(status_of(f, x), "in_flight");
    OK(f->w->ops->next_due(f->w, a, 0, &at));
    assert_int_equal(at, T0 + 10);
    c = claim(f, a, T0 + 100, 10);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], y);
    OK(f->w->ops->next_due(f->w, a, 0, &at));
    assert_true(at == INT64_MAX);
    /* the limit holds */
    for (int i = 0; i < 5; i++) {
        char e[16];
        snprintf(e, sizeof e, "l%d", i);
        enqueue_at(f, a, e, T0 + 200, NULL);
    }
    assert_int_equal(claim(f, a, T0 + 300, 3).n, 3);
    assert_int_equal(claim(f, a, T0 + 300, 3).n, 2);
}

static int64_t enqueue_keyed(struct fx *f, int64_t ep, const char *eid, const char *key, int64_t now)
{
    struct store_enqueue e = {ep, eid, "conversion", "{\"a\":1}", 7, 3, key, 0, 0, 0, 0, 0};

    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, now));
    commit(f);
    return e.id;
}

struct many_seen {
    size_t k[16];
    int64_t id[16];
    size_t payload_len[16];
    int n;
};

static int many_take(void *ctx, size_t k, const struct store_claimed *row)
{
    struct many_seen *m = ctx;

    assert_true(m->n < 16);
    m->k[m->n] = k;
    m->id[m->n] = row->id;
    m->payload_len[m->n++] = row->payload_len;
    return 0;
}

/* claim_many (a backend that has it) takes what claim would for each
 * endpoint, rows tagged with their endpoint's index, and gives the next
 * due time of those that got fewer than their limit. */
static void claim_many_takes_what_claim_would(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), c = put_endpoint(f, "c", 0);
    int64_t a1, a2, b1, b3;
    struct store_claim_want w[3];
    struct many_seen m = {0};

    if (!f->w->ops->claim_many)
        return;   /* the caller loops over claim and next_due: the cases above */
    a1 = enqueue_at(f, a, "a1", T0, NULL);
    a2 = enqueue_at(f, a, "a2", T0 + 1, NULL);
    enqueue_at(f, a, "a3", T0 + 2, NULL);
    b1 = enqueue_keyed(f, b, "b1", "k", T0);
    enqueue_keyed(f, b, "b2", "k", T0);    /* held back by b1 */
    b3 = enqueue_keyed(f, b, "b3", "j", T0);
    enqueue_at(f, c, "c1", T0 + 500, NULL); /* not due */
    w[0] = (struct store_claim_want){.endpoint_id = a, .limit = 2, .checked = 1, .n = -1};
    w[1] = (struct store_claim_want){.endpoint_id = b, .limit = 10, .ordered = 1, .checked = 1, .n = -1};
    w[2] = (struct store_claim_want){.endpoint_id = c, .limit = 5, .checked = 1, .n = -1};
    begin(f);
    OK(f->w->ops->claim_many(f->w, T0 + 10, w, 3, many_take, &m));
    commit(f);
    assert_int_equal(w[0].n, 2);
    assert_int_equal(w[1].n, 2);
    assert_int_equal(w[2].n, 0);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.k[0], 0);
    assert_int_equal(m.id[0], a1);
    assert_int_equal(m.k[1], 0);
    assert_int_equal(m.id[1], a2);
    assert_int_equal(m.k[2], 1);
    assert_int_equal(m.id[2], b1);
    assert_int_equal(m.k[3], 1);
    assert_int_equal(m.id[3], b3);
    assert_int_equal(m.payload_len[0], 7);
    assert_true(w[1].next_due == INT64_MAX);   /* b2 waits for b1: not claimable */
    assert_int_equal(w[2].next_due, T0 + 500);
    assert_string_equal(status_of(f, a1), "in_flight");
}

/* A keyed row waits for every older row of its key; other keys and
 * unkeyed rows do not. */
static void claim_keeps_each_key_in_order(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), at;
    int64_t a1 = enqueue_keyed(f, a, "a1", "A", T0), a2 = enqueue_keyed(f, a, "a2", "A", T0);
    int64_t b1 = enqueue_keyed(f, a, "b1", "B", T0), n1 = enqueue_keyed(f, a, "n1", NULL, T0);
    int64_t a3 = enqueue_keyed(f, a, "a3", "A", T0);
    int64_t u = put_endpoint(f, "u", 0), u1, u2, u3;
    struct claimed c;

    /* an endpoint without ordering takes every due row, keys or not
     * (with rows due: a claim that took nothing would prove nothing) */
    u1 = enqueue_keyed(f, u, "u1", "A", T0);
    u2 = enqueue_keyed(f, u, "u2", "A", T0);
    u3 = enqueue_keyed(f, u, "u3", "A", T0 + 5);
    assert_int_equal(claim_as(f, u, T0 - 1, 10, 0).n, 0);
    c = claim_as(f, u, T0, 10, 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.id[0], u1);
    assert_int_equal(c.id[1], u2);
    c = claim_as(f, u, T0 + 5, 10, 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], u3);
    assert_int_equal(claim_as(f, a, T0 - 1, 10, 1).n, 0);
    c = claim_as(f, a, T0, 10, 1);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.id[0], a1);
    assert_int_equal(c.id[1], b1);
    assert_int_equal(c.id[2], n1);
    OK(f->w->ops->next_due(f->w, a, 1, &at));
    assert_true(at == INT64_MAX);                 /* a2, a3 are held back */
    /* a1 fails: a2 stays held while a1 waits for its retry */
    assert_true(settle(f, a1, a, SETTLE_RETRY, 1, T0 + 10, 503, 1, "http_503", "HTTP 503"));
    assert_int_equal(claim_as(f, a, T0 + 20, 10, 1).n, 0);
    OK(f->w->ops->next_due(f->w, a, 1, &at));
    assert_int_equal(at, T0 + 1010);              /* a1's retry, not a2 */
    c = claim_as(f, a, T0 + 1010, 10, 1);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], a1);
    assert_true(settle(f, a1, a, SETTLE_DEAD, 2, T0 + 1020, 404, 1, "http_404", "HTTP 404"));
    /* a dead letter releases the next one, and only it */
    c = claim_as(f, a, T0 + 1030, 10, 1);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], a2);
    assert_true(settle(f, a2, a, SETTLE_DELIVERED, 1, T0 + 1040, 200, 1, NULL, NULL));
    c = claim_as(f, a, T0 + 1050, 10, 1);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], a3);
}

/* The attempt log keeps the request as sent (masked by the caller) and
 * the response excerpt. */
static void attempt_log_keeps_request_and_response(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), m = enqueue_at(f, a, "m", T0, NULL);
    struct store_settle s = {.id = m, .endpoint_id = a, .verdict = SETTLE_RETRY, .attempts = 1,
                             .next_attempt_at = T0 + 100, .at = T0 + 5, .status_code = 200, .response_ms = 3,
                             .sample = 1, .ring_slot = 0, .error_class = "body_mismatch",
                             .error = "HTTP 200: the response lacks the expected success_body", .method = "GET",
                             .url = "https://t.example/pb?c=1&token=***", .response = "success=false;\\n"};
    struct got g;

    assert_int_equal(claim(f, a, T0, 10).n, 1);
    begin(f);
    OK(f->w->ops->settle(f->w, &s, 1));
    commit(f);
    g = get(f, m);
    assert_int_equal(g.na, 1);
    assert_string_equal(g.a_method[0], "GET");
    assert_string_equal(g.a_url[0], "https://t.example/pb?c=1&token=***");
    assert_string_equal(g.a_resp[0], "success=false;\\n");
    assert_string_equal(g.cls, "body_mismatch");
}

/* Rows in SQLite's attempt log itself (schema 10 keeps a delivering first
 * attempt in the message's row); -1 for the other backends. */
static int sqlite_log_rows(struct fx *f)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int n = -1;

    if (!f->sqlite)
        return -1;
    OK(sqlite3_open_v2(f->cfg.db_path, &db, SQLITE_OPEN_READONLY, NULL));
    OK(sqlite3_prepare_v2(db, "SELECT count(*) FROM attempt_rows", -1, &st, NULL));
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static int settle_sent(struct fx *f, int64_t id, int64_t ep, enum store_verdict v, int attempts, int64_t at,
                       int status, const char *url, const char *response)
{
    struct store_settle s = {.id = id, .endpoint_id = ep, .verdict = v, .attempts = attempts,
                             .next_attempt_at = at + 1000, .at = at, .status_code = status, .response_ms = 7,
                             .sample = 1, .ring_slot = id, .method = "POST", .url = url, .response = response,
                             .applied = -1};

    if (v != SETTLE_DELIVERED) {
        s.error_class = "http_503";
        s.error = "HTTP 503";
    }
    begin(f);
    OK(f->w->ops->settle(f->w, &s, 1));
    commit(f);
    return s.applied;
}

/* However a backend stores a first attempt that delivered, it reads back
 * as the log's entry 1, and a requeue keeps it until attempt 1 is made
 * again, which replaces it. */
static void a_delivering_first_attempt_reads_as_logged(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), m1 = enqueue_at(f, a, "m1", T0, NULL),
            m2 = enqueue_at(f, a, "m2", T0, NULL), n, gone;
    struct store_filter one = {m1, 0, 0, MSG_BIT(MSG_DELIVERED)};
    struct got g;

    assert_int_equal(claim(f, a, T0, 10).n, 2);
    assert_true(settle_sent(f, m1, a, SETTLE_DELIVERED, 1, T0 + 5, 200, "https://h.example/v1", "ok"));
    assert_true(settle_sent(f, m2, a, SETTLE_RETRY, 1, T0 + 6, 503, "https://h.example/v1", NULL));
    if (f->sqlite)
        assert_int_equal(sqlite_log_rows(f), 1);   /* m2's failure only */
    g = get(f, m1);
    assert_string_equal(g.status, "delivered");
    assert_int_equal(g.na, 1);
    assert_int_equal(g.a[0].at, T0 + 5);
    assert_int_equal(g.a[0].status_code, 200);
    assert_int_equal(g.a[0].response_ms, 7);
    assert_string_equal(g.a_method[0], "POST");
    assert_string_equal(g.a_url[0], "https://h.example/v1");
    assert_string_equal(g.a_resp[0], "ok");

    /* a second attempt that delivers is logged beside the first */
    assert_int_equal(claim(f, a, T0 + 1006, 10).n, 1);
    assert_true(settle_sent(f, m2, a, SETTLE_DELIVERED, 2, T0 + 1010, 204, "https://h.example/v1", NULL));
    g = get(f, m2);
    assert_int_equal(g.na, 2);
    assert_int_equal(g.a[0].status_code, 503);
    assert_int_equal(g.a[1].status_code, 204);
    assert_int_equal(g.a[1].at, T0 + 1010);
    assert_string_equal(g.a_resp[1], "(null)");

    /* requeued: the log keeps every attempt ever made, in order, the
     * requeue marked as attempt 0 of the next generation */
    begin(f);
    OK(f->w->ops->requeue(f->w, &one, T0 + 2000, &n, &gone));
    commit(f);
    assert_int_equal(n, 1);
    g = get(f, m1);
    assert_string_equal(g.status, "pending");
    assert_int_equal(g.na, 2);
    assert_int_equal(g.a[0].at, T0 + 5);
    assert_string_equal(g.a_url[0], "https://h.example/v1");
    assert_int_equal(g.a[1].attempt, 0);
    assert_int_equal(g.a[1].generation, 1);
    assert_int_equal(g.a[1].at, T0 + 2000);
    assert_int_equal(claim(f, a, T0 + 2000, 10).n, 1);
    assert_true(settle_sent(f, m1, a, SETTLE_DELIVERED, 1, T0 + 2005, 202, "https://h.example/v2", "again"));
    g = get(f, m1);
    assert_int_equal(g.na, 3);
    assert_int_equal(g.a[0].generation, 0);
    assert_int_equal(g.a[0].attempt, 1);
    assert_int_equal(g.a[0].at, T0 + 5);
    assert_int_equal(g.a[0].status_code, 200);
    assert_string_equal(g.a_url[0], "https://h.example/v1");
    assert_string_equal(g.a_resp[0], "ok");
    assert_int_equal(g.a[1].attempt, 0);
    assert_int_equal(g.a[2].generation, 1);
    assert_int_equal(g.a[2].attempt, 1);
    assert_int_equal(g.a[2].at, T0 + 2005);
    assert_int_equal(g.a[2].status_code, 202);
    assert_string_equal(g.a_url[2], "https://h.example/v2");
    assert_string_equal(g.a_resp[2], "again");
}

/* A message whose attempt 1 failed, requeued twice: its logged attempt 1
 * is never overwritten by a later generation's attempt 1. */
static void requeue_keeps_every_attempt(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), m = enqueue_at(f, a, "m", T0, NULL), n, gone;
    struct store_filter one = {m, 0, 0, MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)};
    struct got g;
    int k;

    assert_int_equal(claim(f, a, T0, 10).n, 1);
    assert_true(settle(f, m, a, SETTLE_DEAD, 1, T0 + 10, 0, 0, "dns", "dns: Could not resolve host"));
    for (k = 1; k <= 2; k++) {
        begin(f);
        OK(f->w->ops->requeue(f->w, &one, T0 + k * 1000, &n, &gone));
        commit(f);
        assert_int_equal(n, 1);
        assert_int_equal(claim(f, a, T0 + k * 1000, 10).n, 1);
        assert_true(settle(f, m, a, k == 1 ? SETTLE_DEAD : SETTLE_DELIVERED, 1, T0 + k * 1000 + 10,
                           k == 1 ? 503 : 200, 1, k == 1 ? "http_503" : NULL, k == 1 ? "HTTP 503" : NULL));
    }
    g = get(f, m);
    assert_string_equal(g.status, "delivered");
    assert_int_equal(g.na, 5);
    for (k = 0; k < 5; k++) {
        assert_int_equal(g.a[k].generation, (k + 1) / 2);
        assert_int_equal(g.a[k].attempt, k % 2 == 0 ? 1 : 0);
        if (k > 0)
            assert_true(g.a[k].at > g.a[k - 1].at);
    }
    assert_int_equal(g.a[0].status_code, 0);
    assert_int_equal(g.a[2].status_code, 503);
    assert_int_equal(g.a[4].status_code, 200);
}

static int64_t enqueue_payload(struct fx *f, int64_t ep, const char *eid, const char *type, const char *payload,
                               int64_t now)
{
    struct store_enqueue e = {ep, eid, type, payload, strlen(payload), 3, NULL, 0, 0, 0, 0, 0};

    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, now));
    commit(f);
    return e.id;
}

struct found {
    int64_t id[32];
    int n;
};

static int keep_found(void *ctx, const struct store_message *m)
{
    struct found *x = ctx;

    assert_true(x->n < 32);
    x->id[x->n++] = m->id;
    return 0;
}

static int claimed_any(void *ctx, const struct store_claimed *row)
{
    (void)ctx;
    (void)row;
    return 0;
}

/* A search through the reader (as the messages op runs it) or the
 * writer (as requeue, purge and erase by filter run it). */
static struct found search(struct fx *f, struct store *st, struct msgsel *s, int64_t max, struct msgsel_walk *w)
{
    struct found x = {{0}, 0};
    struct msgsel_walk dummy;

    OK(msgsel_walk(st, s, max, keep_found, &x, w ? w : &dummy));
    return x;
}

/* Search: every filter, newest first, keyset paging, on the reader and
 * on the writer's connection alike. */
static void search_filters_and_pages(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), m[6];
    int k = 0;
    struct msgsel s;
    struct msgsel_walk w;
    struct found x;
    char name_a[] = "a", name_b[] = "b", eid[] = "e2", glob[] = "order.*", cls[] = "http_503", path[] = "user.id", val[] = "u7",
         path2[] = "amount", val2[] = "12.50";

    m[0] = enqueue_payload(f, a, "e0", "order.paid", "{\"user\":{\"id\":\"u7\"},\"amount\":12.50}", T0);
    m[1] = enqueue_payload(f, a, "e1", "lead.new", "{\"user\":{\"id\":\"u8\"}}", T0 + 10);
    m[2] = enqueue_payload(f, b, "e2", "order.refund", "{\"user\":{\"id\":\"u7\"},\"amount\":12.5}", T0 + 20);
    m[3] = enqueue_payload(f, a, "e2", "order.paid", "[1,2]", T0 + 30);
    m[4] = enqueue_payload(f, b, "e4", NULL, "{}", T0 + 40);
    m[5] = enqueue_payload(f, a, "e5", "order.x", "{\"user\":\"u7\"}", T0 + 50);
    begin(f);
    OK(f->w->ops->claim(f->w, b, T0 + 100, 10, 0, claimed_any, &k, &k));
    commit(f);
    assert_int_equal(k, 2);
    assert_true(settle(f, m[2], b, SETTLE_DEAD, 1, T0 + 110, 503, 1, "http_503", "HTTP 503"));
    assert_true(settle(f, m[4], b, SETTLE_DELIVERED, 1, T0 + 110, 200, 1, NULL, NULL));

    memset(&s, 0, sizeof s);
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 6);
    assert_int_equal(x.id[0], m[5]);
    assert_int_equal(x.id[5], m[0]);
    assert_int_equal(w.next, 0);
    s.endpoint = name_a;
    assert_int_equal(search(f, f->r, &s, 100, NULL).n, 4);
    s.endpoint = NULL;
    s.event_id = eid;
    x = search(f, f->w, &s, 100, NULL);
    assert_int_equal(x.n, 2);
    assert_int_equal(x.id[0], m[3]);
    s.event_id = NULL;
    s.type = glob;
    assert_int_equal(search(f, f->r, &s, 100, NULL).n, 4);   /* order.*; m[4] has no type */
    s.type = NULL;
    s.error_class = cls;
    x = search(f, f->r, &s, 100, NULL);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.id[0], m[2]);
    s.error_class = NULL;
    s.statuses = MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER);
    assert_int_equal(search(f, f->r, &s, 100, NULL).n, 2);
    s.statuses = MSG_BIT(MSG_PENDING);
    assert_int_equal(search(f, f->r, &s, 100, NULL).n, 4);
    /* dead letters alone come from their own indexes, by endpoint too */
    s.statuses = MSG_BIT(MSG_DEAD_LETTER);
    x = search(f, f->w, &s, 100, NULL);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.id[0], m[2]);
    s.endpoint = name_b;
    x = search(f, f->r, &s, 100, NULL);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.id[0], m[2]);
    s.endpoint = name_a;
    assert_int_equal(search(f, f->r, &s, 100, NULL).n, 0);
    s.endpoint = NULL;
    s.statuses = 0;
    s.since = T0 + 10;
    s.until = T0 + 40;
    x = search(f, f->r, &s, 100, NULL);
    assert_int_equal(x.n, 3);
    assert_int_equal(x.id[0], m[3]);
    assert_int_equal(x.id[2], m[1]);
    s.since = s.until = 0;
    /* payload paths: strings as text, numbers as written */
    s.where[0].path = path;
    s.where[0].value = val;
    s.nwhere = 1;
    x = search(f, f->w, &s, 100, NULL);
    assert_int_equal(x.n, 2);
    assert_int_equal(x.id[0], m[2]);
    assert_int_equal(x.id[1], m[0]);
    s.where[1].path = path2;
    s.where[1].value = val2;
    s.nwhere = 2;
    x = search(f, f->r, &s, 100, NULL);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.id[0], m[0]);
    s.nwhere = 0;
    /* pages: two at a time, next says where to go on */
    x = search(f, f->r, &s, 2, &w);
    assert_int_equal(x.n, 2);
    assert_int_equal(w.next, m[4]);
    s.after = w.next;
    x = search(f, f->r, &s, 2, &w);
    assert_int_equal(x.id[0], m[3]);
    assert_int_equal(w.next, m[2]);
    s.after = w.next;
    x = search(f, f->r, &s, 2, &w);
    assert_int_equal(x.n, 2);
    assert_int_equal(x.id[1], m[0]);
    assert_int_equal(w.next, 0);
    /* a bounded walk stops after its rows, and says where to go on */
    s.after = 0;
    s.scan_max = 3;
    s.type = glob;
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(w.scanned, 3);
    assert_int_equal(x.n, 2);   /* m[5], m[3]; m[4] has no type */
    assert_int_equal(w.next, m[3]);
    s.after = w.next;
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(x.n, 2);   /* m[2], m[0] */
    /* it read its bound: whether anything older is left, a next page says */
    assert_int_equal(w.next, m[0]);
    s.after = w.next;
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(x.n, 0);
    assert_int_equal(w.scanned, 0);
    assert_int_equal(w.next, 0);
    /* one message by id, as erase and requeue by id walk it */
    memset(&s, 0, sizeof s);
    s.id = m[2];
    x = search(f, f->w, &s, 100, NULL);
    assert_int_equal(x.n, 1);
    assert_int_equal(x.id[0], m[2]);
}

/* A time window ends the walk: ids grow with time, so once rows are
 * well older than since (10 minutes: a clock stepped back) nothing newer
 * follows; rows a little older are still read. */
static void search_stops_below_the_window(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), m[5];
    struct msgsel s;
    struct msgsel_walk w;
    struct found x;

    m[0] = enqueue_at(f, a, "old0", T0 - 3 * 3600000, NULL);
    m[1] = enqueue_at(f, a, "old1", T0 - 2 * 3600000, NULL);
    m[2] = enqueue_at(f, a, "new0", T0, NULL);
    m[3] = enqueue_at(f, a, "stepped", T0 - 60000, NULL);   /* the clock went back a minute */
    m[4] = enqueue_at(f, a, "new1", T0 + 5, NULL);
    memset(&s, 0, sizeof s);
    s.since = T0 - 120000;
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 3);
    assert_int_equal(x.id[0], m[4]);
    assert_int_equal(x.id[1], m[3]);
    assert_int_equal(x.id[2], m[2]);
    assert_int_equal(w.scanned, 4);   /* m[1] ended it; m[0] was never read */
    assert_int_equal(w.next, 0);
}

/* An until starts the walk at the window's end: the primary key is
 * bisected for the first row created 10 minutes after until (a clock
 * stepped back that far is still covered), so the newer rows are never
 * read. */
static void search_starts_at_the_window_end(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), m[64], stepped = 0;
    struct msgsel s;
    struct msgsel_walk w;
    struct found x;
    char eid[16];
    int i;

    for (i = 0; i < 60; i++) {
        snprintf(eid, sizeof eid, "h%d", i);
        m[i] = enqueue_at(f, a, eid, T0 + i * 3600000LL, NULL);
        if (i == 40)   /* the clock went back a minute */
            stepped = enqueue_at(f, a, "stepped", T0 + 40 * 3600000LL - 60000, NULL);
    }
    memset(&s, 0, sizeof s);
    s.since = T0 + 37 * 3600000LL;
    s.until = T0 + 40 * 3600000LL;
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 4);
    assert_int_equal(x.id[0], stepped);
    assert_int_equal(x.id[1], m[39]);
    assert_int_equal(x.id[3], m[37]);
    assert_int_equal(w.scanned, 6);   /* stepped, m[40] .. m[36]: not the 19 newer rows */
    assert_int_equal(w.next, 0);
    /* with a page's keyset: the lower of the two bounds */
    s.after = m[39];
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(x.n, 2);
    assert_int_equal(x.id[0], m[38]);
    s.after = 0;
    /* a window before every row, and after every row */
    s.since = T0 - 7200000;
    s.until = T0 - 3600000;
    assert_int_equal(search(f, f->r, &s, 100, &w).n, 0);
    assert_true(w.scanned <= 1);
    s.since = T0 + 100 * 3600000LL;
    s.until = T0 + 101 * 3600000LL;
    assert_int_equal(search(f, f->r, &s, 100, &w).n, 0);
    assert_int_equal(w.scanned, 1);
}

/* One endpoint's rows come out of spans of ids the store reads whole:
 * the bound counts ids covered (MSGSEL_SPAN_FACTOR times a walk's rows),
 * next goes on below the last id covered, and a window's ends are found
 * by bisection, so nothing outside them is read. */
static void search_endpoint_reads_spans(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), m[30];
    struct msgsel s;
    struct msgsel_walk w;
    struct found x;
    char name_a[] = "a", eid[16];
    int i;

    for (i = 0; i < 30; i++) {
        snprintf(eid, sizeof eid, "s%d", i);
        m[i] = enqueue_at(f, i % 3 == 0 ? a : b, eid, T0 + i * 60000LL, NULL);
    }
    memset(&s, 0, sizeof s);
    s.endpoint = name_a;
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 10);
    assert_int_equal(x.id[0], m[27]);
    assert_int_equal(x.id[9], m[0]);
    assert_int_equal(w.scanned, m[29] - m[0] + 1);
    assert_int_equal(w.next, 0);
    /* a bound of 2 rows is 10 ids: m[29] .. m[20], then on from there */
    s.scan_max = 2;
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(x.n, 3);   /* m[27], m[24], m[21] */
    assert_int_equal(x.id[2], m[21]);
    assert_int_equal(w.scanned, 10);
    assert_int_equal(w.next, m[20]);
    s.after = w.next;
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 3);
    assert_int_equal(x.id[0], m[18]);
    assert_int_equal(w.next, m[10]);
    /* a match past max: next is the last one handed over */
    s.after = 0;
    s.scan_max = 0;
    x = search(f, f->r, &s, 2, &w);
    assert_int_equal(x.n, 2);
    assert_int_equal(w.next, m[24]);
    /* since: nothing created 10 minutes before it is read */
    s.since = T0 + 20 * 60000LL;
    x = search(f, f->r, &s, 100, &w);
    assert_int_equal(x.n, 3);   /* m[27], m[24], m[21] */
    assert_int_equal(w.scanned, m[29] - m[10] + 1);
    assert_int_equal(w.next, 0);
    /* until: nothing created 10 minutes after it is read */
    s.since = 0;
    s.until = T0 + 15 * 60000LL;
    x = search(f, f->w, &s, 100, &w);
    assert_int_equal(x.n, 5);   /* m[12] .. m[0] */
    assert_int_equal(x.id[0], m[12]);
    assert_int_equal(w.scanned, m[24] - m[0] + 1);
    assert_int_equal(w.next, 0);
}

/* Erase: the payload, response excerpts and URLs as sent go; ids,
 * statuses and times stay; a waiting row is a dead letter of class
 * erased; a row in flight settles without its URL and is not retried;
 * [retention] payload erases delivered rows only, the oldest first. */
static void erase_keeps_what_hookd_did(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), d = enqueue_at(f, a, "d", T0, NULL), w = enqueue_at(f, a, "w", T0, NULL),
            x = enqueue_at(f, a, "x", T0, NULL), keep = enqueue_at(f, a, "k", T0, NULL), n, gone;
    struct store_filter any = {0, 0, 0, MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)};
    struct got g;

    assert_int_equal(claim(f, a, T0, 10).n, 4);
    assert_true(settle_sent(f, d, a, SETTLE_RETRY, 1, T0 + 5, 503, "https://h.example/d?u=1", "busy"));
    assert_true(settle_sent(f, w, a, SETTLE_RETRY, 1, T0 + 5, 503, "https://h.example/w", "busy"));
    assert_true(settle_sent(f, keep, a, SETTLE_DELIVERED, 1, T0 + 5, 200, "https://h.example/k", "ok"));
    /* d delivers at its second attempt */
    assert_int_equal(claim(f, a, T0 + 1005, 1).n, 1);
    assert_true(settle_sent(f, d, a, SETTLE_DELIVERED, 2, T0 + 1010, 200, "https://h.example/d?u=2", "thanks"));

    begin(f);
    OK(f->w->ops->erase(f->w, d, T0 + 2000, &n));
    assert_int_equal(n, 1);
    OK(f->w->ops->erase(f->w, w, T0 + 2000, &n));   /* waiting for its retry */
    OK(f->w->ops->erase(f->w, x, T0 + 2000, &n));   /* in flight */
    OK(f->w->ops->erase(f->w, 999999, T0 + 2000, &n));
    assert_int_equal(n, 0);
    commit(f);

    g = get(f, d);
    assert_string_equal(g.status, "delivered");
    assert_int_equal(g.m.payload_bytes, 0);
    assert_int_equal(g.m.erased_at, T0 + 2000);
    assert_int_equal(g.m.delivered_at, T0 + 1010);
    assert_int_equal(g.m.attempt_count, 2);
    assert_int_equal(g.na, 2);
    assert_int_equal(g.a[0].status_code, 503);
    assert_string_equal(g.a_url[0], "(null)");
    assert_string_equal(g.a_resp[0], "(null)");
    assert_string_equal(g.a_url[1], "(null)");
    assert_int_equal(g.a[1].at, T0 + 1010);
    g = get(f, w);
    assert_string_equal(g.status, "dead_letter");
    assert_string_equal(g.cls, "erased");
    assert_string_equal(g.err, "");
    /* the row in flight: its attempt settles without what was sent, and
     * a failure does not bring it back */
    assert_true(settle_sent(f, x, a, SETTLE_RETRY, 1, T0 + 2005, 503, "https://h.example/x", "busy"));
    g = get(f, x);
    assert_string_equal(g.status, "dead_letter");
    assert_int_equal(g.m.payload_bytes, 0);
    assert_string_equal(g.err, "");
    assert_string_equal(g.a_url[0], "(null)");
    assert_int_equal(g.a[0].status_code, 503);
    /* nothing erased can be requeued */
    begin(f);
    for (any.id = d; any.id <= x; any.id++) {
        OK(f->w->ops->requeue(f->w, &any, T0 + 3000, &n, &gone));
        assert_int_equal(n, 0);
    }
    commit(f);
    /* the untouched one keeps everything */
    g = get(f, keep);
    assert_int_equal(g.m.payload_bytes, 7);
    assert_int_equal(g.m.erased_at, 0);
    assert_string_equal(g.a_url[0], "https://h.example/k");

    /* [retention] payload: delivered before the cutoff, not yet erased */
    begin(f);
    OK(f->w->ops->expire(f->w, EXPIRE_PAYLOADS, T0 + 5, 10, &n));
    assert_int_equal(n, 0);
    OK(f->w->ops->expire(f->w, EXPIRE_PAYLOADS, T0 + 6, 10, &n));
    assert_int_equal(n, 1);
    OK(f->w->ops->expire(f->w, EXPIRE_PAYLOADS, T0 + 9000, 10, &n));
    assert_int_equal(n, 0);
    commit(f);
    g = get(f, keep);
    assert_string_equal(g.status, "delivered");
    assert_int_equal(g.m.payload_bytes, 0);
    assert_int_equal(g.m.erased_at, T0 + 6);
    assert_string_equal(g.a_url[0], "(null)");
    assert_string_equal(g.a_resp[0], "(null)");
}

static int file_has(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "rb");
    char *b;
    long n;
    int found = 0;

    if (!fp)
        return 0;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    assert_non_null(b);
    if (fread(b, 1, (size_t)n, fp) == (size_t)n)
        found = memmem(b, (size_t)n, needle, strlen(needle)) != NULL;
    free(b);
    fclose(fp);
    return found;
}

/* SQLite: after an erase and the checkpoint that follows it, the bytes
 * are in neither the database file nor its -wal, whatever the library's
 * default secure_delete (FAST is what the writer sets when it is off):
 * the payload's cell, the copies the claim and the result left in the
 * page, its overflow pages, the URL and response of the log. */
static void erase_leaves_no_bytes_in_the_files(void **state)
{
    struct fx *f = *state;
    char big[9000], small[300], wal[160];
    int64_t a, m1, m2, n;
    int k = 0;

    if (!f->sqlite) {
        skip();
        return;
    }
    OK(sqlite3_exec(((struct sq_store *)f->w)->db, "PRAGMA secure_delete = FAST", NULL, NULL, NULL));
    a = put_endpoint(f, "a", 0);
    snprintf(small, sizeof small, "{\"p\":\"%s\"}", "SMALLMARK-4d2f-player");
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"p\":\"BIGMARK-91ce-player", 25);
    memcpy(big + sizeof big - 3, "\"}", 3);
    m1 = enqueue_payload(f, a, "m1", NULL, small, T0);
    m2 = enqueue_payload(f, a, "m2", NULL, big, T0);
    begin(f);
    OK(f->w->ops->claim(f->w, a, T0, 10, 0, claimed_any, NULL, &k));
    commit(f);
    assert_int_equal(k, 2);
    assert_true(settle_sent(f, m1, a, SETTLE_DELIVERED, 1, T0 + 5, 200, "https://h.example/?p=URLMARK-77", "RESPMARK-5"));
    assert_true(settle_sent(f, m2, a, SETTLE_RETRY, 1, T0 + 5, 503, "https://h.example/?p=URLMARK-78", "RESPMARK-6"));
    OK(f->w->ops->checkpoint(f->w, 1));
    assert_true(file_has(f->cfg.db_path, "SMALLMARK-4d2f"));   /* the test can see them */
    assert_true(file_has(f->cfg.db_path, "BIGMARK-91ce"));
    begin(f);
    OK(f->w->ops->erase(f->w, m1, T0 + 10, &n));
    OK(f->w->ops->erase(f->w, m2, T0 + 10, &n));
    commit(f);
    OK(f->w->ops->checkpoint(f->w, 1));
    snprintf(wal, sizeof wal, "%s-wal", f->cfg.db_path);
    assert_false(file_has(f->cfg.db_path, "SMALLMARK-4d2f"));
    assert_false(file_has(f->cfg.db_path, "BIGMARK-91ce"));
    assert_false(file_has(f->cfg.db_path, "URLMARK-7"));
    assert_false(file_has(f->cfg.db_path, "RESPMARK-"));
    assert_false(file_has(wal, "MARK-"));
}

static void settle_changes_only_rows_in_flight(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0);
    int64_t d = enqueue_at(f, a, "d", T0, NULL), r = enqueue_at(f, a, "r", T0, NULL), x = enqueue_at(f, a, "x", T0, NULL);
    struct got g;

    assert_int_equal(claim(f, a, T0, 10).n, 3);
    assert_true(settle(f, d, a, SETTLE_DELIVERED, 1, T0 + 50, 200, 1, NULL, NULL));
    assert_true(settle(f, r, a, SETTLE_RETRY, 1, T0 + 50, 503, 1, "http_503", "HTTP 503: try later"));
    assert_true(settle(f, x, a, SETTLE_DEAD, 1, T0 + 50, 0, 0, "ssrf_blocked", "ssrf_blocked: refused"));
    g = get(f, d);
    assert_string_equal(g.status, "delivered");
    assert_int_equal(g.m.delivered_at, T0 + 50);
    assert_int_equal(g.m.attempt_count, 1);
    assert_string_equal(g.err, "");
    g = get(f, r);
    assert_string_equal(g.status, "failed");
    assert_int_equal(g.m.next_attempt_at, T0 + 1050);
    assert_string_equal(g.cls, "http_503");
    assert_string_equal(g.err, "HTTP 503: try later");
    assert_int_equal(g.m.last_status_code, 503);
    assert_int_equal(g.na, 1);
    assert_int_equal(g.a[0].response_ms, 42);
    g = get(f, x);
    assert_string_equal(g.status, "dead_letter");
    assert_int_equal(g.na, 1);
    assert_int_equal(g.a[0].response_ms, -1);   /* refused before sending: no sample */
    /* a result for a row that is not in flight changes nothing */
    assert_false(settle(f, d, a, SETTLE_RETRY, 2, T0 + 60, 500, 1, "http_500", "HTTP 500"));
    assert_string_equal(status_of(f, d), "delivered");
    assert_int_equal(get(f, d).na, 1);
}

static void release_returns_untried_rows(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), x = enqueue_at(f, a, "x", T0, NULL), y = enqueue_at(f, a, "y", T0, NULL);
    struct claimed c;

    claim(f, a, T0, 10);
    assert_true(settle(f, y, a, SETTLE_RETRY, 1, T0, 503, 1, "http_503", "HTTP 503"));
    c = claim(f, a, T0 + 2000, 10);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.attempts[0], 1);
    assert_true(settle(f, x, a, SETTLE_RELEASE, 0, T0 + 2000, 0, 0, NULL, NULL));
    assert_true(settle(f, y, a, SETTLE_RELEASE, 1, T0 + 2000, 0, 0, NULL, NULL));
    assert_string_equal(status_of(f, x), "pending");
    assert_string_equal(status_of(f, y), "failed");
    assert_int_equal(get(f, y).m.attempt_count, 1);
    assert_int_equal(get(f, x).na, 0);   /* no attempt was made */
}

static void recover_returns_in_flight_rows(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), x = enqueue_at(f, a, "x", T0, NULL), y = enqueue_at(f, a, "y", T0, NULL), n;

    claim(f, a, T0, 10);
    assert_true(settle(f, y, a, SETTLE_RETRY, 1, T0, 503, 1, "http_503", "HTTP 503"));
    claim(f, a, T0 + 5000, 10);
    begin(f);
    OK(f->w->ops->recover(f->w, T0 + 9000, &n));
    commit(f);
    assert_int_equal(n, 2);
    assert_string_equal(status_of(f, x), "pending");
    assert_string_equal(status_of(f, y), "failed");
    assert_int_equal(get(f, y).m.next_attempt_at, T0 + 9000);
    assert_int_equal(claim(f, a, T0 + 9000, 10).n, 2);
}

static int keep_health(void *ctx, const struct store_health *h);

/* A wall-clock step moves what waits (due times, breaker openings) and
 * the waiting rows' ages with it; what already happened keeps its time. */
static void clock_step_moves_waits_not_events(void **state)
{
    struct fx *f = *state;
    const int64_t H = 3600000;
    int64_t a = put_endpoint(f, "a", 0), rows = -1;
    int64_t r = enqueue_at(f, a, "r", T0, NULL), d = enqueue_at(f, a, "d", T0, NULL),
            dl = enqueue_at(f, a, "dl", T0, NULL), x = enqueue_at(f, a, "x", T0, NULL), w;
    struct store_health h = {.endpoint_id = a, .endpoint_url = "https://hooks.example.com/in",
                             .state = BREAKER_OPEN, .consecutive_failures = 3, .failure_threshold = 3,
                             .last_failure_at = T0 + 5, .opened_at = T0 + 5, .cooldown_ms = 2000,
                             .failing_since = T0 + 1};
    struct store_health back = {0};
    struct got g;

    assert_int_equal(claim(f, a, T0, 4).n, 4);
    assert_true(settle(f, r, a, SETTLE_RETRY, 1, T0 + 10, 503, 1, "http_503", "HTTP 503"));   /* due T0 + 1010 */
    assert_true(settle(f, d, a, SETTLE_DELIVERED, 1, T0 + 10, 200, 1, NULL, NULL));
    assert_true(settle(f, dl, a, SETTLE_DEAD, 1, T0 + 10, 400, 1, "http_400", "HTTP 400"));
    w = enqueue_at(f, a, "w", T0 + 20, NULL);   /* x stays in flight */
    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    OK(f->w->ops->clock_step(f->w, -H, 0, &rows));
    commit(f);
    assert_int_equal(rows, 3);   /* r, x, w */
    g = get(f, w);
    assert_int_equal(g.m.created_at, T0 + 20 - H);
    assert_int_equal(g.m.next_attempt_at, T0 + 20 - H);
    g = get(f, r);
    assert_int_equal(g.m.created_at, T0 - H);
    assert_int_equal(g.m.next_attempt_at, T0 + 1010 - H);
    assert_int_equal(get(f, x).m.created_at, T0 - H);
    g = get(f, d);
    assert_int_equal(g.m.created_at, T0);
    assert_int_equal(g.m.delivered_at, T0 + 10);
    assert_int_equal(get(f, dl).m.created_at, T0);
    back.endpoint_id = a;
    OK(f->w->ops->health_load(f->w, keep_health, &back));
    assert_int_equal(back.opened_at, T0 + 5 - H);
    assert_int_equal(back.failing_since, T0 + 1 - H);
    assert_int_equal(back.last_failure_at, T0 + 5);
    {
        struct store_stats s;
        OK(f->r->ops->queue_stats(f->r, T0 + 30 - H, 0, &s));
        assert_true(s.has_oldest);
        assert_int_equal(s.oldest_pending, T0 - H);   /* no longer in the future */
    }
    /* by the stepped clock: w is due at once, r a second on, as before */
    {
        struct claimed c = claim(f, a, T0 + 20 - H, 10);
        assert_int_equal(c.n, 1);
        assert_int_equal(c.id[0], w);
        assert_int_equal(claim(f, a, T0 + 1009 - H, 10).n, 0);
        assert_int_equal(claim(f, a, T0 + 1010 - H, 10).n, 1);
    }
}

static void endpoint_delete_strands_nothing(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), dead;
    int64_t p = enqueue_at(f, a, "p", T0, NULL), q = enqueue_at(f, a, "q", T0 + 10, NULL), done, other;
    struct got g;

    done = enqueue_at(f, a, "done", T0, NULL);
    other = enqueue_at(f, b, "other", T0, NULL);
    claim(f, a, T0 + 5, 2);   /* p and done in flight, q waiting */
    assert_true(settle(f, done, a, SETTLE_DELIVERED, 1, T0 + 6, 200, 1, NULL, NULL));
    begin(f);
    OK(f->w->ops->endpoint_delete(f->w, a, T0 + 7, &dead));
    commit(f);
    assert_int_equal(dead, 2);
    /* the delivery of p finishes after the delete: it stays a dead letter */
    assert_false(settle(f, p, a, SETTLE_RETRY, 1, T0 + 8, 503, 1, "http_503", "HTTP 503"));
    g = get(f, p);
    assert_string_equal(g.status, "dead_letter");
    assert_string_equal(g.cls, "endpoint_deleted");
    assert_string_equal(status_of(f, q), "dead_letter");
    assert_string_equal(status_of(f, done), "delivered");
    assert_string_equal(status_of(f, other), "pending");
    {
        struct store_stats s;
        OK(f->r->ops->queue_stats(f->r, T0 + 9, 0, &s));
        assert_int_equal(s.n[MSG_PENDING], 1);
        assert_int_equal(s.n[MSG_FAILED], 0);
        assert_int_equal(s.n[MSG_IN_FLIGHT], 0);
        assert_int_equal(s.n[MSG_DEAD_LETTER], 2);
    }
}

/* A deleted endpoint's dead letters stay dead letters: pending, nothing
 * would ever claim them (issue 32). */
static void requeue_skips_rows_of_deleted_endpoints(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), n, dead, gone;
    int64_t x = enqueue_at(f, a, "x", T0, NULL), y = enqueue_at(f, b, "y", T0, NULL);
    struct store_filter one = {x, 0, 0, MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)};
    struct store_filter every = {0, 0, 0, MSG_BIT(MSG_DEAD_LETTER)};

    claim(f, b, T0, 10);
    settle(f, y, b, SETTLE_DEAD, 1, T0, 400, 1, "http_400", "HTTP 400");
    begin(f);
    OK(f->w->ops->endpoint_delete(f->w, a, T0 + 1, &dead));
    commit(f);
    assert_int_equal(dead, 1);
    begin(f);
    OK(f->w->ops->requeue(f->w, &one, T0 + 2, &n, &gone));
    assert_int_equal(n, 0);
    assert_int_equal(gone, 1);   /* there, but its endpoint is not */
    OK(f->w->ops->requeue(f->w, &every, T0 + 2, &n, &gone));
    commit(f);
    assert_int_equal(n, 1);   /* b's, not a's */
    assert_int_equal(gone, 1);
    assert_string_equal(status_of(f, x), "dead_letter");
    assert_string_equal(get(f, x).cls, "endpoint_deleted");
    assert_string_equal(status_of(f, y), "pending");
}

static void requeue_and_purge_take_what_they_say(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), n, gone;
    int64_t dl = enqueue_at(f, a, "dl", T0, NULL), dv = enqueue_at(f, a, "dv", T0, NULL),
            wt = enqueue_at(f, a, "wt", T0, NULL), pd = enqueue_at(f, a, "pd", T0 + 50, NULL),
            old = enqueue_at(f, a, "old", T0 - 3600000, NULL);
    struct store_filter ep_dead = {0, a, T0 - 60000, MSG_BIT(MSG_DEAD_LETTER)};
    struct store_filter all = {0, a, 0, MSG_BIT(MSG_DEAD_LETTER)};

    (void)pd;
    claim(f, a, T0, 10);   /* dl dv wt old */
    settle(f, dl, a, SETTLE_DEAD, 1, T0, 400, 1, "http_400", "HTTP 400");
    settle(f, old, a, SETTLE_DEAD, 1, T0, 400, 1, "http_400", "HTTP 400");
    settle(f, dv, a, SETTLE_DELIVERED, 1, T0, 200, 1, NULL, NULL);
    settle(f, wt, a, SETTLE_RETRY, 1, T0, 503, 1, "http_503", "HTTP 503");
    /* by endpoint, since: only the recent dead letter */
    begin(f);
    OK(f->w->ops->requeue(f->w, &ep_dead, T0 + 100, &n, &gone));
    commit(f);
    assert_int_equal(n, 1);
    assert_string_equal(status_of(f, dl), "pending");
    assert_int_equal(get(f, dl).m.attempt_count, 0);
    assert_string_equal(get(f, dl).err, "");
    assert_string_equal(status_of(f, old), "dead_letter");
    assert_string_equal(status_of(f, dv), "delivered");
    assert_string_equal(status_of(f, wt), "failed");
    /* by id, delivered asked for */
    {
        struct store_filter one = {dv, 0, 0, MSG_BIT(MSG_DELIVERED)};
        struct store_filter pend = {pd, 0, 0, MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_DELIVERED) | MSG_BIT(MSG_DEAD_LETTER)};
        begin(f);
        OK(f->w->ops->requeue(f->w, &one, T0 + 100, &n, &gone));
        assert_int_equal(n, 1);
        OK(f->w->ops->requeue(f->w, &pend, T0 + 100, &n, &gone));
        assert_int_equal(n, 0);   /* pending: nothing to do */
        assert_int_equal(gone, 0);
        commit(f);
        assert_string_equal(status_of(f, dv), "pending");
    }
    /* purge: dead letters only, whatever else is asked */
    all.statuses |= MSG_BIT(MSG_FAILED) | MSG_BIT(MSG_PENDING);
    begin(f);
    OK(f->w->ops->purge(f->w, &all, &n));
    commit(f);
    assert_int_equal(n, 1);
    assert_string_equal(status_of(f, old), "gone");
    assert_string_equal(status_of(f, wt), "failed");
}

static void expire_in_chunks(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), n;
    int i;

    for (i = 0; i < 5; i++) {
        char e[16];
        int64_t id;
        snprintf(e, sizeof e, "m%d", i);
        id = enqueue_at(f, a, e, T0, NULL);
        claim(f, a, T0, 1);
        settle(f, id, a, i < 3 ? SETTLE_DELIVERED : SETTLE_DEAD, 1, T0 + i, i < 3 ? 200 : 400, 1,
               i < 3 ? NULL : "http_400", i < 3 ? NULL : "HTTP 400");
    }
    begin(f);
    OK(f->w->ops->expire(f->w, EXPIRE_DELIVERED, T0 + 2, 1, &n));   /* a chunk of 1 of 2 */
    assert_int_equal(n, 1);
    OK(f->w->ops->expire(f->w, EXPIRE_DELIVERED, T0 + 2, 10, &n));   /* delivered at T0, T0+1 */
    assert_int_equal(n, 1);
    OK(f->w->ops->expire(f->w, EXPIRE_DEAD_LETTERS, T0 + 1, 10, &n));   /* created at T0 */
    assert_int_equal(n, 2);
    OK(f->w->ops->expire(f->w, EXPIRE_DEAD_LETTERS, T0 + 1, 10, &n));
    assert_int_equal(n, 0);
    commit(f);
    /* the attempt log went with the messages; the one left keeps its own */
    {
        struct got g = get(f, 3);   /* the third message, delivered at T0 + 2 */
        assert_true(g.found);
        assert_int_equal(g.na, 1);
        assert_false(get(f, 1).found);
    }
}

static void rollback_undoes_everything(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), id;
    struct store_enqueue e = {a, "rb", NULL, "{\"a\":1}", 7, 3, NULL, 0, 0, 0, 0, 0};

    id = enqueue_at(f, a, "kept", T0, NULL);
    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, T0));
    f->w->ops->rollback(f->w);
    assert_string_equal(status_of(f, e.id), "gone");
    assert_int_equal(claim(f, a, T0, 10).n, 1);
    begin(f);
    OK(f->w->ops->settle(f->w,
                         &(struct store_settle){.id = id, .endpoint_id = a, .verdict = SETTLE_DELIVERED,
                                                .attempts = 1, .at = T0, .status_code = 200, .response_ms = 5,
                                                .sample = 1, .ring_slot = 0},
                         1));
    f->w->ops->rollback(f->w);
    assert_string_equal(status_of(f, id), "in_flight");
}

struct eps {
    char names[8][16];
    struct store_endpoint_info e[8];
    char settings[8][128], headers[8][64], reasons[8][64];
    int n;
};

static int keep_ep(void *ctx, const struct store_endpoint_info *e)
{
    struct eps *x = ctx;

    x->e[x->n] = *e;
    snprintf(x->names[x->n], sizeof x->names[0], "%s", e->name);
    snprintf(x->settings[x->n], sizeof x->settings[0], "%s", e->settings ? e->settings : "");
    snprintf(x->headers[x->n], sizeof x->headers[0], "%s", e->header_names ? e->header_names : "");
    snprintf(x->reasons[x->n], sizeof x->reasons[0], "%s", e->pause_reason ? e->pause_reason : "(null)");
    x->e[x->n].pause_reason = NULL;
    x->n++;
    return 0;
}

struct loaded {
    struct ep_def d[4];
    int64_t id[4];
    int cfg[4], n;
};

static int load_ep(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    struct loaded *l = ctx;

    OK(ep_def_copy(&l->d[l->n], d));
    l->id[l->n] = id;
    l->cfg[l->n++] = from_config;
    return 0;
}

/* put a with paused said ("yes"/"no") or left out (NULL) */
static void put_paused(struct fx *f, const char *paused, int from_config)
{
    struct ep_def d;
    char err[128];
    int64_t id;

    ep_def_init(&d);
    snprintf(d.name, sizeof d.name, "a");
    OK(ep_def_set(&d, "url", "https://hooks.example.com/in", err, sizeof err));
    if (paused)
        OK(ep_def_set(&d, "paused", paused, err, sizeof err));
    begin(f);
    OK(f->w->ops->endpoint_put(f->w, &d, from_config, T0, &id, NULL));
    commit(f);
    ep_def_free(&d);
}

static int paused_of_a(struct fx *f, char *reason, size_t n)
{
    struct eps x;

    memset(&x, 0, sizeof x);
    OK(f->r->ops->endpoint_list(f->r, 0, keep_ep, &x));
    assert_int_equal(x.n, 1);
    snprintf(reason, n, "%s", x.reasons[0]);
    return x.e[0].paused;
}

/* An existing endpoint's paused flag changes when a put says it, with
 * the reason of who said it; left out, the flag and its reason stay. */
static void endpoint_put_pauses_only_when_told(void **state)
{
    struct fx *f = *state;
    char why[64];

    put_paused(f, NULL, 0);
    assert_false(paused_of_a(f, why, sizeof why));
    put_paused(f, "yes", 0);
    assert_true(paused_of_a(f, why, sizeof why));
    assert_string_equal(why, "operator");
    put_paused(f, NULL, 1);
    assert_true(paused_of_a(f, why, sizeof why));
    assert_string_equal(why, "operator");
    put_paused(f, "yes", 1);   /* already paused: the first reason stays */
    assert_true(paused_of_a(f, why, sizeof why));
    assert_string_equal(why, "operator");
    put_paused(f, "no", 1);
    assert_false(paused_of_a(f, why, sizeof why));
    assert_string_equal(why, "(null)");
    put_paused(f, "yes", 1);
    assert_true(paused_of_a(f, why, sizeof why));
    assert_string_equal(why, "config");
}

static void endpoints_round_trip(void **state)
{
    struct fx *f = *state;
    int64_t b = put_endpoint(f, "b", 1), a = put_endpoint(f, "a", 0), again;
    struct loaded l;
    struct eps x;
    int created = -1, i;

    memset(&l, 0, sizeof l);
    OK(f->w->ops->endpoints_load(f->w, load_ep, &l));
    assert_int_equal(l.n, 2);
    for (i = 0; i < 2; i++) {
        struct ep_def *d = &l.d[i];
        assert_int_equal(l.id[i], strcmp(d->name, "a") == 0 ? a : b);
        assert_int_equal(l.cfg[i], strcmp(d->name, "b") == 0);
        assert_string_equal(d->url, "https://hooks.example.com/in");
        assert_int_equal(d->nsecrets, 1);
        assert_string_equal(d->headers[0], "X-Token: hush");
        assert_int_equal(d->s.rate.n, 2);
        assert_int_equal(d->s.max_attempts, 3);
        ep_def_free(d);
    }
    /* a second put updates in place, keeps the id, reports not created */
    {
        struct ep_def d;
        char err[128];
        ep_def_init(&d);
        snprintf(d.name, sizeof d.name, "a");
        OK(ep_def_set(&d, "url", "https://other.example.com/x", err, sizeof err));
        begin(f);
        OK(f->w->ops->endpoint_pause(f->w, a, 1, "disabled: no successful delivery for 72h", T0));
        OK(f->w->ops->endpoint_put(f->w, &d, 0, T0, &again, &created));
        commit(f);
        ep_def_free(&d);
    }
    assert_int_equal(again, a);
    assert_int_equal(created, 0);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->endpoint_list(f->r, 1, keep_ep, &x));
    assert_int_equal(x.n, 2);
    assert_string_equal(x.names[0], "a");   /* by name */
    assert_true(x.e[0].paused);             /* a put keeps the pause, and its reason */
    assert_string_equal(x.reasons[0], "disabled: no successful delivery for 72h");
    assert_string_equal(x.reasons[1], "(null)");
    assert_int_equal(x.e[0].nsecrets, 0);
    assert_string_equal(x.names[1], "b");
    assert_int_equal(x.e[1].nsecrets, 1);
    assert_true(x.e[1].from_config);
    assert_string_equal(x.headers[1], "[\"X-Token\"]");   /* names, never values */
    assert_non_null(strstr(x.settings[1], "\"rate\":\"100/m, 1000/h\""));
    assert_int_equal(x.e[1].h.state, BREAKER_CLOSED);
    assert_false(x.e[1].h.has_latency);
    /* resuming clears the reason */
    begin(f);
    OK(f->w->ops->endpoint_pause(f->w, a, 0, "operator", T0));
    commit(f);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->endpoint_list(f->r, 0, keep_ep, &x));
    assert_false(x.e[0].paused);
    assert_string_equal(x.reasons[0], "(null)");
}

static int keep_health(void *ctx, const struct store_health *h)
{
    struct store_health *out = ctx;

    if (h->endpoint_id == out->endpoint_id)
        *out = *h, out->endpoint_url = NULL;
    return 0;
}

static void health_persists_and_rollups_read_back(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0);
    struct store_health h = {.endpoint_id = a, .endpoint_url = "https://hooks.example.com/in",
                             .state = BREAKER_OPEN, .consecutive_failures = 10, .failure_threshold = 5,
                             .last_failure_at = T0 - 5, .last_success_at = T0 - 100, .opened_at = T0 - 5,
                             .cooldown_ms = 600000, .slow_since = T0 - 900000, .ring_next = 17,
                             .concurrency_limit = 12, .failing_since = T0 - 60};
    struct store_rollup r = {.endpoint_id = a, .has_latency = 1, .p50_ms = 120, .p95_ms = 900, .p99_ms = 2500,
                             .sample_count = 40, .at = T0};
    struct store_health back = {0};
    struct eps x;

    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    OK(f->w->ops->rollup_save(f->w, &r, 1));
    commit(f);
    back.endpoint_id = a;
    OK(f->w->ops->health_load(f->w, keep_health, &back));
    assert_int_equal(back.state, BREAKER_OPEN);
    assert_int_equal(back.consecutive_failures, 10);
    assert_int_equal(back.failure_threshold, 5);
    assert_int_equal(back.opened_at, T0 - 5);
    assert_int_equal(back.cooldown_ms, 600000);
    assert_int_equal(back.slow_since, T0 - 900000);
    assert_int_equal(back.ring_next, 17);
    assert_int_equal(back.concurrency_limit, 12);
    assert_int_equal(back.failing_since, T0 - 60);
    assert_true(back.has_latency);
    assert_int_equal(back.p95_ms, 900);
    /* saving the breaker again does not lose the rollup */
    h.state = BREAKER_CLOSED;
    h.slow_since = 0;
    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    commit(f);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->endpoint_list(f->r, 0, keep_ep, &x));
    assert_int_equal(x.e[0].h.state, BREAKER_CLOSED);
    assert_int_equal(x.e[0].h.slow_since, 0);
    assert_int_equal(x.e[0].h.p99_ms, 2500);
    assert_int_equal(x.e[0].h.sample_count, 40);
    /* slow: p95 strictly above, enough samples */
    memset(&x, 0, sizeof x);
    OK(f->r->ops->slow_endpoints(f->r, 899, 40, keep_ep, &x));
    assert_int_equal(x.n, 1);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->slow_endpoints(f->r, 900, 40, keep_ep, &x));
    assert_int_equal(x.n, 0);
    OK(f->r->ops->slow_endpoints(f->r, 100, 41, keep_ep, &x));
    assert_int_equal(x.n, 0);
}

struct hist {
    struct store_history v[8];
    int n;
};

static int keep_hist(void *ctx, const struct store_history *h)
{
    struct hist *x = ctx;

    if (x->n < 8)
        x->v[x->n] = *h;
    x->n++;
    return 0;
}

static int keep_class(void *ctx, const char *cls, int64_t n)
{
    char *out = ctx;

    snprintf(out + strlen(out), 256 - strlen(out), "%s=%lld;", cls, (long long)n);
    return 0;
}

/* The report's time series: counts add up, percentiles are set, rows
 * leave with retention and with their endpoint; dead letters by class. */
static void history_adds_sets_expires(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), dead = 0, n = 0;
    struct store_history add[3] = {
        {.endpoint_id = a, .bucket_at = T0, .delivered = 5, .failed = 1},
        {.endpoint_id = a, .bucket_at = T0, .delivered = 2, .breaker_opens = 1},
        {.endpoint_id = b, .bucket_at = T0 + 300000, .failed = 4},
    };
    struct store_history lat = {.endpoint_id = a, .bucket_at = T0 + 300000, .has_latency = 1, .p50_ms = 10,
                                .p95_ms = 40, .p99_ms = 90, .sample_count = 12};
    struct hist x = {0};
    char classes[256] = "";

    begin(f);
    OK(f->w->ops->history_add(f->w, add, 3));
    OK(f->w->ops->history_latency(f->w, &lat, 1));
    lat.bucket_at = T0;
    lat.p95_ms = 41;
    OK(f->w->ops->history_latency(f->w, &lat, 1));
    commit(f);
    OK(f->r->ops->history(f->r, 0, keep_hist, &x));
    assert_int_equal(x.n, 3);
    /* by endpoint, then bucket */
    assert_true(x.v[0].endpoint_id == a && x.v[0].bucket_at == T0);
    assert_int_equal(x.v[0].delivered, 7);
    assert_int_equal(x.v[0].failed, 1);
    assert_int_equal(x.v[0].breaker_opens, 1);
    assert_true(x.v[0].has_latency && x.v[0].p95_ms == 41 && x.v[0].sample_count == 12);
    assert_true(x.v[1].endpoint_id == a && x.v[1].bucket_at == T0 + 300000 && x.v[1].delivered == 0);
    assert_true(x.v[1].has_latency && x.v[1].p99_ms == 90);
    assert_true(x.v[2].endpoint_id == b && x.v[2].failed == 4 && !x.v[2].has_latency);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->history(f->r, T0 + 1, keep_hist, &x));
    assert_int_equal(x.n, 2);
    /* retention: buckets that began before */
    begin(f);
    OK(f->w->ops->expire(f->w, EXPIRE_HISTORY, T0 + 1, 100, &n));
    commit(f);
    assert_int_equal(n, 1);
    /* an endpoint's rows leave with it */
    begin(f);
    OK(f->w->ops->endpoint_delete(f->w, b, T0, &dead));
    commit(f);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->history(f->r, 0, keep_hist, &x));
    assert_int_equal(x.n, 1);
    assert_int_equal(x.v[0].endpoint_id, a);
    /* dead letters by class, most first */
    {
        int64_t ids[3];
        int i;
        for (i = 0; i < 3; i++)
            ids[i] = enqueue_at(f, a, i == 0 ? "c0" : i == 1 ? "c1" : "c2", T0, NULL);
        assert_int_equal(claim(f, a, T0 + 10, 10).n, 3);
        begin(f);
        for (i = 0; i < 3; i++) {
            struct store_settle st = {.id = ids[i], .endpoint_id = a, .verdict = SETTLE_DEAD, .attempts = 1,
                                      .at = T0 + 20, .status_code = i ? 503 : 0, .response_ms = 3,
                                      .error_class = i ? "http_503" : "timeout", .error = "x"};
            OK(f->w->ops->settle(f->w, &st, 1));
        }
        commit(f);
        OK(f->r->ops->dead_classes(f->r, 0, keep_class, classes));
        assert_string_equal(classes, "http_503=2;timeout=1;");
    }
}

static void latency_window_holds_only_real_responses(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), *buf = NULL;
    size_t cap = 0, n = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char e[16];
        int64_t id;
        snprintf(e, sizeof e, "m%d", i);
        id = enqueue_at(f, a, e, T0, NULL);
        claim(f, a, T0, 1);
        /* two answered, one refused before sending, one timed out after */
        settle(f, id, a, i == 0 ? SETTLE_DELIVERED : SETTLE_RETRY, 1, T0 + i * 1000, i < 2 ? 200 + i * 300 : 0,
               i != 2, i == 0 ? NULL : i == 2 ? "connect_failed" : "timeout", i == 0 ? NULL : "x");
    }
    OK(f->r->ops->latency_window(f->r, a, T0, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 3);
    OK(f->r->ops->latency_window(f->r, a, T0 + 1500, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 1);   /* only the one at T0 + 3000 */
    free(buf);
}

/* A fixed slot per sample: writing a slot again replaces its sample, the
 * ring size drops the slots above it, a deleted endpoint's ring goes. */
static void latency_ring_replaces_and_trims(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), *buf = NULL, dead;
    size_t cap = 0, n = 0;
    int i;

    for (i = 0; i < 6; i++) {
        char e[16];
        int64_t id;
        struct store_settle s = {.endpoint_id = a, .verdict = SETTLE_DELIVERED, .attempts = 1, .status_code = 200,
                                 .sample = 1};
        snprintf(e, sizeof e, "r%d", i);
        id = enqueue_at(f, a, e, T0, NULL);
        claim(f, a, T0, 1);
        s.id = id;
        s.at = T0 + i;
        s.response_ms = 100 + i;
        s.ring_slot = i % 4;   /* a ring of 4: the last two replace slots 0 and 1 */
        begin(f);
        OK(f->w->ops->settle(f->w, &s, 1));
        commit(f);
    }
    OK(f->r->ops->latency_window(f->r, a, T0, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 4);
    {
        int64_t sum = 0;
        for (size_t k = 0; k < n; k++)
            sum += buf[k];
        assert_int_equal(sum, 104 + 105 + 102 + 103);
    }
    begin(f);
    OK(f->w->ops->latency_ring_size(f->w, 3));
    commit(f);
    OK(f->r->ops->latency_window(f->r, a, T0, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 3);
    begin(f);
    OK(f->w->ops->endpoint_delete(f->w, a, T0 + 10, &dead));
    commit(f);
    OK(f->r->ops->latency_window(f->r, a, 0, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 0);
    free(buf);
}

/* Many samples in one settle (SQLite writes them several a statement):
 * each still lands in its slot, a later one for the same slot wins. */
static void latency_samples_of_one_settle_in_order(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), *buf = NULL, sum = 0;
    struct store_settle s[11];
    size_t cap = 0, n = 0, k;
    int i;

    for (i = 0; i < 11; i++) {
        char e[16];
        snprintf(e, sizeof e, "b%d", i);
        s[i] = (struct store_settle){.endpoint_id = a, .verdict = SETTLE_DELIVERED, .attempts = 1,
                                     .status_code = 200, .sample = 1, .at = T0 + i, .response_ms = 100 + i,
                                     .ring_slot = i % 4};
        s[i].id = enqueue_at(f, a, e, T0, NULL);
    }
    claim(f, a, T0, 11);
    begin(f);
    OK(f->w->ops->settle(f->w, s, 11));
    commit(f);
    OK(f->r->ops->latency_window(f->r, a, T0, INT64_MAX, &buf, &cap, &n));
    assert_int_equal(n, 4);
    for (k = 0; k < n; k++)
        sum += buf[k];
    assert_int_equal(sum, 108 + 109 + 110 + 107);
    free(buf);
}

struct groups {
    struct store_dead_group g[4];
    char cls[4][32], ex[4][64], ep[4][16];
    int n;
};

static int keep_group(void *ctx, const struct store_dead_group *g)
{
    struct groups *x = ctx;

    x->g[x->n] = *g;
    snprintf(x->cls[x->n], 32, "%s", g->primary_error_class ? g->primary_error_class : "");
    snprintf(x->ex[x->n], 64, "%s", g->example_error ? g->example_error : "");
    snprintf(x->ep[x->n], 16, "%s", g->endpoint ? g->endpoint : "");
    x->n++;
    return 0;
}

static void dead_letters_group_by_class(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0);
    struct groups x;
    int i;

    /* three 503s with three bodies, one 500: one group, class http_503 */
    for (i = 0; i < 4; i++) {
        char e[16], msg[64];
        int64_t id;
        snprintf(e, sizeof e, "a%d", i);
        snprintf(msg, sizeof msg, "HTTP %d: body %d", i == 3 ? 500 : 503, i);
        id = enqueue_at(f, a, e, T0 + i, NULL);
        claim(f, a, T0 + i, 1);
        settle(f, id, a, SETTLE_DEAD, 1 + (i % 2), T0 + i, i == 3 ? 500 : 503, 1, i == 3 ? "http_500" : "http_503", msg);
    }
    {
        int64_t id = enqueue_at(f, b, "b0", T0, NULL);
        claim(f, b, T0, 1);
        settle(f, id, b, SETTLE_DEAD, 2, T0, 0, 1, "timeout", "timeout: Timeout was reached");
    }
    memset(&x, 0, sizeof x);
    OK(f->r->ops->dead_letters(f->r, T0 - 1, 20, keep_group, &x));
    assert_int_equal(x.n, 2);
    assert_string_equal(x.ep[0], "a");
    assert_int_equal(x.g[0].dead_count, 4);
    assert_string_equal(x.cls[0], "http_503");
    assert_string_equal(x.ex[0], "HTTP 503: body 2");   /* the newest of the class */
    assert_int_equal(x.g[0].primary_status_code, 503);
    assert_int_equal(x.g[0].first_dead, T0);
    assert_int_equal(x.g[0].last_dead, T0 + 3);
    assert_int_equal(x.g[0].avg_attempts, 2);   /* 1,2,1,2 -> 1.5 rounds up */
    assert_string_equal(x.ep[1], "b");
    assert_string_equal(x.cls[1], "timeout");
    assert_int_equal(x.g[1].primary_status_code, 0);
    /* the window and the limit */
    memset(&x, 0, sizeof x);
    OK(f->r->ops->dead_letters(f->r, T0 + 2, 20, keep_group, &x));
    assert_int_equal(x.n, 1);
    assert_int_equal(x.g[0].dead_count, 2);
    memset(&x, 0, sizeof x);
    OK(f->r->ops->dead_letters(f->r, T0 - 1, 1, keep_group, &x));
    assert_int_equal(x.n, 1);
}

/* delay: a row stored with a due time waits for it as a retry does,
 * dedups at enqueue, and counts as scheduled (not pending, not oldest) */
static void delayed_rows_wait_their_time(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), at, y;
    struct store_enqueue e = {a, "x", "conversion", "{\"a\":1}", 7, 3, NULL, 0, 0, 0, T0 + 1000, 0};
    struct store_stats s;
    struct claimed c;
    int dup;

    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, T0));
    commit(f);
    assert_false(e.duplicate);
    enqueue_at(f, a, "x", T0 + 1, &dup);
    assert_true(dup);
    OK(f->r->ops->queue_stats(f->r, T0 + 5, 0, &s));
    assert_int_equal(s.scheduled, 1);
    assert_int_equal(s.n[MSG_PENDING], 0);
    assert_false(s.has_oldest);
    y = enqueue_at(f, a, "y", T0 + 10, NULL);
    OK(f->r->ops->queue_stats(f->r, T0 + 20, 0, &s));
    assert_int_equal(s.scheduled, 1);
    assert_int_equal(s.n[MSG_PENDING], 1);
    assert_true(s.has_oldest);
    assert_int_equal(s.oldest_pending, T0 + 10);
    c = claim(f, a, T0 + 500, 10);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], y);
    OK(f->w->ops->next_due(f->w, a, 0, &at));
    assert_int_equal(at, T0 + 1000);
    /* due: no longer scheduled, and it waits since its due time */
    OK(f->r->ops->queue_stats(f->r, T0 + 1500, 0, &s));
    assert_int_equal(s.scheduled, 0);
    assert_int_equal(s.n[MSG_PENDING], 1);
    assert_int_equal(s.oldest_pending, T0 + 1000);
    c = claim(f, a, T0 + 1000, 10);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], e.id);
}

static void stats_count_and_find_the_oldest(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0);
    int64_t now = T0 + 3600000;
    int64_t x = enqueue_at(f, a, "x", now - 5000, NULL), y = enqueue_at(f, a, "y", now - 4000, NULL);
    struct store_stats s;

    enqueue_at(f, a, "z", now - 3000, NULL);
    claim(f, a, now, 2);
    settle(f, x, a, SETTLE_DELIVERED, 1, now - 100, 200, 1, NULL, NULL);
    settle(f, y, a, SETTLE_RETRY, 1, now - 100, 503, 1, "http_503", "HTTP 503");
    OK(f->r->ops->queue_stats(f->r, now, 1, &s));
    assert_int_equal(s.n[MSG_PENDING], 1);
    assert_int_equal(s.n[MSG_FAILED], 1);
    assert_int_equal(s.n[MSG_DELIVERED], 1);
    assert_int_equal(s.delivered_last_hour, 1);
    assert_int_equal(s.failed_last_hour, 1);
    assert_true(s.has_avg);
    assert_true(s.has_oldest);
    assert_int_equal(s.oldest_pending, now - 4000);   /* y waits for its retry */
}

/* export: copies of the rows, strings owned */
struct exported {
    struct store_row r[16];
    char *str[16][7];
    int n;
};

static char *keep_str(struct exported *x, int k, const char *v)
{
    return v ? (x->str[x->n][k] = strdup(v)) : NULL;
}

static int keep_row(void *ctx, const struct store_row *r)
{
    struct exported *x = ctx;

    assert_true(x->n < 16);
    x->r[x->n] = *r;
    x->r[x->n].event_id = keep_str(x, 0, r->event_id);
    x->r[x->n].event_type = keep_str(x, 1, r->event_type);
    x->str[x->n][2] = malloc(r->payload_len + 1);
    memcpy(x->str[x->n][2], r->payload, r->payload_len);
    x->r[x->n].payload = x->str[x->n][2];
    x->r[x->n].last_error = keep_str(x, 3, r->last_error);
    x->r[x->n].last_error_class = keep_str(x, 4, r->last_error_class);
    x->r[x->n].ordering_key = keep_str(x, 5, r->ordering_key);
    x->n++;
    return 0;
}

static void exported_free(struct exported *x)
{
    int i, k;

    for (i = 0; i < x->n; i++)
        for (k = 0; k < 7; k++)
            free(x->str[i][k]);
    x->n = 0;
}

static void export_then_import_moves_the_queue(void **state)
{
    struct fx *f = *state;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), c = put_endpoint(f, "c", 0);
    int64_t d = put_endpoint(f, "d", 0);   /* never claimed: its row keeps its own payload */
    static const char body[] = "{\"z\":1, \"a\":\"caf\xc3\xa9 \\n \\u00e9\"}";   /* key order, UTF-8, escapes */
    struct store_enqueue e = {d, "e0", NULL, body, sizeof body - 1, 7, "k1", 0, 0, 0, 0, 0};
    struct exported x = {0}, y = {0};
    struct claimed cl;
    int64_t e2, e3, e4, e5, now = T0 + 5000;
    int i;

    begin(f);
    OK(f->w->ops->enqueue(f->w, &e, 1, T0));
    commit(f);
    e2 = enqueue_at(f, a, "e2", T0 + 1, NULL);
    e3 = enqueue_at(f, a, "e3", T0 + 2, NULL);
    e4 = enqueue_at(f, a, "e4", T0 + 3, NULL);
    e5 = enqueue_at(f, b, "e5", T0 + 4, NULL);
    cl = claim(f, a, T0 + 10, 10);
    assert_int_equal(cl.n, 3);   /* e2, e3, e4 */
    assert_int_equal(settle(f, e2, a, SETTLE_RETRY, 1, T0 + 20, 503, 1, "http_503", "Service Unavailable"), 1);
    assert_int_equal(settle(f, e4, a, SETTLE_DELIVERED, 1, T0 + 20, 200, 1, NULL, NULL), 1);
    cl = claim(f, b, T0 + 10, 10);
    assert_int_equal(settle(f, e5, b, SETTLE_DEAD, 3, T0 + 30, 0, 0, "timeout", "timed out after 30s"), 1);

    /* e3 is in flight: exported as what a restart would send, due now */
    OK(f->r->ops->export_rows(f->r, now, keep_row, &x));
    assert_int_equal(x.n, 4);
    assert_string_equal(x.r[0].event_id, "e0");
    assert_int_equal(x.r[0].endpoint_id, d);
    assert_int_equal(x.r[0].status, MSG_PENDING);
    assert_int_equal(x.r[0].payload_len, sizeof body - 1);
    assert_memory_equal(x.r[0].payload, body, sizeof body - 1);
    assert_string_equal(x.r[0].ordering_key, "k1");
    assert_null(x.r[0].event_type);
    assert_int_equal(x.r[0].created_at, T0);
    assert_int_equal(x.r[0].last_response_ms, -1);
    assert_string_equal(x.r[1].event_id, "e2");
    assert_int_equal(x.r[1].status, MSG_FAILED);
    assert_int_equal(x.r[1].attempt_count, 1);
    assert_int_equal(x.r[1].last_status_code, 503);
    assert_int_equal(x.r[1].last_response_ms, 42);
    assert_string_equal(x.r[1].last_error_class, "http_503");
    assert_string_equal(x.r[1].last_error, "Service Unavailable");
    assert_string_equal(x.r[1].event_type, "conversion");
    assert_int_equal(x.r[1].next_attempt_at, T0 + 1020);
    assert_string_equal(x.r[2].event_id, "e3");
    assert_int_equal(x.r[2].status, MSG_PENDING);
    assert_int_equal(x.r[2].next_attempt_at, now);
    assert_string_equal(x.r[3].event_id, "e5");
    assert_int_equal(x.r[3].status, MSG_DEAD_LETTER);
    assert_int_equal(x.r[3].attempt_count, 3);
    assert_int_equal(x.r[3].endpoint_id, b);
    (void)e3;

    /* into the same database: every row exists, nothing changes */
    begin(f);
    OK(f->w->ops->import_rows(f->w, x.r, (size_t)x.n));
    commit(f);
    for (i = 0; i < x.n; i++)
        assert_int_equal(x.r[i].duplicate, 1);
    assert_string_equal(status_of(f, e2), "failed");
    /* under another endpoint: stored as they are */
    for (i = 0; i < x.n; i++)
        x.r[i].endpoint_id = c;
    begin(f);
    OK(f->w->ops->import_rows(f->w, x.r, (size_t)x.n));
    commit(f);
    for (i = 0; i < x.n; i++)
        assert_int_equal(x.r[i].duplicate, 0);
    OK(f->r->ops->export_rows(f->r, now, keep_row, &y));
    assert_int_equal(y.n, 8);
    for (i = 0; i < 4; i++) {
        struct store_row *p = &x.r[i], *q = &y.r[4 + i];
        assert_int_equal(q->endpoint_id, c);
        assert_string_equal(q->event_id, p->event_id);
        assert_int_equal(q->status, p->status);
        assert_int_equal(q->attempt_count, p->attempt_count);
        assert_int_equal(q->max_attempts, p->max_attempts);
        assert_int_equal(q->created_at, p->created_at);
        assert_int_equal(q->next_attempt_at, p->next_attempt_at);
        assert_int_equal(q->last_status_code, p->last_status_code);
        assert_int_equal(q->last_response_ms, p->last_response_ms);
        assert_int_equal(q->payload_len, p->payload_len);
        assert_memory_equal(q->payload, p->payload, p->payload_len);
        assert_true((q->ordering_key == NULL) == (p->ordering_key == NULL));
        assert_true((q->last_error_class == NULL) == (p->last_error_class == NULL));
    }
    exported_free(&x);
    exported_free(&y);
}

/* The exported row of (ep, eid) in x, or NULL. */
static const struct store_row *row_of(const struct exported *x, int64_t ep, const char *eid)
{
    int i;

    for (i = 0; i < x->n; i++)
        if (x->r[i].endpoint_id == ep && strcmp(x->r[i].event_id, eid) == 0)
            return &x->r[i];
    return NULL;
}

/* A due time an enqueue named with deliver_at is a time on the wall
 * clock: a step either way leaves it, while a delay's moves. Once tried
 * (a retry) or requeued, the row's waits move again. Export and import
 * keep the mark. */
static void clock_step_keeps_deliver_at(void **state)
{
    struct fx *f = *state;
    const int64_t H = 3600000, AT = T0 + 600000;
    int64_t a = put_endpoint(f, "a", 0), b = put_endpoint(f, "b", 0), rows, g_due;
    struct store_enqueue v[4] = {{a, "fixed", NULL, "{\"a\":1}", 7, 3, NULL, 0, 0, 0, AT, 1},
                                 {a, "delay", NULL, "{\"a\":1}", 7, 3, NULL, 0, 0, 0, AT, 0},
                                 {a, "tried", NULL, "{\"a\":1}", 7, 3, NULL, 0, 0, 0, T0 + 1000, 1},
                                 {a, "requeued", NULL, "{\"a\":1}", 7, 3, NULL, 0, 0, 0, T0 + 1000, 1}};
    struct store_filter rq = {0, a, 0, MSG_BIT(MSG_DEAD_LETTER)};
    struct exported x = {0}, y = {0};
    struct claimed c;
    int64_t n = 0, gone = 0;
    int i;

    begin(f);
    OK(f->w->ops->enqueue(f->w, v, 4, T0));
    commit(f);
    /* "tried" fails its first attempt, "requeued" dies and is requeued */
    c = claim(f, a, T0 + 1000, 10);
    assert_int_equal(c.n, 2);
    assert_true(settle(f, v[2].id, a, SETTLE_RETRY, 1, T0 + 1000, 503, 1, "http_503", "HTTP 503"));
    assert_true(settle(f, v[3].id, a, SETTLE_DEAD, 1, T0 + 1000, 400, 1, "http_400", "HTTP 400"));
    begin(f);
    OK(f->w->ops->requeue(f->w, &rq, T0 + 1500, &n, &gone));
    commit(f);
    assert_int_equal(n, 1);
    assert_int_equal(get(f, v[3].id).m.next_attempt_at, T0 + 1500);
    g_due = get(f, v[2].id).m.next_attempt_at;

    /* exported with the mark; imported under b, the copies keep it */
    OK(f->r->ops->export_rows(f->r, T0 + 1600, keep_row, &x));
    assert_int_equal(row_of(&x, a, "fixed")->deliver_at, AT);
    assert_int_equal(row_of(&x, a, "delay")->deliver_at, 0);
    for (i = 0; i < x.n; i++)
        x.r[i].endpoint_id = b;
    begin(f);
    OK(f->w->ops->import_rows(f->w, x.r, (size_t)x.n));
    commit(f);

    begin(f);
    OK(f->w->ops->clock_step(f->w, -H, 0, &rows));
    commit(f);
    assert_int_equal(get(f, v[0].id).m.next_attempt_at, AT);
    assert_int_equal(get(f, v[0].id).m.created_at, T0 - H);   /* its age stays true */
    assert_int_equal(get(f, v[1].id).m.next_attempt_at, AT - H);
    assert_int_equal(get(f, v[2].id).m.next_attempt_at, g_due - H);
    assert_int_equal(get(f, v[3].id).m.next_attempt_at, T0 + 1500 - H);
    /* by the stepped clock the waits are due when they were; the time not */
    c = claim(f, a, AT - H, 10);
    assert_int_equal(c.n, 3);
    for (i = 0; i < c.n; i++)
        assert_int_not_equal(c.id[i], v[0].id);

    begin(f);
    OK(f->w->ops->clock_step(f->w, 2 * H, 0, &rows));
    commit(f);
    assert_int_equal(get(f, v[0].id).m.next_attempt_at, AT);
    OK(f->r->ops->export_rows(f->r, T0 + H, keep_row, &y));
    assert_int_equal(row_of(&y, b, "fixed")->next_attempt_at, AT);
    assert_int_equal(row_of(&y, b, "fixed")->deliver_at, AT);
    assert_int_equal(row_of(&y, b, "delay")->next_attempt_at, AT + H);
    assert_int_equal(row_of(&y, b, "tried")->next_attempt_at, g_due + H);
    assert_int_equal(row_of(&y, b, "requeued")->next_attempt_at, T0 + 1500 + H);
    /* a forward step past the time: due at once by the new clock */
    c = claim(f, a, T0 + H, 10);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.id[0], v[0].id);
    exported_free(&x);
    exported_free(&y);
}

/* ---- several nodes on one database (backends with node_beat) ---- */

#ifdef HOOKD_WITH_PG
/* A second node on f's database: its own name, the same schema. */
static struct store *second_node(struct fx *f, const char *name, struct config *c2)
{
    struct store *w2 = NULL;
    char err[512];

    *c2 = f->cfg;
    c2->pg_node_name = (char *)name;
    if (store_open(c2, STORE_WRITER, &w2, err, sizeof err) < 0)
        fprintf(stderr, "second node: %s\n", err);
    return w2;
}
#endif

static int many_none(void *ctx, size_t k, const struct store_claimed *row)
{
    (void)ctx;
    (void)k;
    (void)row;
    return 0;
}

/* A result counts only for the node that claimed the row; a node silent
 * past its lease loses its rows to the others and comes back as a new
 * node whose old results change nothing. */
static void shared_results_count_for_the_claiming_node_only(void **state)
{
#ifdef HOOKD_WITH_PG
    struct fx *f = *state;
    struct config c2;
    struct store *w2, *w3;
    struct store_node nd;
    int64_t a, x;
    char sql[256];

    if (!f->w->ops->node_beat)
        return;
    a = put_endpoint(f, "a", 0);
    x = enqueue_at(f, a, "x", T0, NULL);
    assert_non_null(w2 = second_node(f, "n2", &c2));
    assert_int_equal(claim(f, a, T0, 10).n, 1);
    /* node 2 cannot settle node 1's row */
    {
        struct store_settle s = {.id = x, .endpoint_id = a, .verdict = SETTLE_DELIVERED, .attempts = 1,
                                 .at = T0 + 1, .status_code = 200, .response_ms = 5, .ring_slot = -1};
        OK(w2->ops->begin(w2, 0));
        OK(w2->ops->settle(w2, &s, 1));
        OK(w2->ops->commit(w2));
        assert_int_equal(s.applied, 0);
    }
    assert_string_equal(status_of(f, x), "in_flight");
    /* another process as n1 is refused: it would take n1's rows */
    assert_null(w3 = second_node(f, "n1", &c2));
    OK(w2->ops->node_beat(w2, &nd));
    assert_int_equal(nd.nodes, 2);
    assert_int_equal(nd.taken_over, 0);
    /* n1 goes silent past its lease: n2 takes its row over */
    snprintf(sql, sizeof sql, "UPDATE %s.hookd_node SET heartbeat_at = now() - interval '1 hour' WHERE name = 'n1'",
             f->pg_schema);
    assert_int_equal(pg_admin(sql), 0);
    OK(w2->ops->node_beat(w2, &nd));
    assert_int_equal(nd.taken_over, 1);
    assert_int_equal(nd.dead_nodes, 1);
    assert_int_equal(nd.nodes, 1);
    assert_string_equal(status_of(f, x), "pending");
    /* n2 claims it again; n1's late result changes nothing */
    {
        struct store_claim_want w = {.endpoint_id = a, .limit = 5, .checked = 1};
        OK(w2->ops->begin(w2, 0));
        OK(w2->ops->claim_many(w2, T0 + 2, &w, 1, many_none, NULL));
        OK(w2->ops->commit(w2));
        assert_int_equal(w.n, 1);
    }
    assert_false(settle(f, x, a, SETTLE_DELIVERED, 1, T0 + 3, 200, 1, NULL, NULL));
    assert_string_equal(status_of(f, x), "in_flight");
    /* n1's next heartbeat finds it was declared dead: a new node */
    OK(f->w->ops->node_beat(f->w, &nd));
    assert_int_equal(nd.lease_lost, 1);
    assert_int_equal(nd.nodes, 2);
    /* n2 stops cleanly with x still in flight (its result unrecorded):
     * its row goes at once, and x is anyone's at the next heartbeat */
    store_close(w2);
    OK(f->w->ops->node_beat(f->w, &nd));
    assert_int_equal(nd.taken_over, 1);
    assert_int_equal(nd.nodes, 1);
    assert_string_equal(status_of(f, x), "pending");
#else
    (void)state;
#endif
}

/* Shared, with another live node: a node whose clock stepped moves only
 * the rows its own clock scheduled (enqueued or claimed by it last), and
 * the shared breaker only if it is the lead. Both nodes stepping (one
 * host) moves every row once and the breaker once. */
static void shared_clock_step_moves_only_this_nodes_rows(void **state)
{
#ifdef HOOKD_WITH_PG
    struct fx *f = *state;
    const int64_t H = 3600000;
    struct config c2;
    struct store *w2;
    struct store_node nd;
    int64_t a, x, y, p, q, rows = -1;
    struct store_health h = {0}, back = {0};

    if (!f->w->ops->node_beat)
        return;
    a = put_endpoint(f, "a", 0);
    x = enqueue_at(f, a, "x", T0, NULL);
    y = enqueue_at(f, a, "y", T0, NULL);
    p = enqueue_at(f, a, "p", T0 + 1, NULL);
    assert_non_null(w2 = second_node(f, "n2", &c2));
    OK(f->w->ops->node_beat(f->w, &nd));
    assert_int_equal(nd.lead, 1);
    OK(w2->ops->node_beat(w2, &nd));
    assert_int_equal(nd.lead, 0);
    {
        struct store_enqueue e = {a, "q", NULL, "{}", 2, 3, NULL, 0, 0, 0, 0, 0};
        OK(w2->ops->begin(w2, 1));
        OK(w2->ops->enqueue(w2, &e, 1, T0 + 2));   /* by n2's clock */
        OK(w2->ops->commit(w2));
        q = e.id;
    }
    assert_int_equal(claim(f, a, T0, 1).n, 1);   /* x, by n1 */
    {
        struct store_claim_want w = {.endpoint_id = a, .limit = 1, .checked = 1};
        struct store_settle s = {.id = y, .endpoint_id = a, .verdict = SETTLE_RETRY, .attempts = 1,
                                 .next_attempt_at = T0 + 2000, .at = T0 + 10, .status_code = 503,
                                 .response_ms = 5, .ring_slot = -1, .error_class = "http_503", .error = "HTTP 503"};
        OK(w2->ops->begin(w2, 0));
        OK(w2->ops->claim_many(w2, T0, &w, 1, many_none, NULL));   /* y, by n2 */
        OK(w2->ops->settle(w2, &s, 1));
        OK(w2->ops->commit(w2));
        assert_int_equal(w.n, 1);
        assert_int_equal(s.applied, 1);
    }
    assert_true(settle(f, x, a, SETTLE_RETRY, 1, T0 + 10, 503, 1, "http_503", "HTTP 503"));   /* due T0 + 1010 */
    h.endpoint_id = a;
    h.endpoint_url = "https://hooks.example.com/in";
    h.state = BREAKER_OPEN;
    h.opened_at = T0 + 5;
    h.cooldown_ms = 2000;
    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    commit(f);
    /* n1, the lead, steps: its rows and the breaker move */
    begin(f);
    OK(f->w->ops->clock_step(f->w, -H, 1, &rows));
    commit(f);
    assert_int_equal(rows, 2);
    assert_int_equal(get(f, x).m.next_attempt_at, T0 + 1010 - H);
    assert_int_equal(get(f, x).m.created_at, T0 - H);
    assert_int_equal(get(f, p).m.next_attempt_at, T0 + 1 - H);  /* n1 enqueued it */
    assert_int_equal(get(f, y).m.next_attempt_at, T0 + 2000);   /* n2's clock wrote these */
    assert_int_equal(get(f, q).m.next_attempt_at, T0 + 2);
    back.endpoint_id = a;
    OK(f->w->ops->health_load(f->w, keep_health, &back));
    assert_int_equal(back.opened_at, T0 + 5 - H);
    /* n2 on the same host steps too: its rows move, the breaker not again */
    OK(w2->ops->begin(w2, 0));
    OK(w2->ops->clock_step(w2, -H, 1, &rows));
    OK(w2->ops->commit(w2));
    assert_int_equal(rows, 2);
    assert_int_equal(get(f, y).m.next_attempt_at, T0 + 2000 - H);
    assert_int_equal(get(f, q).m.next_attempt_at, T0 + 2 - H);
    assert_int_equal(get(f, x).m.next_attempt_at, T0 + 1010 - H);
    OK(f->w->ops->health_load(f->w, keep_health, &back));
    assert_int_equal(back.opened_at, T0 + 5 - H);
    store_close(w2);
#else
    (void)state;
#endif
}

/* The breaker is the health row's: a claim that did not read it under
 * lock takes nothing while another node has it open, and says so; the
 * probe out is every node's to see. */
static void shared_breaker_blocks_every_node(void **state)
{
    struct fx *f = *state;
    int64_t a, x;
    struct store_health h, got;
    struct store_claim_want w;

    if (!f->w->ops->health_lock)
        return;
    a = put_endpoint(f, "a", 0);
    x = enqueue_at(f, a, "x", T0, NULL);
    memset(&h, 0, sizeof h);
    h.endpoint_id = a;
    h.endpoint_url = "http://a";
    h.state = BREAKER_OPEN;
    h.consecutive_failures = 10;
    h.failure_threshold = 10;
    h.opened_at = T0;
    h.cooldown_ms = 60000;
    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    commit(f);
    w = (struct store_claim_want){.endpoint_id = a, .limit = 5};
    begin(f);
    OK(f->w->ops->claim_many(f->w, T0 + 1, &w, 1, many_none, NULL));
    commit(f);
    assert_int_equal(w.n, 0);
    assert_int_equal(w.blocked, 1);
    assert_string_equal(status_of(f, x), "pending");
    /* under lock: the state, and the probe this node takes */
    memset(&got, 0, sizeof got);
    got.endpoint_id = a;
    begin(f);
    OK(f->w->ops->health_lock(f->w, &a, 1, keep_health, &got));
    assert_int_equal(got.state, BREAKER_OPEN);
    assert_int_equal(got.consecutive_failures, 10);
    assert_int_equal(got.probe_out, 0);
    h.state = BREAKER_HALF_OPEN;
    h.probe_out = 1;
    OK(f->w->ops->health_save(f->w, &h, 1));
    w = (struct store_claim_want){.endpoint_id = a, .limit = 1, .checked = 1};
    OK(f->w->ops->claim_many(f->w, T0 + 60001, &w, 1, many_none, NULL));
    commit(f);
    assert_int_equal(w.n, 1);
    begin(f);
    OK(f->w->ops->health_lock(f->w, &a, 1, keep_health, &got));
    commit(f);
    assert_int_equal(got.state, BREAKER_HALF_OPEN);
    assert_int_equal(got.probe_out, 1);
    /* paused on another node: blocked too */
    h.state = BREAKER_CLOSED;
    h.probe_out = 0;
    enqueue_at(f, a, "y", T0, NULL);
    begin(f);
    OK(f->w->ops->health_save(f->w, &h, 1));
    OK(f->w->ops->endpoint_pause(f->w, a, 1, "operator", T0));
    commit(f);
    w = (struct store_claim_want){.endpoint_id = a, .limit = 5};
    begin(f);
    OK(f->w->ops->claim_many(f->w, T0 + 60002, &w, 1, many_none, NULL));
    commit(f);
    assert_int_equal(w.n, 0);
    assert_int_equal(w.blocked, 1);
}

#define TABLE(setup)                                                                            \
    cmocka_unit_test_setup_teardown(enqueue_dedups_per_endpoint, setup, teardown),             \
        cmocka_unit_test_setup_teardown(claim_takes_due_rows_oldest_first, setup, teardown),   \
        cmocka_unit_test_setup_teardown(claim_keeps_each_key_in_order, setup, teardown),       \
        cmocka_unit_test_setup_teardown(claim_many_takes_what_claim_would, setup, teardown),   \
        cmocka_unit_test_setup_teardown(attempt_log_keeps_request_and_response, setup, teardown), \
        cmocka_unit_test_setup_teardown(a_delivering_first_attempt_reads_as_logged, setup, teardown), \
        cmocka_unit_test_setup_teardown(settle_changes_only_rows_in_flight, setup, teardown),  \
        cmocka_unit_test_setup_teardown(release_returns_untried_rows, setup, teardown),        \
        cmocka_unit_test_setup_teardown(recover_returns_in_flight_rows, setup, teardown),      \
        cmocka_unit_test_setup_teardown(clock_step_moves_waits_not_events, setup, teardown),   \
        cmocka_unit_test_setup_teardown(endpoint_delete_strands_nothing, setup, teardown),     \
        cmocka_unit_test_setup_teardown(requeue_and_purge_take_what_they_say, setup, teardown), \
        cmocka_unit_test_setup_teardown(requeue_keeps_every_attempt, setup, teardown), \
        cmocka_unit_test_setup_teardown(search_filters_and_pages, setup, teardown), \
        cmocka_unit_test_setup_teardown(search_stops_below_the_window, setup, teardown), \
        cmocka_unit_test_setup_teardown(search_starts_at_the_window_end, setup, teardown), \
        cmocka_unit_test_setup_teardown(search_endpoint_reads_spans, setup, teardown), \
        cmocka_unit_test_setup_teardown(erase_keeps_what_hookd_did, setup, teardown), \
        cmocka_unit_test_setup_teardown(erase_leaves_no_bytes_in_the_files, setup, teardown), \
        cmocka_unit_test_setup_teardown(requeue_skips_rows_of_deleted_endpoints, setup, teardown), \
        cmocka_unit_test_setup_teardown(endpoint_put_pauses_only_when_told, setup, teardown), \
        cmocka_unit_test_setup_teardown(expire_in_chunks, setup, teardown),                    \
        cmocka_unit_test_setup_teardown(rollback_undoes_everything, setup, teardown),          \
        cmocka_unit_test_setup_teardown(endpoints_round_trip, setup, teardown),                \
        cmocka_unit_test_setup_teardown(health_persists_and_rollups_read_back, setup, teardown), \
        cmocka_unit_test_setup_teardown(latency_window_holds_only_real_responses, setup, teardown), \
        cmocka_unit_test_setup_teardown(history_adds_sets_expires, setup, teardown), \
        cmocka_unit_test_setup_teardown(latency_ring_replaces_and_trims, setup, teardown),     \
        cmocka_unit_test_setup_teardown(latency_samples_of_one_settle_in_order, setup, teardown), \
        cmocka_unit_test_setup_teardown(dead_letters_group_by_class, setup, teardown),         \
        cmocka_unit_test_setup_teardown(stats_count_and_find_the_oldest, setup, teardown),     \
        cmocka_unit_test_setup_teardown(delayed_rows_wait_their_time, setup, teardown),        \
        cmocka_unit_test_setup_teardown(export_then_import_moves_the_queue, setup, teardown),          \
        cmocka_unit_test_setup_teardown(clock_step_keeps_deliver_at, setup, teardown),          \
        cmocka_unit_test_setup_teardown(shared_results_count_for_the_claiming_node_only, setup, teardown), \
        cmocka_unit_test_setup_teardown(shared_clock_step_moves_only_this_nodes_rows, setup, teardown), \
        cmocka_unit_test_setup_teardown(shared_breaker_blocks_every_node, setup, teardown)

int main(void)
{
    const struct CMUnitTest mem[] = {TABLE(setup_mem)};
    const struct CMUnitTest sqlite[] = {TABLE(setup_sqlite)};
    int failed = 0;

    failed += cmocka_run_group_tests_name("store behaviour: memory", mem, NULL, NULL);
    failed += cmocka_run_group_tests_name("store behaviour: sqlite", sqlite, NULL, NULL);
#ifdef HOOKD_WITH_PG
    {
        const struct CMUnitTest pg[] = {TABLE(setup_pg)};
        /* make unit starts a private cluster (tests/pg/cluster.sh); run
         * by hand without one, the table cannot run and says so */
        if (!getenv("HOOKD_TEST_PG")) {
            fprintf(stderr, "store behaviour: postgres: HOOKD_TEST_PG is not set "
                            "(run through make unit, or tests/pg/cluster.sh run CMD)\n");
            return 1;
        }
        failed += cmocka_run_group_tests_name("store behaviour: postgres", pg, NULL, NULL);
    }
#endif
    return failed ? 1 : 0;
}
