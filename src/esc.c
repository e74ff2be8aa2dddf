/* esc.c - the one spelling of unsafe text (see esc.h). */
#include "esc.h"

#include <string.h>

static const char hex[] = "0123456789abcdef";

size_t esc_utf8(const char *s, size_t n, unsigned *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0], min, v;
    size_t len, i;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80, v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, min = 0x800, v = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000, v = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Shown as an escape whatever the style: reorders or redraws the screen. */
static int unsafe_cp(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static void put_u(char rep[ESC_REP_MAX], unsigned cp)
{
    rep[0] = '\\';
    rep[1] = 'u';
    rep[2] = hex[(cp >> 12) & 15];
    rep[3] = hex[(cp >> 8) & 15];
    rep[4] = hex[(cp >> 4) & 15];
    rep[5] = hex[cp & 15];
    rep[6] = '\0';
}

static void put_x(char rep[ESC_REP_MAX], unsigned char b)
{
    rep[0] = '\\';
    rep[1] = 'x';
    rep[2] = hex[b >> 4];
    rep[3] = hex[b & 15];
    rep[4] = '\0';
}

static void put2(char rep[ESC_REP_MAX], char c)
{
    rep[0] = '\\';
    rep[1] = c;
    rep[2] = '\0';
}

size_t esc_next(const char *s, size_t n, enum esc_style st, char rep[ESC_REP_MAX])
{
    int json = st == ESC_JSON || st == ESC_JSON_DOC;
    unsigned cp = 0;
    size_t len = esc_utf8(s, n, &cp);

    rep[0] = '\0';
    if (len == 0) {
        if (json)
            put_u(rep, 0xfffd);
        else
            put_x(rep, (unsigned char)*s);
        return 1;
    }
    switch (cp) {
    case '\\':
        if (st == ESC_TEXT || st == ESC_QUOTED || st == ESC_JSON)
            put2(rep, '\\');
        return 1;
    case '"':
        if (st == ESC_QUOTED || st == ESC_JSON)
            put2(rep, '"');
        return 1;
    case '\n':
    case '\r':
    case '\t':
        if (st != ESC_JSON_DOC)
            put2(rep, cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't');
        return 1;
    default:
        break;
    }
    if (unsafe_cp(cp)) {
        if (cp < 0x80 && !json)
            put_x(rep, (unsigned char)cp);
        else
            put_u(rep, cp);
    }
    return len;
}

size_t esc_str(char *out, size_t n, const char *s, enum esc_style st)
{
    size_t o = 0, len = s ? strlen(s) : 0, i = 0;
    char rep[ESC_REP_MAX];

    if (n == 0)
        return 0;
    while (i < len) {
        size_t k = esc_next(s + i, len - i, st, rep);
        const char *w = rep[0] ? rep : s + i;
        size_t wl = rep[0] ? strlen(rep) : k;
        if (o + wl >= n)
            break;
        memcpy(out + o, w, wl);
        o += wl;
        i += k;
    }
    out[o] = '\0';
    return o;
}
