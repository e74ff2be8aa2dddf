/* postback.c - requests built from an endpoint's templates. */
#include "postback.h"
#include "netpolicy.h"
#include "tpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void postback_req_free(struct postback_req *rq)
{
    buf_free(&rq->url);
    buf_free(&rq->shown);
    buf_free(&rq->body);
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
    r = tpl_expand(&e->url_tpl, &v, &rq->url, &masked, why, whylen);
    if (r == TPL_OK && e->body == EP_BODY_FORM)
        r = tpl_form(&v, &rq->body, why, whylen);
    if (r == TPL_OK &&
        tpl_mask_query(masked.p, def->mask_params ? def->mask_params : EP_MASK_DEFAULT, &rq->shown) < 0)
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
    default:
        *errc = ERRC_INTERNAL;
        snprintf(why, whylen, "out of memory");
        return -1;
    }
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
    static const char hex[] = "0123456789abcdef";
    struct buf b = {0};
    size_t i;
    int utf8;

    if (n == 0)
        return NULL;
    if (n > POSTBACK_EXCERPT)
        n = whole_chars(s, POSTBACK_EXCERPT);
    utf8 = util_utf8_valid(s, n);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            buf_puts(&b, "\\n");
        else if (c == '\r')
            buf_puts(&b, "\\r");
        else if (c == '\t')
            buf_puts(&b, "\\t");
        else if (c == '\\')
            buf_puts(&b, "\\\\");
        else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            buf_append(&b, e, 4);
        } else {
            buf_append(&b, s + i, 1);
        }
    }
    if (b.failed) {
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
