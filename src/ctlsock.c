/* ctlsock.c - the control socket's file and who may administer through it. */
#include "ctlsock.h"
#include "log.h"
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

int ctlsock_open(const struct config *c, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char *copy = strdup(c->socket_path), *dir;
    struct stat st;
    gid_t gid = (gid_t)-1;
    int fd = -1, probe;

    if (!copy)
        return -1;
    dir = dirname(copy);
    if (*c->group) {
        struct group *g = getgrnam(c->group);
        if (g)
            gid = g->gr_gid;
    }
    if (mkdir(dir, 0750) == 0) {
        if (gid != (gid_t)-1 && chown(dir, (uid_t)-1, gid) < 0)
            log_warn("chown_failed", "path=%s err=\"%s\"", dir, strerror(errno));
    } else if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create socket directory %s: %s", dir, strerror(errno));
        goto fail;
    }
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
    if (chmod(c->socket_path, 0660) < 0 ||
        (gid != (gid_t)-1 && chown(c->socket_path, (uid_t)-1, gid) < 0)) {
        snprintf(err, errlen, "cannot set mode/group of %s: %s", c->socket_path, strerror(errno));
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
