/* standalone.c - replays files through a fuzz target without libFuzzer, so
 * `make fuzz-regress` runs the corpus with gcc (ASan + UBSan) and no clang.
 * Arguments: files or directories (read one level deep). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Name the input that crashed: sanitizer reports and FUZZ_CHECK aborts. */
static const char *current;

static void say_current(void)
{
    if (current) {
        static const char pre[] = "\n*** crashing input: ";
        (void)!write(2, pre, sizeof pre - 1);
        (void)!write(2, current, strlen(current));
        (void)!write(2, "\n", 1);
    }
}

static void on_abort(int sig)
{
    say_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    current = path;
    if (!f) {
        perror(path);
        return -1;
    }
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
        n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    /* an exact-size copy, so reads past the end are caught */
    {
        unsigned char *exact = malloc(len ? len : 1);
        if (!exact)
            abort();
        memcpy(exact, buf, len);
        free(buf);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;

    signal(SIGABRT, on_abort);
    signal(SIGSEGV, on_abort);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(say_current);

    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad = 1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            struct dirent **ents;
            int n = scandir(argv[i], &ents, NULL, alphasort);
            for (int j = 0; j < n; j++) {
                char p[4096];
                struct stat fst;
                snprintf(p, sizeof p, "%s/%s", argv[i], ents[j]->d_name);
                if (ents[j]->d_name[0] != '.' && stat(p, &fst) == 0 && S_ISREG(fst.st_mode)) {
                    if (run_file(p) == 0)
                        files++;
                    else
                        bad = 1;
                }
                free(ents[j]);
            }
            free(ents);
        } else if (run_file(argv[i]) == 0) {
            files++;
        } else {
            bad = 1;
        }
    }
    current = NULL;
    printf("%s: %d inputs replayed, no crash\n", argv[0], files);
    return bad;
}
