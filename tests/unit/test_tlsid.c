/* Unit tests for tlsid.c: pin syntax, the key file rules, and which
 * failures mean the receiver refused the client certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tlsid.h"

/* base64 of 32 bytes: 43 characters and '=' */
#define PIN_A "sha256//YhKJKSzoTt2b5FP18fvpHo7fJYqQCjAa3HWY3tvRMwE="
#define PIN_B "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

static void test_pins(void **state)
{
    char err[200];

    (void)state;
    assert_int_equal(tlsid_pins_check(PIN_A, err, sizeof err), 0);
    assert_int_equal(tlsid_pins_check(PIN_A ";" PIN_B, err, sizeof err), 0);
    assert_int_equal(tlsid_pins_check("", err, sizeof err), -1);
    assert_int_equal(tlsid_pins_check(PIN_A ";", err, sizeof err), -1);
    assert_non_null(strstr(err, "pin 2"));
    assert_int_equal(tlsid_pins_check(PIN_A "; " PIN_B, err, sizeof err), -1);   /* no blanks */
    assert_int_equal(tlsid_pins_check("sha1//YhKJKSzoTt2b5FP18fvpHo7fJYqQCjAa3HWY3tvRMwE=", err, sizeof err), -1);
    assert_non_null(strstr(err, "sha256//"));
    /* libcurl's other form, a public key file: not accepted */
    assert_int_equal(tlsid_pins_check("/etc/hookd/partner.pub", err, sizeof err), -1);
    /* 31 bytes, 33 bytes, not base64 */
    assert_int_equal(tlsid_pins_check("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", err, sizeof err), -1);
    assert_int_equal(tlsid_pins_check("sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", err, sizeof err), -1);
    assert_int_equal(tlsid_pins_check("sha256//AAAAAAAAAAAAAAAAAAAAAAAA*AAAAAAAAAAAAAAAAAA=", err, sizeof err), -1);
    assert_int_equal(tlsid_pins_check("sha256//", err, sizeof err), -1);
}

static void test_key_mode(void **state)
{
    char err[200];

    (void)state;
    assert_int_equal(tlsid_key_mode_check("/k", 0100600, 1000, 1000, err, sizeof err), 0);
    assert_int_equal(tlsid_key_mode_check("/k", 0100400, 1000, 1000, err, sizeof err), 0);
    assert_int_equal(tlsid_key_mode_check("/k", 0100600, 0, 1000, err, sizeof err), 0);   /* root's */
    assert_int_equal(tlsid_key_mode_check("/k", 0100644, 1000, 1000, err, sizeof err), -1);
    assert_non_null(strstr(err, "0644"));
    assert_int_equal(tlsid_key_mode_check("/k", 0100640, 1000, 1000, err, sizeof err), -1);
    assert_int_equal(tlsid_key_mode_check("/k", 0100604, 1000, 1000, err, sizeof err), -1);
    assert_int_equal(tlsid_key_mode_check("/k", 0100620, 1000, 1000, err, sizeof err), -1);
    /* another user's, even 0600 */
    assert_int_equal(tlsid_key_mode_check("/k", 0100600, 1001, 1000, err, sizeof err), -1);
    assert_non_null(strstr(err, "uid 1001"));
    /* root checking (check-config by hand) cannot know the daemon's user */
    assert_int_equal(tlsid_key_mode_check("/k", 0100600, 1001, 0, err, sizeof err), 0);
    assert_int_equal(tlsid_key_mode_check("/k", 0100644, 0, 0, err, sizeof err), -1);
}

static void test_key_text(void **state)
{
    static const char plain[] = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
    static const char rsa[] = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n";
    static const char ec[] = "-----BEGIN EC PARAMETERS-----\nBggq\n-----END EC PARAMETERS-----\n"
                             "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n";
    static const char pkcs8enc[] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n";
    static const char tradenc[] = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
                                  "DEK-Info: AES-128-CBC,00\n\nMIIE\n-----END RSA PRIVATE KEY-----\n";
    static const char cert[] = "-----BEGIN CERTIFICATE-----\nMIID\n-----END CERTIFICATE-----\n";
    char err[200];

    (void)state;
    assert_int_equal(tlsid_key_text_check("/k", plain, strlen(plain), err, sizeof err), 0);
    assert_int_equal(tlsid_key_text_check("/k", rsa, strlen(rsa), err, sizeof err), 0);
    assert_int_equal(tlsid_key_text_check("/k", ec, strlen(ec), err, sizeof err), 0);   /* after its parameters */
    assert_int_equal(tlsid_key_text_check("/k", pkcs8enc, strlen(pkcs8enc), err, sizeof err), -1);
    assert_non_null(strstr(err, "encrypted"));
    assert_int_equal(tlsid_key_text_check("/k", tradenc, strlen(tradenc), err, sizeof err), -1);
    assert_non_null(strstr(err, "encrypted"));
    assert_int_equal(tlsid_key_text_check("/k", cert, strlen(cert), err, sizeof err), -1);
    assert_non_null(strstr(err, "no PEM private key"));
    assert_int_equal(tlsid_key_text_check("/k", "", 0, err, sizeof err), -1);
    /* a block cut off by the read limit: no end of line */
    assert_int_equal(tlsid_key_text_check("/k", "-----BEGIN PRIVATE KEY-----", 27, err, sizeof err), 0);
}

