/* tlsid.c - client certificates and pins: what an endpoint's TLS keys
 * may hold, and which failures mean the receiver refused the client
 * certificate (see tlsid.h). */
#include "tlsid.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/base64.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIN_PREFIX "sha256//"

int tlsid_pins_check(const char *pins, char *err, size_t errlen)
{
    const char *p = pins;
    int n = 0;

    if (strlen(pins) > TLSID_PINS_MAX) {
        snprintf(err, errlen, "too long (max %d bytes)", TLSID_PINS_MAX);
        return -1;
    }
    for (;;) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p), blen, olen = 0;
        unsigned char raw[64];

        n++;
        if (len < sizeof PIN_PREFIX - 1 || strncmp(p, PIN_PREFIX, sizeof PIN_PREFIX - 1) != 0) {
            snprintf(err, errlen, "pin %d: expected sha256//<base64 of the public key's SHA-256>", n);
            return -1;
        }
        blen = len - (sizeof PIN_PREFIX - 1);
        if (blen != 44 || mbedtls_base64_decode(raw, sizeof raw, &olen, (const unsigned char *)p + 8, blen) != 0 ||
            olen != 32) {
            snprintf(err, errlen, "pin %d: not the base64 of a SHA-256 hash (44 characters ending in '=')", n);
            return -1;
        }
        if (!e)
            return 0;
        p = e + 1;
    }
}

int tlsid_key_mode_check(const char *path, mode_t mode, uid_t uid, uid_t euid, char *err, size_t errlen)
{
    if (mode & 077) {
        snprintf(err, errlen, "key file %s is open to others (mode %04o): chmod 600 it", path,
                 (unsigned)(mode & 07777));
        return -1;
    }
    if (euid != 0 && uid != euid && uid != 0) {
        snprintf(err, errlen, "key file %s belongs to uid %u, not to hookd's user (uid %u) or root", path,
                 (unsigned)uid, (unsigned)euid);
        return -1;
    }
    return 0;
}

static const char *find(const char *s, size_t n, const char *what)
{
    return memmem(s, n, what, strlen(what));
}

int tlsid_key_text_check(const char *path, const char *text, size_t n, char *err, size_t errlen)
{
    const char *p = text, *begin = NULL;
    size_t left = 0;

    /* the first "-----BEGIN ... PRIVATE KEY-----" line: EC keys may come
     * after their parameters' block */
    while (!begin && (p = find(p, n - (size_t)(p - text), "-----BEGIN "))) {
        const char *eol = memchr(p, '\n', n - (size_t)(p - text));
        size_t len = eol ? (size_t)(eol - p) : n - (size_t)(p - text);
        if (find(p, len, "PRIVATE KEY-----")) {
            begin = p;
            left = len;
        }
        p += len;
    }
    if (!begin) {
        snprintf(err, errlen, "key file %s holds no PEM private key", path);
        return -1;
    }
    /* PKCS#8 "ENCRYPTED PRIVATE KEY", or the traditional form's
     * "Proc-Type: 4,ENCRYPTED" header */
    if (find(begin, left, "ENCRYPTED") || find(text, n, "Proc-Type: 4,ENCRYPTED")) {
        snprintf(err, errlen,
                 "key file %s is encrypted, and hookd has no password for it (openssl pkey -in it -out a new file)",
                 path);
        return -1;
    }
    return 0;
}

/* open without blocking (a FIFO would hold the caller) and without
 * refusing links (certbot's live/ names are links) */
static int open_regular(const char *what, const char *path, struct stat *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

    if (fd < 0) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s %s is not a regular file", what, path);
        close(fd);
        return -1;
    }
    return fd;
}

int tlsid_files_check(const char *cert, const char *key, char *err, size_t errlen)
{
    char text[8192];
    struct stat st;
    ssize_t n;
    int fd, rc;

    if ((fd = open_regular("client_cert", cert, &st, err, errlen)) < 0)
        return -1;
    close(fd);
    if ((fd = open_regular("client_key", key, &st, err, errlen)) < 0)
        return -1;
    if (tlsid_key_mode_check(key, st.st_mode, st.st_uid, geteuid(), err, errlen) < 0) {
        close(fd);
        return -1;
    }
    n = read(fd, text, sizeof text);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "key file %s: %s", key, strerror(errno));
        return -1;
    }
    rc = tlsid_key_text_check(key, text, (size_t)n, err, errlen);
    explicit_bzero(text, sizeof text);
    return rc;
}

/* the alerts a receiver sends about the certificate it was given (RFC
 * 8446 6.2), as OpenSSL names them in curl's error text (the static
 * build's libcurl names mbedTLS' alerts the same way, see
 * packaging/patches/curl-mbedtls-alert.patch) */
static const char *const cert_alerts[] = {
    "alert bad certificate",         /* 42 */
    "alert unsupported certificate", /* 43 */
    "alert certificate revoked",     /* 44 */
    "alert certificate expired",     /* 45 */
    "alert certificate unknown",     /* 46 */
    "alert unknown ca",              /* 48 */
    "alert access denied",           /* 49 */
    "alert certificate required",    /* 116, TLS 1.3: none was sent */
    /* TLS 1.2 servers answer a missing certificate with handshake_failure
     * (40); the mbedTLS build says when the server had asked for one */
    "after a client certificate request",
    NULL,
};

enum errclass tlsid_refine(enum errclass c, int http_status, const char *detail)
{
    size_t i;

    if (http_status == 495 || http_status == 496)
        return ERRC_TLS_CLIENT_AUTH;
    if (!detail)
        return c;
    if (http_status == 400)
        return strstr(detail, "No required SSL certificate was sent") || strstr(detail, "The SSL certificate error")
                   ? ERRC_TLS_CLIENT_AUTH
                   : c;
    if (http_status != 0 || (c != ERRC_TLS && c != ERRC_IO))
        return c;
    for (i = 0; cert_alerts[i]; i++)
        if (strstr(detail, cert_alerts[i]))
            return ERRC_TLS_CLIENT_AUTH;
    return c;
}
