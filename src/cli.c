/* cli.c - the hookd command line: one static table drives dispatch, usage
 * and per-command option checks (smtpctl style). Client commands build one
 * JSON request line (cli_args.c), send it over the control socket
 * (client.c) and render the reply (cli_show.c) or, with --json, print it
 * unchanged. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backup.h"
#include "cli_args.h"
#include "cli_show.h"
#include "cli_msgs.h"
#include "client.h"
#include "config.h"
#include "export.h"
#include "store.h"
#include "report.h"
#include "server.h"
#include "top.h"
#include "topview.h"
#include "util.h"

#include <sys/ioctl.h>

#ifndef HOOKD_VERSION
#define HOOKD_VERSION "unknown"
#endif

static const struct cmd *find_cmd(const char *name);
static void usage(FILE *out);

int cli_build_request(int argc, char **argv, struct buf *out, char *err, size_t errlen)
{
    const struct cmd *c;
    struct args a;
    int r;

    if (argc < 1 || !(c = find_cmd(argv[0])) || !c->needs_socket) {
        snprintf(err, errlen, "not a client command: '%s'", argc > 0 ? argv[0] : "");
        return -1;
    }
    r = cli_parse_args(c, argc, argv, &a, err, errlen);
    if (r == 1)
        snprintf(err, errlen, "--help given");
    if (r != 0)
        return -1;
    return cli_assemble(c, &a, out, err, errlen);
}


/* ---------- command handlers ---------- */

static void cmd_usage(const struct cmd *c, FILE *out)
{
    fprintf(out, "usage: hookd %s\n", c->usage);
}

static void cmd_help(const struct cmd *c)
{
    cmd_usage(c, stdout);
    printf("\n%s%s\n", c->help, c->admin ? " (admin)" : "");
    if (c->needs_socket)
        printf("\n  -c FILE          read the socket path from FILE's [server] socket\n"
               "                   (default: " FALLBACK_SOCKET ", no file read)\n"
               "  -s, --socket P   control socket (overrides HOOKD_SOCKET and -c)\n"
               "  --json           print the daemon's JSON reply\n"
               "  --timeout DUR    how long to wait for the reply (default 30s)\n");
}

/* Shared prologue: -1 means go on, anything else is the exit status. */
static int start(const struct cmd *c, int argc, char **argv, struct args *a)
{
    char err[256];
    int r = cli_parse_args(c, argc, argv, a, err, sizeof err);

    if (r == 1) {
        cmd_help(c);
        return CLI_EXIT_OK;
    }
    if (r < 0) {
        fprintf(stderr, "hookd %s: %s\n", c->name, err);
        cmd_usage(c, stderr);
        return CLI_EXIT_USAGE;
    }
    return -1;
}

/* Commands that read the configuration themselves (the database's
 * path, the socket): the arguments, then the file. -1: go on, cfg
 * loaded (the caller frees it); otherwise the exit status. */
static int start_with_config(const struct cmd *c, int argc, char **argv, struct args *a, struct config *cfg)
{
    int rc = start(c, argc, argv, a);

    if (rc >= 0)
        return rc;
    if (client_load_config(cfg, a->val[O_CONFIG] ? a->val[O_CONFIG] : client_default_config()) < 0)
        return CLI_EXIT_USAGE;
    return -1;
}

static int run_serve(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    const char *path;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    path = a.val[O_CONFIG] ? a.val[O_CONFIG] : client_default_config();
    if (client_load_config(&cfg, path) < 0)
        return CLI_EXIT_USAGE;
    rc = server_run(&cfg, path);
    config_free(&cfg);
    return rc;
}

