/* filter.h - an endpoint's payload filter: a small expression language
 * over the payload's fields, compiled once per endpoint definition and
 * evaluated per message at enqueue. Pure (no I/O, no clock, no globals),
 * so the unit tests and the fuzz target drive it directly.
 *
 *   expr    := or
 *   or      := and { "or" and }
 *   and     := unary { "and" unary }
 *   unary   := "not" unary | "(" expr ")" | test
 *   test    := FIELD "exists"
 *            | FIELD ("=" | "!=" | "<" | "<=" | ">" | ">=") VALUE
 *            | FIELD ["not"] "in" "(" VALUE { "," VALUE } ")"
 *   FIELD   := a dotted path as in templates (data.amount, items.0.sku)
 *   VALUE   := a bare word (approved, 10, -2.5e3, order.created)
 *            | 'quoted' | "quoted" (no escapes; the other quote may appear)
 *
 * Keywords are case-insensitive. A comparison is numeric when the value
 * is a bare number and the field holds a number (or a string that reads
 * whole as one); otherwise it compares the field's text (strings
 * unescaped, numbers as written, true/false) byte by byte. A missing or
 * null field fails every test except "!=" and "not in", which it passes;
 * "exists" is true for any value but null. */
#ifndef HOOKD_FILTER_H
#define HOOKD_FILTER_H
#include <stddef.h>

#define FILTER_MAX 1024        /* source bytes */
#define FILTER_NODES_MAX 128   /* tests and operators */
#define FILTER_VALUES_MAX 256  /* literal values, all in lists included */
#define FILTER_DEPTH_MAX 32    /* nested parentheses and nots */

struct filter_lit {
    size_t off, len;           /* into src */
    int num;                   /* a bare word that reads whole as a number */
    double d;
};

struct filter_node {
    int op;                    /* enum in filter.c */
    int a, b;                  /* children: and/or (a, b), not (a) */
    size_t foff, flen;         /* the field (tests) */
    int lit, nlit;             /* values: one for comparisons, a list for in */
};

struct filter {
    char *src;
    struct filter_node *n;
    size_t nn;
    struct filter_lit *lit;
    size_t nlit;
    int root;
};

/* Compile s into f; -1 with err naming the 1-based position of the fault
 * (the text itself is never quoted back, it may come from a client). */
int filter_parse(struct filter *f, const char *s, char *err, size_t errlen);
void filter_free(struct filter *f);
/* Does the payload (a JSON text) pass? 1 yes, 0 no, -1 out of memory. */
int filter_match(const struct filter *f, const char *json, size_t len);

#endif
