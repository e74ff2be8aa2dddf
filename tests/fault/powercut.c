/* powercut.c - an LD_PRELOAD shim that makes kill -9 behave like a power
 * cut for the database files.
 *
 * A power cut loses what the page cache held: every write since the last
 * fsync of that file. kill -9 loses nothing of the sort, since the kernel
 * keeps the page cache. This shim keeps every write to a *.db or *.db-wal
 * file in the process's own memory until the file is fsynced (fsync or
 * fdatasync), and only then writes it out and syncs it; kill -9 then
 * drops exactly what a power cut would. Reads, sizes and truncations see
 * the buffered state, as they would see the page cache, from every
 * descriptor of the file (the writer's and the readers' connections).
 *
 * Intercepted (what Debian's libsqlite3 imports): pread64/pread,
 * pwrite64/pwrite, ftruncate64/ftruncate, fdatasync/fsync, fstat64/fstat,
 * stat64/stat, lstat64/lstat, unlink, close. The -shm file (an mmap'd
 * index SQLite rebuilds after a crash) and everything else pass through.
 *
 * Evidence: with $POWERCUT_MARK set, that file is created at load (a
 * static binary ignores LD_PRELOAD: a test can tell); the shim's own
 * counters ("pid=P synced=N buffered_bytes=M") are rewritten there at
 * each sync.
 *
 * Memory: one 4 KiB block per block written since its file's last sync;
 * a commit with synchronous=full syncs the -wal, so it stays small. One
 * mutex; this is a test tool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define BLK 4096
#define MAXFD 65536
#define NFILES 64
#define NBUCKETS 4096

struct block {
    struct block *next;   /* hash chain */
    int64_t index;
    unsigned char data[BLK];
};

