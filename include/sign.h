/* sign.h - Standard Webhooks signatures (HMAC-SHA256 via mbedTLS). Pure. */
#ifndef HOOKD_SIGN_H
#define HOOKD_SIGN_H
#include <stddef.h>
#include <stdint.h>

#define SIGN_MAX_SECRETS 8
#define SIGN_MAX_KEY 128          /* decoded key bytes */
#define SIGN_SIG_LEN 47           /* "v1," + 44 base64 chars */
#define SIGN_HUB_LEN 71           /* "sha256=" + 64 hex digits */
#define SIGN_HUB_HEADER "X-Hub-Signature-256"

struct sign_key {
    unsigned char key[SIGN_MAX_KEY];
    size_t len;
};

/* Decode "whsec_<base64>" into k. Returns 0, or -1 with a reason in err
 * (never containing the secret itself). */
int sign_key_decode(const char *secret, struct sign_key *k, char *err, size_t errlen);

/* Write "v1,<b64> v1,<b64> ..." (one per key, in order, space separated,
 * NUL terminated) for the signed content msg_id "." ts "." body.
 * Returns the string length, or -1 if out is too small or nkeys is 0. */
int sign_header_value(const struct sign_key *keys, size_t nkeys,
                      const char *msg_id, int64_t ts_sec,
                      const char *body, size_t body_len,
                      char *out, size_t outcap);

/* The hub scheme (GitHub's X-Hub-Signature-256): "sha256=<hex>" of
 * HMAC-SHA256(key, body), one per key in order, comma separated (one key:
 * exactly GitHub's form). Returns the string length, or -1 as above. */
int sign_hub_value(const struct sign_key *keys, size_t nkeys, const char *body, size_t body_len, char *out,
                   size_t outcap);

#endif
