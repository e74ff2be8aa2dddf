/* endpoint.c - endpoint snapshots and the endpoints table. */
#include "endpoint.h"
#include "log.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ep_conf *ep_conf_new(int64_t id, const struct ep_def *def, const struct ep_settings *dflt)
{
    struct ep_conf *e = calloc(1, sizeof *e);
    char err[128];
    size_t i;

    if (!e)
        return NULL;
    e->refs = 1;
    e->id = id;
    if (ep_def_copy(&e->def, def) < 0)
        goto fail;
    e->eff = ep_settings_effective(&def->s, dflt);
    for (i = 0; i < def->nsecrets; i++) {
        if (sign_key_decode(def->secrets[i], &e->keys[i], err, sizeof err) < 0)
            goto fail;
        e->nkeys++;
    }
    return e;
fail:
    ep_def_free(&e->def);
    explicit_bzero(e->keys, sizeof e->keys);
    free(e);
    return NULL;
}

struct ep_conf *ep_conf_ref(struct ep_conf *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
    return e;
}

void ep_conf_unref(struct ep_conf *e)
{
    if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    ep_def_free(&e->def);
    explicit_bzero(e->keys, sizeof e->keys);
    free(e);
}

/* ---- JSON <-> definition ---- */

static int set_from_json_value(struct ep_def *d, const char *key, const cJSON *v, char *err,
                               size_t errlen)
{
    char num[64];

    if (cJSON_IsString(v))
        return ep_def_set(d, key, v->valuestring, err, errlen);
    if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof num, "%.17g", v->valuedouble);
        return ep_def_set(d, key, num, err, errlen);
    }
    if (cJSON_IsBool(v))
        return ep_def_set(d, key, cJSON_IsTrue(v) ? "yes" : "no", err, errlen);
    snprintf(err, errlen, "field '%s' has the wrong type", key);
    return -1;
}

