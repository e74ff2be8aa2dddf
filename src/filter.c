/* filter.c - payload filters: a recursive-descent parser into a node
 * array, and the evaluator over jpath lookups. */
#include "filter.h"
#include "jpath.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { F_AND = 0, F_OR, F_NOT, F_EQ, F_NE, F_LT, F_LE, F_GT, F_GE, F_IN, F_EXISTS };
enum tok { T_END = 0, T_LP, T_RP, T_COMMA, T_OP, T_WORD, T_QUOTED, T_BAD };

struct parser {
    struct filter *f;
    const char *s;
    size_t len, pos;
    /* the current token */
    enum tok t;
    size_t toff, tlen;         /* T_QUOTED: the text between the quotes */
    size_t tpos;               /* where it starts (0-based) */
    int op;
    int depth;
    char *err;
    size_t errlen;
};

static int word_char(char c)
{
    return isalnum((unsigned char)c) || strchr("_.-+:/@", c) != NULL;
}

static void next(struct parser *p)
{
    const char *s = p->s;

    while (p->pos < p->len && (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r'))
        p->pos++;
    p->tpos = p->toff = p->pos;
    p->tlen = 0;
    if (p->pos >= p->len) {
        p->t = T_END;
        return;
    }
    switch (s[p->pos]) {
    case '(':
        p->t = T_LP;
        p->pos++;
        return;
    case ')':
        p->t = T_RP;
        p->pos++;
        return;
    case ',':
        p->t = T_COMMA;
        p->pos++;
        return;
    case '=':
        p->t = T_OP;
        p->op = F_EQ;
        p->pos++;
        return;
    case '!':
        if (p->pos + 1 < p->len && s[p->pos + 1] == '=') {
            p->t = T_OP;
            p->op = F_NE;
            p->pos += 2;
            return;
        }
        p->t = T_BAD;
        return;
    case '<':
    case '>': {
        int eq = p->pos + 1 < p->len && s[p->pos + 1] == '=';
        p->t = T_OP;
        p->op = s[p->pos] == '<' ? (eq ? F_LE : F_LT) : (eq ? F_GE : F_GT);
        p->pos += 1 + (size_t)eq;
        return;
    }
    case '\'':
    case '"': {
        const char *e = memchr(s + p->pos + 1, s[p->pos], p->len - p->pos - 1);
        if (!e) {
            p->t = T_BAD;
            return;
        }
        p->t = T_QUOTED;
        p->toff = p->pos + 1;
        p->tlen = (size_t)(e - s) - p->toff;
        p->pos = (size_t)(e - s) + 1;
        return;
    }
    default:
        break;
    }
    if (!word_char(s[p->pos])) {
        p->t = T_BAD;
        return;
    }
    while (p->pos < p->len && word_char(s[p->pos]))
        p->pos++;
    p->t = T_WORD;
    p->tlen = p->pos - p->toff;
}

static int is_kw(const struct parser *p, const char *kw)
{
    return p->t == T_WORD && p->tlen == strlen(kw) && strncasecmp(p->s + p->toff, kw, p->tlen) == 0;
}

static int fail(struct parser *p, const char *what)
{
    if (p->t == T_BAD && p->tpos < p->len && (p->s[p->tpos] == '\'' || p->s[p->tpos] == '"'))
        snprintf(p->err, p->errlen, "unterminated quote at position %zu", p->tpos + 1);
    else if (p->t == T_END)
        snprintf(p->err, p->errlen, "%s at position %zu (the end)", what, p->tpos + 1);
    else
        snprintf(p->err, p->errlen, "%s at position %zu", what, p->tpos + 1);
    return -1;
}

static int new_node(struct parser *p, int op)
{
    struct filter *f = p->f;
    struct filter_node *nv;

    if (f->nn >= FILTER_NODES_MAX) {
        snprintf(p->err, p->errlen, "too many tests and operators at position %zu (max %d)", p->tpos + 1,
                 FILTER_NODES_MAX);
        return -1;
    }
    if (!(nv = realloc(f->n, (f->nn + 1) * sizeof *nv))) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    f->n = nv;
    memset(&nv[f->nn], 0, sizeof nv[f->nn]);
    nv[f->nn].op = op;
    nv[f->nn].a = nv[f->nn].b = -1;
    return (int)f->nn++;
}

/* a dotted path: parts of name characters, none empty */
static int field_ok(const char *s, size_t n)
{
    size_t i;

    if (n == 0 || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!(isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.') || (c == '.' && s[i + 1] == '.'))
            return 0;
    }
    return 1;
}

static int value(struct parser *p)
{
    struct filter *f = p->f;
    struct filter_lit *nv, *l;

    if (p->t != T_WORD && p->t != T_QUOTED)
        return fail(p, "expected a value");
    if (f->nlit >= FILTER_VALUES_MAX) {
        snprintf(p->err, p->errlen, "too many values at position %zu (max %d)", p->tpos + 1, FILTER_VALUES_MAX);
        return -1;
    }
    if (!(nv = realloc(f->lit, (f->nlit + 1) * sizeof *nv))) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    f->lit = nv;
    l = &nv[f->nlit++];
    memset(l, 0, sizeof *l);
    l->off = p->toff;
    l->len = p->tlen;
    if (p->t == T_WORD && p->tlen < 64) {
        char num[64], *end;
        memcpy(num, p->s + p->toff, p->tlen);
        num[p->tlen] = '\0';
        l->d = strtod(num, &end);
        l->num = end == num + p->tlen && isfinite(l->d) && (isdigit((unsigned char)num[0]) || num[0] == '-' ||
                                                            num[0] == '+' || num[0] == '.');
    }
    next(p);
    return 0;
}

static int or_expr(struct parser *p);

static int test(struct parser *p)
{
    size_t foff = p->toff, flen = p->tlen;
    int k, neg = 0, in;

    if (p->t != T_WORD || is_kw(p, "and") || is_kw(p, "or") || is_kw(p, "in") || is_kw(p, "exists"))
        return fail(p, "expected a field name, 'not' or '('");
    if (!field_ok(p->s + foff, flen))
        return fail(p, "invalid field name (letters, digits, _ - and dots)");
    next(p);
    if (is_kw(p, "exists")) {
        if ((k = new_node(p, F_EXISTS)) < 0)
            return -1;
        next(p);
    } else if (p->t == T_OP) {
        if ((k = new_node(p, p->op)) < 0)
            return -1;
        p->f->n[k].lit = (int)p->f->nlit;
        p->f->n[k].nlit = 1;
        next(p);
        if (value(p) < 0)
            return -1;
    } else {
        if (is_kw(p, "not")) {
            neg = 1;
            next(p);
            if (!is_kw(p, "in"))
                return fail(p, "expected 'in' after 'not'");
        }
        if (!is_kw(p, "in"))
            return fail(p, "expected an operator (= != < <= > >= in exists)");
        next(p);
        if (p->t != T_LP)
            return fail(p, "expected '(' after 'in'");
        next(p);
        if ((k = new_node(p, F_IN)) < 0)
            return -1;
        p->f->n[k].lit = (int)p->f->nlit;
        for (;;) {
            if (value(p) < 0)
                return -1;
            p->f->n[k].nlit++;
            if (p->t == T_RP)
                break;
            if (p->t != T_COMMA)
                return fail(p, "expected ',' or ')' in the list");
            next(p);
        }
        next(p);
        if (neg) {
            in = k;
            if ((k = new_node(p, F_NOT)) < 0)
                return -1;
            p->f->n[k].a = in;
        }
    }
    if (p->f->n[k].op != F_NOT) {
        p->f->n[k].foff = foff;
        p->f->n[k].flen = flen;
    } else {
        p->f->n[p->f->n[k].a].foff = foff;
        p->f->n[p->f->n[k].a].flen = flen;
    }
    return k;
}

static int unary(struct parser *p)
{
    int k, c;

    if (is_kw(p, "not") || p->t == T_LP) {
        int paren = p->t == T_LP;
        if (++p->depth > FILTER_DEPTH_MAX) {
            snprintf(p->err, p->errlen, "nested too deeply at position %zu (max %d)", p->tpos + 1,
                     FILTER_DEPTH_MAX);
            return -1;
        }
        next(p);
        if (paren) {
            if ((k = or_expr(p)) < 0)
                return -1;
            if (p->t != T_RP)
                return fail(p, "expected ')'");
            next(p);
        } else {
            if ((c = unary(p)) < 0 || (k = new_node(p, F_NOT)) < 0)
                return -1;
            p->f->n[k].a = c;
        }
        p->depth--;
        return k;
    }
    return test(p);
}

static int binary(struct parser *p, int op)
{
    int l = op == F_OR ? binary(p, F_AND) : unary(p), r, k;
    const char *kw = op == F_OR ? "or" : "and";

    while (l >= 0 && is_kw(p, kw)) {
        next(p);
        if ((r = op == F_OR ? binary(p, F_AND) : unary(p)) < 0 || (k = new_node(p, op)) < 0)
            return -1;
        p->f->n[k].a = l;
        p->f->n[k].b = r;
        l = k;
    }
    return l;
}

static int or_expr(struct parser *p)
{
    return binary(p, F_OR);
}

void filter_free(struct filter *f)
{
    free(f->src);
    free(f->n);
    free(f->lit);
    memset(f, 0, sizeof *f);
}

int filter_parse(struct filter *f, const char *s, char *err, size_t errlen)
{
    struct parser p = {.f = f, .s = s, .err = err, .errlen = errlen};

    memset(f, 0, sizeof *f);
    p.len = strlen(s);
    if (p.len > FILTER_MAX) {
        snprintf(err, errlen, "too long (max %d bytes)", FILTER_MAX);
        return -1;
    }
    if (!(f->src = strdup(s))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p.s = f->src;
    next(&p);
    if (p.t == T_END) {
        snprintf(err, errlen, "empty filter");
        goto fail;
    }
    if ((f->root = or_expr(&p)) < 0)
        goto fail;
    if (p.t != T_END) {
        fail(&p, p.t == T_RP ? "')' without '('" : "expected 'and', 'or' or the end");
        goto fail;
    }
    return 0;
fail:
    filter_free(f);
    return -1;
}

/* ---- evaluation ---- */

struct eval {
    const struct filter *f;
    const char *json;
    size_t len;
    struct buf text;
};

static int cmp_text(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);

    return c ? c : an < bn ? -1 : an > bn;
}

/* Is the text a whole number? */
static int as_number(const char *s, size_t n, double *d)
{
    char num[64], *end;

    if (n == 0 || n >= sizeof num)
        return 0;
    memcpy(num, s, n);
    num[n] = '\0';
    if (isspace((unsigned char)num[0]))
        return 0;
    *d = strtod(num, &end);
    return end == num + n && isfinite(*d);
}

/* <0, 0, >0 as the field (its text in e->text) compares to literal l */
static int compare(const struct eval *e, const struct jp_val *v, const struct filter_lit *l)
{
    const char *lt = e->f->src + l->off;
    double d;

    if (l->num && (v->type == JP_NUMBER || v->type == JP_STRING) && as_number(e->text.p, e->text.len, &d))
        return d < l->d ? -1 : d > l->d;
    return cmp_text(e->text.p, e->text.len, lt, l->len);
}

static int eval(struct eval *e, int k)
{
    const struct filter_node *n = &e->f->n[k];
    struct jp_val v;
    int r, i, c;

    switch (n->op) {
    case F_AND:
        return (r = eval(e, n->a)) <= 0 ? r : eval(e, n->b);
    case F_OR:
        return (r = eval(e, n->a)) != 0 ? r : eval(e, n->b);
    case F_NOT:
        return (r = eval(e, n->a)) < 0 ? r : !r;
    default:
        break;
    }
    r = jpath_get(e->json, e->len, e->f->src + n->foff, n->flen, &v);
    if (r != 0 || v.type == JP_NULL)
        return n->op == F_NE;
    if (n->op == F_EXISTS)
        return 1;
    buf_reset(&e->text);
    buf_append(&e->text, "", 0);
    if (jpath_text(&v, &e->text) < 0)
        return e->text.failed ? -1 : n->op == F_NE;
    if (n->op == F_IN) {
        for (i = 0; i < n->nlit; i++)
            if (compare(e, &v, &e->f->lit[n->lit + i]) == 0)
                return 1;
        return 0;
    }
    c = compare(e, &v, &e->f->lit[n->lit]);
    switch (n->op) {
    case F_EQ:
        return c == 0;
    case F_NE:
        return c != 0;
    case F_LT:
        return c < 0;
    case F_LE:
        return c <= 0;
    case F_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

int filter_match(const struct filter *f, const char *json, size_t len)
{
    struct eval e = {.f = f, .json = json ? json : "", .len = json ? len : 0};
    int r;

    if (!f->n)
        return 1;
    r = eval(&e, f->root);
    buf_free(&e.text);
    return r;
}
