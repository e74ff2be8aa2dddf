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

/* fsync a file or a directory by path */
static int sync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC), rc;

    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

int backup_run(const struct config *c, const char *path, long long *bytes, char *err, size_t errlen)
{
    struct store *st = NULL;
    struct buf tmp = {0}, dir = {0};
    struct stat sb;
    int rc = -1;

    *bytes = 0;
    if (lstat(path, &sb) == 0) {
        snprintf(err, errlen, "%s exists; hookd backup never overwrites: remove it or choose another name", path);
        return -1;
    }
    buf_printf(&tmp, "%s.tmp", path);
    buf_printf(&dir, "%s", path);
    if (tmp.failed || dir.failed) {
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
    if (sync_path(tmp.p, 0) < 0 || stat(tmp.p, &sb) < 0 || rename(tmp.p, path) < 0 ||
        sync_path(dirname(dir.p), 1) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp.p);
        goto out;
    }
    *bytes = (long long)sb.st_size;
    rc = 0;
out:
    store_close(st);
    buf_free(&tmp);
    buf_free(&dir);
    return rc;
}

/* from -> fd, whole */
static int copy_into(const char *from, int out)
{
    char b[65536];
    ssize_t n;
    int in = open(from, O_RDONLY | O_CLOEXEC), rc = -1;

    if (in < 0)
        return -1;
    while ((n = read(in, b, sizeof b)) > 0) {
        ssize_t off = 0, w;
        for (; off < n; off += w)
            if ((w = write(out, b + off, (size_t)(n - off))) < 0)
                goto out;
    }
    rc = n == 0 ? 0 : -1;
out:
    close(in);
    return rc;
}

int backup_restore(const struct config *c, const char *from, char *aside, size_t asidelen, char *err, size_t errlen)
{
    struct buf tmp = {0}, side = {0}, dir = {0};
    struct stat old;
    int lock = -1, out = -1, have_old, rc = -1;
    long long stamp = (long long)time(NULL);

    aside[0] = '\0';
    if (db_lock(c, &lock, err, errlen) < 0) {
        if (lock < 0 && strstr(err, "in use"))
            snprintf(err, errlen, "%s is in use by a running hookd: stop it first (systemctl stop hookd)", c->db_path);
        return -1;
    }
    if (stat(from, &old) == 0) {
        struct stat live, wal;
        struct buf w = {0};
        int same = stat(c->db_path, &live) == 0 && live.st_dev == old.st_dev && live.st_ino == old.st_ino;
        /* only the main file is copied: a log beside it would be lost */
        int logged = (buf_printf(&w, "%s-wal", from), !w.failed && stat(w.p, &wal) == 0 && wal.st_size > 0);
        buf_free(&w);
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
    buf_printf(&dir, "%s", c->db_path);
    if (tmp.failed || dir.failed) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    have_old = stat(c->db_path, &old) == 0;
    /* a first database is owned like its directory */
    if (!have_old && stat(dirname(dir.p), &old) < 0) {
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
    buf_reset(&dir);
    buf_printf(&dir, "%s-wal", c->db_path);
    if (side.p) {
        struct buf sw = {0};
        buf_printf(&sw, "%s-wal", side.p);
        if (!dir.failed && !sw.failed && rename(dir.p, sw.p) < 0 && errno != ENOENT) {
            snprintf(err, errlen, "cannot move %s aside: %s", dir.p, strerror(errno));
            buf_free(&sw);
            goto fail;
        }
        buf_free(&sw);
    } else if (unlink(dir.p) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove the stale %s: %s", dir.p, strerror(errno));
        goto fail;
    }
    buf_reset(&dir);
    buf_printf(&dir, "%s-shm", c->db_path);
    if (unlink(dir.p) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", dir.p, strerror(errno));
        goto fail;
    }
    buf_reset(&dir);
    buf_printf(&dir, "%s", c->db_path);
    if (rename(tmp.p, c->db_path) < 0 || sync_path(dirname(dir.p), 1) < 0) {
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
    buf_free(&dir);
    return rc;
}
