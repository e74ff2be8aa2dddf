/* rawcycle.c - the storage floor: what SQLite alone costs per delivered
 * message, with no daemon around it. hookd's own store module (linked
 * from libhookd.a, called through include/store.h) runs the life of N
 * messages single-threaded, so the floor cannot drift from hookd's SQL:
 *
 *   rawcycle -c HOOKD.INI [-n 3000] [-E 1000] [-b 20] [-p 64] [-w 200] [-t TAG]
 *
 * The configuration is hookd's own file: its [storage] path and
 * synchronous, its endpoints (every [endpoint.X]; they are stored as
 * hookd stores them unless the database already has them). store_open
 * creates and migrates the database exactly as hookd's writer does (or
 * opens one hookd created). Then, per message, the three row transitions
 * of a delivery, in the writer's transaction shapes:
 *
 *   enqueue   E messages a transaction (round robin over the endpoints,
 *             loadgen's event ids and payload bytes), begun durable: its
 *             commit is synchronous as configured (full: an fdatasync).
 *   drain     rounds like writer_round's while a queue drains: one
 *             transaction, not durable (synchronous=normal in WAL: no
 *             fsync at commit, as hookd's result rounds), settling every
 *             row the previous round claimed (delivered at the first
 *             attempt: the row's delivered UPDATE with the request folded
 *             in, and a latency-ring sample) and claiming up to B rows,
 *             the endpoints visited round robin from a rotating start,
 *             at most P an endpoint (the claim SELECT and the mark
 *             UPDATEs; next_due when an endpoint gave fewer than asked).
 *   checkpoint after every transaction when the store says it is due
 *             (store_checkpoint_if_due), as the writer does after a round.
 *
 * W messages go through the whole cycle first, uncounted (cgdrain.sh -w):
 * the callgrind counters are zeroed after them. Prints key=value lines:
 * CPU (getrusage user + system) per message for each phase and in total,
 * the phases' wall time and rates, and the shape (rounds, rows a round).
 * Under valgrind --tool=callgrind, each phase is one function (rc_enqueue,
 * rc_claim, rc_settle, rc_begin + rc_commit, rc_checkpoint): their
 * inclusive counts over N are the instructions per message
 * (tests/bench/cgfloor.sh runs it so). */
#include "bench_common.h"
#include "config.h"
#include "log.h"
#include "store.h"

#include <getopt.h>
#include <sys/resource.h>
#include <sys/time.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS
#endif

#define NOINLINE __attribute__((noinline))

enum phase { PH_ENQUEUE = 0, PH_CLAIM, PH_SETTLE, PH_COMMIT, PH_CHECKPOINT, PH__N };
static const char *const phase_name[PH__N] = {"enqueue", "claim", "settle", "commit", "checkpoint"};

struct ep {
    int64_t id;
    const char *url;
    int64_t ring_next;
    int done;                    /* next_due said nothing is waiting */
};

struct claimed {
    int64_t id, endpoint_id;
    size_t ep;                   /* index in the endpoint array */
};

struct claim_out {
    struct claimed *v;
    size_t n, cap;
    size_t ep;
};

static struct store *st;
static int64_t cpu_us[PH__N], wall_us[PH__N];

static void die_store(const char *what)
{
    fprintf(stderr, "rawcycle: %s: %s\n", what, st->errmsg);
    exit(2);
}

static int64_t cpu_now_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* the measure around each phase call, outside the counted functions */
struct mark {
    int64_t cpu, wall;
};
static struct mark mark_now(void)
{
    struct mark m = {cpu_now_us(), bench_mono_us()};
    return m;
}
static void mark_add(enum phase p, struct mark m, int counting)
{
    if (!counting)
        return;
    cpu_us[p] += cpu_now_us() - m.cpu;
    wall_us[p] += bench_mono_us() - m.wall;
}

/* ---- the phases: each one function, so callgrind attributes them ---- */

static NOINLINE int rc_enqueue(struct store_enqueue *v, size_t n, int64_t now)
{
    if (store_begin(st, 1) < 0 || st->ops->enqueue(st, v, n, now) < 0 || store_commit(st) < 0)
        return -1;
    return 0;
}

