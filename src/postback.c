/* postback.c - requests built from an endpoint's templates. */
#include "postback.h"
#include "netpolicy.h"
#include "tpl.h"
#include "urlmask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void postback_req_free(struct postback_req *rq)
{
    buf_free(&rq->url);
    buf_free(&rq->shown);
    buf_free(&rq->body);
    if (rq->hidden.p)
        explicit_bzero(rq->hidden.p, rq->hidden.cap);
    buf_free(&rq->hidden);
}

int postback_build(const struct ep_conf *e, const struct postback_msg *m, struct postback_req *rq,
                   enum errclass *errc, char *why, size_t whylen)
{
    const struct ep_request *def = &e->def.rq;
    struct tpl_vars v = {0};
    struct buf masked = {0};
    int r;

    buf_reset(&rq->url);
    buf_reset(&rq->shown);
    buf_reset(&rq->body);
    if (rq->hidden.p)
        explicit_bzero(rq->hidden.p, rq->hidden.cap);
    buf_reset(&rq->hidden);
    v.payload = m->payload;
    v.payload_len = m->payload_len;
    v.event_id = m->event_id;
    v.event_type = m->event_type;
    v.endpoint = e->def.name;
    v.secret = e->def.nsecrets ? e->def.secrets[0] : NULL;
    v.token = e->def.token;
    v.attempt = m->attempt;
    v.timestamp = m->ts;
    v.maps = e->maps;
    v.nmaps = e->nmaps;
    v.missing_fail = def->on_missing_fail;
    v.encode = 1;
    v.raw_allow = def->raw_allow;
    v.hidden = &rq->hidden;
    r = tpl_expand(&e->url_tpl, &v, &rq->url, &masked, why, whylen);
    if (r == TPL_OK && e->body == EP_BODY_FORM)
        r = tpl_form(&v, &rq->body, why, whylen);
    if (r == TPL_OK &&
        urlmask_url(masked.p, def->mask_params, &rq->shown) < 0)
        r = -1;
    buf_free(&masked);
    if (r == TPL_OK && e->url_tpl.nmacros) {
        /* values are encoded, but a raw one is not: the URL as it will be
         * sent passes the same check as the endpoint's own */
        char reason[160];
        if (netpolicy_url_check(rq->url.p, reason, sizeof reason) < 0) {
            snprintf(why, whylen, "the expanded URL is refused: %s", reason);
            r = TPL_BAD_VALUE;
        }
    }
    switch (r) {
    case TPL_OK:
        rq->send_url = rq->url.p;
        if (e->body == EP_BODY_FORM) {
            rq->send_body = rq->body.p;
            rq->send_len = rq->body.len;
        } else if (e->body == EP_BODY_NONE) {
            rq->send_body = "";
            rq->send_len = 0;
        } else {
            rq->send_body = m->payload;
            rq->send_len = m->payload_len;
        }
        return 0;
    case TPL_MISSING:
        *errc = ERRC_TEMPLATE_MISSING;
        return -1;
    case TPL_BAD_VALUE:
        *errc = ERRC_TEMPLATE;
        return -1;
    case TPL_UNSAFE:
        *errc = ERRC_TEMPLATE_UNSAFE;
        return -1;
    default:
        *errc = ERRC_INTERNAL;
        snprintf(why, whylen, "out of memory");
        return -1;
    }
}

/* Every occurrence of what (when not empty) in s replaced by TPL_MASK. */
static void mask_value(struct buf *out, const char *s, const char *what)
{
    size_t wl = what ? strlen(what) : 0;
    const char *hit;

    while (wl && (hit = strstr(s, what))) {
        buf_append(out, s, (size_t)(hit - s));
        buf_puts(out, TPL_MASK);
        s = hit + wl;
    }
    buf_puts(out, s);
}

char *postback_effective_shown(const struct ep_conf *e, const struct buf *hidden, const char *sent,
                               const char *effective)
{
    const char *secret = e->def.nsecrets ? e->def.secrets[0] : NULL;
    struct buf enc = {0}, a = {0}, b = {0}, shown = {0};
    size_t off;
    int failed = 0;

    if (!effective || !sent || strcmp(sent, effective) == 0)
        return NULL;
    /* {secret} went out percent-encoded, or as it is with |raw */
    if (secret)
        tpl_pct_encode(&enc, secret, strlen(secret));
    mask_value(&a, effective, enc.p);
    mask_value(&b, a.p ? a.p : "", secret);
    /* and every other value the shown form masks ({token}, digests) */
    failed = a.failed || b.failed;
    for (off = 0; hidden && off < hidden->len; off += strlen(hidden->p + off) + 1) {
        buf_reset(&a);
        mask_value(&a, b.p ? b.p : "", hidden->p + off);
        failed |= a.failed;
        buf_reset(&b);
        buf_puts(&b, a.p ? a.p : "");
        failed |= b.failed;
    }
    urlmask_url(b.p ? b.p : "", e->def.rq.mask_params, &shown);
    buf_free(&enc);
    buf_free(&a);
    buf_free(&b);
    if (shown.failed || enc.failed || failed) {
        buf_free(&shown);
        return NULL;
    }
    return shown.p;
}

/* The length of the longest prefix of s[0..n) that does not end inside
 * a UTF-8 sequence. */
static size_t whole_chars(const char *s, size_t n)
{
    size_t i = n, back = 0;

    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
        i--;
        back++;
    }
    if (i > 0 && (unsigned char)s[i - 1] >= 0xc0) {
        unsigned char lead = (unsigned char)s[i - 1];
        size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (back + 1 < need)
            return i - 1;
    }
    return n;
}

char *postback_excerpt(const char *s, size_t n)
{
    struct buf b = {0};

    if (n == 0)
        return NULL;
    if (n > POSTBACK_EXCERPT)
        n = whole_chars(s, POSTBACK_EXCERPT);
    if (buf_esc(&b, s, n, ESC_TEXT) < 0 || !b.p) {
        buf_free(&b);
        return NULL;
    }
    return b.p;
}

int postback_body_ok(const char *want, const char *body, size_t n)
{
    size_t wl = strlen(want);

    return wl <= n && memmem(body, n, want, wl) != NULL;
}
