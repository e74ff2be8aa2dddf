/* fuzz_filter.c - libFuzzer target for payload filters (src/filter.c)
 * and the JSON value reader under them (src/jpath.c).
 *
 * Input: the filter's text, then a NUL, then the payload it is matched
 * against.
 *
 * Properties:
 *  - parse either fails with a message naming a position (or the one
 *    length, emptiness or size bound), or succeeds within the node and
 *    value bounds;
 *  - a match answers 0 or 1 (never out of memory here), the same twice;
 *  - "not (F)" parses whenever F does (unless F is nested to the bound)
 *    and answers the opposite;
 *  - nothing reads out of bounds (ASan). */
#include "filter.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct filter f, g;
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : size, plen = nul ? size - slen - 1 : 0;
    char *s = fuzz_strndup(data, slen), *payload = fuzz_strndup(nul ? nul + 1 : data, plen), *neg;
    char err[256];
    int r, r2, rn;

    err[0] = '\0';
    if (filter_parse(&f, s, err, sizeof err) < 0) {
        FUZZ_CHECK(strstr(err, "position") || strstr(err, "too long") || strstr(err, "empty filter"),
                   "refusal without a position: %s", err);
        goto out;
    }
    FUZZ_CHECK(f.nn > 0 && f.nn <= FILTER_NODES_MAX && f.nlit <= FILTER_VALUES_MAX, "bounds: %zu nodes", f.nn);
    r = filter_match(&f, payload, plen);
    r2 = filter_match(&f, payload, plen);
    FUZZ_CHECK(r == 0 || r == 1, "match answered %d", r);
    FUZZ_CHECK(r == r2, "match not deterministic");
    neg = malloc(slen + 16);
    if (!neg)
        abort();
    snprintf(neg, slen + 16, "not (%s)", s);
    if (filter_parse(&g, neg, err, sizeof err) == 0) {
        rn = filter_match(&g, payload, plen);
        FUZZ_CHECK(rn == !r, "not (F) answered %d, F %d", rn, r);
        filter_free(&g);
    } else {
        FUZZ_CHECK(strstr(err, "nested too deeply") || strstr(err, "too many") || strstr(err, "too long"),
                   "F parsed, not (F) refused: %s", err);
    }
    free(neg);
    filter_free(&f);
out:
    free(s);
    free(payload);
    return 0;
}
