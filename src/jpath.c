/* jpath.c - one value out of a JSON text, without a tree. */
#include "jpath.h"

#include <string.h>

/* deeper payloads are refused by the protocol long before this */
#define JP_DEPTH_MAX 512

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at the opening quote: just past the closing one, or NULL */
static const char *str_end(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        if (*p == '\\') {
            if (e - p < 2)
                return NULL;
            p++;
        } else if (*p == '"') {
            return p + 1;
        } else if ((unsigned char)*p < 0x20) {
            return NULL;
        }
    }
    return NULL;
}

static int lit(const char *p, const char *e, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(e - p) >= n && memcmp(p, w, n) == 0;
}

/* The value starting at p (no leading blanks): its type and span. */
static const char *value(const char *p, const char *e, struct jp_val *v)
{
    const char *s = p;
    int depth = 0;

    if (p >= e)
        return NULL;
    v->p = p;
    switch (*p) {
    case '"':
        v->type = JP_STRING;
        p = str_end(p, e);
        break;
    case '{':
    case '[':
        v->type = *p == '{' ? JP_OBJECT : JP_ARRAY;
        /* nesting is only counted, not checked: the payload was parsed
         * when it was enqueued; here it only has to stay in bounds */
        for (; p && p < e;) {
            if (*p == '"') {
                p = str_end(p, e);
                continue;
            }
            if (*p == '{' || *p == '[') {
                if (++depth > JP_DEPTH_MAX)
                    return NULL;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) {
                    p++;
                    break;
                }
            }
            p++;
        }
        if (depth != 0)
            return NULL;
        break;
    case 't':
        v->type = JP_TRUE;
        p = lit(p, e, "true") ? p + 4 : NULL;
        break;
    case 'f':
        v->type = JP_FALSE;
        p = lit(p, e, "false") ? p + 5 : NULL;
        break;
    case 'n':
        v->type = JP_NULL;
        p = lit(p, e, "null") ? p + 4 : NULL;
        break;
    default:
        if (*p != '-' && (*p < '0' || *p > '9'))
            return NULL;
        v->type = JP_NUMBER;
        while (p < e && ((*p >= '0' && *p <= '9') || *p == '-' || *p == '+' || *p == '.' || *p == 'e' ||
                         *p == 'E'))
            p++;
        break;
    }
    if (!p)
        return NULL;
    v->n = (size_t)(p - s);
    return p;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static int put_utf8(struct buf *b, unsigned cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return buf_append(b, u, n);
}

/* The string literal p..p+n (with quotes), unescaped. */
static int unescape(const char *p, size_t n, struct buf *b)
{
    const char *e = p + n - 1, *run;

    if (n < 2)
        return -1;
    p++;
    while (p < e) {
        unsigned cp, lo;
        for (run = p; p < e && *p != '\\'; p++)
            ;
        if (p > run && buf_append(b, run, (size_t)(p - run)) < 0)
            return -1;
        if (p >= e)
            break;
        if (e - p < 2)
            return -1;
        p++;
        switch (*p++) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (e - p < 4 || hex4(p, &cp) < 0)
                return -1;
            p += 4;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) < 0 || lo < 0xdc00 ||
                    lo > 0xdfff)
                    return -1;
                p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
                return -1;   /* a lone low surrogate, or a NUL in a C string */
            }
            break;
        default:
            return -1;
        }
        if (put_utf8(b, cp) < 0)
            return -1;
    }
    return 0;
}

int jpath_text(const struct jp_val *v, struct buf *out)
{
    switch (v->type) {
    case JP_NULL:
        return 0;
    case JP_STRING:
        return unescape(v->p, v->n, out);
    default:
        return buf_append(out, v->p, v->n);
    }
}

/* The next member of an object: *pp just after '{' or a member. 1 a
 * member (key span with quotes, value), 0 the end, -1 malformed. */
static int member(const char **pp, const char *e, int first, struct jp_val *key, struct jp_val *v)
{
    const char *p = ws(*pp, e);

    if (p < e && *p == '}')
        return 0;
    if (!first) {
        if (p >= e || *p != ',')
            return -1;
        p = ws(p + 1, e);
    }
    if (p >= e || *p != '"' || !(p = value(p, e, key)))
        return -1;
    p = ws(p, e);
    if (p >= e || *p != ':')
        return -1;
    if (!(p = value(ws(p + 1, e), e, v)))
        return -1;
    *pp = p;
    return 1;
}

static int key_is(const struct jp_val *k, const char *name, size_t nlen)
{
    struct buf b = {0};
    int same;

    if (!memchr(k->p, '\\', k->n))
        return k->n - 2 == nlen && memcmp(k->p + 1, name, nlen) == 0;
    same = unescape(k->p, k->n, &b) == 0 && b.len == nlen && memcmp(b.p, name, nlen) == 0;
    buf_free(&b);
    return same;
}

/* The member called name (or the index-th element) of v. */
static int child(const struct jp_val *v, const char *name, size_t nlen, struct jp_val *out)
{
    const char *p = v->p + 1, *e = v->p + v->n;
    struct jp_val k;
    int first = 1, r;

    if (v->type == JP_OBJECT) {
        while ((r = member(&p, e, first, &k, out)) == 1) {
            if (key_is(&k, name, nlen))
                return 0;
            first = 0;
        }
        return r < 0 ? -1 : 1;
    }
    if (v->type == JP_ARRAY) {
        size_t idx = 0, i;
        if (nlen == 0 || nlen > 9)
            return 1;
        for (i = 0; i < nlen; i++) {
            if (name[i] < '0' || name[i] > '9')
                return 1;
            idx = idx * 10 + (size_t)(name[i] - '0');
        }
        for (i = 0;; i++) {
            p = ws(p, e);
            if (p < e && *p == ']')
                return 1;
            if (i > 0) {
                if (p >= e || *p != ',')
                    return -1;
                p = ws(p + 1, e);
            }
            if (!(p = value(p, e, out)))
                return -1;
            if (i == idx)
                return 0;
        }
    }
    return 1;
}

int jpath_get(const char *json, size_t len, const char *path, size_t plen, struct jp_val *out)
{
    const char *e = json + len, *seg = path, *pend = path + plen;
    struct jp_val cur;

    if (!value(ws(json, e), e, &cur))
        return -1;
    while (seg <= pend) {
        const char *dot = memchr(seg, '.', (size_t)(pend - seg));
        size_t n = dot ? (size_t)(dot - seg) : (size_t)(pend - seg);
        int r = child(&cur, seg, n, &cur);
        if (r != 0)
            return r;
        if (!dot)
            break;
        seg = dot + 1;
    }
    *out = cur;
    return 0;
}

int jpath_each(const char *json, size_t len, int (*fn)(void *ctx, const char *key, const struct jp_val *v),
               void *ctx)
{
    const char *e = json + len, *p;
    struct jp_val top, k, v;
    struct buf key = {0};
    int first = 1, r;

    if (!value(ws(json, e), e, &top) || top.type != JP_OBJECT)
        return -1;
    p = top.p + 1;
    while ((r = member(&p, top.p + top.n, first, &k, &v)) == 1) {
        buf_reset(&key);
        if (unescape(k.p, k.n, &key) < 0) {
            r = -1;
            break;
        }
        if ((r = fn(ctx, key.p ? key.p : "", &v)) != 0)
            break;
        first = 0;
    }
    buf_free(&key);
    return r < 0 ? -1 : r;
}
