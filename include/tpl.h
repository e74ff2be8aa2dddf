/* tpl.h - postback templates: URLs (and ordering keys) with macros such
 * as {click_id}, #click_id# or [CLICK_ID] filled from each message's
 * payload, value mappings, form bodies, and the {secret} masked in what
 * is shown (urlmask.h masks the rest).
 * Pure: no I/O, no clock (the caller passes the attempt's time), so the
 * unit tests and the fuzz target drive it directly.
 *
 * A URL template keeps its scheme, host and port literal: the address
 * policy is checked on a host no payload can change. Values are
 * percent-encoded (RFC 3986 unreserved characters stay); {name|raw}
 * inserts a value as it is, refusing blanks and control characters, and
 * in a URL also TPL_RAW_SYNTAX and "..", which would leave the template's
 * path or add parameters (curl collapses "/../"), unless the endpoint
 * lists the macro in raw_allow. */
#ifndef HOOKD_TPL_H
#define HOOKD_TPL_H
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define TPL_MAX 2048            /* template length */
#define TPL_MASK "***"
#define TPL_RAW_SYNTAX "/\\?#&=%"

enum tpl_style { TPL_BRACES = 0, TPL_HASHES, TPL_BRACKETS };
enum tpl_kind { TPL_URL = 0, TPL_TEXT };
enum tpl_source { TPL_FIELD = 0, TPL_EVENT_ID, TPL_EVENT_TYPE, TPL_ENDPOINT, TPL_ATTEMPT, TPL_TIMESTAMP, TPL_SECRET,
                  TPL_TOKEN };

/* Literal text, then (name_len > 0) one macro; offsets into src. */
struct tpl_seg {
    size_t lit_off, lit_len;
    size_t name_off, name_len;
    enum tpl_source source;
    int raw;
    int fn;            /* enum tplfn_kind: a function macro, {md5:a,b};
                        * name_off/name_len are then its argument list */
};

struct tpl {
    char *src;
    struct tpl_seg *seg;
    size_t nseg;
    size_t nmacros;
};

int tpl_style_parse(const char *s, enum tpl_style *out);   /* "braces" ... : 0 / -1 */
const char *tpl_style_name(enum tpl_style st);

/* Parse s; -1 with err naming the 1-based position of the fault. */
int tpl_parse(struct tpl *t, const char *s, enum tpl_style st, enum tpl_kind kind, char *err, size_t errlen);
void tpl_free(struct tpl *t);
/* Does t hold a function keyed by the endpoint's token (hmac_*)? */
int tpl_keyed(const struct tpl *t);
/* The template with every macro replaced by fill (to validate its shape). */
int tpl_skeleton(const struct tpl *t, const char *fill, struct buf *out);

/* map.NAME = from:to, from:to */
struct tpl_pair {
    char *from, *to;
};
struct tpl_map {
    char *name;
    struct tpl_pair *v;
    size_t n;
};
int tpl_map_parse(struct tpl_map *m, const char *name, const char *spec, char *err, size_t errlen);
void tpl_map_free(struct tpl_map *m);

struct tpl_vars {
    const char *payload;
    size_t payload_len;
    const char *event_id, *event_type, *endpoint;
    const char *secret;          /* NULL: the endpoint has none */
    const char *token;           /* the endpoint's token; NULL: none, and
                                  * {token} is the payload field of that name */
    int attempt;
    int64_t timestamp;           /* Unix seconds of the attempt */
    const struct tpl_map *maps;
    size_t nmaps;
    int missing_fail;            /* on_missing = fail */
    int encode;                  /* percent-encode values (URLs, form bodies) */
    const char *raw_allow;       /* macros whose raw value may hold URL syntax
                                  * (comma or blank separated); NULL: none */
    struct buf *hidden;          /* not NULL: each value shown as TPL_MASK is
                                  * appended as it went into out, with a NUL */
};

enum { TPL_OK = 0, TPL_MISSING = 1, TPL_BAD_VALUE = 2, TPL_UNSAFE = 3 };

/* Expand t into out and, when shown is not NULL, the same text with the
 * secret replaced by TPL_MASK. TPL_OK, TPL_MISSING, TPL_BAD_VALUE or
 * (a raw value with URL syntax, encode set) TPL_UNSAFE with why naming
 * the macro (never a value), -1 out of memory. */
int tpl_expand(const struct tpl *t, const struct tpl_vars *v, struct buf *out, struct buf *shown, char *why,
               size_t whylen);
/* Does every word of list name a {x|raw} macro of t? -1 with err naming
 * the first that does not. */
int tpl_raw_allow_check(const struct tpl *t, const char *list, char *err, size_t errlen);

/* application/x-www-form-urlencoded from the payload's top-level fields
 * (maps applied, null as empty, objects and arrays as their JSON).
 * TPL_BAD_VALUE when the payload is not an object, -1 out of memory. */
int tpl_form(const struct tpl_vars *v, struct buf *out, char *why, size_t whylen);

int tpl_pct_encode(struct buf *b, const char *s, size_t n);

#endif
