/* export.c - hookd export and hookd import (export.h). Memory stays
 * bounded by the endpoints: rows stream through one line buffer (export)
 * or one batch of 1000 parsed lines (import). */
#include "export.h"
#include "config.h"
#include "export_fmt.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HOOKD_VERSION
#define HOOKD_VERSION "unknown"
#endif

#define IMPORT_BATCH 1000

/* endpoint id <-> name (and the URL a health row needs): by id through
 * a binary search (export sorts the list once), by name through a hash
 * of indices (import adds as it goes; 50,000 endpoints must not cost a
 * sort each) */
struct epmap {
    struct epent {
        int64_t id;
        char name[ENDPOINT_NAME_MAX + 1];
        char *url;
        int created;             /* import: made by this import */
    } *v;
    size_t n, cap;
    size_t *slot, nslot;         /* index + 1; 0: empty. nslot a power of two */
};

static size_t name_hash(const char *s)
{
    return (size_t)util_hash(s, strlen(s), 0);
}

static void slot_put(struct epmap *m, size_t i)
{
    size_t k = name_hash(m->v[i].name) & (m->nslot - 1);

    while (m->slot[k])
        k = (k + 1) & (m->nslot - 1);
    m->slot[k] = i + 1;
}

static struct epent *epmap_add(struct epmap *m, int64_t id, const char *name, const char *url)
{
    struct epent *e;
    size_t i;

    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        struct epent *nv = realloc(m->v, nc * sizeof *nv);
        size_t *ns = calloc(nc * 2, sizeof *ns);
        if (!nv || !ns) {
            free(ns);
            if (nv)
                m->v = nv;
            return NULL;
        }
        m->v = nv;
        m->cap = nc;
        free(m->slot);
        m->slot = ns;
        m->nslot = nc * 2;
        for (i = 0; i < m->n; i++)
            slot_put(m, i);
    }
    e = &m->v[m->n];
    memset(e, 0, sizeof *e);
    e->id = id;
    util_strlcpy(e->name, name, sizeof e->name);
    if (!(e->url = strdup(url)))
        return NULL;
    slot_put(m, m->n++);
    return e;
}

static struct epent *epmap_by_name(struct epmap *m, const char *name)
{
    size_t k;

    if (!m->nslot)
        return NULL;
    for (k = name_hash(name) & (m->nslot - 1); m->slot[k]; k = (k + 1) & (m->nslot - 1))
        if (strcmp(m->v[m->slot[k] - 1].name, name) == 0)
            return &m->v[m->slot[k] - 1];
    return NULL;
}

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const struct epent *)a)->id, y = ((const struct epent *)b)->id;
    return x < y ? -1 : x > y;
}

