/* server.h - the daemon: the epoll event loop on the control socket, and
 * start-up/shut-down of the writer, reader and delivery threads. */
#ifndef HOOKD_SERVER_H
#define HOOKD_SERVER_H

#include "config.h"

/* Run the daemon in the foreground until SIGTERM/SIGINT. c stays owned
 * by the caller; config_path is re-read on SIGHUP. Returns the process
 * exit status (0 clean shutdown, 1 start-up failure). */
int server_run(struct config *c, const char *config_path);

#endif
