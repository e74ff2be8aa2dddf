/* cli.h - the hookd command line: command table, client subcommands that
 * talk to the control socket, human tables and --json output. */
#ifndef HOOKD_CLI_H
#define HOOKD_CLI_H
#include <stddef.h>

#include "util.h"

/* Exit codes (documented in README and hookd(8)). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1      /* the daemon answered ok:false */
#define CLI_EXIT_USAGE 2      /* bad arguments or bad configuration */
#define CLI_EXIT_UNAVAILABLE 3 /* cannot reach the daemon */

int cli_main(int argc, char **argv);

/* Turn a client command line (argv[0] is the command name, e.g. "send")
 * into the request line it would send, without the trailing newline.
 * Transport options (-c, -s, --json, --timeout) are accepted and ignored.
 * `send` without --data/--file reads the payload from stdin. Appends to
 * out; returns 0, or -1 with a message in err. Exposed for unit tests. */
int cli_build_request(int argc, char **argv, struct buf *out, char *err, size_t errlen);

/* Check a payload for `send` and append it to out as it goes on the wire:
 * outer whitespace trimmed, newlines between tokens turned into spaces
 * (the protocol is one request per line), every other byte unchanged.
 * Must be a JSON object or array. Returns 0, or -1 with err filled. */
int cli_payload_normalise(const char *text, size_t len, struct buf *out, char *err, size_t errlen);

/* "--since" values: an epoch in ms, or a duration ("2h") meaning that long
 * before now_ms. Returns 0 and the epoch ms, or -1. */
int cli_parse_since(const char *s, int64_t now_ms, int64_t *out);

#endif
