/* seal.h - endpoint secrets at rest: AES-256-GCM under a key file that
 * only the daemon's user can read.
 *
 * Stored form of one value, version 1:
 *   "enc1:" base64( key_id[4] | nonce[12] | ciphertext | tag[16] )
 * key_id is the first 4 bytes of SHA-256(key), so a value sealed under
 * another key is told apart from a damaged one; the additional data is
 * the fixed label SEAL_AAD. A value without the prefix is plain text from
 * a version before sealing: it is read as such and sealed on the next
 * write (store backends migrate such rows when the writer starts).
 *
 * The endpoint columns hold JSON arrays of strings: secrets seal each
 * element; headers ("Name: value") seal the part after the first colon,
 * so the header names stay readable to the queries that list them.
 *
 * Everything but seal_key_load and seal_value (random nonce) is pure. */
#ifndef HOOKD_SEAL_H
#define HOOKD_SEAL_H
#include <stddef.h>

#define SEAL_KEY_LEN 32
#define SEAL_NONCE_LEN 12
#define SEAL_TAG_LEN 16
#define SEAL_ID_LEN 4
#define SEAL_PREFIX "enc1:"
#define SEAL_AAD "hookd endpoint secret v1"

struct seal_key {
    unsigned char k[SEAL_KEY_LEN];
    unsigned char id[SEAL_ID_LEN];
    int set;                 /* 0: no key (why says what went wrong) */
    char why[200];
};

/* The key from a key file's contents: 64 hex digits (blanks and a
 * trailing newline allowed) or exactly 32 raw bytes. 0 / -1 with err. */
int seal_key_from_text(struct seal_key *key, const unsigned char *text, size_t len, char *err, size_t errlen);
/* Wipe the key's bytes. */
void seal_key_wipe(struct seal_key *key);
/* The key file's path: [storage] key_file, or secret.key in the
 * directory of [storage] path. */
void seal_key_path(const char *key_file, const char *db_path, char *out, size_t n);
/* Read the key file; with create, make a new random key (0600, atomically)
 * when it does not exist. A key file readable by group or others is
 * refused. 0 / -1 with err (and key->why). */
int seal_key_load(struct seal_key *key, const char *path, int create, char *err, size_t errlen);

/* s is in the sealed form (its prefix). */
int seal_is_sealed(const char *s);
/* Seal plain with the given nonce (tests) or a random one. A malloc'd
 * string, NULL when out of memory (or no random bytes). */
char *seal_value_nonce(const struct seal_key *key, const char *plain, const unsigned char nonce[SEAL_NONCE_LEN]);
char *seal_value(const struct seal_key *key, const char *plain);
/* Open a sealed value into *out (malloc'd, NUL terminated). -1 with err:
 * not sealed, malformed, sealed under another key, or altered. */
int seal_open(const struct seal_key *key, const char *sealed, char **out, char *err, size_t errlen);

/* A stored JSON array of strings (headers: "Name: value" elements) with
 * each plain element sealed into *out (malloc'd); elements already sealed
 * are kept. 0 / -1 with err (no key, out of memory, not such an array). */
int seal_json(const struct seal_key *key, const char *json, int headers, char **out, char *err, size_t errlen);
/* The reverse: *out is the array with every element plain; *plain_seen
 * (if not NULL) is set when an element was stored plain. 0 / -1 with err
 * (never quoting a value). */
int seal_json_open(const struct seal_key *key, const char *json, int headers, char **out, int *plain_seen, char *err,
                   size_t errlen);
/* Wipe and free a string that held secrets (NULL is fine). */
void seal_free(char *s);

#endif
