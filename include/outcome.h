/* outcome.h - what one delivery attempt's result means (pure, no I/O). */
#ifndef HOOKD_OUTCOME_H
#define HOOKD_OUTCOME_H
#include <stddef.h>
#include <stdint.h>

enum outcome {
    OUTCOME_DELIVERED = 0, /* 2xx */
    OUTCOME_RETRY,         /* 408 425 429 5xx, transport errors, timeouts */
    OUTCOME_DEAD,          /* other 4xx, 3xx, blocked address: retrying will not help */
    OUTCOME_GONE           /* 410: dead letter and pause the endpoint */
};

/* Transport error classes recorded with each attempt. */
enum errclass {
    ERRC_NONE = 0,
    ERRC_DNS,        /* name did not resolve */
    ERRC_CONNECT,    /* refused, unreachable */
    ERRC_TLS,        /* handshake or certificate */
    ERRC_TIMEOUT,    /* connect or total timeout */
    ERRC_IO,         /* reset, broken pipe, empty or malformed reply */
    ERRC_BLOCKED,    /* address refused by the SSRF policy */
    ERRC_INTERNAL,   /* out of memory, curl misuse */
    ERRC_BODY_MISMATCH,     /* success status without the expected body (retried) */
    ERRC_TEMPLATE_MISSING,  /* a macro had no value and on_missing = fail */
    ERRC_TEMPLATE,          /* a value the request cannot carry: never sent */
    ERRC_TEMPLATE_UNSAFE,   /* a {x|raw} value with URL syntax the endpoint did not allow: never sent */
    ERRC_TLS_CLIENT_AUTH,   /* the receiver refused or demanded a client certificate, or
                             * ours could not be loaded (tlsid.h); retried like ERRC_TLS */
    ERRC_TLS_PIN,           /* the receiver's public key matches no pinned_pubkey; retried like ERRC_TLS */
    ERRC_PROXY              /* the endpoint's proxy unreachable, or it refused the CONNECT (retried) */
};

/* Which HTTP statuses count as delivered (an endpoint's success_status):
 * "200-299" (the default), "200,204,302". Statuses 100..599. */
struct outcome_ok {
    uint64_t bits[8];
};
int outcome_ok_parse(const char *s, struct outcome_ok *ok, char *err, size_t errlen);
int outcome_ok_has(const struct outcome_ok *ok, int status);

/* http_status is 0 when no response was received (then errc says why). */
enum outcome outcome_classify(int http_status, enum errclass errc);
/* The same under an endpoint's own success statuses (NULL: 2xx). A
 * status outside them keeps its usual meaning, except that a 2xx the
 * endpoint did not list is a dead letter: it was answered, and sending
 * it again would be answered the same. */
enum outcome outcome_classify_ok(int http_status, enum errclass errc, const struct outcome_ok *ok);

/* Map a CURLcode (passed as int so this header needs no curl.h). */
enum errclass outcome_errclass_from_curl(int curlcode);

const char *outcome_name(enum outcome o);      /* "delivered", "retry", ... */
const char *errclass_name(enum errclass e);    /* "dns", "connect_failed", ... ; "" for NONE */

/* The stable class of a failed attempt, what the dead-letter analysis
 * groups by: "http_503" for an HTTP answer, else the transport class
 * ("timeout", "connect_failed", "ssrf_blocked", ...). */
void outcome_error_class(int http_status, enum errclass e, char *out, size_t n);

#endif
