/* seal.c - endpoint secrets at rest (seal.h). */
#include "seal.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <mbedtls/base64.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEAD_LEN (SEAL_ID_LEN + SEAL_NONCE_LEN)
#define PREFIX_LEN (sizeof SEAL_PREFIX - 1)

/* ---------- the key ---------- */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int key_id(struct seal_key *key)
{
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    unsigned char h[32];

    if (!md || mbedtls_md(md, key->k, SEAL_KEY_LEN, h) != 0)
        return -1;
    memcpy(key->id, h, SEAL_ID_LEN);
    return 0;
}

int seal_key_from_text(struct seal_key *key, const unsigned char *text, size_t len, char *err, size_t errlen)
{
    size_t i, n = 0;
    int hi = -1;

    memset(key, 0, sizeof *key);
    if (len == SEAL_KEY_LEN) {
        /* 32 raw bytes, unless they happen to be 32 hex digits (too short) */
        memcpy(key->k, text, SEAL_KEY_LEN);
    } else {
        for (i = 0; i < len; i++) {
            int v = hexval(text[i]);
            if (v < 0) {
                if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
                    continue;
                goto bad;
            }
            if (n >= SEAL_KEY_LEN)
                goto bad;
            if (hi < 0) {
                hi = v;
            } else {
                key->k[n++] = (unsigned char)(hi << 4 | v);
                hi = -1;
            }
        }
        if (n != SEAL_KEY_LEN || hi >= 0)
            goto bad;
    }
    if (key_id(key) < 0) {
        snprintf(err, errlen, "SHA-256 is not available");
        seal_key_wipe(key);
        return -1;
    }
    key->set = 1;
    return 0;
bad:
    seal_key_wipe(key);
    snprintf(err, errlen, "not a key: want 64 hex digits (32 bytes)");
    return -1;
}

void seal_key_wipe(struct seal_key *key)
{
    mbedtls_platform_zeroize(key->k, sizeof key->k);
    key->set = 0;
}

void seal_key_path(const char *key_file, const char *db_path, char *out, size_t n)
{
    const char *slash;

    if (key_file && *key_file) {
        util_strlcpy(out, key_file, n);
        return;
    }
    slash = db_path ? strrchr(db_path, '/') : NULL;
    if (!slash)
        snprintf(out, n, "secret.key");
    else
        snprintf(out, n, "%.*s/secret.key", (int)(slash - db_path), db_path);
}

/* A new random key at path: written to a temporary name, then linked in,
 * so two processes starting together end up with the same key. 0, 1 when
 * another process made it first, -1 with err. */
static int create_key(const char *path, char *err, size_t errlen)
{
    unsigned char raw[SEAL_KEY_LEN];
    char hex[SEAL_KEY_LEN * 2 + 2], tmp[4096], *dcopy;
    struct stat dst;
    size_t i;
    int fd, rc = -1;

    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        snprintf(err, errlen, "cannot create the key file %s: no random bytes: %s", path, strerror(errno));
        return -1;
    }
    for (i = 0; i < SEAL_KEY_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    hex[SEAL_KEY_LEN * 2] = '\n';
    hex[SEAL_KEY_LEN * 2 + 1] = '\0';
    mbedtls_platform_zeroize(raw, sizeof raw);
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "key file path too long");
        goto out;
    }
    if ((fd = mkstemp(tmp)) < 0) {
        snprintf(err, errlen, "cannot create the key file %s: %s", path, strerror(errno));
        goto out;
    }
    if (fchmod(fd, 0600) < 0 || write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd) < 0) {
        snprintf(err, errlen, "cannot write the key file %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    /* root making it (hookd import on a fresh install): the key belongs
     * to the owner of its directory, the daemon's user */
    dcopy = strdup(path);
    if (dcopy && geteuid() == 0 && stat(dirname(dcopy), &dst) == 0 && dst.st_uid != 0 &&
        chown(tmp, dst.st_uid, dst.st_gid) < 0) {
        snprintf(err, errlen, "cannot give the key file %s to uid %u: %s", path, (unsigned)dst.st_uid,
                 strerror(errno));
        free(dcopy);
        unlink(tmp);
        goto out;
    }
    free(dcopy);
    if (link(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        if (e == EEXIST) {
            rc = 1;
            goto out;
        }
        snprintf(err, errlen, "cannot create the key file %s: %s", path, strerror(e));
        goto out;
    }
    unlink(tmp);
    rc = 0;
out:
    mbedtls_platform_zeroize(hex, sizeof hex);
    return rc;
}

int seal_key_load(struct seal_key *key, const char *path, int create, char *err, size_t errlen)
{
    unsigned char buf[256];
    struct stat st;
    ssize_t n;
    int fd, tries;

    memset(key, 0, sizeof *key);
    for (tries = 0;; tries++) {
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT || !create || tries > 0)
            break;
        if (create_key(path, err, errlen) < 0)
            goto fail;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot read the key file %s: %s", path, strerror(errno));
        goto fail;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "the key file %s is not a regular file", path);
        close(fd);
        goto fail;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "the key file %s is readable by others (mode %04o): chmod 600 it", path,
                 (unsigned)(st.st_mode & 07777));
        close(fd);
        goto fail;
    }
    n = read(fd, buf, sizeof buf);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "cannot read the key file %s: %s", path, strerror(errno));
        goto fail;
    }
    if (seal_key_from_text(key, buf, (size_t)n, err, errlen) < 0) {
        char why[128];
        util_strlcpy(why, err, sizeof why);
        snprintf(err, errlen, "the key file %s: %s", path, why);
        mbedtls_platform_zeroize(buf, sizeof buf);
        goto fail;
    }
    mbedtls_platform_zeroize(buf, sizeof buf);
    return 0;
