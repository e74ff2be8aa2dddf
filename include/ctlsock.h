/* ctlsock.h - the control socket's file and its callers' rights: creating
 * the socket (its directory, a stale socket from a crash, mode 0660 and
 * [server] group) and deciding from peer credentials (SO_PEERCRED) who
 * may use the admin operations. */
#ifndef HOOKD_CTLSOCK_H
#define HOOKD_CTLSOCK_H
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/* A listening, non-blocking socket at [server] socket; -1 with err (a live
 * hookd on the same path, a non-socket file there, permissions). */
int ctlsock_open(const struct config *c, char *err, size_t errlen);
/* root, hookd's own uid, [server] admin_uids, or a member (primary or
 * supplementary) of admin_groups. */
int ctlsock_peer_is_admin(const struct config *c, uid_t uid, gid_t gid);

#endif
