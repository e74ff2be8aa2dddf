/* urlmask.c - credentials in URLs replaced by URLMASK (see urlmask.h). */
#include "urlmask.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static int hexval(char c)
{
    return isdigit((unsigned char)c) ? c - '0' : isxdigit((unsigned char)c) ? (tolower((unsigned char)c) - 'a' + 10) : -1;
}

/* A parameter name percent-decoded and lower-cased into d (cap > 1); -1
 * when it does not fit (then it is treated as secret). */
static long decode_name(const char *s, size_t n, char *d, size_t cap)
{
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            c = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o + 1 >= cap)
            return -1;
        d[o++] = (char)tolower((unsigned char)c);
    }
    d[o] = '\0';
    return (long)o;
}

int urlmask_param_secret(const char *name, size_t n, const char *extra)
{
    static const char *const words[] = {"key", "token", "auth", "sig", "pass", "secret", "hash"};
    char d[256];
    long dl = decode_name(name, n, d, sizeof d);
    size_t i;

    if (dl < 0)
        return 1;
    for (i = 0; i < sizeof words / sizeof words[0]; i++)
        if (memmem(d, (size_t)dl, words[i], strlen(words[i])))
            return 1;
    return util_word_listed(extra, d, (size_t)dl);
}

int urlmask_segment_random(const char *s, size_t n)
{
    int letter = 0, digit = 0;
    size_t i;

    if (n < URLMASK_RANDOM_MIN)
        return 0;
    for (i = 0; i < n; i++) {
        if (s[i] == '.')
            return 0;
        letter |= isalpha((unsigned char)s[i]) != 0;
        digit |= isdigit((unsigned char)s[i]) != 0;
    }
    return letter && digit;
}

static void mask_query(const char *q, size_t n, const char *extra, struct buf *out)
{
    size_t i = 0;

    while (i < n) {
        size_t len = strcspn(q + i, "&;"), nlen = strcspn(q + i, "=&;");
        if (i + len > n)
            len = n - i;
        if (nlen < len && urlmask_param_secret(q + i, nlen, extra)) {
            /* the value runs to the next '&': a ';' inside it is no
             * way to show its tail */
            buf_append(out, q + i, nlen + 1);
            buf_puts(out, URLMASK);
            len = strcspn(q + i, "&");
            if (i + len > n)
                len = n - i;
        } else {
            buf_append(out, q + i, len);
        }
        i += len;
        if (i < n) {
            buf_append(out, q + i, 1);   /* the separator */
            i++;
        }
    }
}

int urlmask_url(const char *url, const char *extra, struct buf *out)
{
    const char *a = strstr(url, "://");
    size_t start = a ? (size_t)(a + 3 - url) + strcspn(a + 3, "/?") : 0;
    size_t end = start + strcspn(url + start, "?"), i = start;
    int after_hook = 0;

    buf_append(out, url, start);
    while (i < end) {
        size_t len = strcspn(url + i, "/?");
        if (url[i] == '/') {
            buf_append(out, "/", 1);
            i++;
            continue;
        }
        if (after_hook || urlmask_segment_random(url + i, len))
            buf_puts(out, URLMASK);
        else
            buf_append(out, url + i, len);
        if (util_word_listed(URLMASK_HOOK_SEGMENTS, url + i, len))
            after_hook = 1;
        i += len;
    }
    /* a '#' is no fragment: URLs with one are refused, and in templates
     * it may delimit macros (#name#) */
    if (url[end] == '?') {
        buf_append(out, "?", 1);
        mask_query(url + end + 1, strlen(url + end + 1), extra, out);
    }
    return out->failed ? -1 : 0;
}
