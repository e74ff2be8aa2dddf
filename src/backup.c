/* backup.c - `hookd backup FILE` and `hookd restore FILE`. The copy is
 * the store's own (SQLite's backup API for the embedded backend) from a
 * read-only connection: it sees one snapshot, so the daemon's writer goes
 * on committing meanwhile. Restoring is a file swap of the embedded
 * database, under the daemon's own single-instance lock. */
#include "backup.h"
#include "db.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int backup_run(const struct config *c, const char *path, long long *bytes, char *err, size_t errlen)
{
    struct store *st = NULL;
    struct buf tmp = {0};
    struct stat sb;
    int rc = -1;

    *bytes = 0;
    if (c->backend != CFG_BACKEND_SQLITE) {
        snprintf(err, errlen, "hookd backup copies the SQLite file; with [storage] backend = postgres, back up the "
                              "database with pg_dump or pg_basebackup (or move a queue with hookd export)");
        return -1;
    }
    if (lstat(path, &sb) == 0) {
        snprintf(err, errlen, "%s exists; hookd backup never overwrites: remove it or choose another name", path);
        return -1;
    }
    buf_printf(&tmp, "%s.tmp", path);
    if (tmp.failed) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* a .tmp of ours is what a failed earlier run left */
    if (unlink(tmp.p) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", tmp.p, strerror(errno));
        goto out;
    }
    if (store_open(c, STORE_READER, &st, err, errlen) < 0)
        goto out;
    if (st->ops->backup(st, tmp.p) < 0) {
        snprintf(err, errlen, "%s", st->errmsg);
        unlink(tmp.p);
        goto out;
    }
    if (util_fsync_path(tmp.p, 0) < 0 || stat(tmp.p, &sb) < 0 || rename(tmp.p, path) < 0 ||
        util_fsync_parent(path) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp.p);
        goto out;
    }
    *bytes = (long long)sb.st_size;
    rc = 0;
out:
    store_close(st);
    buf_free(&tmp);
    return rc;
}

/* path + suffix, in b; NULL: out of memory */
static const char *sibling(struct buf *b, const char *path, const char *suffix)
{
    buf_reset(b);
    buf_printf(b, "%s%s", path, suffix);
    return b->failed ? NULL : b->p;
}

/* from -> fd, whole */
static int copy_into(const char *from, int out)
{
    char b[65536];
    ssize_t n;
    int in = open(from, O_RDONLY | O_CLOEXEC), rc = -1;

    if (in < 0)
        return -1;
    while ((n = read(in, b, sizeof b)) > 0)
        if (util_write_all(out, b, (size_t)n) < 0)
            break;
    rc = n == 0 ? 0 : -1;
    close(in);
    return rc;
}

int backup_restore(const struct config *c, const char *from, char *aside, size_t asidelen, char *err, size_t errlen)
{
    struct buf tmp = {0}, side = {0}, sib = {0}, sib2 = {0};
    const char *p, *q = NULL;
    struct stat old;
    int lock = -1, out = -1, have_old, rc = -1;
    long long stamp = (long long)time(NULL);

    aside[0] = '\0';
    if (c->backend != CFG_BACKEND_SQLITE) {
        snprintf(err, errlen, "restore replaces the SQLite file; with [storage] backend = postgres, restore the "
                              "database with pg_restore (or move a queue with hookd import)");
        return -1;
    }
    if (db_lock(c, &lock, err, errlen) < 0) {
        if (lock < 0 && strstr(err, "in use"))
            snprintf(err, errlen, "%s is in use by a running hookd: stop it first (systemctl stop hookd)", c->db_path);
        return -1;
    }
    if (stat(from, &old) == 0) {
        struct stat live, wal;
        int same = stat(c->db_path, &live) == 0 && live.st_dev == old.st_dev && live.st_ino == old.st_ino;
        /* only the main file is copied: a log beside it would be lost */
        int logged = (p = sibling(&sib, from, "-wal")) && stat(p, &wal) == 0 && wal.st_size > 0;
        if (same || logged) {
            snprintf(err, errlen, same ? "%s is the database itself" :
                     "%s has a -wal beside it (a live database, or one copied with its log): make the copy with "
                     "hookd backup", from);
            goto out;
        }
    }
    if (db_check_file(from, err, errlen) < 0)
        goto out;
    buf_printf(&tmp, "%s.restore.tmp", c->db_path);
    if (tmp.failed || !sibling(&sib, c->db_path, "")) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    have_old = stat(c->db_path, &old) == 0;
    /* a first database is owned like its directory */
    if (!have_old && stat(dirname(sib.p), &old) < 0) {
        snprintf(err, errlen, "cannot reach the directory of %s: %s", c->db_path, strerror(errno));
        goto out;
    }
    unlink(tmp.p);
    out = open(tmp.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (out < 0 || copy_into(from, out) < 0 || fsync(out) < 0) {
        snprintf(err, errlen, "cannot copy %s to %s: %s", from, tmp.p, strerror(errno));
        goto fail;
    }
    /* run as root, the file must still be the daemon user's; run as that
     * user, it already is (EPERM) */
    if (fchown(out, old.st_uid, old.st_gid) < 0 && errno != EPERM) {
        snprintf(err, errlen, "cannot give %s its owner: %s", tmp.p, strerror(errno));
        goto fail;
    }
    if (have_old)
        fchmod(out, old.st_mode & 0777);
    close(out);
    out = -1;
    /* the old database stays whole under its new name: the file by a
     * link, its -wal moved with it (the -shm is only an index) */
    if (have_old) {
        buf_printf(&side, "%s.pre-restore-%lld", c->db_path, stamp);
        if (side.failed || link(c->db_path, side.p) < 0) {
            snprintf(err, errlen, "cannot keep the current database as %s: %s", side.p ? side.p : "?", strerror(errno));
            goto fail;
        }
        snprintf(aside, asidelen, "%s", side.p);
    }
    if (!(p = sibling(&sib, c->db_path, "-wal")) || (have_old && !(q = sibling(&sib2, side.p, "-wal")))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (have_old ? rename(p, q) < 0 && errno != ENOENT : unlink(p) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot move %s %s: %s", p, have_old ? "aside" : "away (stale)", strerror(errno));
        goto fail;
    }
    if (!(p = sibling(&sib, c->db_path, "-shm")) || (unlink(p) < 0 && errno != ENOENT)) {
        snprintf(err, errlen, "cannot remove %s-shm: %s", c->db_path, p ? strerror(errno) : "out of memory");
        goto fail;
    }
    if (rename(tmp.p, c->db_path) < 0 || util_fsync_parent(c->db_path) < 0) {
        snprintf(err, errlen, "cannot put the copy in place as %s: %s", c->db_path, strerror(errno));
        goto fail;
    }
    rc = 0;
    goto out;
fail:
    if (out >= 0)
        close(out);
    unlink(tmp.p);
out:
    close(lock);
    buf_free(&tmp);
    buf_free(&side);
    buf_free(&sib);
    buf_free(&sib2);
    return rc;
}