/* One file (inode) with writes not yet synced. */
struct file {
    int used;
    dev_t dev;
    ino_t ino;
    int64_t size;          /* as the process sees it */
    int64_t real_limit;    /* bytes of the real file still valid (after a
                            * buffered truncate); INT64_MAX: all of it */
    struct block *b[NBUCKETS];
    int64_t nblocks;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct file files[NFILES];
/* fd -> file slot + 1 (0: unknown, -1: not ours) */
static int fdmap[MAXFD];
static const char *mark;
static long synced;

#define REAL(name, ret, args)                                       \
    static ret(*real_##name) args;                                  \
    static ret(*get_##name(void)) args                              \
    {                                                               \
        if (!real_##name)                                           \
            real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);     \
        return real_##name;                                         \
    }

REAL(pread64, ssize_t, (int, void *, size_t, off64_t))
REAL(pwrite64, ssize_t, (int, const void *, size_t, off64_t))
REAL(ftruncate64, int, (int, off64_t))
REAL(fdatasync, int, (int))
REAL(fsync, int, (int))
REAL(fstat64, int, (int, struct stat64 *))
REAL(stat64, int, (const char *, struct stat64 *))
REAL(lstat64, int, (const char *, struct stat64 *))
REAL(unlink, int, (const char *))
REAL(close, int, (int))

static int ours(const char *p)
{
    size_t n = strlen(p);
    return (n > 3 && strcmp(p + n - 3, ".db") == 0) || (n > 7 && strcmp(p + n - 7, ".db-wal") == 0);
}

static struct file *find(dev_t dev, ino_t ino)
{
    int i;

    for (i = 0; i < NFILES; i++)
        if (files[i].used && files[i].dev == dev && files[i].ino == ino)
            return &files[i];
    return NULL;
}

static struct file *open_file(dev_t dev, ino_t ino, int64_t size)
{
    struct file *f = find(dev, ino);
    int i;

    if (f)
        return f;
    for (i = 0; i < NFILES; i++)
        if (!files[i].used) {
            memset(&files[i], 0, sizeof files[i]);
            files[i].used = 1;
            files[i].dev = dev;
            files[i].ino = ino;
            files[i].size = size;
            files[i].real_limit = INT64_MAX;
            return &files[i];
        }
    abort();   /* a test tool: more than NFILES database files */
}

/* The file of fd (mu held), or NULL when fd is not a database file. */
static struct file *file_of(int fd)
{
    char link[64], path[4096];
    struct stat64 st;
    ssize_t n;

    if (fd < 0 || fd >= MAXFD || fdmap[fd] < 0)
        return NULL;
    if (fdmap[fd] > 0 && files[fdmap[fd] - 1].used)
        return &files[fdmap[fd] - 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return NULL;
    path[n] = '\0';
    if (!ours(path) || get_fstat64()(fd, &st) < 0) {
        fdmap[fd] = -1;
        return NULL;
    }
    fdmap[fd] = (int)(open_file(st.st_dev, st.st_ino, st.st_size) - files) + 1;
    return &files[fdmap[fd] - 1];
}

static struct block *get_block(struct file *f, int64_t index)
{
    struct block *b = f->b[index % NBUCKETS];

    while (b && b->index != index)
        b = b->next;
    return b;
}

/* The bytes of the real file at [off, off + n), zeros past its valid end. */
static void real_read(int fd, struct file *f, unsigned char *out, size_t n, int64_t off)
{
    memset(out, 0, n);
    if (off < f->real_limit) {
        size_t want = off + (int64_t)n > f->real_limit ? (size_t)(f->real_limit - off) : n;
        if (get_pread64()(fd, out, want, off) < 0)
            memset(out, 0, n);
    }
}

static struct block *cow_block(int fd, struct file *f, int64_t index)
{
    struct block *b = get_block(f, index);

    if (b)
        return b;
    b = malloc(sizeof *b);
    if (!b)
        abort();
    b->index = index;
    real_read(fd, f, b->data, BLK, index * BLK);
    b->next = f->b[index % NBUCKETS];
    f->b[index % NBUCKETS] = b;
    f->nblocks++;
    return b;
}

static ssize_t overlay_read(int fd, struct file *f, unsigned char *out, size_t n, int64_t off)
{
    size_t done = 0;

    if (off >= f->size)
        return 0;
    if (off + (int64_t)n > f->size)
        n = (size_t)(f->size - off);
    while (done < n) {
        int64_t pos = off + (int64_t)done, index = pos / BLK;
        size_t in = (size_t)(pos % BLK), k = BLK - in;
        struct block *b = get_block(f, index);
        if (k > n - done)
            k = n - done;
        if (b)
            memcpy(out + done, b->data + in, k);
        else
            real_read(fd, f, out + done, k, pos);
        done += k;
    }
    return (ssize_t)n;
}

static void overlay_write(int fd, struct file *f, const unsigned char *in, size_t n, int64_t off)
{
    size_t done = 0;

    while (done < n) {
        int64_t pos = off + (int64_t)done;
        size_t at = (size_t)(pos % BLK), k = BLK - at;
        struct block *b = cow_block(fd, f, pos / BLK);
        if (k > n - done)
            k = n - done;
        memcpy(b->data + at, in + done, k);
        done += k;
    }
    if (off + (int64_t)n > f->size)
        f->size = off + (int64_t)n;
}

static void drop_blocks(struct file *f, int64_t from_index)
{
    int i;

    for (i = 0; i < NBUCKETS; i++) {
        struct block **p = &f->b[i];
        while (*p) {
            if ((*p)->index >= from_index) {
                struct block *d = *p;
                *p = d->next;
                free(d);
                f->nblocks--;
            } else {
                p = &(*p)->next;
            }
        }
    }
}

static void note(void)
{
    char buf[128];
    int fd, len;
    int64_t bytes = 0;
    int i;

    if (!mark)
        return;
    for (i = 0; i < NFILES; i++)
        if (files[i].used)
            bytes += files[i].nblocks * BLK;
    len = snprintf(buf, sizeof buf, "pid=%d synced=%ld buffered_bytes=%lld\n", (int)getpid(), synced,
                   (long long)bytes);
    fd = (int)syscall(SYS_openat, AT_FDCWD, mark, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd >= 0) {
        if (syscall(SYS_write, fd, buf, (size_t)len) < 0)
            (void)0;
        syscall(SYS_close, fd);
    }
}

/* Write out what the file holds, as the kernel does at fsync. */
static int flush(int fd, struct file *f)
{
    int i;

    if (f->real_limit != INT64_MAX && get_ftruncate64()(fd, f->real_limit) < 0)
        return -1;
    for (i = 0; i < NBUCKETS; i++) {
        struct block *b;
        for (b = f->b[i]; b; b = b->next) {
            int64_t off = b->index * BLK;
            size_t k = off + BLK > f->size ? (size_t)(f->size - off) : BLK;
            if (off < f->size && get_pwrite64()(fd, b->data, k, off) != (ssize_t)k)
                return -1;
        }
    }
    if (get_ftruncate64()(fd, f->size) < 0)
        return -1;
    drop_blocks(f, 0);
    f->real_limit = INT64_MAX;
    synced++;
    note();
    return 0;
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    struct file *f;
    ssize_t r;

    pthread_mutex_lock(&mu);
    f = file_of(fd);
    if (!f) {
        pthread_mutex_unlock(&mu);
        return get_pread64()(fd, buf, n, off);
    }
    r = overlay_read(fd, f, buf, n, off);
    pthread_mutex_unlock(&mu);
    return r;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    return pread64(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    struct file *f;

    pthread_mutex_lock(&mu);
    f = file_of(fd);
    if (!f) {
        pthread_mutex_unlock(&mu);
        return get_pwrite64()(fd, buf, n, off);
    }
    overlay_write(fd, f, buf, n, off);
    pthread_mutex_unlock(&mu);
    return (ssize_t)n;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite64(fd, buf, n, off);
}

int ftruncate64(int fd, off64_t len)
{
    struct file *f;

    pthread_mutex_lock(&mu);
    f = file_of(fd);
    if (!f) {
        pthread_mutex_unlock(&mu);
        return get_ftruncate64()(fd, len);
    }
    drop_blocks(f, (len + BLK - 1) / BLK);
    if (len % BLK) {
        /* the block holding the new end keeps only what is before it */
        struct block *b = get_block(f, len / BLK);
        if (b)
            memset(b->data + len % BLK, 0, BLK - (size_t)(len % BLK));
    }
    if (len < f->real_limit)
        f->real_limit = len;
    f->size = len;
    pthread_mutex_unlock(&mu);
    return 0;
}

int ftruncate(int fd, off_t len)
{
    return ftruncate64(fd, len);
}

static int do_sync(int fd, int (*real)(int))
{
    struct file *f;
    int rc = 0;

    pthread_mutex_lock(&mu);
    f = file_of(fd);
    if (f)
        rc = flush(fd, f);
    pthread_mutex_unlock(&mu);
    return rc < 0 ? -1 : real(fd);
}

int fdatasync(int fd)
{
    return do_sync(fd, get_fdatasync());
}

int fsync(int fd)
{
    return do_sync(fd, get_fsync());
}

static void fix_size(struct stat64 *st)
{
    struct file *f;

    pthread_mutex_lock(&mu);
    f = find(st->st_dev, st->st_ino);
    if (f)
        st->st_size = f->size;
    pthread_mutex_unlock(&mu);
}

int fstat64(int fd, struct stat64 *st)
{
    int rc = get_fstat64()(fd, st);

    if (rc == 0)
        fix_size(st);
    return rc;
}

int fstat(int fd, struct stat *st)
{
    return fstat64(fd, (struct stat64 *)st);
}

int stat64(const char *p, struct stat64 *st)
{
    int rc = get_stat64()(p, st);

    if (rc == 0)
        fix_size(st);
    return rc;
}

int stat(const char *p, struct stat *st)
{
    return stat64(p, (struct stat64 *)st);
}

int lstat64(const char *p, struct stat64 *st)
{
    int rc = get_lstat64()(p, st);

    if (rc == 0)
        fix_size(st);
    return rc;
}

int lstat(const char *p, struct stat *st)
{
    return lstat64(p, (struct stat64 *)st);
}

/* An unlinked file's unsynced writes no longer matter (and its inode
 * number may come back for another file). */
int unlink(const char *p)
{
    struct stat64 st;
    struct file *f;

    if (ours(p) && get_stat64()(p, &st) == 0) {
        pthread_mutex_lock(&mu);
        if ((f = find(st.st_dev, st.st_ino))) {
            int i;
            drop_blocks(f, 0);
            f->used = 0;
            for (i = 0; i < MAXFD; i++)
                if (fdmap[i] == (int)(f - files) + 1)
                    fdmap[i] = 0;
        }
        pthread_mutex_unlock(&mu);
    }
    return get_unlink()(p);
}

int close(int fd)
{
    if (fd >= 0 && fd < MAXFD) {
        pthread_mutex_lock(&mu);
        fdmap[fd] = 0;
        pthread_mutex_unlock(&mu);
    }
    return get_close()(fd);
}

__attribute__((constructor)) static void powercut_init(void)
{
    int fd;

    mark = getenv("POWERCUT_MARK");
    if (mark && *mark) {
        fd = (int)syscall(SYS_openat, AT_FDCWD, mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0)
            syscall(SYS_close, fd);
        note();
    } else {
        mark = NULL;
    }
}
