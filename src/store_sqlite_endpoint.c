/* store_sqlite_endpoint.c - endpoints and their health on SQLite (writer
 * connection; inside the caller's transaction). */
#include "store_sqlite.h"
#include "breaker.h"
#include "endpoint.h"
#include "log.h"
#include "store_seal.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Rows an older hookd stored with plain secrets, sealed in place. The
 * old bytes are zeroed in their pages (secure_delete) and the -wal that
 * held them is emptied (checkpoint TRUNCATE), so no copy stays on disk. */
static int seal_plain_rows(struct sq_store *q, const int64_t *ids, size_t n)
{
    sqlite3_stmt *sel = NULL, *upd = NULL;
    size_t i;
    int rc;

    if (!n)
        return 0;
    if ((rc = sqlite3_exec(q->db, "PRAGMA secure_delete = ON", NULL, NULL, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(q->db, "SELECT secrets, headers FROM endpoints WHERE id = ?1", -1, &sel, NULL)) !=
            SQLITE_OK ||
        (rc = sqlite3_prepare_v2(q->db, "UPDATE endpoints SET secrets = ?2, headers = ?3 WHERE id = ?1", -1, &upd,
                                 NULL)) != SQLITE_OK)
        goto fail;
    for (i = 0; i < n; i++) {
        char *sec = NULL, *hdr = NULL, why[256];
        sqlite3_bind_int64(sel, 1, ids[i]);
        if (sqlite3_step(sel) != SQLITE_ROW) {
            sqlite3_reset(sel);
            continue;
        }
        if (seal_json(&q->base.seal, (const char *)sqlite3_column_text(sel, 0), 0, &sec, why, sizeof why) < 0 ||
            seal_json(&q->base.seal, (const char *)sqlite3_column_text(sel, 1), 1, &hdr, why, sizeof why) < 0) {
            seal_free(sec);
            sqlite3_reset(sel);
            store_fail(&q->base, STORE_E_OTHER, "sealing stored secrets: %s", why);
            goto out;
        }
        sqlite3_reset(sel);
        sqlite3_bind_int64(upd, 1, ids[i]);
        sqlite3_bind_text(upd, 2, sec, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 3, hdr, -1, SQLITE_STATIC);
        rc = sqlite3_step(upd);
        sqlite3_reset(upd);
        sqlite3_clear_bindings(upd);
        seal_free(sec);
        seal_free(hdr);
        if (rc != SQLITE_DONE)
            goto fail;
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    sel = upd = NULL;
    if ((rc = sqlite3_exec(q->db, "PRAGMA secure_delete = OFF", NULL, NULL, NULL)) != SQLITE_OK)
        goto fail;
    if (sqlite3_get_autocommit(q->db))
        sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    log_info("secrets_sealed", "endpoints=%zu", n);
    return 0;
fail:
    sq_fail(q, rc, "sealing stored secrets");
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    sqlite3_exec(q->db, "PRAGMA secure_delete = OFF", NULL, NULL, NULL);
    return -1;
}

int sq_endpoints_load(struct store *s, int (*fn)(void *ctx, int64_t id, int from_config, const struct ep_def *d),
                      void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = NULL;
    int64_t *plain_ids = NULL;
    size_t nplain = 0, cap = 0;
    int rc = sqlite3_prepare_v2(q->db,
                                "SELECT id, name, url, secrets, headers, event_types, settings, source, paused "
                                "FROM endpoints ORDER BY id",
                                -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, "load endpoints");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ep_def d;
        const char *name = (const char *)sqlite3_column_text(st, 1);
        char *sec, *hdr;
        int stop, plain = 0, bad;
        if (store_open_cols(s, name, (const char *)sqlite3_column_text(st, 3),
                            (const char *)sqlite3_column_text(st, 4), &sec, &hdr, &plain) < 0)
            goto fail;
        bad = ep_def_from_stored(&d, name, (const char *)sqlite3_column_text(st, 2), sec, hdr,
                                 (const char *)sqlite3_column_text(st, 5), (const char *)sqlite3_column_text(st, 6),
                                 sqlite3_column_int(st, 8)) < 0;
        seal_free(sec);
        seal_free(hdr);
        if (bad) {
            store_fail(s, STORE_E_OTHER, "endpoint %.64s: stored definition is invalid", name ? name : "?");
            goto fail;
        }
        if (plain && q->role == STORE_WRITER) {
            if (nplain == cap) {
                int64_t *nv = realloc(plain_ids, (cap = cap ? cap * 2 : 16) * sizeof *nv);
                if (!nv) {
                    ep_def_free(&d);
                    store_fail(s, STORE_E_NOMEM, "load endpoints: out of memory");
                    goto fail;
                }
                plain_ids = nv;
            }
            plain_ids[nplain++] = sqlite3_column_int64(st, 0);
        }
        stop = fn(ctx, sqlite3_column_int64(st, 0),
                  strcmp((const char *)sqlite3_column_text(st, 7), "config") == 0, &d);
        ep_def_free(&d);
        if (stop) {
            store_fail(s, STORE_E_NOMEM, "load endpoints: out of memory");
            goto fail;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(plain_ids);
        return sq_fail(q, rc, "load endpoints");
    }
    rc = seal_plain_rows(q, plain_ids, nplain);
    free(plain_ids);
    return rc;
fail:
    sqlite3_finalize(st);
    free(plain_ids);
    return -1;
}

int sq_health_load(struct store *s, int (*fn)(void *ctx, const struct store_health *h), void *ctx)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(q->db, sq_health_select(), -1, &st, NULL);

    if (rc != SQLITE_OK)
        return sq_fail(q, rc, "load health");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_health h;
        memset(&h, 0, sizeof h);
        h.endpoint_id = sqlite3_column_int64(st, 0);
        h.endpoint_url = (const char *)sqlite3_column_text(st, 1);
        sq_health_cols(st, 2, &h);
        if (fn(ctx, &h) != 0) {
            sqlite3_finalize(st);
            return store_fail(s, STORE_E_NOMEM, "load health: out of memory");
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(q, rc, "load health");
}

int sq_endpoint_put(struct store *s, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                    int *created)
{
    struct sq_store *q = (struct sq_store *)s;
    char *secrets = NULL, *headers = NULL;
    char *settings = ep_json_overrides(d);
    sqlite3_stmt *st;
    int rc = -1, step;

    if (!settings) {
        store_fail(s, STORE_E_NOMEM, "endpoint put: out of memory");
        goto out;
    }
    if (store_seal_def(s, d, &secrets, &headers) < 0)
        goto out;
    st = sq_stmt(q, SQ_EP_FIND);
    sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        sq_fail(q, step, "endpoint put");
        goto out;
    }
    if (created)
        *created = step == SQLITE_DONE;
    st = sq_stmt(q, SQ_EP_PUT);
    sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->url, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, secrets, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, headers, -1, SQLITE_STATIC);
    sq_bind_text_or_null(st, 5, d->event_types);
    sqlite3_bind_text(st, 6, settings, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, from_config ? "config" : "api", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 8, d->paused);
    sqlite3_bind_int64(st, 9, now);
    sqlite3_bind_int(st, 10, d->paused_given);
    sqlite3_bind_text(st, 11, from_config ? "config" : "operator", -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_reset(st);
    if (step != SQLITE_ROW)
        sq_fail(q, step, "endpoint put");
    sqlite3_clear_bindings(st);
out:
    seal_free(secrets);
    seal_free(headers);
    ep_json_release(NULL, NULL, settings);
    return rc;
}

int sq_endpoint_delete(struct store *s, int64_t id, int64_t now, int64_t *dead)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_EP_DEAD);

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now);
    if (sq_exec_stmt(q, st, "endpoint delete") < 0)
        return -1;
    *dead = sqlite3_changes(q->db);
    st = sq_stmt(q, SQ_EP_DELETE);
    sqlite3_bind_int64(st, 1, id);
    if (sq_exec_stmt(q, st, "endpoint delete") < 0)
        return -1;
    st = sq_stmt(q, SQ_EP_HEALTH_DELETE);
    sqlite3_bind_int64(st, 1, id);
    if (sq_exec_stmt(q, st, "endpoint delete") < 0)
        return -1;
    st = sq_stmt(q, SQ_EP_RING_DELETE);
    sqlite3_bind_int64(st, 1, id);
    if (sq_exec_stmt(q, st, "endpoint delete") < 0)
        return -1;
    st = sq_stmt(q, SQ_EP_HISTORY_DELETE);
    sqlite3_bind_int64(st, 1, id);
    return sq_exec_stmt(q, st, "endpoint delete");
}

