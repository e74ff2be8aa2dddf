/* outcome.c - what one delivery attempt's result means for the event. */
#include "outcome.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum outcome outcome_classify(int http_status, enum errclass errc)
{
    if (http_status == 0) {
        switch (errc) {
        case ERRC_BLOCKED:
            /* The policy will refuse the same address next time too. */
        case ERRC_TEMPLATE_MISSING:
        case ERRC_TEMPLATE:
        case ERRC_TEMPLATE_UNSAFE:
            /* The payload will not change: retrying cannot fix it. */
            return OUTCOME_DEAD;
        case ERRC_DNS:
        case ERRC_CONNECT:
        case ERRC_PROXY:
        case ERRC_TLS:
        case ERRC_TLS_CLIENT_AUTH:
        case ERRC_TLS_PIN:
            /* Like a certificate the trust store refuses: a configuration
             * on one side or the other, fixed while the retries run. */
        case ERRC_TIMEOUT:
        case ERRC_IO:
        case ERRC_INTERNAL:
        case ERRC_BODY_MISMATCH:
        case ERRC_NONE:
        default:
            /* No response and no known reason is our inconsistency, not the
             * receiver's verdict: retrying is bounded, dead-lettering is not
             * undone. */
            return OUTCOME_RETRY;
        }
    }
    if (http_status >= 200 && http_status <= 299)
        return OUTCOME_DELIVERED;
    if (http_status == 410)
        return OUTCOME_GONE;
    if (http_status == 408 || http_status == 425 || http_status == 429)
        return OUTCOME_RETRY;
    if (http_status >= 500 && http_status <= 599)
        return OUTCOME_RETRY;
    if (http_status >= 100 && http_status <= 499)
        return OUTCOME_DEAD;
    /* Outside 100..599 the reply is malformed, which is a transport-level
     * problem (like CURLE_WEIRD_SERVER_REPLY -> ERRC_IO), so retry. */
    return OUTCOME_RETRY;
}

enum outcome outcome_classify_ok(int http_status, enum errclass errc, const struct outcome_ok *ok)
{
    if (http_status > 0 && errc == ERRC_BODY_MISMATCH)
        return OUTCOME_RETRY;
    /* a receiver's HTTP answer to a missing or refused client certificate
     * (nginx's 400) means what the same refusal as a TLS alert means */
    if (http_status > 0 && errc == ERRC_TLS_CLIENT_AUTH)
        return OUTCOME_RETRY;
    if (!ok)
        return outcome_classify(http_status, errc);
    if (http_status > 0 && outcome_ok_has(ok, http_status))
        return OUTCOME_DELIVERED;
    if (http_status >= 200 && http_status <= 299)
        return OUTCOME_DEAD;
    return outcome_classify(http_status, errc);
}

int outcome_ok_has(const struct outcome_ok *ok, int status)
{
    if (status < 100 || status > 599)
        return 0;
    status -= 100;
    return (int)((ok->bits[status / 64] >> (status % 64)) & 1);
}

int outcome_ok_parse(const char *s, struct outcome_ok *ok, char *err, size_t errlen)
{
    const char *p = s;

    memset(ok, 0, sizeof *ok);
    while (*p) {
        long lo, hi;
        char *end;
        const char *start;
        p += strspn(p, " \t");
        start = p;
        lo = strtol(p, &end, 10);
        if (end == p || lo < 100 || lo > 599)
            goto bad;
        hi = lo;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo || hi > 599)
                goto bad;
            p = end;
        }
        for (; lo <= hi; lo++)
            ok->bits[(lo - 100) / 64] |= 1ull << ((lo - 100) % 64);
        p += strspn(p, " \t");
        if (*p && *p != ',') {
            snprintf(err, errlen, "expected ',' at position %zu", (size_t)(p - s) + 1);
            return -1;
        }
        if (*p)
            p++;
        continue;
    bad:
        snprintf(err, errlen, "expected a status 100-599 or a range like 200-299 at position %zu",
                 (size_t)(start - s) + 1);
        return -1;
    }
    for (int i = 0; i < 8; i++)
        if (ok->bits[i])
            return 0;
    snprintf(err, errlen, "no status given");
    return -1;
}

enum errclass outcome_errclass_from_curl(int curlcode)
{
    switch (curlcode) {
    case CURLE_OK:
        return ERRC_NONE;

    case CURLE_COULDNT_RESOLVE_HOST:
        return ERRC_DNS;

    case CURLE_COULDNT_RESOLVE_PROXY:
        return ERRC_PROXY;

    case CURLE_COULDNT_CONNECT:
        return ERRC_CONNECT;

    case CURLE_OPERATION_TIMEDOUT:
        return ERRC_TIMEOUT;

    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION: /* also CURLE_SSL_CACERT */
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CIPHER:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
        return ERRC_TLS;

    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return ERRC_TLS_PIN;

    /* our certificate or key could not be loaded (a file gone since it
     * was checked), or the receiver asked for one (curl on OpenSSL: TLS
     * 1.3's certificate_required during the handshake) */
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CLIENTCERT:
        return ERRC_TLS_CLIENT_AUTH;

    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_SEND_FAIL_REWIND:
    /* curl 7.88 answers a single response header line over 100 KB with
     * "out of memory": in practice that is the receiver's doing, not ours */
    case CURLE_OUT_OF_MEMORY:
        return ERRC_IO;

    /* Our own misuse of curl or resource exhaustion: the URL was validated
     * before, so curl refusing it also means our check and curl disagree. */
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_FAILED_INIT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_UNKNOWN_OPTION:
    case CURLE_SETOPT_OPTION_SYNTAX:
    case CURLE_FUNCTION_NOT_FOUND:
    case CURLE_RECURSIVE_API_CALL:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_READ_ERROR:
        return ERRC_INTERNAL;

    default:
        return ERRC_IO;
    }
}

const char *outcome_name(enum outcome o)
{
    switch (o) {
    case OUTCOME_DELIVERED: return "delivered";
    case OUTCOME_RETRY:     return "retry";
    case OUTCOME_DEAD:      return "dead_letter";
    case OUTCOME_GONE:      return "gone";
    }
    return "unknown";
}

const char *errclass_name(enum errclass e)
{
    switch (e) {
    case ERRC_NONE:     return "";
    case ERRC_DNS:      return "dns";
    case ERRC_CONNECT:  return "connect_failed";
    case ERRC_TLS:      return "tls";
    case ERRC_TIMEOUT:  return "timeout";
    case ERRC_IO:       return "io";
    case ERRC_BLOCKED:  return "ssrf_blocked";
    case ERRC_INTERNAL: return "internal";
    case ERRC_BODY_MISMATCH: return "body_mismatch";
    case ERRC_TEMPLATE_MISSING: return "template_missing";
    case ERRC_TEMPLATE: return "template_error";
    case ERRC_TEMPLATE_UNSAFE: return "template_unsafe";
    case ERRC_TLS_CLIENT_AUTH: return "tls_client_auth";
    case ERRC_TLS_PIN: return "tls_pin";
    case ERRC_PROXY:    return "proxy";
    }
    return "unknown";
}

void outcome_error_class(int http_status, enum errclass e, char *out, size_t n)
{
    if (e == ERRC_BODY_MISMATCH)
        snprintf(out, n, "body_mismatch");
    else if (e == ERRC_TLS_CLIENT_AUTH)
        snprintf(out, n, "tls_client_auth");
    else if (http_status > 0)
        snprintf(out, n, "http_%d", http_status);
    else
        snprintf(out, n, "%s", e == ERRC_NONE ? "no_response" : errclass_name(e));
}
