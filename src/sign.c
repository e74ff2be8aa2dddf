/* sign.c - Standard Webhooks signatures: HMAC-SHA256 over
 * msg_id "." ts "." body, keyed by the base64 part of "whsec_..." secrets. */
#include "sign.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/base64.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

#define SIGN_PREFIX "whsec_"
#define SIGN_PREFIX_LEN (sizeof(SIGN_PREFIX) - 1)
#define SIGN_HMAC_LEN 32
#define SIGN_B64_LEN 44 /* base64 of 32 bytes, padded */

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen > 0)
        snprintf(err, errlen, "%s", msg);
}

static int is_b64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

int sign_key_decode(const char *secret, struct sign_key *k, char *err, size_t errlen)
{
    const char *b64;
    size_t b64len, olen = 0, i;
    int rc = -1;

    if (!k) {
        set_err(err, errlen, "no key storage");
        return -1;
    }
    k->len = 0;
    if (!secret) {
        set_err(err, errlen, "secret is missing");
        goto out;
    }
    if (strncmp(secret, SIGN_PREFIX, SIGN_PREFIX_LEN) != 0) {
        set_err(err, errlen, "secret must start with \"whsec_\"");
        goto out;
    }
    b64 = secret + SIGN_PREFIX_LEN;
    b64len = strlen(b64);
    if (b64len == 0) {
        set_err(err, errlen, "secret is empty after \"whsec_\"");
        goto out;
    }
    /* mbedTLS tolerates embedded line breaks and blanks; a secret from a
     * config file containing them is more likely a paste error. */
    for (i = 0; i < b64len; i++) {
        if (!is_b64_char((unsigned char)b64[i])) {
            set_err(err, errlen, "secret is not valid base64");
            goto out;
        }
    }
    /* mbedTLS 2.28 silently drops a trailing partial quantum ("AAA" decodes
     * to nothing), which would turn a truncated secret into a shorter key. */
    if (b64len % 4 != 0) {
        set_err(err, errlen, "secret is not valid base64 (length not a multiple of 4)");
        goto out;
    }
    switch (mbedtls_base64_decode(k->key, sizeof(k->key), &olen,
                                  (const unsigned char *)b64, b64len)) {
    case 0:
        break;
    case MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL:
        set_err(err, errlen, "secret decodes to more than 128 bytes");
        goto out;
    default:
        set_err(err, errlen, "secret is not valid base64");
        goto out;
    }
    if (olen == 0) {
        set_err(err, errlen, "secret decodes to an empty key");
        goto out;
    }
    k->len = olen;
    rc = 0;
out:
    if (rc != 0)
        mbedtls_platform_zeroize(k->key, sizeof(k->key));
    return rc;
}

/* One signature: base64(HMAC-SHA256(key, msg_id "." ts "." body)) into
 * b64out (SIGN_B64_LEN + 1 bytes). */
static int sign_one(const struct sign_key *k, const char *msg_id,
                    const char *ts, const char *body, size_t body_len,
                    unsigned char *b64out)
{
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t ctx;
    unsigned char mac[SIGN_HMAC_LEN];
    size_t olen = 0;
    int rc = -1;

    mbedtls_md_init(&ctx);
    if (!info || mbedtls_md_setup(&ctx, info, 1) != 0)
        goto out;
    if (mbedtls_md_hmac_starts(&ctx, k->key, k->len) != 0 ||
        mbedtls_md_hmac_update(&ctx, (const unsigned char *)msg_id, strlen(msg_id)) != 0 ||
        mbedtls_md_hmac_update(&ctx, (const unsigned char *)".", 1) != 0 ||
        mbedtls_md_hmac_update(&ctx, (const unsigned char *)ts, strlen(ts)) != 0 ||
        mbedtls_md_hmac_update(&ctx, (const unsigned char *)".", 1) != 0 ||
        (body_len > 0 &&
         mbedtls_md_hmac_update(&ctx, (const unsigned char *)body, body_len) != 0) ||
        mbedtls_md_hmac_finish(&ctx, mac) != 0)
        goto out;
    if (mbedtls_base64_encode(b64out, SIGN_B64_LEN + 1, &olen, mac, sizeof(mac)) != 0 ||
        olen != SIGN_B64_LEN)
        goto out;
    rc = 0;
out:
    mbedtls_md_free(&ctx);
    mbedtls_platform_zeroize(mac, sizeof(mac));
    return rc;
}

static int hmac_body(const struct sign_key *k, const char *body, size_t body_len, unsigned char mac[SIGN_HMAC_LEN])
{
    const mbedtls_md_info_t *info = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);

    if (!info || k->len == 0 || k->len > SIGN_MAX_KEY)
        return -1;
    return mbedtls_md_hmac(info, k->key, k->len, (const unsigned char *)(body ? body : ""), body_len, mac) == 0 ? 0
                                                                                                            : -1;
}

int sign_hub_value(const struct sign_key *keys, size_t nkeys, const char *body, size_t body_len, char *out,
                   size_t outcap)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[SIGN_HMAC_LEN];
    size_t pos = 0, i, j;
    int rc = -1;

    if (out && outcap > 0)
        out[0] = '\0';
    if (!keys || nkeys == 0 || nkeys > SIGN_MAX_SECRETS || !out || (!body && body_len > 0) ||
        outcap < nkeys * (SIGN_HUB_LEN + 1))
        goto out;
    for (i = 0; i < nkeys; i++) {
        if (hmac_body(&keys[i], body, body_len, mac) < 0)
            goto out;
        if (i > 0)
            out[pos++] = ',';
        memcpy(out + pos, "sha256=", 7);
        pos += 7;
        for (j = 0; j < SIGN_HMAC_LEN; j++) {
            out[pos++] = hex[mac[j] >> 4];
            out[pos++] = hex[mac[j] & 15];
        }
    }
    out[pos] = '\0';
    rc = (int)pos;
out:
    mbedtls_platform_zeroize(mac, sizeof(mac));
    if (rc < 0 && out && outcap > 0)
        out[0] = '\0';
    return rc;
}

int sign_header_value(const struct sign_key *keys, size_t nkeys,
                      const char *msg_id, int64_t ts_sec,
                      const char *body, size_t body_len,
                      char *out, size_t outcap)
{
    char ts[24];
    unsigned char b64[SIGN_B64_LEN + 1];
    size_t need, pos = 0, i;
    int rc = -1;

    if (out && outcap > 0)
        out[0] = '\0';
    if (!keys || nkeys == 0 || !msg_id || !out || (!body && body_len > 0))
        goto out;
    /* Bounded so the length always fits the int return value. */
    if (nkeys > SIGN_MAX_SECRETS)
        goto out;
    need = nkeys * SIGN_SIG_LEN + (nkeys - 1) + 1;
    if (outcap < need)
        goto out;
    snprintf(ts, sizeof(ts), "%" PRId64, ts_sec);

    for (i = 0; i < nkeys; i++) {
        if (keys[i].len == 0 || keys[i].len > SIGN_MAX_KEY)
            goto out;
        if (sign_one(&keys[i], msg_id, ts, body ? body : "", body_len, b64) != 0)
            goto out;
        if (i > 0)
            out[pos++] = ' ';
        memcpy(out + pos, "v1,", 3);
        memcpy(out + pos + 3, b64, SIGN_B64_LEN);
        pos += SIGN_SIG_LEN;
    }
    out[pos] = '\0';
    rc = (int)pos;
out:
    if (rc < 0 && out && outcap > 0)
        out[0] = '\0';
    return rc;
}
