/* tpl.c - postback templates: parsing, expansion, mappings. */
#include "tpl.h"
#include "jpath.h"
#include "tplfn.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    enum tpl_source source;
} builtins[] = {
    {"event_id", TPL_EVENT_ID}, {"event_type", TPL_EVENT_TYPE}, {"endpoint", TPL_ENDPOINT},
    {"attempt", TPL_ATTEMPT},   {"timestamp", TPL_TIMESTAMP},   {"secret", TPL_SECRET},
    {"token", TPL_TOKEN},
};

static enum tpl_source builtin_of(const char *name, size_t n)
{
    size_t k;

    for (k = 0; k < sizeof builtins / sizeof builtins[0]; k++)
        if (strlen(builtins[k].name) == n && memcmp(builtins[k].name, name, n) == 0)
            return builtins[k].source;
    return TPL_FIELD;
}

int tpl_style_parse(const char *s, enum tpl_style *out)
{
    if (strcmp(s, "braces") == 0)
        *out = TPL_BRACES;
    else if (strcmp(s, "hashes") == 0)
        *out = TPL_HASHES;
    else if (strcmp(s, "brackets") == 0)
        *out = TPL_BRACKETS;
    else
        return -1;
    return 0;
}

const char *tpl_style_name(enum tpl_style st)
{
    return st == TPL_HASHES ? "hashes" : st == TPL_BRACKETS ? "brackets" : "braces";
}

void tpl_free(struct tpl *t)
{
    free(t->src);
    free(t->seg);
    memset(t, 0, sizeof *t);
}

static int name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* "a.b.c": no empty part */
static int name_valid(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (i = 0; i < n; i++)
        if (!name_char(s[i]) || (s[i] == '.' && s[i + 1] == '.'))
            return 0;
    return 1;
}

/* Where a URL's authority ends (after "scheme://"): nothing before it may
 * be a macro. 0 when there is no "://" (the URL check refuses it). */
static size_t authority_end(const char *s)
{
    const char *a = strstr(s, "://");

    if (!a)
        return 0;
    a += 3;
    return (size_t)(a - s) + strcspn(a, "/?");
}

static int push_seg(struct tpl *t, size_t lit_off, size_t lit_len, size_t name_off, size_t name_len)
{
    struct tpl_seg *ns = realloc(t->seg, (t->nseg + 1) * sizeof *ns);

    if (!ns)
        return -1;
    t->seg = ns;
    memset(&ns[t->nseg], 0, sizeof ns[t->nseg]);
    ns[t->nseg].lit_off = lit_off;
    ns[t->nseg].lit_len = lit_len;
    ns[t->nseg].name_off = name_off;
    ns[t->nseg].name_len = name_len;
    t->nseg++;
    return 0;
}

/* A function macro, s[i] its opening delimiter and end its closing one
 * (tplfn.c reads the name and the arguments). */
