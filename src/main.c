/* main.c - the one hookd binary; everything lives behind cli_main. */
#include "cli.h"

#include <sys/stat.h>

int main(int argc, char **argv)
{
    /* Everything hookd writes (the database and its -wal/-shm, backups,
     * exports, the key file) is its owner's alone: group and others lose
     * all bits whatever the caller's umask. The control socket is the
     * one file meant for others; ctlsock.c sets its mode explicitly. */
    mode_t m = umask(077);

    umask(m | 077);
    return cli_main(argc, argv);
}