int sq_latency_ring_size(struct store *s, int64_t slots)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_RING_TRIM);

    sqlite3_bind_int64(st, 1, slots);
    return sq_exec_stmt(q, st, "latency ring size");
}

int sq_endpoint_pause(struct store *s, int64_t id, int paused, const char *reason, int64_t now)
{
    struct sq_store *q = (struct sq_store *)s;
    sqlite3_stmt *st = sq_stmt(q, SQ_EP_PAUSE);

    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, paused);
    sqlite3_bind_int64(st, 3, now);
    sq_bind_text_or_null(st, 4, paused ? reason : NULL);
    return sq_exec_stmt(q, st, "endpoint pause");
}

int sq_health_save(struct store *s, const struct store_health *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i;

    for (i = 0; i < n; i++) {
        sqlite3_stmt *st = sq_stmt(q, SQ_HEALTH_SAVE);
        sqlite3_bind_int64(st, 1, v[i].endpoint_id);
        sqlite3_bind_text(st, 2, v[i].endpoint_url ? v[i].endpoint_url : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, breaker_state_name((enum breaker_state)v[i].state), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, v[i].consecutive_failures);
        sqlite3_bind_int64(st, 5, v[i].failure_threshold);
        sq_bind_pos_or_null(st, 6, v[i].last_failure_at);
        sq_bind_pos_or_null(st, 7, v[i].last_success_at);
        sq_bind_pos_or_null(st, 8, v[i].opened_at);
        sqlite3_bind_int64(st, 9, v[i].cooldown_ms);
        sq_bind_pos_or_null(st, 10, v[i].slow_since);
        sqlite3_bind_int64(st, 11, v[i].ring_next);
        sq_bind_pos_or_null(st, 12, v[i].concurrency_limit);
        sq_bind_pos_or_null(st, 13, v[i].failing_since);
        if (sq_exec_stmt(q, st, "health save") < 0)
            return -1;
    }
    return 0;
}

