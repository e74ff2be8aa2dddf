/* jscan.c - a linear, allocation-free JSON syntax check that finds the
 * top-level members (see jscan.h). Pure. */
#include "jscan.h"

#include <stdint.h>
#include <string.h>

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int digit(const char *p, const char *e)
{
    return p < e && *p >= '0' && *p <= '9';
}

static long hex4(const char *p, const char *e)
{
    long v = 0;
    int i;

    if (e - p < 4)
        return -1;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* p at the opening quote; returns the position after the closing one.
 * Escapes are counted in count when it is not NULL. */
static const char *string(const char *p, const char *e, struct jscan_result *count)
{
    for (p++; p < e; p++) {
        unsigned char ch = (unsigned char)*p;
        long u, lo;

        if (ch == '"')
            return p + 1;
        if (ch < 0x20)
            return NULL;
        if (ch != '\\')
            continue;
        if (++p >= e)
            return NULL;
        if (count)
            count->escapes++;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            break;
        case 'u':
            if ((u = hex4(p + 1, e)) < 0)
                return NULL;
            p += 4;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return NULL;   /* a low surrogate alone: cJSON refuses it */
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (e - p < 7 || p[1] != '\\' || p[2] != 'u')
                    return NULL;
                lo = hex4(p + 3, e);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return NULL;
                p += 6;
            }
            if (u == 0 && count)
                count->nul_escape = 1;
            break;
        default:
            return NULL;
        }
    }
    return NULL;
}

/* RFC 8259 numbers, at most 63 characters (cJSON reads no more). */
static const char *number(const char *p, const char *e)
{
    const char *s = p;

    if (*p == '-')
        p++;
    if (p < e && *p == '0')
        p++;
    else if (digit(p, e))
        while (digit(p, e))
            p++;
    else
        return NULL;
    if (p < e && *p == '.') {
        if (!digit(++p, e))
            return NULL;
        while (digit(p, e))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (!digit(p, e))
            return NULL;
        while (digit(p, e))
            p++;
    }
    return p - s > 63 ? NULL : p;
}

static const char *literal(const char *p, const char *e)
{
    static const char *const words[] = {"true", "false", "null"};
    size_t i, n;

    for (i = 0; i < 3; i++) {
        n = strlen(words[i]);
        if ((size_t)(e - p) >= n && memcmp(p, words[i], n) == 0)
            return p + n;
    }
    return NULL;
}

int jscan(const char *text, size_t len, const char *skip, struct jscan_member *m, size_t max_members,
          struct jscan_result *res)
{
    enum { VALUE, AFTER, MEMBER } st = VALUE;
    const char *p = text, *e = text + len, *q;
    unsigned char obj[JSCAN_MAX_DEPTH];   /* per open container: 1 object, 0 array */
    size_t depth = 0, skiplen = skip ? strlen(skip) : 0, cur = SIZE_MAX;
    int skipping = 0;   /* inside the skipped member's value */

    memset(res, 0, sizeof *res);
    p = ws(p, e);
    res->is_object = p < e && *p == '{';
    for (;;) {
        switch (st) {
        case VALUE:
            p = ws(p, e);
            if (p >= e)
                return -1;
            if (!skipping)
                res->values++;
            if (*p == '{' || *p == '[') {
                int o = *p == '{';
                if (depth >= JSCAN_MAX_DEPTH)
                    return -1;
                obj[depth++] = (unsigned char)o;
                p = ws(p + 1, e);
                if (p < e && *p == (o ? '}' : ']')) {
                    p++;
                    depth--;
                    st = AFTER;
                } else {
                    st = o ? MEMBER : VALUE;
                }
                continue;
            }
            if (*p == '"')
                p = string(p, e, skipping ? NULL : res);
            else if (*p == '-' || (*p >= '0' && *p <= '9'))
                p = number(p, e);
            else
                p = literal(p, e);
            if (!p)
                return -1;
            st = AFTER;
            continue;
        case AFTER:
            /* a value ends at p */
            if (depth == 0)
                goto done;
            if (depth == 1 && obj[0]) {
                if (cur != SIZE_MAX)
                    m[cur].value_len = (size_t)(p - m[cur].value);
                if (skipping) {
                    res->skipped_len = (size_t)(p - res->skipped);
                    skipping = 0;
                }
                cur = SIZE_MAX;
            }
            p = ws(p, e);
            if (p >= e)
                return -1;
            if (*p == ',') {
                p++;
                st = obj[depth - 1] ? MEMBER : VALUE;
                continue;
            }
            if (*p != (obj[depth - 1] ? '}' : ']'))
                return -1;
            p++;
            depth--;
            continue;
        case MEMBER:
            p = ws(p, e);
            if (p >= e || *p != '"')
                return -1;
            q = string(p, e, skipping ? NULL : res);
            if (!q)
                return -1;
            if (depth == 1) {
                const char *name = p + 1;
                size_t nl = (size_t)(q - 1 - name);
                int esc = memchr(name, '\\', nl) != NULL;
                if (res->n_members < max_members) {
                    cur = res->n_members;
                    m[cur].name = name;
                    m[cur].name_len = nl;
                    m[cur].name_escaped = esc;
                    m[cur].value = NULL;
                    m[cur].value_len = 0;
                }
                res->n_members++;
                if (skip && !res->skipped && !esc && nl == skiplen && memcmp(name, skip, nl) == 0)
                    skipping = 1;
            }
            p = ws(q, e);
            if (p >= e || *p != ':')
                return -1;
            p = ws(p + 1, e);
            if (depth == 1) {
                if (cur != SIZE_MAX)
                    m[cur].value = p;
                if (skipping)
                    res->skipped = p;
            }
            st = VALUE;
            continue;
        }
    }
done:
    return ws(p, e) == e ? 0 : -2;
}