static void test_files(void **state)
{
    char dir[] = "/tmp/tlsid-XXXXXX", cert[64], key[64], err[300];
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof cert, "%s/c.pem", dir);
    snprintf(key, sizeof key, "%s/k.pem", dir);
    assert_int_equal(tlsid_files_check(cert, key, err, sizeof err), -1);
    assert_non_null(strstr(err, "client_cert"));
    f = fopen(cert, "w");
    fputs("-----BEGIN CERTIFICATE-----\n", f);
    fclose(f);
    assert_int_equal(tlsid_files_check(cert, key, err, sizeof err), -1);
    assert_non_null(strstr(err, "client_key"));
    f = fopen(key, "w");
    fputs("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", f);
    fclose(f);
    chmod(key, 0644);
    assert_int_equal(tlsid_files_check(cert, key, err, sizeof err), -1);
    assert_non_null(strstr(err, "chmod 600"));
    chmod(key, 0600);
    assert_int_equal(tlsid_files_check(cert, key, err, sizeof err), 0);
    /* a directory is not a key file */
    assert_int_equal(tlsid_files_check(cert, dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

static void test_refine(void **state)
{
    (void)state;
    /* curl on OpenSSL, TLS 1.3: the refusal comes after the handshake */
    assert_int_equal(tlsid_refine(ERRC_IO, 0,
                                  "OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate "
                                  "required, errno 0"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_TLS, 0, "error:0A000418:SSL routines::tlsv1 alert unknown ca"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_TLS, 0, "error:0A000412:SSL routines::sslv3 alert bad certificate"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_IO, 0, "sslv3 alert certificate expired"), ERRC_TLS_CLIENT_AUTH);
    /* the receiver's certificate refused by us: not about ours */
    assert_int_equal(tlsid_refine(ERRC_TLS, 0, "SSL certificate problem: unable to get local issuer certificate"),
                     ERRC_TLS);
    /* a handshake_failure alert can be anything (ciphers, versions) */
    assert_int_equal(tlsid_refine(ERRC_TLS, 0, "sslv3 alert handshake failure"), ERRC_TLS);
    /* mbedTLS 2.28 alone does not say which alert */
    assert_int_equal(tlsid_refine(ERRC_TLS, 0,
                                  "ssl_handshake returned - mbedTLS: (-0x7780) SSL - A fatal alert message was "
                                  "received from our peer"),
                     ERRC_TLS);
    /* the static build's libcurl names it (curl-mbedtls-alert.patch) */
    assert_int_equal(tlsid_refine(ERRC_TLS, 0,
                                  "ssl_handshake returned - mbedTLS: (-0x7780) SSL - A fatal alert message was "
                                  "received from our peer: alert unknown ca (48)"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_TLS, 0,
                                  "ssl_handshake returned - mbedTLS: (-0x7780) SSL - A fatal alert message was "
                                  "received from our peer: alert handshake failure (40) after a client "
                                  "certificate request"),
                     ERRC_TLS_CLIENT_AUTH);
    /* handshake_failure without a certificate request: ciphers, versions */
    assert_int_equal(tlsid_refine(ERRC_TLS, 0,
                                  "ssl_handshake returned - mbedTLS: (-0x7780) SSL - A fatal alert message was "
                                  "received from our peer: alert handshake failure (40)"),
                     ERRC_TLS);
    /* only TLS and I/O classes are refined from curl's text */
    assert_int_equal(tlsid_refine(ERRC_TIMEOUT, 0, "alert certificate required"), ERRC_TIMEOUT);
    assert_int_equal(tlsid_refine(ERRC_IO, 0, NULL), ERRC_IO);
    /* nginx with ssl_verify_client on */
    assert_int_equal(tlsid_refine(ERRC_NONE, 400,
                                  "<html> <head><title>400 No required SSL certificate was sent</title></head>"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_NONE, 400,
                                  "<html> <head><title>400 The SSL certificate error</title></head>"),
                     ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_NONE, 400, "{\"error\":\"bad json\"}"), ERRC_NONE);
    assert_int_equal(tlsid_refine(ERRC_NONE, 400, NULL), ERRC_NONE);
    /* the text only counts in a 400: a 200 or 500 body may say anything */
    assert_int_equal(tlsid_refine(ERRC_NONE, 500, "No required SSL certificate was sent"), ERRC_NONE);
    assert_int_equal(tlsid_refine(ERRC_NONE, 496, ""), ERRC_TLS_CLIENT_AUTH);
    assert_int_equal(tlsid_refine(ERRC_NONE, 495, NULL), ERRC_TLS_CLIENT_AUTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_key_mode),
        cmocka_unit_test(test_key_text),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_refine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