static int fn_seg(struct tpl *t, const char *s, size_t i, const char *end, size_t lit, char *err, size_t errlen)
{
    enum tplfn_kind fn;
    size_t aoff, blen = (size_t)(end - s) - i - 1;

    if (tplfn_parse(s + i + 1, blen, i + 2, &fn, &aoff, err, errlen) < 0)
        return -1;
    if (push_seg(t, lit, i - lit, i + 1 + aoff, blen - aoff) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->seg[t->nseg - 1].fn = (int)fn;
    t->nmacros++;
    return 0;
}

int tpl_keyed(const struct tpl *t)
{
    size_t i;

    for (i = 0; i < t->nseg; i++)
        if (t->seg[i].fn && tplfn_keyed((enum tplfn_kind)t->seg[i].fn))
            return 1;
    return 0;
}

int tpl_parse(struct tpl *t, const char *s, enum tpl_style st, enum tpl_kind kind, char *err, size_t errlen)
{
    char open = st == TPL_HASHES ? '#' : st == TPL_BRACKETS ? '[' : '{';
    char close = st == TPL_HASHES ? '#' : st == TPL_BRACKETS ? ']' : '}';
    size_t n = strlen(s), i, lit = 0, auth = kind == TPL_URL ? authority_end(s) : 0;

    memset(t, 0, sizeof *t);
    if (n > TPL_MAX) {
        snprintf(err, errlen, "template too long (max %d bytes)", TPL_MAX);
        return -1;
    }
    if (!(t->src = strdup(s)))
        goto oom;
    for (i = 0; i < n; i++) {
        const char *c = s + i, *end, *bar;
        struct tpl_seg *g;
        if (*c != open) {
            if (*c == close && st != TPL_HASHES && i >= auth) {
                snprintf(err, errlen, "'%c' without '%c' at position %zu", close, open, i + 1);
                goto fail;
            }
            continue;
        }
        end = memchr(c + 1, close, n - i - 1);
        if (st == TPL_BRACKETS && i < auth && end && memchr(c, ':', (size_t)(end - c))) {
            i = (size_t)(end - s);   /* an IPv6 literal, [::1] */
            continue;
        }
        if (i < auth) {
            snprintf(err, errlen,
                     "macro in the scheme, host or port at position %zu: only the path and query may hold macros",
                     i + 1);
            goto fail;
        }
        if (!end) {
            snprintf(err, errlen, "unterminated macro at position %zu", i + 1);
            goto fail;
        }
        if (memchr(c + 1, ':', (size_t)(end - c - 1))) {
            if (fn_seg(t, s, i, end, lit, err, errlen) < 0)
                goto fail;
            i = (size_t)(end - s);
            lit = i + 1;
            continue;
        }
        bar = memchr(c + 1, '|', (size_t)(end - c - 1));
        if (!name_valid(c + 1, (size_t)((bar ? bar : end) - c - 1))) {
            snprintf(err, errlen, "invalid macro name at position %zu (letters, digits, _ - and dots)", i + 2);
            goto fail;
        }
        if (bar && !((size_t)(end - bar - 1) == 3 && memcmp(bar + 1, "raw", 3) == 0)) {
            snprintf(err, errlen, "unknown modifier at position %zu (only |raw)", (size_t)(bar - s) + 2);
            goto fail;
        }
        if (push_seg(t, lit, i - lit, i + 1, (size_t)((bar ? bar : end) - c - 1)) < 0)
            goto oom;
        g = &t->seg[t->nseg - 1];
        g->raw = bar != NULL;
        g->source = builtin_of(c + 1, g->name_len);
        t->nmacros++;
        i = (size_t)(end - s);
        lit = i + 1;
    }
    if (lit < n && push_seg(t, lit, n - lit, 0, 0) < 0)
        goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    tpl_free(t);
    return -1;
}

int tpl_skeleton(const struct tpl *t, const char *fill, struct buf *out)
{
    size_t i;

    buf_append(out, "", 0);
    for (i = 0; i < t->nseg; i++) {
        buf_append(out, t->src + t->seg[i].lit_off, t->seg[i].lit_len);
        if (t->seg[i].name_len)
            buf_puts(out, fill);
    }
    return out->failed ? -1 : 0;
}

/* ---- mappings ---- */

void tpl_map_free(struct tpl_map *m)
{
    size_t i;

    for (i = 0; i < m->n; i++) {
        free(m->v[i].from);
        free(m->v[i].to);
    }
    free(m->v);
    free(m->name);
    memset(m, 0, sizeof *m);
}

static char *trimmed(const char *s, size_t n)
{
    char *r;

    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (!(r = malloc(n + 1)))
        return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

int tpl_map_parse(struct tpl_map *m, const char *name, const char *spec, char *err, size_t errlen)
{
    const char *p = spec;

    memset(m, 0, sizeof *m);
    if (!name_valid(name, strlen(name))) {
        snprintf(err, errlen, "invalid field name after 'map.'");
        return -1;
    }
    if (!(m->name = strdup(name)))
        goto oom;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        struct tpl_pair *nv;
        int blank = strspn(p, " \t") >= len;
        if (blank) {
            snprintf(err, errlen, "empty mapping at position %zu (expected from:to)", (size_t)(p - spec) + 1);
            goto fail;
        }
        if (!colon) {
            snprintf(err, errlen, "mapping without ':' at position %zu (expected from:to)", (size_t)(p - spec) + 1);
            goto fail;
        }
        if (!(nv = realloc(m->v, (m->n + 1) * sizeof *nv)))
            goto oom;
        m->v = nv;
        nv[m->n].from = trimmed(p, (size_t)(colon - p));
        nv[m->n].to = trimmed(colon + 1, len - (size_t)(colon - p) - 1);
        m->n++;
        if (!nv[m->n - 1].from || !nv[m->n - 1].to)
            goto oom;
        p += len;
        if (*p == ',')
            p++;
    }
    if (m->n == 0) {
        snprintf(err, errlen, "no mappings (expected from:to, from:to)");
        goto fail;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    tpl_map_free(m);
    return -1;
}

static const char *mapped(const struct tpl_vars *v, const char *name, size_t nlen, const char *val)
{
    size_t i, k;

    for (i = 0; i < v->nmaps; i++) {
        const struct tpl_map *m = &v->maps[i];
        if (strlen(m->name) != nlen || memcmp(m->name, name, nlen) != 0)
            continue;
        for (k = 0; k < m->n; k++)
            if (strcmp(m->v[k].from, val) == 0)
                return m->v[k].to;
    }
    return val;
}

/* ---- expansion ---- */

int tpl_pct_encode(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i, run = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[3];
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
            continue;
        buf_append(b, s + run, i - run);
        e[0] = '%';
        e[1] = hex[c >> 4];
        e[2] = hex[c & 15];
        buf_append(b, e, 3);
        run = i + 1;
    }
    buf_append(b, s + run, n - run);
    return b->failed ? -1 : 0;
}

/* The value of one macro into val; 1 when it has none. */
static int macro_value(const struct tpl *t, const struct tpl_seg *g, const struct tpl_vars *v, struct buf *val,
                       char *why, size_t whylen)
{
    const char *name = t->src + g->name_off;
    struct jp_val jv;
    int r;

    switch (g->source) {
    case TPL_EVENT_ID:
        return v->event_id ? buf_puts(val, v->event_id) : 1;
    case TPL_EVENT_TYPE:
        return v->event_type ? buf_puts(val, v->event_type) : 1;
    case TPL_ENDPOINT:
        return v->endpoint ? buf_puts(val, v->endpoint) : 1;
    case TPL_ATTEMPT:
        return buf_printf(val, "%d", v->attempt);
    case TPL_TIMESTAMP:
        return buf_printf(val, "%lld", (long long)v->timestamp);
    case TPL_SECRET:
        return v->secret ? buf_puts(val, v->secret) : 1;
    case TPL_TOKEN:
        if (v->token)
            return buf_puts(val, v->token);
        break;   /* no token: the payload's field */
    case TPL_FIELD:
        break;
    }
    r = jpath_get(v->payload ? v->payload : "", v->payload ? v->payload_len : 0, name, g->name_len, &jv);
    if (r == 1 || (r == 0 && jv.type == JP_NULL))
        return 1;
    if (r < 0 || jpath_text(&jv, val) < 0) {
        if (val->failed)
            return -1;
        snprintf(why, whylen, "the payload has no readable value for macro '%.*s'", (int)g->name_len, name);
        return -2;
    }
    return 0;
}

/* Does the function macro g digest a secret (keyed, or {secret} or the
 * endpoint's token among its arguments)? Its value is then shown masked. */
static int fn_secret(const struct tpl *t, const struct tpl_seg *g, const struct tpl_vars *v)
{
    const char *args = t->src + g->name_off;
    size_t pos = 0, off, len;

    if (tplfn_keyed((enum tplfn_kind)g->fn))
        return 1;
    while (tplfn_next(args, g->name_len, &pos, &off, &len)) {
        enum tpl_source src = builtin_of(args + off, len);
        if (src == TPL_SECRET || (src == TPL_TOKEN && v->token))
            return 1;
    }
    return 0;
}

/* A raw value in a URL stays a value: no separator, escape or dot
 * segment of its own unless the endpoint allows it for this macro. */
static int raw_syntax(const char *s, const struct tpl_seg *g, const char *name, const char *allow, char *why,
                      size_t whylen)
{
    size_t k = strcspn(s, TPL_RAW_SYNTAX);
    const char *dots = strstr(s, "..");

    if ((!s[k] && !dots) || util_word_listed(allow, name, g->name_len))
        return TPL_OK;
    if (s[k])
        snprintf(why, whylen, "the value of macro '%.*s|raw' holds '%c', which would change the URL's shape "
                 "(raw_allow = %.*s permits it)", (int)g->name_len, name, s[k], (int)g->name_len, name);
    else
        snprintf(why, whylen, "the value of macro '%.*s|raw' holds '..', which would change the URL's shape "
                 "(raw_allow = %.*s permits it)", (int)g->name_len, name, (int)g->name_len, name);
    return TPL_UNSAFE;
}

int tpl_raw_allow_check(const struct tpl *t, const char *list, char *err, size_t errlen)
{
    const char *p = list;

    while (p && *p) {
        size_t len, i;
        int found = 0;
        p += strspn(p, ", \t");
        len = strcspn(p, ", \t");
        for (i = 0; len && i < t->nseg && !found; i++)
            found = t->seg[i].raw && t->seg[i].name_len == len && memcmp(t->src + t->seg[i].name_off, p, len) == 0;
        if (len && !found) {
            snprintf(err, errlen, "'%.*s' is not a {%.*s|raw} macro of the url", (int)(len > 64 ? 64 : len), p,
                     (int)(len > 64 ? 64 : len), p);
            return -1;
        }
        p += len;
    }
    return 0;
}

/* A function macro's value: the digest of its arguments' values as they
 * would be expanded (maps applied, before encoding), as lowercase hex.
 * 0, -1 out of memory, -2 a bad value, -3 a missing one with on_missing
 * = fail (why says which). */
static int fn_value(const struct tpl *t, const struct tpl_seg *g, const struct tpl_vars *v, struct buf *val,
                    char *why, size_t whylen)
{
    enum tplfn_kind fn = (enum tplfn_kind)g->fn;
    const char *args = t->src + g->name_off;
    struct tplfn_ctx c;
    struct buf one = {0};
    char hex[TPLFN_HEX_MAX];
    size_t pos = 0, off, len;
    int rc = -1, r;

    if (tplfn_keyed(fn) && !v->token) {
        snprintf(why, whylen, "macro '%s' is keyed by the endpoint's token, and it has none", tplfn_name(fn));
        return -2;
    }
    if (tplfn_begin(&c, fn, v->token, v->token ? strlen(v->token) : 0) < 0)
        return -1;
    while (tplfn_next(args, g->name_len, &pos, &off, &len)) {
        struct tpl_seg a = {.name_off = g->name_off + off, .name_len = len};
        const char *s;
        a.source = builtin_of(args + off, len);
        buf_reset(&one);
        buf_append(&one, "", 0);
        r = macro_value(t, &a, v, &one, why, whylen);
        if (r == -1 || r == -2) {
            rc = r;
            goto out;
        }
        if (r == 1) {
            if (v->missing_fail) {
                snprintf(why, whylen, "no value for '%.*s' in macro '%s'", (int)len, args + off, tplfn_name(fn));
                rc = -3;
                goto out;
            }
            buf_reset(&one);
            buf_append(&one, "", 0);
        }
        if (one.failed)
            goto out;
        s = a.source == TPL_FIELD ? mapped(v, args + off, len, one.p) : one.p;
        if (tplfn_update(&c, s, strlen(s)) < 0)
            goto out;
    }
    if (tplfn_end(&c, hex) < 0)
        goto out;
    rc = buf_puts(val, hex) < 0 ? -1 : 0;
out:
    tplfn_abort(&c);
    if (one.p)
        explicit_bzero(one.p, one.cap);
    buf_free(&one);
    return rc;
}

/* A masked value as it was sent, for masking it again in the URL curl
 * reports (postback_effective_shown). */
static int hidden_add(struct buf *h, const char *s, int encode)
{
    if (encode)
        tpl_pct_encode(h, s, strlen(s));
    else
        buf_puts(h, s);
    buf_append(h, "", 1);
    return h->failed ? -1 : 0;
}

int tpl_expand(const struct tpl *t, const struct tpl_vars *v, struct buf *out, struct buf *shown, char *why,
               size_t whylen)
{
    struct buf val = {0};
    size_t i, k;
    int rc = -1;

    buf_append(out, "", 0);
    if (shown)
        buf_append(shown, "", 0);
    for (i = 0; i < t->nseg; i++) {
        const struct tpl_seg *g = &t->seg[i];
        const char *name = t->src + g->name_off, *s;
        int r;
        buf_append(out, t->src + g->lit_off, g->lit_len);
        if (shown)
            buf_append(shown, t->src + g->lit_off, g->lit_len);
        if (!g->name_len)
            continue;
        buf_reset(&val);
        buf_append(&val, "", 0);
        r = g->fn ? fn_value(t, g, v, &val, why, whylen) : macro_value(t, g, v, &val, why, whylen);
        if (r == -1)
            goto out;
        if (r == -3) {
            rc = TPL_MISSING;
            goto out;
        }
        if (r == -2) {
            rc = TPL_BAD_VALUE;
            goto out;
        }
        if (r == 1) {
            if (v->missing_fail) {
                snprintf(why, whylen, "no value for macro '%.*s'", (int)g->name_len, name);
                rc = TPL_MISSING;
                goto out;
            }
            buf_reset(&val);
            buf_append(&val, "", 0);
        }
        if (val.failed)
            goto out;
        s = g->source == TPL_FIELD && !g->fn ? mapped(v, name, g->name_len, val.p) : val.p;
        if (g->raw) {
            for (k = 0; s[k]; k++)
                if ((unsigned char)s[k] <= 0x20 || s[k] == 0x7f) {
                    snprintf(why, whylen, "the value of macro '%.*s|raw' holds a blank or control character",
                             (int)g->name_len, name);
                    rc = TPL_BAD_VALUE;
                    goto out;
                }
            if (v->encode && raw_syntax(s, g, name, v->raw_allow, why, whylen) != TPL_OK) {
                rc = TPL_UNSAFE;
                goto out;
            }
            buf_puts(out, s);
        } else if (v->encode) {
            tpl_pct_encode(out, s, strlen(s));
        } else {
            buf_puts(out, s);
        }
        if (shown) {
            if (g->source == TPL_SECRET || (g->source == TPL_TOKEN && v->token) || (g->fn && fn_secret(t, g, v))) {
                buf_puts(shown, TPL_MASK);
                if (v->hidden && hidden_add(v->hidden, s, !g->raw && v->encode) < 0)
                    goto out;
            }
            else if (g->raw || !v->encode)
                buf_puts(shown, s);
            else
                tpl_pct_encode(shown, s, strlen(s));
        }
    }
    rc = out->failed || (shown && shown->failed) ? -1 : TPL_OK;
out:
    buf_free(&val);
    return rc;
}

struct form_ctx {
    const struct tpl_vars *v;
    struct buf *out;
    struct buf val;
    int n;
};

static int form_field(void *arg, const char *key, const struct jp_val *jv)
{
    struct form_ctx *f = arg;
    const char *s;

    buf_reset(&f->val);
    buf_append(&f->val, "", 0);
    if (jpath_text(jv, &f->val) < 0)
        return f->val.failed ? -1 : 2;
    s = mapped(f->v, key, strlen(key), f->val.p);
    if (f->n++)
        buf_puts(f->out, "&");
    tpl_pct_encode(f->out, key, strlen(key));
    buf_puts(f->out, "=");
    tpl_pct_encode(f->out, s, strlen(s));
    return f->out->failed ? -1 : 0;
}

int tpl_form(const struct tpl_vars *v, struct buf *out, char *why, size_t whylen)
{
    struct form_ctx f = {.v = v, .out = out};
    int r;

    buf_append(out, "", 0);
    r = jpath_each(v->payload ? v->payload : "", v->payload ? v->payload_len : 0, form_field, &f);
    buf_free(&f.val);
    if (r == -1 && !out->failed) {
        snprintf(why, whylen, "a form body needs a JSON object payload with readable fields");
        return TPL_BAD_VALUE;
    }
    if (r == 2) {
        snprintf(why, whylen, "a payload field cannot be read as text");
        return TPL_BAD_VALUE;
    }
    return out->failed || r < 0 ? -1 : TPL_OK;
}
