/* cli_msgs.h - the command line's message search and erasure: hookd
 * messages and erase, and the output of requeue and purge by filter
 * (cli_msgs.c). The request builders are declared in cli_args.h. */
#ifndef HOOKD_CLI_MSGS_H
#define HOOKD_CLI_MSGS_H
#include <cjson/cJSON.h>

#include "cli_args.h"

/* A table of messages; --ndjson: one JSON object per line. */
void cli_show_messages(const cJSON *r, const struct args *a);
/* What erase, requeue and purge did, or would do (--dry-run). */
void cli_show_erase(const cJSON *r, const struct args *a);
void cli_show_requeued(const cJSON *r, const struct args *a);
void cli_show_purged(const cJSON *r, const struct args *a);

#endif