int endpoint_def_from_json(const cJSON *body, struct ep_def *d, char *err, size_t errlen)
{
    const cJSON *it;
    char why[200];

    ep_def_init(d);
    cJSON_ArrayForEach(it, body) {
        const char *k = it->string;
        const char *key = k;
        if (strcmp(k, "op") == 0)
            continue;
        if (strcmp(k, "name") == 0) {
            if (!cJSON_IsString(it) || !ep_name_valid(it->valuestring)) {
                snprintf(err, errlen, "endpoint name must be 1-%d of [A-Za-z0-9._-]", ENDPOINT_NAME_MAX);
                goto fail;
            }
            util_strlcpy(d->name, it->valuestring, sizeof d->name);
            continue;
        }
        if (strcmp(k, "secrets") == 0)
            key = "secret";
        else if (strcmp(k, "headers") == 0)
            key = "header";
        if (cJSON_IsArray(it)) {
            const cJSON *el;
            struct buf joined = {0};
            if (strcmp(key, "event_types") == 0) {
                cJSON_ArrayForEach(el, it) {
                    if (!cJSON_IsString(el) || (joined.len && buf_puts(&joined, ",") < 0) ||
                        buf_puts(&joined, el->valuestring) < 0) {
                        buf_free(&joined);
                        snprintf(err, errlen, "field 'event_types' must be strings");
                        goto fail;
                    }
                }
                if (ep_def_set(d, key, joined.p ? joined.p : "", why, sizeof why) < 0) {
                    buf_free(&joined);
                    snprintf(err, errlen, "event_types: %s", why);
                    goto fail;
                }
                buf_free(&joined);
                continue;
            }
            if (strcmp(key, "secret") != 0 && strcmp(key, "header") != 0) {
                snprintf(err, errlen, "field '%s' must not be an array", k);
                goto fail;
            }
            cJSON_ArrayForEach(el, it) {
                if (!cJSON_IsString(el) || ep_def_set(d, key, el->valuestring, why, sizeof why) < 0) {
                    snprintf(err, errlen, "%s: %s", key, cJSON_IsString(el) ? why : "must be strings");
                    goto fail;
                }
            }
            continue;
        }
        if (set_from_json_value(d, key, it, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", k, why);
            goto fail;
        }
    }
    if (ep_def_validate(d, err, errlen) < 0)
        goto fail;
    return 0;
fail:
    ep_def_free(d);
    return -1;
}

static char *strings_to_json(char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    char *s;
    size_t i;

    if (!a)
        return NULL;
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

static void add_setting(void *ctx, const char *key, const char *val)
{
    cJSON_AddStringToObject((cJSON *)ctx, key, val);
}

static char *settings_to_json(const struct ep_settings *s)
{
    cJSON *o = cJSON_CreateObject();
    char *out;

    if (!o)
        return NULL;
    ep_settings_each(s, add_setting, o);
    out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

/* ---- persistence ---- */

static int load_strings(struct ep_def *d, const char *key, const char *json)
{
    cJSON *a = cJSON_Parse(json ? json : "[]"), *el;
    char err[160];
    int rc = 0;

    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return -1;
    }
    cJSON_ArrayForEach(el, a) {
        if (!cJSON_IsString(el) || ep_def_set(d, key, el->valuestring, err, sizeof err) < 0) {
            rc = -1;
            break;
        }
    }
    cJSON_Delete(a);
    return rc;
}

static int load_settings(struct ep_def *d, const char *json)
{
    cJSON *o = cJSON_Parse(json ? json : "{}"), *el;
    char err[160];
    int rc = 0;

    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return -1;
    }
    cJSON_ArrayForEach(el, o) {
        if (!cJSON_IsString(el) || ep_def_set(d, el->string, el->valuestring, err, sizeof err) < 0) {
            rc = -1;
            break;
        }
    }
    cJSON_Delete(o);
    return rc;
}

void endpoint_stored_free(struct ep_stored *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        ep_def_free(&v[i].def);
    free(v);
}

int endpoint_db_load(sqlite3 *db, struct ep_stored **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    struct ep_stored *v = NULL, *nv;
    size_t cnt = 0;
    int rc;

    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, name, url, secrets, headers, event_types, settings, source, paused "
                           "FROM endpoints ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ep_stored *e;
        char err[160];
        const char *types = (const char *)sqlite3_column_text(st, 5);
        nv = realloc(v, (cnt + 1) * sizeof *v);
        if (!nv)
            goto fail;
        v = nv;
        e = &v[cnt++];
        e->id = sqlite3_column_int64(st, 0);
        e->from_config = strcmp((const char *)sqlite3_column_text(st, 7), "config") == 0;
        ep_def_init(&e->def);
        util_strlcpy(e->def.name, (const char *)sqlite3_column_text(st, 1), sizeof e->def.name);
        e->def.paused = sqlite3_column_int(st, 8);
        if (ep_def_set(&e->def, "url", (const char *)sqlite3_column_text(st, 2), err, sizeof err) < 0 ||
            load_strings(&e->def, "secret", (const char *)sqlite3_column_text(st, 3)) < 0 ||
            load_strings(&e->def, "header", (const char *)sqlite3_column_text(st, 4)) < 0 ||
            (types && ep_def_set(&e->def, "event_types", types, err, sizeof err) < 0) ||
            load_settings(&e->def, (const char *)sqlite3_column_text(st, 6)) < 0) {
            log_error("endpoint_load", "endpoint=%s err=\"stored definition is invalid\"", e->def.name);
            goto fail;
        }
    }
    if (rc != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    *out = v;
    *n = cnt;
    return 0;
fail:
    sqlite3_finalize(st);
    endpoint_stored_free(v, cnt);
    return -1;
}

int endpoint_db_put(sqlite3 *db, const struct ep_def *d, int from_config, int64_t now, int64_t *id,
                    int *created)
{
    sqlite3_stmt *st = NULL;
    char *secrets = strings_to_json(d->secrets, d->nsecrets);
    char *headers = strings_to_json(d->headers, d->nheaders);
    char *settings = settings_to_json(&d->s);
    int rc = -1, changes_before = sqlite3_total_changes(db);
    int64_t before_id = 0;

    (void)changes_before;
    if (!secrets || !headers || !settings)
        goto out;
    /* was it there? */
    if (sqlite3_prepare_v2(db, "SELECT id FROM endpoints WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        before_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO endpoints (name, url, secrets, headers, event_types, settings, "
                           "source, paused, created_at, updated_at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) "
                           "ON CONFLICT (name) DO UPDATE SET url = excluded.url, "
                           "secrets = excluded.secrets, headers = excluded.headers, "
                           "event_types = excluded.event_types, settings = excluded.settings, "
                           "source = excluded.source, updated_at = excluded.updated_at "
                           "RETURNING id",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->url, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, secrets, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, headers, -1, SQLITE_STATIC);
    if (d->event_types)
        sqlite3_bind_text(st, 5, d->event_types, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_text(st, 6, settings, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, from_config ? "config" : "api", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 8, d->paused);
    sqlite3_bind_int64(st, 9, now);
    if (sqlite3_step(st) != SQLITE_ROW)
        goto out;
    *id = sqlite3_column_int64(st, 0);
    if (created)
        *created = before_id == 0;
    rc = 0;
out:
    if (rc < 0)
        log_error("endpoint_put", "endpoint=%s err=\"%s\"", d->name, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (secrets)
        explicit_bzero(secrets, strlen(secrets));
    cJSON_free(secrets);
    cJSON_free(headers);
    cJSON_free(settings);
    return rc;
}

int endpoint_db_delete(sqlite3 *db, int64_t id, int64_t now, int64_t *dead)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;

    if (sqlite3_prepare_v2(db,
                           "UPDATE webhook_queue SET status = 'dead_letter', "
                           "last_error = 'endpoint deleted', next_attempt_at = ?2 "
                           "WHERE endpoint_id = ?1 AND status IN ('pending', 'failed', 'in_flight')",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    *dead = sqlite3_changes(db);
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM endpoints WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM endpoint_health WHERE endpoint_id = ?1", -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        log_error("endpoint_delete", "endpoint_id=%lld err=\"%s\"", (long long)id, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

int endpoint_db_set_paused(sqlite3 *db, int64_t id, int paused, int64_t now)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;

    if (sqlite3_prepare_v2(db, "UPDATE endpoints SET paused = ?2, updated_at = ?3 WHERE id = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, paused);
    sqlite3_bind_int64(st, 3, now);
    if (sqlite3_step(st) == SQLITE_DONE)
        rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}