static int keep_row(void *ctx, const struct store_claimed *row)
{
    struct claim_out *o = ctx;

    if (o->n == o->cap)
        return -1;   /* never: the budget bounds the rows */
    o->v[o->n].id = row->id;
    o->v[o->n].endpoint_id = row->endpoint_id;
    o->v[o->n].ep = o->ep;
    o->n++;
    return 0;
}

/* dispatch_claim's loop over the endpoints, without its admission rules
 * (every endpoint is healthy and has room for p) */
static NOINLINE int rc_claim(struct ep *eps, size_t k, size_t start, int64_t now, int64_t budget, int64_t p,
                             struct claim_out *o)
{
    size_t i;

    for (i = 0; i < k && budget > 0; i++) {
        struct ep *e = &eps[(start + i) % k];
        int64_t limit = p < budget ? p : budget, due;
        size_t before = o->n;
        int n;

        if (e->done)
            continue;
        o->ep = (start + i) % k;
        if (st->ops->claim(st, e->id, now, (int)limit, 0, keep_row, o, &n) < 0)
            return -1;
        if (n < limit) {
            if (st->ops->next_due(st, e->id, 0, &due) < 0)
                return -1;
            e->done = due == INT64_MAX;
        }
        budget -= (int64_t)(o->n - before);
    }
    return 0;
}

static NOINLINE int rc_settle(struct store_settle *v, size_t n)
{
    return st->ops->settle(st, v, n);
}

static NOINLINE int rc_begin(void)
{
    return store_begin(st, 0);
}

static NOINLINE int rc_commit(void)
{
    return store_commit(st);
}

static NOINLINE int rc_checkpoint(void)
{
    return store_checkpoint_if_due(st);
}

/* ---- driver ---- */

struct run {
    struct ep *eps;
    size_t k;
    long e_batch, b, p;
    int max_attempts;
    int64_t latency_samples;
    const char *tag;
    /* shape, counted */
    long rounds, claims_total;
    long enqueue_txns;
};

static void checkpoint(int counting)
{
    struct mark m = mark_now();

    if (rc_checkpoint() < 0)
        die_store("checkpoint");
    mark_add(PH_CHECKPOINT, m, counting);
}

