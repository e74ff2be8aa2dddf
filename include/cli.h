/* cli.h - the hookd command line: command table, client subcommands that
 * talk to the control socket, human tables and --json output. */
#ifndef HOOKD_CLI_H
#define HOOKD_CLI_H

/* Exit codes (documented in README and hookd(8)). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1      /* the daemon answered ok:false */
#define CLI_EXIT_USAGE 2      /* bad arguments or bad configuration */
#define CLI_EXIT_UNAVAILABLE 3 /* cannot reach the daemon */

int cli_main(int argc, char **argv);

#endif
