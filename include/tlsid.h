/* tlsid.h - an endpoint's TLS identity: its client certificate and key
 * (mutual TLS) and the public keys it pins. The checks of what an
 * operator writes (pin syntax, the key file's owner and mode, an
 * encrypted key) and the refinement of a failed attempt's class into
 * tls_client_auth. Pure, except tlsid_files_check, which reads the two
 * files once, at load and endpoint.put time. */
#ifndef HOOKD_TLSID_H
#define HOOKD_TLSID_H
#include <stddef.h>
#include <sys/types.h>

#include "outcome.h"

#define TLSID_PINS_MAX 1024

/* "sha256//<base64 of 32 bytes>", several separated by ';' (libcurl's
 * CURLOPT_PINNEDPUBLICKEY hash form; its file form is not accepted). */
int tlsid_pins_check(const char *pins, char *err, size_t errlen);

/* May hookd (effective uid euid) use a key file owned by uid with this
 * mode? Its owner or root owns it and no one else may read, write or
 * run it (mode & 077 == 0, as ssh wants of its keys). Root checking
 * (hookd check-config run by root) accepts any owner: it cannot know
 * the daemon's user; the mode still has to be 0600 or stricter. */
int tlsid_key_mode_check(const char *path, mode_t mode, uid_t uid, uid_t euid, char *err, size_t errlen);

/* The start of a key file: a PEM private key, not encrypted (hookd has
 * no password to give it). */
int tlsid_key_text_check(const char *path, const char *text, size_t n, char *err, size_t errlen);

/* Both files exist, are regular files hookd can read; the key passes
 * the two checks above. Reads the files. */
int tlsid_files_check(const char *cert, const char *key, char *err, size_t errlen);

/* A failed attempt's class refined by what it said: c and http_status
 * as classified, detail the error text (curl's) when http_status is 0,
 * else the start of the response body. A fatal TLS alert about a
 * certificate received from the receiver (only the client's can be its
 * subject) and nginx's answers to a missing or refused client
 * certificate (400 "No required SSL certificate was sent" / "The SSL
 * certificate error", its internal 496/495) become ERRC_TLS_CLIENT_AUTH. */
enum errclass tlsid_refine(enum errclass c, int http_status, const char *detail);

#endif
