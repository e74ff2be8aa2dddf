/* epdef.h - an endpoint definition: what an [endpoint.NAME] section, an
 * endpoint.put request or a stored endpoint says (url, secrets, headers,
 * event types, paused, and overrides of the delivery settings). One set
 * of setters validates every source alike. */
#ifndef HOOKD_EPDEF_H
#define HOOKD_EPDEF_H
#include <stddef.h>
#include <stdint.h>

#include "sign.h"

#define ENDPOINT_NAME_MAX 64
#define ENDPOINT_MAX_HEADERS 32
#define ENDPOINT_HEADER_MAX 1024
#define ENDPOINT_TYPES_MAX 2048


/* A rate limit: at most count requests per per_ms (a token bucket each;
 * several windows, e.g. "100/m, 1000/h", all have to allow a request). */
#define EP_RATES_MAX 4
struct ep_rate {
    double count;
    int64_t per_ms;
};
struct ep_rates {
    int n;                  /* -1 inherit, 0 unlimited */
    struct ep_rate r[EP_RATES_MAX];
};

/* Per-endpoint overridable settings; -1 (rates: n = -1) means "inherit". */
struct ep_settings {
    int64_t max_attempts;
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    int64_t base_delay_ms;
    int64_t max_delay_ms;
    int64_t max_in_flight;
    int64_t adaptive;          /* 1: the limiter adapts concurrency; 0: always max_in_flight */
    int64_t failure_threshold;
    int64_t cooldown_ms;
    int64_t max_cooldown_ms;
    struct ep_rates rate;
    int64_t burst;
    int64_t disable_after_ms;  /* failing without a success this long: disabled (0 never) */
};

/* How a delivery's request is built (affiliate postbacks): everything 0
 * or NULL is the signed JSON POST of a webhook. */
enum ep_method { EP_POST = 0, EP_GET, EP_PUT };
enum ep_body { EP_BODY_AUTO = 0, EP_BODY_JSON, EP_BODY_FORM, EP_BODY_NONE };
enum ep_sign { EP_SIGN_STANDARD = 0, EP_SIGN_NONE, EP_SIGN_HUB };
#define EP_MAPS_MAX 32
/* A token rides in the stored secrets array (sealed like them) as one
 * element with this prefix: no secret starts with it (they are whsec_). */
#define EP_TOKEN_TAG "token:"
#define EP_TOKEN_MAX 512
/* The proxy's credentials ride the same way (rq.proxy shows them masked). */
#define EP_PROXY_AUTH_TAG "proxy_auth:"
struct ep_request {
    int method;              /* enum ep_method */
    int body;                /* enum ep_body; AUTO: json for POST/PUT, none for GET */
    int macro_style;         /* enum tpl_style */
    int on_missing_fail;
    int sign;                /* enum ep_sign */
    char *signature_header;  /* sign = hub: the header's name; NULL: SIGN_HUB_HEADER */
    char *success_status;    /* NULL: 200-299 */
    char *success_body;      /* NULL: any body */
    char *mask_params;       /* names masked besides urlmask.h's rules; NULL: none */
    char *ordering_key;      /* NULL: no ordering */
    char *filter;            /* NULL: every message (filter.h) */
    char *delay;             /* a duration: rows wait this long first; NULL: none */
    char *raw_allow;         /* {x|raw} macros whose value may hold URL syntax; NULL: none */
    char *source_address;    /* local address to connect from; NULL: [delivery] source_address */
    char *ca_file;           /* CAs trusted for this endpoint alone; NULL: [delivery] ca_file */
    char *client_cert;       /* mutual TLS: PEM certificate (chain) presented; NULL: none */
    char *client_key;        /* its PEM private key; set with client_cert (tlsid.h) */
    char *pinned_pubkey;     /* "sha256//b64;..." (tlsid.h); NULL: no pin */
    char *proxy;             /* HTTP CONNECT proxy, shown form (proxy.h); NULL: none */
    char **map_name;         /* nmaps of each (an endpoint per affiliate: */
    char **map_spec;         /* 50,000 of these must stay small) */
    size_t nmaps;
};

/* One endpoint as declared (INI section, endpoint.put, or the database). */
struct ep_def {
    char name[ENDPOINT_NAME_MAX + 1];
    char *url;
    char *secrets[SIGN_MAX_SECRETS];   /* newest first */
    size_t nsecrets;
    char **headers;                    /* "Name: value", nheaders of them */
    size_t nheaders;
    char *event_types;  /* normalised "a,b,c"; "*" = every type; NULL = none */
    char *token;        /* the partner's own secret ({token}, hmac_*); NULL = none */
    char *proxy_auth;   /* the proxy's "user:password" (proxy.h); NULL = none */
    int paused;
    int paused_given;   /* paused was said (a key, a stored row): it applies to
                         * an existing endpoint; otherwise its state stays */
    struct ep_settings s;
    struct ep_request rq;
};

void ep_def_init(struct ep_def *d);
void ep_def_free(struct ep_def *d);
int ep_def_copy(struct ep_def *dst, const struct ep_def *src);
/* Do a and b define the same deliveries (name, URL, secrets, headers,
 * event types, token, settings, request keys; paused is a state, not
 * compared)?
 * Out of memory: 0, they may differ. */
int ep_def_same(const struct ep_def *a, const struct ep_def *b);
/* Set one key ("url", "secret", "header", "event_types", "max_attempts",
 * "timeout", "rate", "method", "map.status", ...). Repeatable keys
 * (secret, header) append.
 * Returns 0, or -1 with a reason in err (never echoing a secret). */
int ep_def_set(struct ep_def *d, const char *key, const char *value, char *err, size_t errlen);
/* After all keys: url present, secrets decodable, ... */
int ep_def_validate(const struct ep_def *d, char *err, size_t errlen);
/* The proxy credentials stored apart from the proxy (EP_PROXY_AUTH_TAG):
 * set before the stored "proxy" key, which says they are there. */
int ep_def_set_proxy_auth(struct ep_def *d, const char *auth);
int ep_name_valid(const char *name);
/* For each request key that differs from the default: fn(key, value as
 * text), the form ep_def_set reads back. */
void ep_request_each(const struct ep_def *d, void (*fn)(void *ctx, const char *key, const char *val), void *ctx);
const char *ep_method_name(int method);
/* Does the endpoint subscribe to event_type? ("*" any, "order.*" a
 * pattern: '*' stands for any run of characters) */
int ep_def_wants(const struct ep_def *d, const char *event_type);

#endif
