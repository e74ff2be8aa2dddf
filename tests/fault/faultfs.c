/* faultfs.c - an LD_PRELOAD shim that makes file I/O fail on demand.
 *
 * Intercepts write, pwrite, pwrite64, writev, pwritev, pwritev64,
 * ftruncate, ftruncate64, fallocate, fallocate64, posix_fallocate,
 * posix_fallocate64 ("write class") and fsync, fdatasync, sync_file_range
 * ("sync class") on descriptors whose path matches, and returns -1 with
 * ENOSPC or EIO while armed. Everything else passes through untouched.
 *
 * Which files: the path (from /proc/self/fd/N, cached per descriptor,
 * invalidated by close/dup2/dup3) contains $FAULTFS_MATCH, or, without
 * it, ends in .db, .db-wal, .db-shm or .db-journal.
 *
 * Control, at run time, without restarting the process: $FAULTFS_CTL names
 * a file; it is re-read whenever its inode, size, mtime or ctime change
 * (write a new file and rename it over, so every change is seen). Its
 * words:
 *
 *   off | enospc | eio-write | eio-fsync     the mode (default off)
 *   after N       let N more matching calls of the class succeed first
 *   times M       fail M calls, then behave as off (default: forever)
 *   file SUFFIX   only paths ending in SUFFIX (e.g. ".db-wal", ".db")
 *
 * e.g. "eio-fsync after 3 times 1 file .db-wal".
 * enospc fails the write class with ENOSPC (ftruncate only when it grows
 * the file), eio-write the write class with EIO, eio-fsync the sync class
 * with EIO.
 *
 * Evidence: at load, "$FAULTFS_CTL.loaded" is created (a test can tell a
 * static binary, which ignores LD_PRELOAD, from a loaded shim); every
 * injected failure rewrites "$FAULTFS_CTL.count" with "injected=N" and
 * the first few are logged on stderr as "faultfs: inject ...".
 *
 * The fast path is lock-free (atomics, raw syscalls, no malloc, no stdio);
 * re-reading the control file takes a spin lock. Threads are fine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXFD 65536
#define PATHMAX 4096

enum mode { M_OFF, M_ENOSPC, M_EIO_WRITE, M_EIO_FSYNC };
enum cls { C_WRITE, C_SYNC };

/* per-descriptor cache: (generation << 2) | state, state 0 unknown, 1 match, 2 no */
static _Atomic uint64_t fdcache[MAXFD];

static _Atomic int mode;
static _Atomic long after_left;   /* successes still allowed before failing */
static _Atomic long times_left;   /* failures still to inject; -1 = forever */
static _Atomic long injected;
static _Atomic uint64_t cfg_gen;  /* bumped when the file filter changes */
static char file_suffix[256];     /* written under ctl_lock, read after cfg_gen */
static atomic_flag ctl_lock = ATOMIC_FLAG_INIT;
static struct { dev_t dev; ino_t ino; off_t size; struct timespec mtime, ctime; int exists; } ctl_seen;
static const char *ctl_path;
static const char *match_env;
static int count_fd = -1;

/* raw syscalls: never through our own wrappers */
static ssize_t raw_write(int fd, const void *b, size_t n) { return syscall(SYS_write, fd, b, n); }
static ssize_t raw_pwrite(int fd, const void *b, size_t n, off_t o) { return syscall(SYS_pwrite64, fd, b, n, o); }

static size_t slen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }

static void say(const char *a, const char *b, const char *c)
{
    raw_write(2, a, slen(a));
    if (b) raw_write(2, b, slen(b));
    if (c) raw_write(2, c, slen(c));
}

static int ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = slen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static int path_matches(const char *p, size_t n)
{
    if (match_env && *match_env) {
        if (!memmem(p, n, match_env, slen(match_env)))
            return 0;
    } else if (!(ends_with(p, n, ".db") || ends_with(p, n, ".db-wal") || ends_with(p, n, ".db-shm") ||
                 ends_with(p, n, ".db-journal"))) {
        return 0;
    }
    if (file_suffix[0] && !ends_with(p, n, file_suffix))
        return 0;
    return 1;
}

static void fd_forget(int fd)
{
    if (fd >= 0 && fd < MAXFD) {
        uint64_t v = atomic_load(&fdcache[fd]);
        atomic_store(&fdcache[fd], ((v >> 2) + 1) << 2);
    }
}

