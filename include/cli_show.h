/* cli_show.h - the daemon's replies for people: aligned tables and
 * key/value lists (--json prints the reply itself). Daemon strings are
 * sanitised: they can carry text from remote servers. */
#ifndef HOOKD_CLI_SHOW_H
#define HOOKD_CLI_SHOW_H
#include <cjson/cJSON.h>
#include <stddef.h>

#include "cli_args.h"

const cJSON *cli_jget(const cJSON *o, const char *k);
void cli_fmt_val(const cJSON *v, char *out, size_t n);
void cli_sanitize(const char *s, char *out, size_t n);

/* The renderers of the command table. */
void cli_show_ping(const cJSON *r, const struct args *a);
void cli_show_send(const cJSON *r, const struct args *a);
void cli_show_get(const cJSON *r, const struct args *a);
void cli_show_attempts(const cJSON *r, const struct args *a);
void cli_show_stats(const cJSON *r, const struct args *a);
void cli_show_endpoints(const cJSON *r, const struct args *a);
void cli_show_put(const cJSON *r, const struct args *a);
void cli_show_delete(const cJSON *r, const struct args *a);
void cli_show_requeue(const cJSON *r, const struct args *a);
void cli_show_purge(const cJSON *r, const struct args *a);
void cli_show_pause(const cJSON *r, const struct args *a);
void cli_show_dead(const cJSON *r, const struct args *a);
void cli_show_slow(const cJSON *r, const struct args *a);
void cli_show_metrics(const cJSON *r, const struct args *a);

#endif
