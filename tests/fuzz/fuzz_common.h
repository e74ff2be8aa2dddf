/* fuzz_common.h - shared by the libFuzzer targets in tests/fuzz/.
 * FUZZ_CHECK turns a violated property into a crash libFuzzer records. */
#ifndef HOOKD_FUZZ_COMMON_H
#define HOOKD_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                     \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__,         \
                    __LINE__, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* A NUL-terminated heap copy (so ASan sees reads past the end). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
