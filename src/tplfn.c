/* tplfn.c - template functions: parsing their names and argument lists,
 * and the digests (mbedTLS). */
#include "tplfn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

static const struct {
    const char *name;
    enum tplfn_kind fn;
    mbedtls_md_type_t md;
} fns[] = {
    {"md5", TPLFN_MD5, MBEDTLS_MD_MD5},
    {"sha1", TPLFN_SHA1, MBEDTLS_MD_SHA1},
    {"sha256", TPLFN_SHA256, MBEDTLS_MD_SHA256},
    {"hmac_sha1", TPLFN_HMAC_SHA1, MBEDTLS_MD_SHA1},
    {"hmac_sha256", TPLFN_HMAC_SHA256, MBEDTLS_MD_SHA256},
};
#define NFNS (sizeof fns / sizeof fns[0])

const char *tplfn_name(enum tplfn_kind fn)
{
    size_t i;

    for (i = 0; i < NFNS; i++)
        if (fns[i].fn == fn)
            return fns[i].name;
    return "?";
}

int tplfn_keyed(enum tplfn_kind fn)
{
    return fn == TPLFN_HMAC_SHA1 || fn == TPLFN_HMAC_SHA256;
}

static int arg_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

int tplfn_next(const char *args, size_t n, size_t *pos, size_t *off, size_t *len)
{
    size_t p = *pos, e;

    if (p >= n)
        return 0;
    for (e = p; e < n && args[e] != ','; e++)
        ;
    *off = p;
    *len = e - p;
    *pos = e + 1;
    return 1;
}

int tplfn_parse(const char *s, size_t n, size_t base, enum tplfn_kind *fn, size_t *args_off, char *err,
                size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t nl, i, pos, off, len, nargs = 0;

    *fn = TPLFN_NONE;
    if (!colon) {
        snprintf(err, errlen, "no ':' in function macro at position %zu", base);
        return -1;
    }
    nl = (size_t)(colon - s);
    for (i = 0; i < NFNS; i++)
        if (strlen(fns[i].name) == nl && memcmp(fns[i].name, s, nl) == 0)
            *fn = fns[i].fn;
    if (*fn == TPLFN_NONE) {
        snprintf(err, errlen, "unknown function at position %zu (md5, sha1, sha256, hmac_sha1, hmac_sha256)", base);
        return -1;
    }
    *args_off = nl + 1;
    if (nl + 1 >= n) {
        snprintf(err, errlen, "function %s without arguments at position %zu", fns[i - 1].name, base + nl + 1);
        return -1;
    }
    pos = 0;
    while (tplfn_next(s + nl + 1, n - nl - 1, &pos, &off, &len)) {
        const char *a = s + nl + 1 + off;
        size_t at = base + nl + 1 + off;
        if (++nargs > TPLFN_ARGS_MAX) {
            snprintf(err, errlen, "too many arguments at position %zu (max %d)", at, TPLFN_ARGS_MAX);
            return -1;
        }
        if (len == 0 || a[0] == '.' || a[len - 1] == '.') {
            snprintf(err, errlen, "empty or invalid argument at position %zu", at);
            return -1;
        }
        for (i = 0; i < len; i++)
            if (!arg_char(a[i]) || (a[i] == '.' && a[i + 1] == '.')) {
                snprintf(err, errlen, "invalid argument name at position %zu (letters, digits, _ - and dots)",
                         at + i);
                return -1;
            }
    }
    /* "md5:a," ends in an empty argument the loop does not see */
    if (s[n - 1] == ',') {
        snprintf(err, errlen, "empty or invalid argument at position %zu", base + n);
        return -1;
    }
    return 0;
}

static const mbedtls_md_info_t *md_of(enum tplfn_kind fn)
{
    size_t i;

    for (i = 0; i < NFNS; i++)
        if (fns[i].fn == fn)
            return mbedtls_md_info_from_type(fns[i].md);
    return NULL;
}

int tplfn_begin(struct tplfn_ctx *c, enum tplfn_kind fn, const char *key, size_t keylen)
{
    const mbedtls_md_info_t *info = md_of(fn);
    mbedtls_md_context_t *md;
    int keyed = tplfn_keyed(fn);

    c->md = NULL;
    c->fn = fn;
    if (!info || (keyed && !key))
        return -1;
    if (!(md = malloc(sizeof *md)))
        return -1;
    mbedtls_md_init(md);
    if (mbedtls_md_setup(md, info, keyed) != 0 ||
        (keyed ? mbedtls_md_hmac_starts(md, (const unsigned char *)key, keylen) : mbedtls_md_starts(md)) != 0) {
        mbedtls_md_free(md);
        free(md);
        return -1;
    }
    c->md = md;
    c->size = mbedtls_md_get_size(info);
    return 0;
}

int tplfn_update(struct tplfn_ctx *c, const char *s, size_t n)
{
    if (!c->md)
        return -1;
    if (n == 0)
        return 0;
    return (tplfn_keyed(c->fn) ? mbedtls_md_hmac_update(c->md, (const unsigned char *)s, n)
                               : mbedtls_md_update(c->md, (const unsigned char *)s, n)) != 0
               ? -1
               : 0;
}

void tplfn_abort(struct tplfn_ctx *c)
{
    if (c->md) {
        mbedtls_md_free(c->md);   /* wipes the HMAC's key pads */
        free(c->md);
    }
    c->md = NULL;
}

int tplfn_end(struct tplfn_ctx *c, char hex[TPLFN_HEX_MAX])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char d[32];
    size_t i, len;
    int rc = -1;

    hex[0] = '\0';
    if (!c->md)
        return -1;
    len = c->size;
    if (len <= sizeof d && (tplfn_keyed(c->fn) ? mbedtls_md_hmac_finish(c->md, d) : mbedtls_md_finish(c->md, d)) == 0) {
        for (i = 0; i < len; i++) {
            hex[2 * i] = digits[d[i] >> 4];
            hex[2 * i + 1] = digits[d[i] & 15];
        }
        hex[2 * len] = '\0';
        rc = 0;
    }
    mbedtls_platform_zeroize(d, sizeof d);
    tplfn_abort(c);
    return rc;
}
