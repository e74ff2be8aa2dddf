/* fuzz_tpl.c - libFuzzer target for postback templates (src/tpl.c) and
 * the JSON value reader under them (src/jpath.c).
 *
 * Input: byte 0 picks the macro style (mod 3) and whether the template is
 * a URL or a plain text (bit 2); the rest is the template, then a NUL,
 * then the payload the macros read.
 *
 * Properties:
 *  - parse either fails with a message naming a position, or succeeds;
 *  - a URL template keeps its scheme, host and port literal: every
 *    expansion starts with exactly the template's text up to the end of
 *    its authority;
 *  - encoded values hold only unreserved characters and %XX escapes, and
 *    a raw value with URL syntax is refused (no raw_allow here), so an
 *    expansion adds no '&', '=', '?', '#', '/' or '\\' of its own: it has
 *    as many as the literal text;
 *  - the shown form never holds the secret or the endpoint's token
 *    (unless the literal text or the payload does), and masking its
 *    query keeps its length sane; function macros ({md5:a,token},
 *    {hmac_sha256:a}) digest them;
 *  - expansion answers OK, MISSING, BAD_VALUE or (with a raw macro)
 *    UNSAFE, never out of memory, and with on_missing = empty never
 *    MISSING;
 *  - jpath and the form body never read out of bounds (ASan). */
#include "fuzz_common.h"
#include "jpath.h"
#include "tpl.h"
#include "urlmask.h"

#define SECRET "whsec_FUZZSECRETzzzz"
#define TOKEN "FUZZTOKEN q&=1"

static size_t count(const char *s, size_t n, const char *set)
{
    size_t k = 0, i;
    for (i = 0; i < n; i++)
        if (strchr(set, s[i]) && s[i])
            k++;
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tpl t;
    struct tpl_vars v = {0};
    struct tpl_map m;
    struct buf out = {0}, shown = {0}, masked = {0}, form = {0}, lit = {0};
    enum tpl_style st;
    enum tpl_kind kind;
    const uint8_t *nul;
    char *s, *payload, err[256], why[256];
    size_t slen, plen, i;
    int rc, raw = 0;

    if (size < 1)
        return 0;
    st = (enum tpl_style)(data[0] % 3);
    kind = (data[0] & 4) ? TPL_TEXT : TPL_URL;
    data++, size--;
    nul = memchr(data, 0, size);
    slen = nul ? (size_t)(nul - data) : size;
    s = fuzz_strndup(data, slen);
    plen = nul ? size - slen - 1 : 0;
    payload = fuzz_strndup(nul ? nul + 1 : data, plen);

    v.payload = payload;
    v.payload_len = plen;
    v.event_id = "evt_1";
    v.event_type = "t";
    v.endpoint = "e";
    v.secret = SECRET;
    v.token = TOKEN;
    v.attempt = 1;
    v.timestamp = 1;
    v.encode = 1;
    (void)tpl_form(&v, &form, why, sizeof why);
    if (tpl_map_parse(&m, "a", s, err, sizeof err) == 0) {
        v.maps = &m;
        v.nmaps = 1;
    }

    err[0] = '\0';
    if (tpl_parse(&t, s, st, kind, err, sizeof err) < 0) {
        FUZZ_CHECK(strstr(err, "position") || strstr(err, "too long"), "no position in '%s'", err);
        goto out;
    }
    for (i = 0; i < t.nseg; i++) {
        const struct tpl_seg *g = &t.seg[i];
        FUZZ_CHECK(g->lit_off + g->lit_len <= slen && g->name_off + g->name_len <= slen, "segment out of range");
        buf_append(&lit, s + g->lit_off, g->lit_len);
        raw |= g->raw;
        if (g->name_len) {
            struct jp_val jv;
            struct buf txt = {0};
            if (jpath_get(payload, plen, s + g->name_off, g->name_len, &jv) == 0) {
                FUZZ_CHECK(jv.p >= payload && jv.p + jv.n <= payload + plen, "value out of the payload");
                (void)jpath_text(&jv, &txt);
            }
            buf_free(&txt);
        }
    }
    buf_append(&lit, "", 0);
    for (int fail = 0; fail < 2; fail++) {
        v.missing_fail = fail;
        buf_reset(&out);
        buf_reset(&shown);
        rc = tpl_expand(&t, &v, &out, &shown, why, sizeof why);
        FUZZ_CHECK(rc == TPL_OK || rc == TPL_BAD_VALUE || (raw && rc == TPL_UNSAFE) || (fail && rc == TPL_MISSING),
                   "rc %d", rc);
        if (rc != TPL_OK)
            continue;
        if (kind == TPL_URL && strstr(s, "://")) {
            const char *a = strstr(s, "://") + 3;
            size_t auth = (size_t)(a - s) + strcspn(a, "/?");
            FUZZ_CHECK(out.len >= auth && memcmp(out.p, s, auth) == 0, "authority of '%s' changed: '%s'", s,
                       out.p);
        }
        /* built-ins are encoded like payload values */
        FUZZ_CHECK(count(out.p, out.len, "&=?#/\\") == count(lit.p, lit.len, "&=?#/\\"),
                   "a value added URL syntax: '%s' from '%s'", out.p, s);
        if (!strstr(lit.p, "FUZZSECRET") && !memmem(payload, plen, "FUZZSECRET", 10) && !strstr(s, "FUZZSECRET"))
            FUZZ_CHECK(!strstr(shown.p, SECRET), "secret shown: '%s'", shown.p);
        if (!strstr(lit.p, "FUZZTOKEN") && !memmem(payload, plen, "FUZZTOKEN", 9) && !strstr(s, "FUZZTOKEN"))
            FUZZ_CHECK(!strstr(shown.p, "FUZZTOKEN"), "token shown: '%s'", shown.p);
        buf_reset(&masked);
        FUZZ_CHECK(urlmask_url(shown.p, "c, d", &masked) == 0, "mask failed");
        /* a one-byte segment or value becomes "***" */
        FUZZ_CHECK(masked.len <= shown.len * 3 + 8, "mask grew '%s' to '%s'", shown.p, masked.p);
    }
    tpl_free(&t);
out:
    if (v.maps)
        tpl_map_free(&m);
    buf_free(&out);
    buf_free(&shown);
    buf_free(&masked);
    buf_free(&form);
    buf_free(&lit);
    free(s);
    free(payload);
    return 0;
}