fail:
    util_strlcpy(key->why, err, sizeof key->why);
    return -1;
}

/* ---------- one value ---------- */

int seal_is_sealed(const char *s)
{
    return s && strncmp(s, SEAL_PREFIX, PREFIX_LEN) == 0;
}

char *seal_value_nonce(const struct seal_key *key, const char *plain, const unsigned char nonce[SEAL_NONCE_LEN])
{
    size_t len = strlen(plain), blen = HEAD_LEN + len + SEAL_TAG_LEN, olen = 0, cap;
    unsigned char *bin = malloc(blen);
    char *out = NULL;
    mbedtls_gcm_context g;

    if (!bin || !key->set)
        goto out;
    memcpy(bin, key->id, SEAL_ID_LEN);
    memcpy(bin + SEAL_ID_LEN, nonce, SEAL_NONCE_LEN);
    mbedtls_gcm_init(&g);
    if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key->k, SEAL_KEY_LEN * 8) != 0 ||
        mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, len, nonce, SEAL_NONCE_LEN,
                                  (const unsigned char *)SEAL_AAD, strlen(SEAL_AAD), (const unsigned char *)plain,
                                  bin + HEAD_LEN, SEAL_TAG_LEN, bin + HEAD_LEN + len) != 0) {
        mbedtls_gcm_free(&g);
        goto out;
    }
    mbedtls_gcm_free(&g);
    cap = PREFIX_LEN + 4 * ((blen + 2) / 3) + 1;
    if (!(out = malloc(cap)))
        goto out;
    memcpy(out, SEAL_PREFIX, PREFIX_LEN);
    if (mbedtls_base64_encode((unsigned char *)out + PREFIX_LEN, cap - PREFIX_LEN, &olen, bin, blen) != 0) {
        free(out);
        out = NULL;
    }
out:
    free(bin);
    return out;
}

char *seal_value(const struct seal_key *key, const char *plain)
{
    unsigned char nonce[SEAL_NONCE_LEN];

    /* 96-bit random nonces: collisions stay negligible far beyond the
     * number of secrets one key ever seals */
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return NULL;
    return seal_value_nonce(key, plain, nonce);
}

int seal_open(const struct seal_key *key, const char *sealed, char **out, char *err, size_t errlen)
{
    const char *b64 = sealed + PREFIX_LEN;
    size_t blen = 0, len;
    unsigned char *bin = NULL;
    char *plain = NULL;
    mbedtls_gcm_context g;
    int rc;

    *out = NULL;
    if (!seal_is_sealed(sealed)) {
        snprintf(err, errlen, "not a sealed value");
        return -1;
    }
    if (!key->set) {
        snprintf(err, errlen, "sealed, and no key: %s", *key->why ? key->why : "no key file loaded");
        return -1;
    }
    mbedtls_base64_decode(NULL, 0, &blen, (const unsigned char *)b64, strlen(b64));
    if (blen < HEAD_LEN + SEAL_TAG_LEN || !(bin = malloc(blen)) ||
        mbedtls_base64_decode(bin, blen, &blen, (const unsigned char *)b64, strlen(b64)) != 0 ||
        blen < HEAD_LEN + SEAL_TAG_LEN) {
        snprintf(err, errlen, bin || blen < HEAD_LEN + SEAL_TAG_LEN ? "malformed sealed value" : "out of memory");
        free(bin);
        return -1;
    }
    if (memcmp(bin, key->id, SEAL_ID_LEN) != 0) {
        snprintf(err, errlen, "sealed under another key (key id %02x%02x%02x%02x, this key's is %02x%02x%02x%02x)",
                 bin[0], bin[1], bin[2], bin[3], key->id[0], key->id[1], key->id[2], key->id[3]);
        free(bin);
        return -1;
    }
    len = blen - HEAD_LEN - SEAL_TAG_LEN;
    if (!(plain = malloc(len + 1))) {
        snprintf(err, errlen, "out of memory");
        free(bin);
        return -1;
    }
    mbedtls_gcm_init(&g);
    rc = mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key->k, SEAL_KEY_LEN * 8);
    if (rc == 0)
        rc = mbedtls_gcm_auth_decrypt(&g, len, bin + SEAL_ID_LEN, SEAL_NONCE_LEN, (const unsigned char *)SEAL_AAD,
                                      strlen(SEAL_AAD), bin + HEAD_LEN + len, SEAL_TAG_LEN, bin + HEAD_LEN,
                                      (unsigned char *)plain);
    mbedtls_gcm_free(&g);
    free(bin);
    plain[len] = '\0';
    if (rc != 0 || strlen(plain) != len) {
        snprintf(err, errlen, "sealed value fails authentication (altered, or not hookd's)");
        seal_free(plain);
        return -1;
    }
    *out = plain;
    return 0;
}

