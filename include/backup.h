/* backup.h - `hookd backup FILE`: an online, consistent copy of the
 * database, taken through the store's reader role (the daemon may be
 * running; nothing waits for the copy); `hookd restore FILE` puts one
 * back while the daemon is stopped. */
#ifndef HOOKD_BACKUP_H
#define HOOKD_BACKUP_H

#include <stddef.h>

struct config;

/* Copy c's database into path, which must not exist: into path.tmp,
 * synced, then renamed (a half-written copy never carries the name).
 * Returns 0, or -1 with the reason in err. *bytes: the copy's size. */
int backup_run(const struct config *c, const char *path, long long *bytes, char *err, size_t errlen);

/* Make the copy at from c's database, with the daemon stopped (its lock
 * is taken for the duration; a running hookd is refused). The copy is
 * checked first (hookd schema, integrity_check); the database it
 * replaces is kept beside it, with its -wal, as DB.pre-restore-EPOCH
 * (named in aside), and a -wal or -shm of the old file never meets the
 * new one. Returns 0, or -1 with the reason in err. */
int backup_restore(const struct config *c, const char *from, char *aside, size_t asidelen, char *err, size_t errlen);

#endif