static int run_check(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    int rc = start_with_config(c, argc, argv, &a, &cfg);
    char msg[320];

    if (rc >= 0)
        return rc;
    if (!(a.seen & OB(O_QUIET)))
        config_dump(&cfg, stdout);
    fflush(stdout);
    rc = store_ping(&cfg, msg, sizeof msg);
    config_free(&cfg);
    if (*msg)
        fprintf(stderr, "%s\n", msg);
    if (rc < 0) {
        fprintf(stderr, "configuration OK, but its database cannot be reached\n");
        return CLI_EXIT_UNAVAILABLE;
    }
    fprintf(stderr, "configuration OK\n");
    return CLI_EXIT_OK;
}

static int run_schema_sql(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    char err[200];
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    if (store_schema_print(CFG_BACKEND_POSTGRES, stdout, err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

static int run_version(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    printf("hookd %s\n", HOOKD_VERSION);
    return CLI_EXIT_OK;
}

static int run_help(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    const struct cmd *sub;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    if (a.npos == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    sub = find_cmd(a.pos[0]);
    if (!sub) {
        fprintf(stderr, "hookd: unknown command '%s'\n", a.pos[0]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    cmd_help(sub);
    return CLI_EXIT_OK;
}

/* --timeout DUR into *ms (left as it is when not given); 0, or -1 said. */
static int opt_timeout(const struct cmd *c, const struct args *a, int64_t *ms)
{
    if (a->val[O_TIMEOUT] && (util_parse_duration_ms(a->val[O_TIMEOUT], ms) < 0 || *ms <= 0)) {
        fprintf(stderr, "hookd %s: --timeout wants a duration like 30s, not '%s'\n", c->name, a->val[O_TIMEOUT]);
        return -1;
    }
    return 0;
}

/* One request line out, its reply parsed into *out (an object). Returns
 * CLI_EXIT_OK, or the exit status with the reason said on stderr. */
static int ask(const char *sock, const struct buf *req, int64_t timeout, struct buf *reply, cJSON **out)
{
    char err[1024];

    if (client_transact(sock, req, timeout, reply, err, sizeof err) < 0) {
        fprintf(stderr, "hookd: %s\n", err);
        return CLI_EXIT_UNAVAILABLE;
    }
    *out = cJSON_ParseWithLength(reply->p, reply->len);
    if (!cJSON_IsObject(*out)) {
        fprintf(stderr, "hookd: %s: malformed reply from the daemon\n", sock);
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

/* ok:false: the daemon's code and message on stderr; 1. ok: 0. */
static int refused(const cJSON *r)
{
    const cJSON *e = cli_jget(r, "error");
    char code[64], msg[512];

    if (cJSON_IsTrue(cli_jget(r, "ok")))
        return 0;
    cli_fmt_val(cli_jget(e, "code"), code, sizeof code);
    cli_fmt_val(cli_jget(e, "message"), msg, sizeof msg);
    fflush(stdout);
    fprintf(stderr, "hookd: %s: %s\n", code, msg);
    return 1;
}

static int run_client(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct buf req = {0}, reply = {0};
    char err[1024], sock[128]; /* sun_path is 108; longer is reported, not used */
    char after[32];
    int64_t timeout = DEFAULT_TIMEOUT_MS;
    cJSON *r = NULL;
    const cJSON *next;
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    rc = CLI_EXIT_USAGE;
    if (opt_timeout(c, &a, &timeout) < 0 || client_resolve_socket(&a, sock, sizeof sock) < 0)
        goto out;
again:
    if (cli_assemble(c, &a, &req, err, sizeof err) < 0) {
        fprintf(stderr, "hookd %s: %s\n", c->name, err);
        goto out;
    }
    if (buf_puts(&req, "\n") < 0) {
        fprintf(stderr, "hookd: out of memory\n");
        goto out;
    }
    if ((rc = ask(sock, &req, timeout, &reply, &r)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_ERROR;
    if (a.seen & OB(O_JSON)) {
        /* still JSON, with the same strings: only what could drive or
         * reorder a terminal is spelt as \uXXXX */
        struct buf shown = {0};
        if (buf_esc(&shown, reply.p, reply.len, ESC_JSON_DOC) < 0) {
            fprintf(stderr, "hookd: out of memory\n");
            goto out;
        }
        fwrite(shown.p, 1, shown.len, stdout);
        fputc('\n', stdout);
        buf_free(&shown);
    }
    if (refused(r))
        goto out;
    if (!(a.seen & OB(O_JSON)))
        c->show(r, &a);
    rc = fflush(stdout) == 0 && !ferror(stdout) ? CLI_EXIT_OK : CLI_EXIT_ERROR;
    /* messages --ndjson is an export: it follows the pages to the end */
    next = cli_jget(r, "next");
    if (rc == CLI_EXIT_OK && (a.seen & OB(O_NDJSON)) && !(a.seen & OB(O_JSON)) && cJSON_IsNumber(next)) {
        snprintf(after, sizeof after, "%lld", (long long)next->valuedouble);
        a.val[O_AFTER] = after;
        a.seen |= OB(O_AFTER);
        cJSON_Delete(r);
        r = NULL;
        buf_reset(&req);
        buf_reset(&reply);
        goto again;
    }
out:
    cJSON_Delete(r);
    buf_free(&req);
    buf_free(&reply);
    return rc;
}

static int run_top(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    char sock[128];
    int64_t timeout = 5000;
    int sort = TOP_FPS, desc = 1, width = 80;
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    int rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    if (opt_timeout(c, &a, &timeout) < 0)
        return CLI_EXIT_USAGE;
    if (a.val[O_SORT]) {
        if ((sort = top_col_parse(a.val[O_SORT])) < 0) {
            fprintf(stderr, "hookd top: --sort wants one of name, state, inflight, dlv, fail, p50, p95, p99, "
                    "queue, oldest, not '%s'\n", a.val[O_SORT]);
            return CLI_EXIT_USAGE;
        }
        desc = top_col_default_desc((enum top_col)sort);
    }
    if (client_resolve_socket(&a, sock, sizeof sock) < 0)
        return CLI_EXIT_USAGE;
    if (!(a.seen & OB(O_ONCE)))
        return top_run(sock, timeout, sort, desc);
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        width = ws.ws_col;
    else if (cols && atoi(cols) >= 40)
        width = atoi(cols);
    return top_once(sock, timeout, sort, desc, width);
}

/* Ask for the report and write the page: to FILE.tmp, then renamed, so
 * a reader of FILE never sees half a page. FILE.tmp is created, never
 * reused: in a shared directory another account's symlink or file by
 * that name must not receive the page (O_EXCL|O_NOFOLLOW), and the page
 * (endpoint names, error texts) is for this account only (0600). */
static int run_report(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct buf req = {0}, reply = {0}, page = {0}, tmp = {0};
    char sock[128];
    int64_t timeout = 120000, since = 24 * 3600000LL;
    cJSON *r = NULL;
    int fd, ok, rc = start(c, argc, argv, &a);

    if (rc >= 0)
        return rc;
    rc = CLI_EXIT_USAGE;
    if (!a.val[O_HTML]) {
        fprintf(stderr, "hookd report: --html FILE is required\n");
        goto out;
    }
    if (a.val[O_SINCE] && (util_parse_duration_ms(a.val[O_SINCE], &since) < 0 || since < 3600000LL ||
                           since > 366 * 24 * 3600000LL)) {
        fprintf(stderr, "hookd report: --since wants a duration from 1h to 366d (e.g. 24h, 7d), not '%s'\n",
                a.val[O_SINCE]);
        goto out;
    }
    if (opt_timeout(c, &a, &timeout) < 0 || client_resolve_socket(&a, sock, sizeof sock) < 0)
        goto out;
    buf_printf(&req, "{\"op\":\"report\",\"hours\":%lld}\n", (long long)((since + 3599999) / 3600000));
    if ((rc = ask(sock, &req, timeout, &reply, &r)) != CLI_EXIT_OK)
        goto out;
    rc = CLI_EXIT_ERROR;
    if (refused(r))
        goto out;
    if (report_html(r, util_now_ms(), &page) < 0) {
        fprintf(stderr, "hookd report: malformed report from the daemon\n");
        goto out;
    }
    buf_printf(&tmp, "%s.tmp", a.val[O_HTML]);
    if (tmp.failed) {
        fprintf(stderr, "hookd report: out of memory\n");
        goto out;
    }
    fd = open(tmp.p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "hookd report: cannot create %s: %s%s\n", tmp.p, strerror(errno),
                errno == EEXIST || errno == ELOOP ? " (left by an earlier run? remove it)" : "");
        goto out;
    }
    ok = util_write_all(fd, page.p, page.len) == 0;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp.p, a.val[O_HTML]) != 0) {
        fprintf(stderr, "hookd report: cannot write %s: %s\n", a.val[O_HTML], strerror(errno));
        unlink(tmp.p);
        goto out;
    }
    printf("wrote %s (%zu bytes)\n", a.val[O_HTML], page.len);
    rc = CLI_EXIT_OK;
out:
    cJSON_Delete(r);
    buf_free(&req);
    buf_free(&reply);
    buf_free(&page);
    buf_free(&tmp);
    return rc;
}

/* Works with the daemon running or stopped; needs read access to the
 * database (root or the hookd user). */
static int run_backup(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    char err[512];
    long long bytes;
    int rc = start_with_config(c, argc, argv, &a, &cfg);

    if (rc >= 0)
        return rc;
    if (backup_run(&cfg, a.pos[0], &bytes, err, sizeof err) < 0) {
        fprintf(stderr, "hookd backup: %s\n", err);
        rc = CLI_EXIT_ERROR;
    } else {
        printf("backed up %s to %s (%lld bytes)\n", cfg.db_path, a.pos[0], bytes);
        rc = CLI_EXIT_OK;
    }
    config_free(&cfg);
    return rc;
}

static int run_restore(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    char err[512], aside[4200];
    int rc = start_with_config(c, argc, argv, &a, &cfg);

    if (rc >= 0)
        return rc;
    if (backup_restore(&cfg, a.pos[0], aside, sizeof aside, err, sizeof err) < 0) {
        fprintf(stderr, "hookd restore: %s\n", err);
        rc = CLI_EXIT_ERROR;
    } else {
        printf("restored %s into %s\n", a.pos[0], cfg.db_path);
        if (aside[0])
            printf("the database it replaced is kept as %s\n", aside);
        printf("start hookd: rows in flight when the copy was taken are delivered again; "
               "events queued after it are not in the copy\n");
        rc = CLI_EXIT_OK;
    }
    config_free(&cfg);
    return rc;
}

static int run_export(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    struct export_counts n;
    char err[512];
    int rc = start_with_config(c, argc, argv, &a, &cfg);

    if (rc >= 0)
        return rc;
    if (client_daemon_answers(&cfg))
        fprintf(stderr, "hookd export: note: hookd is running; what it delivers from now on is delivered again by "
                        "the side that imports this file (stop it first to move a queue without duplicates)\n");
    if (export_run(&cfg, a.pos[0], util_now_ms(), &n, err, sizeof err) < 0) {
        fprintf(stderr, "hookd export: %s\n", err);
        rc = CLI_EXIT_ERROR;
    } else {
        /* on stderr: the file itself may be standard output */
        fprintf(stderr, "exported %lld endpoints (with their secrets: keep the file private), %lld breaker states, "
                "%lld messages (%lld pending, %lld awaiting retry, %lld dead letters)%s\n",
                (long long)n.endpoints, (long long)n.health, (long long)n.messages,
                (long long)n.by_status[MSG_PENDING], (long long)n.by_status[MSG_FAILED],
                (long long)n.by_status[MSG_DEAD_LETTER], strcmp(a.pos[0], "-") ? "" : " to standard output");
        if (n.orphans)
            fprintf(stderr, "left out %lld dead letters of deleted endpoints\n", (long long)n.orphans);
        rc = CLI_EXIT_OK;
    }
    config_free(&cfg);
    return rc;
}

static int run_import(const struct cmd *c, int argc, char **argv)
{
    struct args a;
    struct config cfg;
    struct import_counts n;
    char err[512];
    int rc = start_with_config(c, argc, argv, &a, &cfg), stored;

    if (rc >= 0)
        return rc;
    rc = import_run(&cfg, a.pos[0], util_now_ms(), &n, err, sizeof err) < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
    stored = n.messages + n.duplicates > 0;
    if (rc != CLI_EXIT_OK)
        fprintf(stderr, "hookd import: %s\n", err);
    if (rc == CLI_EXIT_OK || stored)
        printf("%s %lld messages (%lld pending, %lld awaiting retry, %lld dead letters), %lld already here "
               "(left as they were); endpoints: %lld created, %lld already here (kept their definition); "
               "%lld breaker states\n",
               rc == CLI_EXIT_OK ? "imported" : "before the error, stored", (long long)n.messages,
               (long long)n.by_status[MSG_PENDING], (long long)n.by_status[MSG_FAILED],
               (long long)n.by_status[MSG_DEAD_LETTER], (long long)n.duplicates, (long long)n.endpoints_created,
               (long long)n.endpoints_kept, (long long)n.health);
    if (rc != CLI_EXIT_OK && stored)
        printf("importing the whole file again is safe: what is stored already is skipped\n");
    if (n.config_made_api[0])
        printf("created as API endpoints (they came from the other side's configuration): %s\n",
               n.config_made_api);
    config_free(&cfg);
    return rc;
}

#define CLIENT(nm, adm, us, hl, op_, extra, minp, maxp, bld, shw)                              \
    {nm, run_client, 1, adm, us, hl, CLIENT_OPTS | (extra), minp, maxp, op_, bld, shw}

static const struct cmd commands[] = {
    {"serve", run_serve, 0, 0, "serve [-c FILE]", "Run the daemon in the foreground.",
     OB(O_CONFIG), 0, 0, NULL, NULL, NULL},
    {"check-config", run_check, 0, 0, "check-config [-c FILE] [--quiet]",
     "Validate the configuration and print the effective settings (secrets hidden).",
     OB(O_CONFIG) | OB(O_QUIET), 0, 0, NULL, NULL, NULL},
    CLIENT("ping", 0, "ping", "Check that the daemon answers.", "ping", 0, 0, 0, cli_build_none,
           cli_show_ping),
    CLIENT("send", 0,
           "send (--endpoint NAME [--type TYPE] | --type TYPE) [--event-id ID]\n"
           "                  [--delay DURATION | --deliver-at TIME] (--data JSON | --file FILE | payload on stdin)",
           "Queue one event: for one endpoint, or with only --type for every subscriber.",
           "enqueue", OB(O_ENDPOINT) | OB(O_TYPE) | OB(O_EVENT_ID) | OB(O_DATA) | OB(O_FILE) | OB(O_DELAY) |
           OB(O_DELIVER_AT), 0, 0,
           cli_build_send, cli_show_send),
    CLIENT("get", 0, "get ID | get --event-id ID [--endpoint NAME]", "Show one message and its delivery attempts.",
           "get", OB(O_EVENT_ID) | OB(O_ENDPOINT), 0, 1, cli_build_get, cli_show_get),
    CLIENT("attempts", 0, "attempts ID | attempts --event-id ID [--endpoint NAME]",
           "One message's attempt log, every attempt ever made (a requeue marked): method, URL as sent\n"
           "                   (secrets masked), status, response.",
           "attempts", OB(O_EVENT_ID) | OB(O_ENDPOINT), 0, 1, cli_build_get, cli_show_attempts),
    CLIENT("messages", 0,
           "messages [--endpoint NAME] [--status LIST] [--event-id ID] [--type GLOB] [--error-class C]\n"
           "                  [--since TIME] [--until TIME] [--where FIELD=VALUE]... [--limit N] [--after ID]\n"
           "                  [--ndjson]",
           "Find messages, newest first. TIME is epoch ms or a duration ago (2h); --where matches a\n"
           "                   dotted payload path exactly (admin); --after ID goes on where a page ended.",
           "messages",
           SELECT_OPTS | OB(O_STATUS) | OB(O_AFTER) | OB(O_NDJSON), 0, 0, cli_build_messages, cli_show_messages),
    CLIENT("erase", 1,
           "erase ID | erase --event-id ID [--endpoint NAME] | erase --since TIME [--until TIME]\n"
           "                  [--endpoint NAME] [--where FIELD=VALUE]... [--limit N] [--dry-run]",
           "Remove payloads, response excerpts and URLs as sent (ids, statuses, times stay); a waiting\n"
           "                   message is not delivered any more.",
           "erase", SELECT_OPTS | OB(O_DRY_RUN) | OB(O_AFTER), 0, 1, cli_build_erase, cli_show_erase),
    CLIENT("stats", 0, "stats", "Queue totals and delivery rates.", "stats", 0, 0, 0, cli_build_none,
           cli_show_stats),
    CLIENT("endpoints", 0, "endpoints", "List endpoints with circuit state, latency and queue.",
           "endpoint.list", 0, 0, 0, cli_build_none, cli_show_endpoints),
    CLIENT("endpoint-put", 1,
           "endpoint-put NAME --url URL [--secret S]... [--event-types a,b]\n"
           "                  [--header 'Name: value']... [--set key=value]...",
           "Create or replace an endpoint.", "endpoint.put",
           OB(O_URL) | OB(O_SECRET) | OB(O_EVENT_TYPES) | OB(O_HEADER) | OB(O_SET), 1, 1, cli_build_put,
           cli_show_put),
    CLIENT("endpoint-delete", 1, "endpoint-delete NAME",
           "Delete an endpoint; its queued messages become dead letters.", "endpoint.delete", 0, 1, 1,
           cli_build_delete, cli_show_delete),
    CLIENT("requeue", 1,
           "requeue ID | requeue (--endpoint NAME | --event-id ID) [--since TIME] [--status LIST]\n"
           "                  [--until TIME] [--type GLOB] [--error-class C] [--where F=V]... [--limit N] [--dry-run]",
           "Send messages again from the start (attempts reset, the log kept). By ID or event id: whatever\n"
           "                   it became; by endpoint: its dead letters, or the statuses in LIST\n"
           "                   (dead_letter,delivered,failed). TIME is epoch ms or a duration ago (2h).", "requeue",
           SELECT_OPTS | OB(O_STATUS) | OB(O_DRY_RUN) | OB(O_AFTER), 0, 1, cli_build_requeue, cli_show_requeued),
    CLIENT("purge", 1,
           "purge [--endpoint NAME] [--since TIME] [--event-id ID] [--until TIME] [--type GLOB]\n"
           "                  [--error-class C] [--where F=V]... [--limit N] [--dry-run]",
           "Delete dead letters.", "purge", SELECT_OPTS | OB(O_DRY_RUN) | OB(O_AFTER), 0, 0, cli_build_purge,
           cli_show_purged),
    CLIENT("pause", 1, "pause NAME", "Stop delivering to an endpoint (messages keep queuing).",
           "pause", 0, 1, 1, cli_build_endpoint, cli_show_pause),
    CLIENT("resume", 1, "resume NAME", "Resume delivering to a paused endpoint.", "resume", 0, 1, 1,
           cli_build_endpoint, cli_show_pause),
    CLIENT("dead-letters", 0, "dead-letters [--hours N]",
           "Dead letters per endpoint over the last N hours (default 24).", "dead_letters",
           OB(O_HOURS), 0, 0, cli_build_dead, cli_show_dead),
    CLIENT("slow", 0, "slow [--p95-ms N]",
           "Endpoints whose p95 latency is above N ms (default: configured).", "slow",
           OB(O_P95), 0, 0, cli_build_slow, cli_show_slow),
    CLIENT("metrics", 0, "metrics", "Print Prometheus metrics.", "metrics", 0, 0, 0, cli_build_none,
           cli_show_metrics),
    {"report", run_report, 0, 0, "report --html FILE [--since DURATION]",
     "Write a self-contained HTML health report (charts as inline SVG) of the last DURATION (default 24h).",
     OB(O_CONFIG) | OB(O_SOCKET) | OB(O_TIMEOUT) | OB(O_HTML) | OB(O_SINCE), 0, 0, NULL, NULL, NULL},
    {"top", run_top, 0, 0, "top [--once] [--sort COLUMN]",
     "Live view of the endpoints, refreshed every second (q quits; --once prints one frame).\n"
     "                   COLUMN: name state inflight dlv fail p50 p95 p99 queue oldest (default fail).",
     OB(O_CONFIG) | OB(O_SOCKET) | OB(O_TIMEOUT) | OB(O_ONCE) | OB(O_SORT), 0, 0, NULL, NULL, NULL},
    {"backup", run_backup, 0, 0, "backup FILE [-c FILE]",
     "Write an online, consistent copy of the database to FILE (which must not exist); the daemon\n"
     "                   may be running. Restore: hookd restore.",
     OB(O_CONFIG), 1, 1, NULL, NULL, NULL},
    {"restore", run_restore, 0, 0, "restore FILE [-c FILE]",
     "Put a copy made by backup in place of the database (hookd must be stopped); the replaced\n"
     "                   database is kept beside it.",
     OB(O_CONFIG), 1, 1, NULL, NULL, NULL},
    {"export", run_export, 0, 0, "export FILE [-c FILE]",
     "Write the endpoints, breaker states, waiting messages and dead letters as NDJSON to FILE\n"
     "                   (- for standard output; mode 0600: secrets are in it). Stop hookd first to move a queue.",
     OB(O_CONFIG), 1, 1, NULL, NULL, NULL},
    {"import", run_import, 0, 0, "import FILE [-c FILE]",
     "Add an export's endpoints and messages to this database (hookd stopped). Messages already\n"
     "                   here (same endpoint and event id) are skipped: importing twice adds nothing.",
     OB(O_CONFIG), 1, 1, NULL, NULL, NULL},
    {"schema-sql", run_schema_sql, 0, 0, "schema-sql",
     "Print the PostgreSQL schema (DDL), for operators who apply it themselves.", 0, 0, 0, NULL, NULL, NULL},
    {"version", run_version, 0, 0, "version", "Print the version.", 0, 0, 0, NULL, NULL, NULL},
    {"help", run_help, 0, 0, "help [COMMAND]", "Show usage.", 0, 0, 1, NULL, NULL, NULL},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const struct cmd *find_cmd(const char *name)
{
    size_t i;

    for (i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *out)
{
    size_t i;

    fprintf(out, "usage: hookd COMMAND [OPTIONS]\n       hookd --version | --help\n\ncommands:\n");
    for (i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-16s %s%s\n", commands[i].name, commands[i].help,
                commands[i].admin ? " (admin)" : "");
    fprintf(out,
            "\nclient options: -c FILE, -s/--socket PATH, --json, --timeout DUR\n"
            "environment: HOOKD_CONFIG (default %s), HOOKD_SOCKET\n"
            "client commands connect to HOOKD_SOCKET, -c's socket or " FALLBACK_SOCKET "\n"
            "exit status: 0 ok, 1 the daemon refused, 2 usage or configuration error,\n"
            "             3 daemon unreachable\n"
            "`hookd COMMAND --help` shows a command's options.\n",
            DEFAULT_CONFIG);
}

int cli_main(int argc, char **argv)
{
    const struct cmd *c;
    const char *name;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
        name = "version";
    else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    c = find_cmd(name);
    if (!c) {
        fprintf(stderr, "hookd: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return c->handler(c, argc - 1, argv + 1);
}