void seal_free(char *s)
{
    if (!s)
        return;
    mbedtls_platform_zeroize(s, strlen(s));
    free(s);
}

/* ---------- JSON arrays of values ---------- */

/* Wipe every string of an array before freeing it (cJSON frees without). */
static void delete_wiped(cJSON *a)
{
    cJSON *e;

    if (!a)
        return;
    cJSON_ArrayForEach(e, a)
        if (cJSON_IsString(e) && e->valuestring)
            mbedtls_platform_zeroize(e->valuestring, strlen(e->valuestring));
    cJSON_Delete(a);
}

static char *print_wiped(cJSON *a)
{
    char *s = cJSON_PrintUnformatted(a);

    delete_wiped(a);
    return s;
}

/* The part of an element that is sealed: all of it, or for a header
 * everything after the first colon (NULL: a header without one). */
static const char *value_part(const char *s, int headers)
{
    const char *colon;

    if (!headers)
        return s;
    colon = strchr(s, ':');
    return colon ? colon + 1 : NULL;
}

/* elem with its value part replaced by v. */
static char *rejoin(const char *elem, const char *part, const char *v)
{
    size_t head = (size_t)(part - elem), vl = strlen(v);
    char *s = malloc(head + vl + 1);

    if (!s)
        return NULL;
    memcpy(s, elem, head);
    memcpy(s + head, v, vl + 1);
    return s;
}

/* Apply seal (dir 1) or open (dir 0) to every element of a stored array. */
static int transform(const struct seal_key *key, const char *json, int headers, int dir, char **out,
                     int *plain_seen, char *err, size_t errlen)
{
    cJSON *in = cJSON_Parse(json), *res = NULL, *e;
    int idx = 0;

    *out = NULL;
    if (plain_seen)
        *plain_seen = 0;
    if (!cJSON_IsArray(in) || !(res = cJSON_CreateArray())) {
        snprintf(err, errlen, in ? "out of memory" : "not a JSON array");
        goto fail;
    }
    cJSON_ArrayForEach(e, in) {
        const char *elem = cJSON_GetStringValue(e), *part;
        char *v = NULL, *joined;
        cJSON *item;

        if (!elem) {
            snprintf(err, errlen, "element %d is not a string", idx);
            goto fail;
        }
        part = value_part(elem, headers);
        if (!part) {
            v = NULL;   /* a header without a value: kept as it is */
        } else if (dir && !seal_is_sealed(part)) {
            if (!key->set) {
                snprintf(err, errlen, "cannot seal: %s", *key->why ? key->why : "no key file loaded");
                goto fail;
            }
            if (!(v = seal_value(key, part))) {
                snprintf(err, errlen, "cannot seal: out of memory or no random bytes");
                goto fail;
            }
        } else if (!dir && seal_is_sealed(part)) {
            char why[200];
            if (seal_open(key, part, &v, why, sizeof why) < 0) {
                snprintf(err, errlen, "element %d: %s", idx, why);
                goto fail;
            }
        } else if (!dir && plain_seen) {
            *plain_seen = 1;
        }
        joined = v ? rejoin(elem, part, v) : strdup(elem);
        seal_free(v);
        item = joined ? cJSON_CreateString(joined) : NULL;
        seal_free(joined);
        if (!item) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        cJSON_AddItemToArray(res, item);
        idx++;
    }
    delete_wiped(in);
    if (!(*out = print_wiped(res))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
fail:
    delete_wiped(in);
    delete_wiped(res);
    return -1;
}

int seal_json(const struct seal_key *key, const char *json, int headers, char **out, char *err, size_t errlen)
{
    return transform(key, json, headers, 1, out, NULL, err, errlen);
}

int seal_json_open(const struct seal_key *key, const char *json, int headers, char **out, int *plain_seen, char *err,
                   size_t errlen)
{
    return transform(key, json, headers, 0, out, plain_seen, err, errlen);
}