int sq_rollup_save(struct store *s, const struct store_rollup *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i;

    for (i = 0; i < n; i++) {
        sqlite3_stmt *st = sq_stmt(q, SQ_ROLLUP_SAVE);
        sqlite3_bind_int64(st, 1, v[i].endpoint_id);
        if (v[i].has_latency) {
            sqlite3_bind_int64(st, 2, v[i].p50_ms);
            sqlite3_bind_int64(st, 3, v[i].p95_ms);
            sqlite3_bind_int64(st, 4, v[i].p99_ms);
        } else {
            sqlite3_bind_null(st, 2);
            sqlite3_bind_null(st, 3);
            sqlite3_bind_null(st, 4);
        }
        sqlite3_bind_int64(st, 5, v[i].sample_count);
        sqlite3_bind_int64(st, 6, v[i].at);
        if (sq_exec_stmt(q, st, "rollup save") < 0)
            return -1;
    }
    return 0;
}

int sq_history_add(struct store *s, const struct store_history *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i;

    for (i = 0; i < n; i++) {
        sqlite3_stmt *st = sq_stmt(q, SQ_HISTORY_ADD);
        sqlite3_bind_int64(st, 1, v[i].endpoint_id);
        sqlite3_bind_int64(st, 2, v[i].bucket_at);
        sqlite3_bind_int64(st, 3, v[i].delivered);
        sqlite3_bind_int64(st, 4, v[i].failed);
        sqlite3_bind_int64(st, 5, v[i].breaker_opens);
        if (sq_exec_stmt(q, st, "history add") < 0)
            return -1;
    }
    return 0;
}

int sq_history_latency(struct store *s, const struct store_history *v, size_t n)
{
    struct sq_store *q = (struct sq_store *)s;
    size_t i;

    for (i = 0; i < n; i++) {
        sqlite3_stmt *st = sq_stmt(q, SQ_HISTORY_LATENCY);
        sqlite3_bind_int64(st, 1, v[i].endpoint_id);
        sqlite3_bind_int64(st, 2, v[i].bucket_at);
        if (v[i].has_latency) {
            sqlite3_bind_int64(st, 3, v[i].p50_ms);
            sqlite3_bind_int64(st, 4, v[i].p95_ms);
            sqlite3_bind_int64(st, 5, v[i].p99_ms);
        }
        sqlite3_bind_int64(st, 6, v[i].sample_count);
        if (sq_exec_stmt(q, st, "history latency") < 0)
            return -1;
    }
    return 0;
}