/* n messages through enqueue, then drained: every one claimed and settled */
static void cycle(struct run *r, long n, long first, int counting)
{
    struct store_enqueue *ev = calloc((size_t)r->e_batch, sizeof *ev);
    char (*ids)[96] = malloc((size_t)r->e_batch * sizeof *ids);
    char (*pls)[256] = malloc((size_t)r->e_batch * sizeof *pls);
    struct claim_out prev = {0}, cur = {0};
    struct store_settle *sv = calloc((size_t)r->b, sizeof *sv);
    long i, j, settled = 0;
    size_t start = 0, x;
    struct mark m;

    prev.cap = cur.cap = (size_t)r->b;
    prev.v = calloc(prev.cap, sizeof *prev.v);
    cur.v = calloc(cur.cap, sizeof *cur.v);
    if (!ev || !ids || !pls || !sv || !prev.v || !cur.v) {
        fprintf(stderr, "rawcycle: out of memory\n");
        exit(2);
    }
    for (x = 0; x < r->k; x++)
        r->eps[x].done = 0;

    /* enqueue: the rows as loadgen sends them (message i of the run on
     * "connection" i % 4, the endpoints round robin) */
    for (i = 0; i < n; i += r->e_batch) {
        long m_n = n - i < r->e_batch ? n - i : r->e_batch;
        int64_t now = bench_wall_us() / 1000;
        for (j = 0; j < m_n; j++) {
            long g = first + i + j;
            struct store_enqueue *e = &ev[j];
            bench_event_id(ids[j], sizeof ids[j], r->tag, (int)(g % 4), g / 4);
            int len = bench_payload(pls[j], sizeof pls[j], g / 4);
            memset(e, 0, sizeof *e);
            e->endpoint_id = r->eps[(size_t)g % r->k].id;
            e->event_id = ids[j];
            e->payload = pls[j];
            e->payload_len = (size_t)len;
            e->max_attempts = r->max_attempts;
        }
        m = mark_now();
        if (rc_enqueue(ev, (size_t)m_n, now) < 0)
            die_store("enqueue");
        mark_add(PH_ENQUEUE, m, counting);
        for (j = 0; j < m_n; j++)
            if (ev[j].duplicate) {
                fprintf(stderr, "rawcycle: event id %s exists: use another -t\n", ev[j].event_id);
                exit(2);
            }
        if (counting)
            r->enqueue_txns++;
        checkpoint(counting);
    }

    /* drain: each round settles what the last one claimed and claims more */
    while (settled < n) {
        int64_t now = bench_wall_us() / 1000;

        m = mark_now();
        if (rc_begin() < 0)
            die_store("begin");
        mark_add(PH_COMMIT, m, counting);
        for (x = 0; x < prev.n; x++) {
            struct claimed *c = &prev.v[x];
            struct ep *e = &r->eps[c->ep];
            sv[x] = (struct store_settle){.id = c->id, .endpoint_id = c->endpoint_id, .verdict = SETTLE_DELIVERED,
                                          .attempts = 1, .at = now, .status_code = 204, .response_ms = 1,
                                          .sample = 1, .ring_slot = e->ring_next, .method = "POST", .url = e->url};
            e->ring_next = (e->ring_next + 1) % r->latency_samples;
        }
        if (prev.n) {
            m = mark_now();
            if (rc_settle(sv, prev.n) < 0)
                die_store("settle");
            mark_add(PH_SETTLE, m, counting);
            for (x = 0; x < prev.n; x++)
                if (!sv[x].applied) {
                    fprintf(stderr, "rawcycle: row %lld not in flight at settle\n", (long long)sv[x].id);
                    exit(2);
                }
            settled += (long)prev.n;
        }
        cur.n = 0;
        if (settled < n) {   /* rows are left to claim */
            m = mark_now();
            if (rc_claim(r->eps, r->k, start, now, r->b, r->p, &cur) < 0)
                die_store("claim");
            mark_add(PH_CLAIM, m, counting);
            start = (start + 1) % r->k;
        }
        m = mark_now();
        if (rc_commit() < 0)
            die_store("commit");
        mark_add(PH_COMMIT, m, counting);
        checkpoint(counting);
        if (counting) {
            r->rounds++;
            r->claims_total += (long)cur.n;
        }
        if (!prev.n && !cur.n && settled < n) {
            fprintf(stderr, "rawcycle: nothing to claim with %ld of %ld settled (rows of another run?)\n",
                    settled, n);
            exit(2);
        }
        {
            struct claim_out t = prev;
            prev = cur;
            cur = t;
        }
    }
    free(ev);
    free(ids);
    free(pls);
    free(sv);
    free(prev.v);
    free(cur.v);
}

struct found {
    struct ep *eps;
    const char **names;
    size_t k;
};

static int found_endpoint(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    struct found *f = ctx;
    size_t i;

    (void)from_config;
    for (i = 0; i < f->k; i++)
        if (strcmp(f->names[i], d->name) == 0)
            f->eps[i].id = id;
    return 0;
}

