/* export.h - `hookd export FILE` and `hookd import FILE`: a queue moved
 * between databases (SQLite to SQLite today; any store backend, the
 * format is export_fmt.h). Export reads one snapshot through a reader
 * (the daemon may run); import writes through the writer role, so the
 * importing hookd must be stopped (its lock says so). */
#ifndef HOOKD_EXPORT_H
#define HOOKD_EXPORT_H
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct config;

struct export_counts {
    int64_t endpoints, health, messages;
    int64_t by_status[MSG__COUNT];
    int64_t orphans;             /* rows of deleted endpoints: not exported */
};

/* Messages are counted when their batch commits: after a failure the
 * counts say what is stored. */
struct import_counts {
    int64_t endpoints_created, endpoints_kept, health, messages, duplicates;
    int64_t by_status[MSG__COUNT];
    char config_made_api[512];   /* endpoints that came from the source's configuration, created here as API ones */
};

/* Write c's queue to path ("-": standard output), which must not exist:
 * path.tmp, mode 0600 (endpoint secrets are in it), synced, renamed. */
int export_run(const struct config *c, const char *path, int64_t now, struct export_counts *n, char *err,
               size_t errlen);
/* Read path ("-": standard input) into c's database, in transactions of
 * at most 1000 messages. An endpoint that exists keeps its definition;
 * a message whose (endpoint, event_id) exists is left as it is, so a
 * second import of the same file adds nothing. */
int import_run(const struct config *c, const char *path, int64_t now, struct import_counts *n, char *err,
               size_t errlen);

#endif
