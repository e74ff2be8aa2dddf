/* cli_msgs.h - the command line's message search and erasure: hookd
 * messages and erase, and the output of requeue and purge by filter
 * (cli_msgs.c). */
#ifndef HOOKD_CLI_MSGS_H
#define HOOKD_CLI_MSGS_H
#include <cjson/cJSON.h>

#include "cli_args.h"

/* The requests of hookd messages and erase (an ID, or a filter as
 * messages takes it). */
int cli_build_messages(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);
int cli_build_erase(const struct args *a, cJSON *req, struct buf *payload, char *err, size_t errlen);

/* A table of messages; --ndjson: one JSON object per line. */
void cli_show_messages(const cJSON *r, const struct args *a);
/* What erase, requeue and purge did, or would do (--dry-run). */
void cli_show_erase(const cJSON *r, const struct args *a);
void cli_show_requeued(const cJSON *r, const struct args *a);
void cli_show_purged(const cJSON *r, const struct args *a);

#endif