int main(int argc, char **argv)
{
    const char *ini = NULL, *tag = "rc";
    long n = 3000, warm = 200, e_batch = 1000, b = 20, p = 64;
    struct config c;
    struct run r;
    struct found f;
    char err[512];
    int o, ph;
    size_t i;
    int64_t now, total_cpu = 0, drain_wall, waiting = 0;

    while ((o = getopt(argc, argv, "c:n:E:b:p:w:t:")) != -1) {
        switch (o) {
        case 'c': ini = optarg; break;
        case 'n': n = atol(optarg); break;
        case 'E': e_batch = atol(optarg); break;
        case 'b': b = atol(optarg); break;
        case 'p': p = atol(optarg); break;
        case 'w': warm = atol(optarg); break;
        case 't': tag = optarg; break;
        default: goto usage;
        }
    }
    if (!ini || n < 1 || warm < 0 || e_batch < 1 || b < 1 || p < 1)
        goto usage;
    log_set_level(LOG_WARN);
    if (config_init(&c) < 0 || config_load(&c, ini, err, sizeof err) < 0) {
        fprintf(stderr, "rawcycle: %s\n", err);
        return 2;
    }
    if (c.backend != CFG_BACKEND_SQLITE || c.n_endpoints == 0) {
        fprintf(stderr, "rawcycle: %s: needs the sqlite backend and at least one [endpoint.X]\n", ini);
        return 2;
    }
    if (store_open(&c, STORE_WRITER, &st, err, sizeof err) < 0) {
        fprintf(stderr, "rawcycle: %s\n", err);
        return 2;
    }
    memset(&r, 0, sizeof r);
    r.k = c.n_endpoints;
    r.eps = calloc(r.k, sizeof *r.eps);
    if (!r.eps)
        return 2;
    for (i = 0; i < r.k; i++)
        r.eps[i].url = c.endpoints[i].url;
    /* the endpoints as hookd's start stores them (admin_sync_config):
     * the ones already there are found by URL, the others put */
    f.eps = r.eps;
    f.k = r.k;
    f.names = calloc(r.k, sizeof *f.names);
    if (!f.names)
        return 2;
    for (i = 0; i < r.k; i++)
        f.names[i] = c.endpoints[i].name;
    now = bench_wall_us() / 1000;
    /* as hookd's start: rows left in flight go back to the queue */
    if (store_begin(st, 1) < 0 || st->ops->recover(st, now, &waiting) < 0 ||
        st->ops->latency_ring_size(st, c.latency_samples) < 0 || st->ops->endpoints_load(st, found_endpoint, &f) < 0)
        die_store("start");
    for (i = 0; i < r.k; i++) {
        int created;
        if (r.eps[i].id == 0 && st->ops->endpoint_put(st, &c.endpoints[i], 1, now, &r.eps[i].id, &created) < 0)
            die_store("endpoint_put");
    }
    /* the drain counts the rows it settles: another run's waiting rows
     * would be claimed with this one's */
    for (i = 0; i < r.k; i++) {
        int64_t due;
        if (st->ops->next_due(st, r.eps[i].id, 0, &due) < 0)
            die_store("start: next due");
        if (due != INT64_MAX) {
            fprintf(stderr, "rawcycle: endpoint %s has waiting rows: needs a database with an empty queue\n",
                    c.endpoints[i].name);
            return 2;
        }
    }
    if (store_commit(st) < 0)
        die_store("start: commit");
    r.e_batch = e_batch;
    r.b = b;
    r.p = p;
    r.max_attempts = (int)c.dflt.max_attempts;
    r.latency_samples = c.latency_samples;
    r.tag = tag;

    if (warm > 0)
        cycle(&r, warm, 0, 0);
    CALLGRIND_ZERO_STATS;
    cycle(&r, n, warm, 1);
    CALLGRIND_DUMP_STATS;

    printf("floor_endpoints=%zu messages=%ld enqueue_batch=%ld round_budget=%ld per_endpoint=%ld "
           "synchronous=%d enqueue_txns=%ld drain_rounds=%ld rows_per_round=%.1f\n",
           r.k, n, e_batch, b, p, c.synchronous, r.enqueue_txns, r.rounds,
           r.rounds ? (double)r.claims_total / (double)r.rounds : 0.0);
    for (ph = 0; ph < PH__N; ph++) {
        total_cpu += cpu_us[ph];
        printf("floor_us_%s=%.2f ", phase_name[ph], (double)cpu_us[ph] / (double)n);
    }
    drain_wall = wall_us[PH_CLAIM] + wall_us[PH_SETTLE] + wall_us[PH_COMMIT];
    printf("floor_us_total=%.2f floor_enqueue_rate=%.0f floor_drain_rate=%.0f\n", (double)total_cpu / (double)n,
           wall_us[PH_ENQUEUE] ? (double)n * 1e6 / (double)wall_us[PH_ENQUEUE] : 0.0,
           drain_wall ? (double)n * 1e6 / (double)drain_wall : 0.0);
    store_close(st);
    config_free(&c);
    free(r.eps);
    free(f.names);
    return 0;
usage:
    fprintf(stderr, "usage: rawcycle -c HOOKD.INI [-n N] [-E enqueues/txn] [-b rows/round] [-p per endpoint] "
                    "[-w warm-up] [-t TAG]\n");
    return 2;
}
