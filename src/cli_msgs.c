/* cli_msgs.c - finding messages from the command line (hookd messages,
 * the selector options of requeue, purge and erase) and showing what
 * was found or done. */
#include "cli_msgs.h"
#include "cli.h"
#include "cli_show.h"
#include "msgsel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --status for a search: any of the five statuses, comma separated */
static int add_status_list(const struct args *a, cJSON *req, char *err, size_t errlen)
{
    char *copy, *tok, *save = NULL;
    cJSON *arr;
    int rc = 0;

    if (!a->val[O_STATUS])
        return 0;
    if (!(copy = strdup(a->val[O_STATUS])) || !(arr = cJSON_AddArrayToObject(req, "status"))) {
        free(copy);
        return cli_oom(err, errlen);
    }
    for (tok = strtok_r(copy, ", ", &save); tok && rc == 0; tok = strtok_r(NULL, ", ", &save)) {
        cJSON *s = cJSON_CreateString(tok);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            rc = cli_oom(err, errlen);
        }
    }
    free(copy);
    if (rc == 0 && cJSON_GetArraySize(arr) == 0) {
        snprintf(err, errlen, "--status wants a list like delivered,dead_letter");
        rc = -1;
    }
    return rc;
}

int cli_build_messages(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen)
{
    (void)payload;
    if (cli_build_selector(a, req, err, errlen) < 0 || add_status_list(a, req, err, errlen) < 0 ||
        (a->val[O_ENDPOINT] && cli_add_str(req, "endpoint", a->val[O_ENDPOINT], err, errlen) < 0))
        return -1;
    return cli_build_since(a, req, err, errlen);
}

int cli_build_erase(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen)
{
    int64_t id;

    (void)payload;
    if (a->npos > 0) {
        if (a->seen & (SELECT_OPTS | OB(O_DRY_RUN) | OB(O_AFTER))) {
            snprintf(err, errlen, "a message ID takes no other filter");
            return -1;
        }
        if (util_parse_int(a->pos[0], &id) < 0 || id < 1 || id > INT64_MAX / 2) {
            snprintf(err, errlen, "ID must be a positive integer, not '%s'", a->pos[0]);
            return -1;
        }
        return cli_add_num(req, "id", id, err, errlen);
    }
    if (!a->val[O_EVENT_ID] && !a->val[O_SINCE]) {
        snprintf(err, errlen, "erase needs a message ID, --event-id ID, or --since TIME (a window, narrowed by "
                              "--endpoint, --until, --where)");
        return -1;
    }
    return cli_build_messages(a, req, payload, err, errlen);
}

/* ---------- output ---------- */

static const struct {
    const char *hdr, *key;
    char kind;   /* v value, t time */
} cols[] = {
    {"ID", "id", 'v'},         {"ENDPOINT", "endpoint", 'v'},    {"EVENT_ID", "event_id", 'v'},
    {"TYPE", "event_type", 'v'}, {"STATUS", "status", 'v'},      {"ATTEMPTS", "attempt_count", 'v'},
    {"CREATED", "created_at", 't'}, {"DELIVERED", "delivered_at", 't'}, {"HTTP", "last_status_code", 'v'},
    {"ERROR", "last_error_class", 'v'},
};
#define NCOLS (sizeof cols / sizeof cols[0])
#define CELL 96

static void cell(const cJSON *m, size_t i, char *out)
{
    const cJSON *v = cli_jget(m, cols[i].key);

    if (cols[i].kind == 't' && cJSON_IsNumber(v))
        util_fmt_time((int64_t)v->valuedouble, out, CELL);
    else
        cli_fmt_val(v, out, CELL);
    if (i == 4 && cJSON_IsNumber(cli_jget(m, "erased_at")))
        snprintf(out + strlen(out), CELL - strlen(out), "%s", " (erased)");
}

void cli_show_messages(const cJSON *r, const struct args *a)
{
    const cJSON *msgs = cli_jget(r, "messages"), *m, *next = cli_jget(r, "next");
    size_t w[NCOLS], i;
    char v[CELL];

    if (a->seen & OB(O_NDJSON)) {
        /* one message per line, as the daemon wrote it: for export */
        cJSON_ArrayForEach(m, msgs) {
            char *line = cJSON_PrintUnformatted(m);
            if (line)
                printf("%s\n", line);
            free(line);
        }
        return;
    }
    for (i = 0; i < NCOLS; i++)
        w[i] = strlen(cols[i].hdr);
    cJSON_ArrayForEach(m, msgs)
        for (i = 0; i < NCOLS; i++) {
            cell(m, i, v);
            if (strlen(v) > w[i])
                w[i] = strlen(v);
        }
    if (!cJSON_GetArraySize(msgs)) {
        printf("no messages found\n");
    } else {
        for (i = 0; i < NCOLS; i++)
            printf("%-*s%s", (int)w[i], cols[i].hdr, i + 1 < NCOLS ? "  " : "\n");
        cJSON_ArrayForEach(m, msgs)
            for (i = 0; i < NCOLS; i++) {
                cell(m, i, v);
                printf("%-*s%s", (int)w[i], v, i + 1 < NCOLS ? "  " : "\n");
            }
    }
    if (cJSON_IsNumber(next))
        fprintf(stderr, "more may match: go on with --after %lld\n", (long long)next->valuedouble);
}

/* requeue, purge, erase: what was done (as done prints it), or with
 * --dry-run what would be */
static void show_done(const cJSON *r, const struct args *a, const char *key, const char *what,
                      void (*done)(const cJSON *r, const struct args *a))
{
    char n[32];

    if (cJSON_IsTrue(cli_jget(r, "dry_run"))) {
        cli_fmt_val(cli_jget(r, "matched"), n, sizeof n);
        printf("would %s %s messages (dry run; nothing changed)\n", what, n);
    } else if (done) {
        done(r, a);
    } else {
        cli_fmt_val(cli_jget(r, key), n, sizeof n);
        printf("%s %s\n", key, n);
    }
    if (cJSON_IsNumber(cli_jget(r, "next")))
        printf("more may match: go on with --after %lld\n", (long long)cli_jget(r, "next")->valuedouble);
}

void cli_show_erase(const cJSON *r, const struct args *a)
{
    show_done(r, a, "erased", "erase", NULL);
}

void cli_show_requeued(const cJSON *r, const struct args *a)
{
    show_done(r, a, "requeued", "requeue", cli_show_requeue);
}

void cli_show_purged(const cJSON *r, const struct args *a)
{
    show_done(r, a, "purged", "purge", cli_show_purge);
}
