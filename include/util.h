/* util.h - clocks, checked growable buffers, unit parsing. */
#ifndef HOOKD_UTIL_H
#define HOOKD_UTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "esc.h"

int64_t util_now_ms(void);   /* wall clock, UTC epoch ms (stored times) */
int64_t util_mono_ms(void);  /* monotonic ms (timers, intervals) */
int64_t util_mono_us(void);
/* elapsed ms since boot, suspend included (CLOCK_BOOTTIME): what the wall
 * clock is checked against for steps (clockstep.h) */
int64_t util_boot_ms(void);

/* A growable byte buffer, always NUL terminated when p != NULL. Appends
 * check for overflow; on allocation failure they return -1, leave the
 * buffer's content as it was and set `failed`, after which every append
 * fails: a writer of many pieces may check once, at the end. */
struct buf {
    char *p;
    size_t len;
    size_t cap;
    int failed;
};

int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Append s as a JSON string literal (with quotes; esc.h's ESC_JSON, so
 * no terminal control or bidi override survives in the text). */
int buf_json_str(struct buf *b, const char *s);
/* Append n bytes of s escaped in style st (esc.h). */
int buf_esc(struct buf *b, const char *s, size_t n, enum esc_style st);
void buf_consume(struct buf *b, size_t n);  /* drop n bytes from the front */
void buf_free(struct buf *b);
/* Empty the buffer and forget a failure (the memory is kept). */
void buf_reset(struct buf *b);

/* "500ms", "30s", "5m", "1h", "2d"; a bare number is seconds. */
int util_parse_duration_ms(const char *s, int64_t *out);
/* "512", "64KiB"/"64K"/"64KB", "1MiB"/"1M", "1GiB"; bytes. */
int util_parse_size(const char *s, int64_t *out);
/* Strict base-10 integer with optional sign, no trailing junk. */
int util_parse_int(const char *s, int64_t *out);
int util_parse_bool(const char *s, int *out);
/* Format a duration for humans, e.g. "1h", "250ms". */
void util_fmt_duration(int64_t ms, char *out, size_t n);
/* "2026-11-30T08:00:00.123Z"; 0 gives "-". */
void util_fmt_time(int64_t epoch_ms, char *out, size_t n);

/* Random hex id, e.g. for generated event ids: prefix + 24 hex chars. */
void util_random_id(const char *prefix, char *out, size_t n);

/* FNV-1a of n bytes, folded to lower case when fold is set (host names). */
uint64_t util_hash(const char *s, size_t n, int fold);

/* Is s[0..n) one of the words of list (comma or blank separated),
 * ignoring case? NULL lists nothing. */
int util_word_listed(const char *list, const char *s, size_t n);

/* Copy at most n-1 bytes and terminate. */
void util_strlcpy(char *dst, const char *src, size_t n);

/* Blank out control and non-ASCII bytes in place (error texts that
 * quote a response). */
void util_printable(char *s);

/* write() all n bytes (EINTR retried); 0 / -1 with errno. */
int util_write_all(int fd, const void *p, size_t n);
/* fsync a file, or with dir a directory, by path; 0 / -1 with errno. */
int util_fsync_path(const char *path, int dir);
/* fsync the directory holding path (a rename in it is then durable). */
int util_fsync_parent(const char *path);

/* UTF-8 well-formedness (no overlongs, no surrogates, <= U+10FFFF). */
int util_utf8_valid(const char *s, size_t n);

#endif
