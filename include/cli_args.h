/* cli_args.h - the command line's options and commands: parsing argv
 * and turning a client command into its request line (cli_args.c). The
 * command table itself is in cli.c; the output in cli_show.c; the socket
 * in client.c. */
#ifndef HOOKD_CLI_ARGS_H
#define HOOKD_CLI_ARGS_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define DEFAULT_CONFIG "/etc/hookd/hookd.ini"
/* Where packaged installs put the socket; used when no config is readable
 * (an unprivileged user typically cannot read /etc/hookd/hookd.ini). */
#define FALLBACK_SOCKET "/run/hookd/hookd.sock"
#define DEFAULT_TIMEOUT_MS 30000
#define MAX_REPEAT 64
/* Above the largest max_line the daemon accepts (64 MiB). */
#define MAX_PAYLOAD_READ ((size_t)64 << 20)
/* Endpoint lists are a few MB; this only stops a runaway peer. */
#define MAX_REPLY ((size_t)512 << 20)

enum opt_id {
    O_HELP,
    O_CONFIG,
    O_SOCKET,
    O_JSON,
    O_TIMEOUT,
    O_QUIET,
    O_ENDPOINT,
    O_TYPE,
    O_EVENT_ID,
    O_DATA,
    O_DELAY,
    O_DELIVER_AT,
    O_FILE,
    O_URL,
    O_SECRET,
    O_EVENT_TYPES,
    O_HEADER,
    O_SET,
    O_SINCE,
    O_HOURS,
    O_P95,
    O_STATUS,
    O_ONCE,
    O_SORT,
    O_HTML,
    O_WHERE,
    O_UNTIL,
    O_LIMIT,
    O_AFTER,
    O_NDJSON,
    O_DRY_RUN,
    O_ERROR_CLASS,
    O__COUNT
};

#define OB(x) (1u << (x))
#define CLIENT_OPTS (OB(O_CONFIG) | OB(O_SOCKET) | OB(O_JSON) | OB(O_TIMEOUT))

enum { R_SECRET, R_HEADER, R_SET, R_WHERE, R__COUNT };

/* The options that select messages (messages, requeue, purge, erase). */
#define SELECT_OPTS                                                                                  \
    (OB(O_ENDPOINT) | OB(O_EVENT_ID) | OB(O_TYPE) | OB(O_ERROR_CLASS) | OB(O_SINCE) | OB(O_UNTIL) | \
     OB(O_WHERE) | OB(O_LIMIT))

struct args {
    unsigned seen;
    const char *val[O__COUNT];
    const char *rep[R__COUNT][MAX_REPEAT];
    size_t nrep[R__COUNT];
    const char *pos[2];
    size_t npos;
};

struct cmd;
typedef int (*handler_fn)(const struct cmd *c, int argc, char **argv);
typedef int (*build_fn)(const struct args *a, cJSON *req, struct buf *payload, char *err,
                        size_t errlen);
typedef void (*show_fn)(const cJSON *reply, const struct args *a);

struct cmd {
    const char *name;
    handler_fn handler;
    int needs_socket;
    int admin;
    const char *usage;
    const char *help;
    unsigned opts;  /* accepted options; --help is always accepted */
    size_t min_pos, max_pos;
    const char *op;
    build_fn build;
    show_fn show;
};

/* argv[0] is the command name. Returns 0, 1 when --help was given, or -1
 * with err filled. */
int cli_parse_args(const struct cmd *c, int argc, char **argv, struct args *a, char *err, size_t errlen);
/* The request line of a client command (without its newline), appended to out. */
int cli_assemble(const struct cmd *c, const struct args *a, struct buf *out, char *err, size_t errlen);

/* The request builders of the command table: fill req (and the payload). */
/* Request members for the builders here and in cli_msgs.c: 0, or -1 with
 * "out of memory" in err. */
int cli_oom(char *err, size_t errlen);
int cli_add_str(cJSON *o, const char *k, const char *v, char *err, size_t errlen);
int cli_add_num(cJSON *o, const char *k, int64_t v, char *err, size_t errlen);

int cli_build_none(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_send(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_get(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_requeue(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_purge(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_endpoint(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_delete(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_put(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_dead(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_slow(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
/* cli_args.c: the selector's members from the options (not --endpoint, --since,
 * --status: each command adds those its own way). 0 / -1 with err. */
int cli_build_selector(const struct args *a, cJSON *req, char *err, size_t errlen);
/* --since as "since" (epoch ms or a duration ago). */
int cli_build_since(const struct args *a, cJSON *req, char *err, size_t errlen);

/* Check a payload for `send` and append it to out as it goes on the wire:
 * outer whitespace trimmed, newlines between tokens turned into spaces
 * (the protocol is one request per line), every other byte unchanged.
 * Must be a JSON object or array. Returns 0, or -1 with err filled. */
int cli_payload_normalise(const char *text, size_t len, struct buf *out, char *err, size_t errlen);

/* "--since" values: an epoch in ms, or a duration ("2h") meaning that long
 * before now_ms. Returns 0 and the epoch ms, or -1. */
int cli_parse_since(const char *s, int64_t now_ms, int64_t *out);

#endif
