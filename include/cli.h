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

#endif
