/* client.h - talking to the daemon: which socket (-s, HOOKD_SOCKET, the
 * config file), one request line out, one reply line back, with a
 * deadline. */
#ifndef HOOKD_CLIENT_H
#define HOOKD_CLIENT_H
#include <stddef.h>
#include <stdint.h>

#include "cli_args.h"
#include "config.h"
#include "util.h"

/* HOOKD_CONFIG, or the packaged path. */
const char *client_default_config(void);
/* Read a config file, reporting errors on stderr. 0 / -1. */
int client_load_config(struct config *cfg, const char *path);
/* -s beats HOOKD_SOCKET beats the config's [server] socket. */
int client_resolve_socket(const struct args *a, char *out, size_t n);
/* Send req (one line), read one reply line into reply. -1 with err. */
int client_transact(const char *path, const struct buf *req, int64_t timeout_ms, struct buf *reply, char *err,
                    size_t errlen);

/* A daemon answers a ping on the config's socket within a second. */
int client_daemon_answers(const struct config *cfg);

#endif
