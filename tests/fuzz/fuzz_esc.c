/* fuzz_esc.c - libFuzzer target for the escaping of text shown to people
 * (src/esc.c) and the masking of URLs (src/urlmask.c).
 *
 * Input: the whole input is the text; byte 0 also picks the size of the
 * fixed buffer esc_str fills.
 *
 * Properties:
 *  - esc_next always advances (1..4 bytes) with a spelling that fits;
 *  - what ESC_TEXT, ESC_QUOTED and ESC_SHOW write is well-formed UTF-8
 *    with no control character, C1 control, bidi mark or override and no
 *    line separator (escaping it again in ESC_SHOW changes nothing), and
 *    ESC_QUOTED writes no bare '"';
 *  - ESC_JSON written between quotes is a JSON string that cJSON reads
 *    back as the input, when the input is UTF-8 without NUL;
 *  - ESC_JSON_DOC keeps a JSON document the same document;
 *  - esc_str cuts at a whole escape: a prefix of the ESC_TEXT text;
 *  - urlmask keeps everything up to the end of the authority, and
 *    masking its output again changes nothing. */
#include "fuzz_common.h"
#include "esc.h"
#include "urlmask.h"
#include "util.h"

#include <cjson/cJSON.h>

static void check_safe(const struct buf *b, enum esc_style st)
{
    char rep[ESC_REP_MAX];
    size_t i = 0, k;

    FUZZ_CHECK(util_utf8_valid(b->p, b->len), "style %d wrote malformed UTF-8", (int)st);
    for (; i < b->len; i += k) {
        k = esc_next(b->p + i, b->len - i, ESC_SHOW, rep);
        FUZZ_CHECK(!rep[0], "style %d left '%s' unescaped at %zu", (int)st, rep, i);
        if (st == ESC_QUOTED && b->p[i] == '"')
            FUZZ_CHECK(i > 0 && b->p[i - 1] == '\\', "bare quote at %zu", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_strndup(data, size), rep[ESC_REP_MAX], *small;
    size_t i, k, n = strlen(s), cap = size ? (size_t)data[0] % 64 + 1 : 1;
    struct buf b = {0}, j = {0}, m1 = {0}, m2 = {0};
    enum esc_style st;

    for (i = 0; i < size; i += k) {
        k = esc_next((const char *)data + i, size - i, ESC_TEXT, rep);
        FUZZ_CHECK(k >= 1 && k <= 4 && k <= size - i, "esc_next took %zu of %zu", k, size - i);
        FUZZ_CHECK(strlen(rep) < ESC_REP_MAX, "spelling too long");
    }
    for (st = ESC_TEXT; st <= ESC_SHOW; st++) {
        buf_reset(&b);
        FUZZ_CHECK(buf_esc(&b, (const char *)data, size, st) == 0, "out of memory");
        if (b.p)
            check_safe(&b, st);
        if (st == ESC_TEXT) {
            small = malloc(cap);
            FUZZ_CHECK(small, "out of memory");
            k = esc_str(small, cap, s, ESC_TEXT);
            FUZZ_CHECK(k < cap && small[k] == '\0' && strlen(small) == k, "esc_str length %zu of %zu", k, cap);
            /* s stops at a NUL; the escaping of data up to there starts the same */
            FUZZ_CHECK(b.len >= k && memcmp(b.p, small, k) == 0, "esc_str is no prefix");
            free(small);
        }
    }
    if (util_utf8_valid(s, n) && n == size) {
        cJSON *v;
        buf_json_str(&j, s);
        v = cJSON_ParseWithLength(j.p, j.len);
        FUZZ_CHECK(cJSON_IsString(v) && strcmp(v->valuestring, s) == 0, "JSON string did not read back: %s", j.p);
        cJSON_Delete(v);
        buf_reset(&j);
    }
    {
        cJSON *in = cJSON_ParseWithLength((const char *)data, size), *out;
        int plain = 1;   /* cJSON reads other C0 bytes outside strings as blanks */
        for (i = 0; i < size; i++)
            if (data[i] < 0x20 && data[i] != '\t' && data[i] != '\n' && data[i] != '\r')
                plain = 0;
        if (in && plain && util_utf8_valid((const char *)data, size)) {
            buf_esc(&j, (const char *)data, size, ESC_JSON_DOC);
            out = cJSON_ParseWithLength(j.p ? j.p : "", j.len);
            FUZZ_CHECK(out && cJSON_Compare(in, out, 1), "ESC_JSON_DOC changed the document");
            cJSON_Delete(out);
        }
        cJSON_Delete(in);
    }
    FUZZ_CHECK(urlmask_url(s, "a, b", &m1) == 0, "mask failed");
    if (m1.p) {
        const char *a = strstr(s, "://");
        size_t auth = a ? (size_t)(a + 3 - s) + strcspn(a + 3, "/?") : 0;
        FUZZ_CHECK(m1.len >= auth && memcmp(m1.p, s, auth) == 0, "authority changed: '%s'", m1.p);
        FUZZ_CHECK(urlmask_url(m1.p, "a, b", &m2) == 0 && m2.len == m1.len && memcmp(m1.p, m2.p, m1.len) == 0,
                   "masking twice differs: '%s' then '%s'", m1.p, m2.p ? m2.p : "");
    }
    buf_free(&b);
    buf_free(&j);
    buf_free(&m1);
    buf_free(&m2);
    free(s);
    return 0;
}
