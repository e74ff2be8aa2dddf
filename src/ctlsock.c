/* ctlsock.c - the control socket's file and who may administer through it. */
#include "ctlsock.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* mkdir -p for the socket's directory: its parents 0755 (./var/run in a
 * source tree), the directory itself 0750 (chmod: hookd's umask is 077). */
static int make_dir(char *dir, char *err, size_t errlen)
{
    char *p;

    for (p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) == 0) {
            chmod(dir, 0755);
        } else if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    if (mkdir(dir, 0750) == 0) {
        if (chmod(dir, 0750) < 0) {
            snprintf(err, errlen, "cannot set the mode of %s: %s", dir, strerror(errno));
            return -1;
        }
    } else if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create socket directory %s: %s%s", dir, strerror(errno),
                 errno == EACCES ? " (create it as root, owned by hookd's user: see \"Running without systemd\" "
                                   "in hookd(8))" : "");
        return -1;
    }
    return 0;
}

/* [server] group opens the socket's directory to that group. systemd's
 * RuntimeDirectory= creates /run/hookd hookd:hookd 0750 before hookd
 * starts, so a directory we own is given the group whoever created it;
 * one owned by someone else (/tmp, a shared dir) is left alone. Without
 * [server] group nothing is changed. */
static int share_dir(const char *dir, gid_t gid, const char *group, char *err, size_t errlen)
{
    struct stat st;

    if (gid == (gid_t)-1)
        return 0;
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid())
        return 0;
    if (st.st_gid != gid && chown(dir, (uid_t)-1, gid) < 0) {
        snprintf(err, errlen,
                 "cannot give %s to group %s: %s (hookd's user must be a member of %s: "
                 "SupplementaryGroups= in the unit, or usermod -a -G %s)",
                 dir, group, strerror(errno), group, group);
        return -1;
    }
    /* the group needs search (x) to reach the socket */
    if ((st.st_mode & 0050) != 0050 && chmod(dir, (st.st_mode | 0050) & 07777) < 0) {
        snprintf(err, errlen, "cannot set the mode of %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int ctlsock_open(const struct config *c, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char *copy = strdup(c->socket_path), *dir;
    struct stat st;
    gid_t gid = (gid_t)-1;
    int fd = -1, probe;

    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    dir = dirname(copy);
    if (*c->group) {
        struct group *g = getgrnam(c->group);
        if (!g) {
            snprintf(err, errlen, "[server] group: unknown group '%s'", c->group);
            goto fail;
        }
        gid = g->gr_gid;
    }
    if (make_dir(dir, err, errlen) < 0 || share_dir(dir, gid, c->group, err, errlen) < 0)
        goto fail;
    util_strlcpy(sa.sun_path, c->socket_path, sizeof sa.sun_path);
    if (lstat(c->socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "%s exists and is not a socket; refusing to replace it", c->socket_path);
            goto fail;
        }
        probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            snprintf(err, errlen, "another hookd is serving %s", c->socket_path);
            goto fail;
        }
        if (probe >= 0)
            close(probe);
        unlink(c->socket_path);  /* stale, from a crash */
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, errlen, "cannot bind %s: %s", c->socket_path, strerror(errno));
        goto fail;
    }
    if (chmod(c->socket_path, 0660) < 0) {
        snprintf(err, errlen, "cannot set the mode of %s: %s", c->socket_path, strerror(errno));
        goto fail;
    }
    if (gid != (gid_t)-1 && chown(c->socket_path, (uid_t)-1, gid) < 0) {
        snprintf(err, errlen, "cannot give %s to group %s: %s", c->socket_path, c->group, strerror(errno));
        goto fail;
    }
    if (listen(fd, 4096) < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", c->socket_path, strerror(errno));
        goto fail;
    }
    free(copy);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    free(copy);
    return -1;
}

int ctlsock_peer_is_admin(const struct config *c, uid_t uid, gid_t gid)
{
    size_t i;

    if (uid == 0 || uid == geteuid())
        return 1;
    for (i = 0; i < c->n_admin_uid; i++)
        if (c->admin_uid[i] == uid)
            return 1;
    for (i = 0; i < c->n_admin_gid; i++)
        if (c->admin_gid[i] == gid)
            return 1;
    if (c->n_admin_gid) {
        /* supplementary groups of the peer's user */
        struct passwd pw, *res = NULL;
        char tmp[4096];
        gid_t groups[256];
        int ng = 256, k;
        if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res &&
            getgrouplist(pw.pw_name, pw.pw_gid, groups, &ng) >= 0)
            for (k = 0; k < ng; k++)
                for (i = 0; i < c->n_admin_gid; i++)
                    if (groups[k] == c->admin_gid[i])
                        return 1;
    }
    return 0;
}
