/* jscan.h - one linear pass over a JSON text that checks its syntax and
 * finds the members of its top-level object, without building a tree.
 *
 * The control socket's requests are scanned on the event loop before
 * anything else looks at them, so the pass allocates nothing, uses no
 * recursion and costs the same few nanoseconds a byte whatever the text
 * holds; the parser then builds cJSON values only for the few small
 * members a request may have (proto.c). Pure. */
#ifndef HOOKD_JSCAN_H
#define HOOKD_JSCAN_H
#include <stddef.h>

/* cJSON's own nesting limit: no text cJSON refuses is accepted here */
#define JSCAN_MAX_DEPTH 1000

struct jscan_member {
    const char *name;      /* the name's bytes, without the quotes */
    size_t name_len;
    int name_escaped;      /* the name holds a backslash escape */
    const char *value;     /* the value's raw text */
    size_t value_len;
};

struct jscan_result {
    int is_object;         /* the text is one object */
    size_t n_members;      /* top-level members (also those past max_members) */
    /* outside the value of the first top-level member named `skip`
     * (written without escapes): */
    size_t values;         /* values (objects, arrays, strings, numbers, literals) */
    size_t escapes;        /* backslash escapes in strings */
    int nul_escape;        /* a \u0000 escape, which cJSON turns into a cut */
    const char *skipped;   /* that member's value, NULL when there is none */
    size_t skipped_len;
};

/* Check that text[0..len) is one JSON value (RFC 8259; numbers at most 63
 * characters, as cJSON reads them; surrogate escapes paired) with only
 * blanks after it. Fills res, and m[0..max_members) with the top-level
 * members when the value is an object. Returns 0; -1 when the text is
 * not JSON; -2 when a JSON value is followed by more than blanks. Never
 * reads past len. */
int jscan(const char *text, size_t len, const char *skip, struct jscan_member *m, size_t max_members,
          struct jscan_result *res);

#endif