/* export only: after sorting by id (the name slots are stale then) */
static struct epent *epmap_by_id(struct epmap *m, int64_t id)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].id == id)
            return &m->v[mid];
        if (m->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void epmap_free(struct epmap *m)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        free(m->v[i].url);
    free(m->v);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

/* ---- export ---- */

struct exp {
    FILE *out;
    struct buf line;
    struct epmap map;
    struct export_counts *n;
    const struct seal_key *key;  /* the database's: secrets leave sealed */
    int failed;                  /* a write failed: errno in err_no */
    int err_no;
};

static int put_line(struct exp *x)
{
    if (!x->failed && (x->line.failed || fwrite(x->line.p, 1, x->line.len, x->out) != x->line.len)) {
        x->failed = 1;
        x->err_no = x->line.failed ? ENOMEM : errno;
    }
    /* an endpoint line holds secrets: the buffer is reused, then wiped */
    explicit_bzero(x->line.p, x->line.len);
    buf_reset(&x->line);
    return x->failed;
}

static int exp_endpoint(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    struct exp *x = ctx;

    if (!epmap_add(&x->map, id, d->name, d->url) || xf_endpoint_sealed(d, from_config, x->key, &x->line) < 0)
        return 1;
    x->n->endpoints++;
    return put_line(x);
}

static int exp_health(void *ctx, const struct store_health *h)
{
    struct exp *x = ctx;
    struct epent *e = epmap_by_id(&x->map, h->endpoint_id);

    if (!e)
        return 0;   /* the health row of an endpoint deleted meanwhile */
    if (xf_health(e->name, h, &x->line) < 0)
        return 1;
    x->n->health++;
    return put_line(x);
}

static int exp_row(void *ctx, const struct store_row *r)
{
    struct exp *x = ctx;
    struct epent *e = epmap_by_id(&x->map, r->endpoint_id);

    if (!e) {
        x->n->orphans++;   /* a dead letter of a deleted endpoint: nowhere to send it */
        return 0;
    }
    if (xf_message(e->name, r, &x->line) < 0)
        return 1;
    x->n->messages++;
    x->n->by_status[r->status]++;
    return put_line(x);
}

int export_run(const struct config *c, const char *path, int64_t now, struct export_counts *n, char *err,
               size_t errlen)
{
    struct exp x;
    struct store *st = NULL;
    struct buf tmp = {0};
    struct stat sb;
    int to_stdout = strcmp(path, "-") == 0, fd = -1, snap = 0, rc = -1;

    memset(&x, 0, sizeof x);
    memset(n, 0, sizeof *n);
    x.n = n;
    if (!to_stdout) {
        if (lstat(path, &sb) == 0) {
            snprintf(err, errlen, "%s exists; hookd export never overwrites: remove it or choose another name", path);
            return -1;
        }
        buf_printf(&tmp, "%s.tmp", path);
        if (tmp.failed || (unlink(tmp.p) < 0 && errno != ENOENT) ||
            (fd = open(tmp.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 || !(x.out = fdopen(fd, "w"))) {
            snprintf(err, errlen, "cannot create %s: %s", tmp.p ? tmp.p : path, strerror(errno));
            if (fd >= 0)
                close(fd);
            goto out;
        }
    } else {
        x.out = stdout;
    }
    if (store_open(c, STORE_READER, &st, err, errlen) < 0)
        goto out;
    if (!st->seal.set) {
        snprintf(err, errlen, "export writes endpoint secrets sealed and needs the key: %s", st->seal.why);
        goto out;
    }
    x.key = &st->seal;
    /* one snapshot: endpoints, health and rows agree */
    if (st->ops->snapshot_begin(st) < 0)
        goto store_err;
    snap = 1;
    if (xf_header(now, HOOKD_VERSION, &x.line) < 0 || put_line(&x) ||
        st->ops->endpoints_load(st, exp_endpoint, &x) < 0)
        goto store_err;
    qsort(x.map.v, x.map.n, sizeof *x.map.v, by_id);
    if (st->ops->health_load(st, exp_health, &x) < 0 || st->ops->export_rows(st, now, exp_row, &x) < 0)
        goto store_err;
    st->ops->snapshot_end(st);
    snap = 0;
    if ((xf_end(n->endpoints, n->messages, &x.line) < 0 || put_line(&x) || fflush(x.out) != 0) && !x.failed) {
        x.failed = 1;
        x.err_no = errno;
    }
    if (!x.failed && !to_stdout && (fsync(fileno(x.out)) < 0 || rename(tmp.p, path) < 0 || util_fsync_parent(path) < 0)) {
        x.failed = 1;
        x.err_no = errno;
    }
    if (x.failed) {
        snprintf(err, errlen, "cannot write %s: %s", to_stdout ? "standard output" : path, strerror(x.err_no));
        goto out;
    }
    rc = 0;
    goto out;
store_err:
    if (x.failed)
        snprintf(err, errlen, "cannot write %s: %s", to_stdout ? "standard output" : path, strerror(x.err_no));
    else
        snprintf(err, errlen, "%s", st->errmsg);
out:
    if (snap)
        st->ops->snapshot_end(st);
    store_close(st);
    if (x.out && !to_stdout)
        fclose(x.out);
    if (rc < 0 && tmp.p)
        unlink(tmp.p);
    buf_free(&tmp);
    if (x.line.p)
        explicit_bzero(x.line.p, x.line.cap);
    buf_free(&x.line);
    epmap_free(&x.map);
    return rc;
}

/* ---- import ---- */

struct imp {
    struct store *st;
    struct epmap map;
    struct import_counts *n;
    struct xf_item items[IMPORT_BATCH];
    struct store_row rows[IMPORT_BATCH];
    size_t nb;
    int in_txn;
};

static int load_existing(void *ctx, int64_t id, int from_config, const struct ep_def *d)
{
    (void)from_config;
    return epmap_add(&((struct imp *)ctx)->map, id, d->name, d->url) ? 0 : 1;
}

static void drop_batch(struct imp *m)
{
    size_t i;

    for (i = 0; i < m->nb; i++)
        xf_item_free(&m->items[i]);
    m->nb = 0;
}

static int ensure_txn(struct imp *m)
{
    if (m->in_txn)
        return 0;
    if (m->st->ops->begin(m->st, 1) < 0)
        return -1;
    m->in_txn = 1;
    return 0;
}

/* the batch's rows stored and committed */
static int flush(struct imp *m)
{
    size_t i;

    if (ensure_txn(m) < 0 || (m->nb && m->st->ops->import_rows(m->st, m->rows, m->nb) < 0) ||
        m->st->ops->commit(m->st) < 0)
        return -1;
    m->in_txn = 0;
    /* a long import keeps the log short, as the daemon's writer does */
    if (store_checkpoint_if_due(m->st) < 0)
        return -1;
    for (i = 0; i < m->nb; i++) {
        if (m->rows[i].duplicate) {
            m->n->duplicates++;
            continue;
        }
        m->n->messages++;
        m->n->by_status[m->rows[i].status]++;
    }
    drop_batch(m);
    return 0;
}

static int import_endpoint(struct imp *m, struct xf_item *it, int64_t now, char *err, size_t errlen)
{
    struct epent *e = epmap_by_name(&m->map, it->def.name);
    int64_t id;
    int created;

    if (e) {
        m->n->endpoints_kept++;   /* this side's definition stays */
        return 0;
    }
    if (ensure_txn(m) < 0 || m->st->ops->endpoint_put(m->st, &it->def, 0, now, &id, &created) < 0) {
        snprintf(err, errlen, "endpoint %s: %.120s", it->def.name, m->st->errmsg);
        return -1;
    }
    if (!(e = epmap_add(&m->map, id, it->def.name, it->def.url))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    e->created = 1;
    m->n->endpoints_created++;
    if (it->from_config) {
        size_t len = strlen(m->n->config_made_api);
        snprintf(m->n->config_made_api + len, sizeof m->n->config_made_api - len, "%s%s", len ? ", " : "",
                 it->def.name);
    }
    return 0;
}

/* A line of the file; takes it (freed here or with its batch). */
static int import_item(struct imp *m, struct xf_item *it, int64_t now, char *err, size_t errlen)
{
    struct epent *e;
    int rc = 0;

    switch (it->kind) {
    case XF_ENDPOINT:
        rc = import_endpoint(m, it, now, err, errlen);
        break;
    case XF_HEALTH:
        /* the breaker state travels with an endpoint this import made;
         * one that was here already keeps its own */
        if (!(e = epmap_by_name(&m->map, it->endpoint))) {
            snprintf(err, errlen, "health of endpoint %.64s, which the file never defined", it->endpoint);
            rc = -1;
        } else if (e->created) {
            it->h.endpoint_id = e->id;
            it->h.endpoint_url = e->url;
            if (ensure_txn(m) < 0 || m->st->ops->health_save(m->st, &it->h, 1) < 0) {
                snprintf(err, errlen, "health of %s: %.120s", e->name, m->st->errmsg);
                rc = -1;
            } else {
                m->n->health++;
            }
        }
        break;
    case XF_MESSAGE:
        if (!(e = epmap_by_name(&m->map, it->endpoint))) {
            snprintf(err, errlen, "a message for endpoint %.64s, which the file never defined", it->endpoint);
            rc = -1;
            break;
        }
        it->row.endpoint_id = e->id;
        m->rows[m->nb] = it->row;
        m->items[m->nb++] = *it;   /* the row's strings live in it */
        return m->nb == IMPORT_BATCH ? flush(m) : 0;
    default:
        break;
    }
    xf_item_free(it);
    return rc;
}

/* This side's configured endpoints first, as its daemon's start would
 * store them: they win over the file's, and a file's endpoint that is not
 * configured here becomes an API endpoint (one marked as configured
 * would be deleted by the next start, its messages dead-lettered). */
static int put_config_endpoints(struct store *st, const struct config *c, int64_t now)
{
    size_t i;
    int64_t id;
    int created;

    if (st->ops->begin(st, 1) < 0)
        return -1;
    for (i = 0; i < c->n_endpoints; i++)
        if (st->ops->endpoint_put(st, &c->endpoints[i], 1, now, &id, &created) < 0) {
            st->ops->rollback(st);
            return -1;
        }
    return st->ops->commit(st);
}

int import_run(const struct config *c, const char *path, int64_t now, struct import_counts *n, char *err,
               size_t errlen)
{
    struct imp *m = calloc(1, sizeof *m);
    FILE *in = NULL;
    char *line = NULL, why[256];
    size_t cap = 0;
    ssize_t len;
    int64_t lineno = 0, seen_eps = 0, seen_msgs = 0;
    int rc = -1, ended = 0, headed = 0;

    memset(n, 0, sizeof *n);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->n = n;
    in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!in) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    if (store_open(c, STORE_WRITER, &m->st, err, errlen) < 0) {
        if (strstr(err, "in use"))
            snprintf(err, errlen, "%s is in use by a running hookd: stop it first (systemctl stop hookd), "
                     "import, start it", c->db_path);
        goto out;
    }
    if (put_config_endpoints(m->st, c, now) < 0 || m->st->ops->endpoints_load(m->st, load_existing, m) < 0) {
        snprintf(err, errlen, "%s", m->st->errmsg);
        goto out;
    }
    while ((len = getline(&line, &cap, in)) > 0) {
        struct xf_item it;
        lineno++;
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0)
            continue;
        if (ended) {
            snprintf(err, errlen, "%s:%lld: a line after the end line", path, (long long)lineno);
            goto fail;
        }
        if (xf_parse_sealed(line, &m->st->seal, &it, why, sizeof why) < 0) {
            if (!headed && it.kind != XF_HEADER)
                snprintf(err, errlen, "%s: not a hookd export (its first line must be the header)", path);
            else
                snprintf(err, errlen, "%s:%lld: %s%s", path, (long long)lineno, why,
                         strstr(why, "another key") ? " (the export was sealed under the exporting hookd's key: "
                                                      "copy its key file to [storage] key_file here first)"
                                                    : "");
            xf_item_free(&it);
            goto fail;
        }
        if (headed == (it.kind == XF_HEADER)) {
            xf_item_free(&it);
            snprintf(err, errlen, headed ? "%s:%lld: a second header line"
                                         : "%s: not a hookd export (its first line must be the header)",
                     path, (long long)lineno);
            goto fail;
        }
        headed = 1;
        seen_eps += it.kind == XF_ENDPOINT;
        seen_msgs += it.kind == XF_MESSAGE;
        if (it.kind == XF_END) {
            ended = 1;
            if (it.n_endpoints != seen_eps || it.n_messages != seen_msgs) {
                snprintf(err, errlen, "%s: the end line counts %lld endpoints and %lld messages, the file holds "
                         "%lld and %lld", path, (long long)it.n_endpoints, (long long)it.n_messages,
                         (long long)seen_eps, (long long)seen_msgs);
                xf_item_free(&it);
                goto fail;
            }
        }
        if (import_item(m, &it, now, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s:%lld: %s", path, (long long)lineno, why);
            goto fail;
        }
    }
    if (ferror(in)) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        goto fail;
    }
    if (!ended) {
        snprintf(err, errlen, "%s ends before its end line (cut short?)", path);
        goto fail;
    }
    if (flush(m) < 0) {
        snprintf(err, errlen, "%s", m->st->errmsg);
        goto fail;
    }
    rc = 0;
    goto out;
fail:
    if (m->in_txn)
        m->st->ops->rollback(m->st);
out:
    drop_batch(m);
    store_close(m->st);
    if (in && in != stdin)
        fclose(in);
    free(line);
    epmap_free(&m->map);
    free(m);
    return rc;
}