static int fd_matches(int fd)
{
    char link[64], path[PATHMAX];
    uint64_t v, gen, want;
    ssize_t n;
    int i, len;
    char num[16];

    if (fd < 0 || fd >= MAXFD)
        return 0;
    v = atomic_load(&fdcache[fd]);
    if ((v & 3) == 1)
        return 1;
    if ((v & 3) == 2)
        return 0;
    gen = v >> 2;
    /* "/proc/self/fd/" + decimal fd, without snprintf */
    memcpy(link, "/proc/self/fd/", 14);
    len = 0;
    i = fd;
    do { num[len++] = (char)('0' + i % 10); i /= 10; } while (i);
    for (i = 0; i < len; i++)
        link[14 + i] = num[len - 1 - i];
    link[14 + len] = 0;
    n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = 0;
    want = (gen << 2) | (path_matches(path, (size_t)n) ? 1 : 2);
    atomic_compare_exchange_strong(&fdcache[fd], &v, want);
    return (want & 3) == 1;
}

static void forget_all(void)
{
    int i;
    for (i = 0; i < MAXFD; i++) {
        uint64_t v = atomic_load(&fdcache[i]);
        if (v & 3)
            atomic_store(&fdcache[i], ((v >> 2) + 1) << 2);
    }
}

static long parse_num(const char **s)
{
    long v = 0;
    while (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')
        (*s)++;
    while (**s >= '0' && **s <= '9')
        v = v * 10 + (*(*s)++ - '0');
    return v;
}

static int word_is(const char *s, size_t n, const char *w)
{
    return n == slen(w) && memcmp(s, w, n) == 0;
}

static void apply_ctl(const char *buf)
{
    const char *s = buf;
    int m = M_OFF;
    long after = 0, times = -1;
    char suffix[256] = "";

    while (*s) {
        const char *w;
        size_t n;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            s++;
        if (!*s)
            break;
        w = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            s++;
        n = (size_t)(s - w);
        if (word_is(w, n, "off")) m = M_OFF;
        else if (word_is(w, n, "enospc")) m = M_ENOSPC;
        else if (word_is(w, n, "eio-write")) m = M_EIO_WRITE;
        else if (word_is(w, n, "eio-fsync")) m = M_EIO_FSYNC;
        else if (word_is(w, n, "after")) after = parse_num(&s);
        else if (word_is(w, n, "times")) times = parse_num(&s);
        else if (word_is(w, n, "file")) {
            const char *v;
            size_t k;
            while (*s == ' ' || *s == '\t')
                s++;
            v = s;
            while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
                s++;
            k = (size_t)(s - v);
            if (k >= sizeof suffix)
                k = sizeof suffix - 1;
            memcpy(suffix, v, k);
            suffix[k] = 0;
        } else {
            say("faultfs: unknown word in control file: ", NULL, "\n");
        }
    }
    if (strcmp(suffix, file_suffix) != 0) {
        memcpy(file_suffix, suffix, sizeof suffix);
        forget_all();
        atomic_fetch_add(&cfg_gen, 1);
    }
    atomic_store(&after_left, after);
    atomic_store(&times_left, times);
    if (atomic_exchange(&mode, m) != m) {
        static const char *const names[] = {"off", "enospc", "eio-write", "eio-fsync"};
        say("faultfs: mode ", names[m], "\n");
    }
}

/* Re-read the control file if it changed. */
static void check_ctl(void)
{
    struct stat st;
    int exists, changed;

    if (!ctl_path)
        return;
    exists = stat(ctl_path, &st) == 0;
    if (atomic_flag_test_and_set(&ctl_lock))
        return;  /* someone else is reading it */
    changed = exists != ctl_seen.exists ||
              (exists && (st.st_ino != ctl_seen.ino || st.st_dev != ctl_seen.dev || st.st_size != ctl_seen.size ||
                          st.st_mtim.tv_sec != ctl_seen.mtime.tv_sec || st.st_mtim.tv_nsec != ctl_seen.mtime.tv_nsec ||
                          st.st_ctim.tv_sec != ctl_seen.ctime.tv_sec || st.st_ctim.tv_nsec != ctl_seen.ctime.tv_nsec));
    if (changed) {
        char buf[1024];
        ssize_t n = 0;
        ctl_seen.exists = exists;
        if (exists) {
            int fd = (int)syscall(SYS_openat, AT_FDCWD, ctl_path, O_RDONLY | O_CLOEXEC);
            ctl_seen.dev = st.st_dev;
            ctl_seen.ino = st.st_ino;
            ctl_seen.size = st.st_size;
            ctl_seen.mtime = st.st_mtim;
            ctl_seen.ctime = st.st_ctim;
            if (fd >= 0) {
                n = syscall(SYS_read, fd, buf, sizeof buf - 1);
                syscall(SYS_close, fd);
            }
        }
        buf[n > 0 ? n : 0] = 0;
        apply_ctl(buf);
    }
    atomic_flag_clear(&ctl_lock);
}

static void record_injection(const char *what, int fd)
{
    long n = atomic_fetch_add(&injected, 1) + 1;
    char out[48], num[24];
    int len = 0, i = 0;
    long v = n;

    do { num[len++] = (char)('0' + v % 10); v /= 10; } while (v);
    memcpy(out, "injected=", 9);
    for (i = 0; i < len; i++)
        out[9 + i] = num[len - 1 - i];
    out[9 + len] = '\n';
    if (count_fd >= 0)
        raw_pwrite(count_fd, out, (size_t)(10 + len), 0);
    if (n <= 5) {
        char fdbuf[16];
        int k = 0;
        v = fd;
        len = 0;
        do { num[len++] = (char)('0' + v % 10); v /= 10; } while (v);
        for (i = 0; i < len; i++)
            fdbuf[k++] = num[len - 1 - i];
        fdbuf[k] = 0;
        say("faultfs: inject ", what, " fd=");
        say(fdbuf, "\n", NULL);
    }
}

/* 0: let the call through; otherwise the errno to fail with. */
static int should_fail(int fd, enum cls c, const char *what)
{
    int m, err;
    long t;

    if (!ctl_path)
        return 0;
    check_ctl();
    m = atomic_load(&mode);
    if (m == M_OFF)
        return 0;
    if (c == C_SYNC && m != M_EIO_FSYNC)
        return 0;
    if (c == C_WRITE && m == M_EIO_FSYNC)
        return 0;
    if (!fd_matches(fd))
        return 0;
    if (atomic_load(&after_left) > 0 && atomic_fetch_sub(&after_left, 1) > 0)
        return 0;
    t = atomic_load(&times_left);
    if (t == 0)
        return 0;
    if (t > 0 && atomic_fetch_sub(&times_left, 1) <= 0)
        return 0;
    err = m == M_ENOSPC ? ENOSPC : EIO;
    record_injection(what, fd);
    return err;
}

#define REAL(name, ret, args)                                       \
    static ret(*real_##name) args;                                  \
    static ret(*get_##name(void)) args                              \
    {                                                               \
        if (!real_##name)                                           \
            real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);     \
        return real_##name;                                         \
    }

REAL(write, ssize_t, (int, const void *, size_t))
REAL(pwrite, ssize_t, (int, const void *, size_t, off_t))
REAL(pwrite64, ssize_t, (int, const void *, size_t, off64_t))
REAL(writev, ssize_t, (int, const struct iovec *, int))
REAL(pwritev, ssize_t, (int, const struct iovec *, int, off_t))
REAL(pwritev64, ssize_t, (int, const struct iovec *, int, off64_t))
REAL(ftruncate, int, (int, off_t))
REAL(ftruncate64, int, (int, off64_t))
REAL(fallocate, int, (int, int, off_t, off_t))
REAL(fallocate64, int, (int, int, off64_t, off64_t))
REAL(posix_fallocate, int, (int, off_t, off_t))
REAL(posix_fallocate64, int, (int, off64_t, off64_t))
REAL(fsync, int, (int))
REAL(fdatasync, int, (int))
REAL(sync_file_range, int, (int, off64_t, off64_t, unsigned int))
REAL(close, int, (int))
REAL(dup2, int, (int, int))
REAL(dup3, int, (int, int, int))

#define FAIL_IF(fd, cls, what)                       \
    do {                                             \
        int e_ = should_fail((fd), (cls), (what));   \
        if (e_) {                                    \
            errno = e_;                              \
            return -1;                               \
        }                                            \
    } while (0)

/* ftruncate: only a growing truncate can run out of space */
static int grows(int fd, off64_t len)
{
    struct stat st;
    return fstat(fd, &st) == 0 && len > st.st_size;
}

ssize_t write(int fd, const void *b, size_t n)
{
    if (fd > 2)
        FAIL_IF(fd, C_WRITE, "write");
    return get_write()(fd, b, n);
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t o)
{
    FAIL_IF(fd, C_WRITE, "pwrite");
    return get_pwrite()(fd, b, n, o);
}

ssize_t pwrite64(int fd, const void *b, size_t n, off64_t o)
{
    FAIL_IF(fd, C_WRITE, "pwrite64");
    return get_pwrite64()(fd, b, n, o);
}

ssize_t writev(int fd, const struct iovec *v, int n)
{
    if (fd > 2)
        FAIL_IF(fd, C_WRITE, "writev");
    return get_writev()(fd, v, n);
}

ssize_t pwritev(int fd, const struct iovec *v, int n, off_t o)
{
    FAIL_IF(fd, C_WRITE, "pwritev");
    return get_pwritev()(fd, v, n, o);
}

ssize_t pwritev64(int fd, const struct iovec *v, int n, off64_t o)
{
    FAIL_IF(fd, C_WRITE, "pwritev64");
    return get_pwritev64()(fd, v, n, o);
}

int ftruncate(int fd, off_t len)
{
    if (atomic_load(&mode) != M_EIO_WRITE && !grows(fd, len))
        return get_ftruncate()(fd, len);
    FAIL_IF(fd, C_WRITE, "ftruncate");
    return get_ftruncate()(fd, len);
}

int ftruncate64(int fd, off64_t len)
{
    if (atomic_load(&mode) != M_EIO_WRITE && !grows(fd, len))
        return get_ftruncate64()(fd, len);
    FAIL_IF(fd, C_WRITE, "ftruncate64");
    return get_ftruncate64()(fd, len);
}

int fallocate(int fd, int m, off_t o, off_t l)
{
    FAIL_IF(fd, C_WRITE, "fallocate");
    return get_fallocate()(fd, m, o, l);
}

int fallocate64(int fd, int m, off64_t o, off64_t l)
{
    FAIL_IF(fd, C_WRITE, "fallocate64");
    return get_fallocate64()(fd, m, o, l);
}

/* posix_fallocate returns the error number instead of setting errno */
int posix_fallocate(int fd, off_t o, off_t l)
{
    int e = should_fail(fd, C_WRITE, "posix_fallocate");
    return e ? e : get_posix_fallocate()(fd, o, l);
}

int posix_fallocate64(int fd, off64_t o, off64_t l)
{
    int e = should_fail(fd, C_WRITE, "posix_fallocate64");
    return e ? e : get_posix_fallocate64()(fd, o, l);
}

int fsync(int fd)
{
    FAIL_IF(fd, C_SYNC, "fsync");
    return get_fsync()(fd);
}

int fdatasync(int fd)
{
    FAIL_IF(fd, C_SYNC, "fdatasync");
    return get_fdatasync()(fd);
}

int sync_file_range(int fd, off64_t o, off64_t n, unsigned int flags)
{
    FAIL_IF(fd, C_SYNC, "sync_file_range");
    return get_sync_file_range()(fd, o, n, flags);
}

int close(int fd)
{
    int rc = get_close()(fd);
    fd_forget(fd);
    return rc;
}

int dup2(int a, int b)
{
    int rc = get_dup2()(a, b);
    if (rc >= 0)
        fd_forget(rc);
    return rc;
}

int dup3(int a, int b, int flags)
{
    int rc = get_dup3()(a, b, flags);
    if (rc >= 0)
        fd_forget(rc);
    return rc;
}

__attribute__((constructor)) static void faultfs_init(void)
{
    static char side[PATHMAX];
    size_t n;
    int fd;

    ctl_path = getenv("FAULTFS_CTL");
    match_env = getenv("FAULTFS_MATCH");
    if (!ctl_path || !*ctl_path) {
        ctl_path = NULL;
        return;
    }
    n = slen(ctl_path);
    if (n + 10 >= sizeof side)
        return;
    memcpy(side, ctl_path, n);
    memcpy(side + n, ".count", 7);
    count_fd = (int)syscall(SYS_openat, AT_FDCWD, side, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    /* keep it away from low numbers a daemon may dup2 over */
    if (count_fd >= 0 && count_fd < 100) {
        int hi = fcntl(count_fd, F_DUPFD_CLOEXEC, 100);
        if (hi >= 0) {
            syscall(SYS_close, count_fd);
            count_fd = hi;
        }
    }
    memcpy(side + n, ".loaded", 8);
    fd = (int)syscall(SYS_openat, AT_FDCWD, side, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        char pid[24];
        int len = 0, i;
        long v = getpid();
        char out[24];
        do { pid[len++] = (char)('0' + v % 10); v /= 10; } while (v);
        for (i = 0; i < len; i++)
            out[i] = pid[len - 1 - i];
        out[len] = '\n';
        raw_write(fd, out, (size_t)len + 1);
        syscall(SYS_close, fd);
    }
    check_ctl();
}
