/* tplfn.h - template functions: {md5:click_id,token} and the like, the
 * digest of named values concatenated in order without a separator, as
 * lowercase hex. Networks verify postbacks with such a digest of fields
 * and their shared token (sig=md5(click_id + token)); the hmac_ forms are
 * keyed by the endpoint's token instead of holding it. Pure: tpl.c parses
 * the macro's name through here and hands over the values to digest. */
#ifndef HOOKD_TPLFN_H
#define HOOKD_TPLFN_H
#include <stddef.h>

enum tplfn_kind { TPLFN_NONE = 0, TPLFN_MD5, TPLFN_SHA1, TPLFN_SHA256, TPLFN_HMAC_SHA1, TPLFN_HMAC_SHA256 };

#define TPLFN_ARGS_MAX 16
#define TPLFN_HEX_MAX 65          /* sha256 as hex, NUL */

/* A function macro's body "name:arg,arg,..." (n bytes at s, no
 * delimiters): its kind and where the argument list starts (an offset
 * into s). -1 with err naming the 1-based position (base + offset) of the
 * fault: unknown function, no argument, an empty or invalid name, too many. */
int tplfn_parse(const char *s, size_t n, size_t base, enum tplfn_kind *fn, size_t *args_off, char *err,
                size_t errlen);
/* The next argument of a list (args, n bytes) from *pos: its offset and
 * length; 0 at the end. */
int tplfn_next(const char *args, size_t n, size_t *pos, size_t *off, size_t *len);
const char *tplfn_name(enum tplfn_kind fn);
/* hmac_*: keyed by the endpoint's token */
int tplfn_keyed(enum tplfn_kind fn);

/* The running digest: begin, feed each value, end into hex (lowercase,
 * NUL terminated, TPLFN_HEX_MAX bytes). key/keylen only for keyed kinds.
 * 0 / -1 (bad kind, no key for a keyed one, mbedTLS failure). */
struct tplfn_ctx {
    void *md;                 /* mbedtls_md_context_t */
    enum tplfn_kind fn;
    size_t size;              /* the digest's bytes */
};
int tplfn_begin(struct tplfn_ctx *c, enum tplfn_kind fn, const char *key, size_t keylen);
int tplfn_update(struct tplfn_ctx *c, const char *s, size_t n);
int tplfn_end(struct tplfn_ctx *c, char hex[TPLFN_HEX_MAX]);
/* Free a context that was begun but not ended (ended ones are freed). */
void tplfn_abort(struct tplfn_ctx *c);

#endif
