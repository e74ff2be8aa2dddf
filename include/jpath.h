/* jpath.h - read one value out of a JSON text without building a tree:
 * the postback templates look up a few fields of each payload, and a
 * number must come out exactly as the sender wrote it ("12.50", not
 * 12.5). Pure, no allocation except into the caller's buffer; safe on
 * any input (bounded nesting, never reads past len). */
#ifndef HOOKD_JPATH_H
#define HOOKD_JPATH_H
#include <stddef.h>

#include "util.h"

enum jp_type { JP_NULL = 0, JP_FALSE, JP_TRUE, JP_NUMBER, JP_STRING, JP_OBJECT, JP_ARRAY };

/* A value's JSON text: p..p+n (a string with its quotes). */
struct jp_val {
    enum jp_type type;
    const char *p;
    size_t n;
};

/* The value at a dotted path ("data.amount", "items.0.sku": a number
 * indexes an array) of the top-level object. 0 found, 1 no such value,
 * -1 the text is not well-formed where it was read. */
int jpath_get(const char *json, size_t len, const char *path, size_t plen, struct jp_val *out);

/* Append a value as text: a string unescaped (UTF-8; -1 on a bad escape
 * or a NUL), a number as written, true/false, objects and arrays as
 * their JSON text; null appends nothing. -1 out of memory too. */
int jpath_text(const struct jp_val *v, struct buf *out);

/* Each member of the top-level object, in order: fn(ctx, key unescaped,
 * value). A non-zero fn return stops the walk and is returned; -1 when
 * the text is not an object or not well-formed. */
int jpath_each(const char *json, size_t len, int (*fn)(void *ctx, const char *key, const struct jp_val *v),
               void *ctx);

#endif
