/* export_fmt.h - the NDJSON form of a queue moving between databases
 * (hookd export / hookd import): one JSON object per line, pure
 * functions (no I/O), so the format is tested on its own.
 *
 *   {"kind":"hookd-export","version":1,"exported_at":MS,"hookd":"0.1.0"}
 *   {"kind":"endpoint","name":..,"url":..,"secrets":[..],"headers":[..],
 *    "event_types":..,"settings":{..},"paused":false,"from_config":true}
 *   {"kind":"health","endpoint":NAME,"state":"open",...}   breaker state
 *   {"kind":"message","endpoint":NAME,"event_id":..,"payload":"<the
 *    enqueued bytes as a JSON string>","status":"pending",...}
 *   {"kind":"end","endpoints":N,"messages":M}                the last line
 *
 * Endpoints come before anything naming them. hookd export writes the
 * secrets and header values sealed (seal.h: "enc1:..."), under the
 * exporting database's key; importing them needs that key. Plain values
 * (older exports, hand-written files) are read as well. The file is
 * written 0600 all the same. */
#ifndef HOOKD_EXPORT_FMT_H
#define HOOKD_EXPORT_FMT_H
#include <stdint.h>

#include "epdef.h"
#include "seal.h"
#include "store.h"
#include "util.h"

#define XF_VERSION 1

enum xf_kind { XF_HEADER = 0, XF_ENDPOINT, XF_HEALTH, XF_MESSAGE, XF_END, XF_UNKNOWN };

/* One parsed line. Strings point into the parsed JSON, owned by the item
 * until xf_item_free. */
struct xf_item {
    enum xf_kind kind;
    void *json;                  /* cJSON, owned */
    int version;                 /* header */
    struct ep_def def;           /* endpoint (owned) */
    int from_config;             /* endpoint */
    const char *endpoint;        /* health, message: the endpoint's name */
    struct store_health h;       /* health (endpoint_id 0: the caller maps the name) */
    struct store_row row;        /* message (endpoint_id 0: likewise) */
    int64_t n_endpoints, n_messages;   /* end */
};

/* Each appends one line, newline included; 0, or -1 out of memory. */
int xf_header(int64_t now, const char *version, struct buf *out);
int xf_endpoint(const struct ep_def *d, int from_config, struct buf *out);
/* The same with the secrets and header values sealed under key (NULL:
 * plain, as xf_endpoint); -1 also when key is unset. */
int xf_endpoint_sealed(const struct ep_def *d, int from_config, const struct seal_key *key, struct buf *out);
int xf_health(const char *endpoint, const struct store_health *h, struct buf *out);
int xf_message(const char *endpoint, const struct store_row *r, struct buf *out);
int xf_end(int64_t n_endpoints, int64_t n_messages, struct buf *out);

/* One line (without its newline, NUL-terminated) -> item. Returns 0, or
 * -1 with the reason in err (never a secret or payload byte); it->kind
 * is XF_UNKNOWN unless the line named a known kind. */
int xf_parse(const char *line, struct xf_item *it, char *err, size_t errlen);
/* The same, opening sealed secrets and header values with key (NULL or
 * unset: a sealed value is refused, saying a key is needed). */
int xf_parse_sealed(const char *line, const struct seal_key *key, struct xf_item *it, char *err, size_t errlen);
void xf_item_free(struct xf_item *it);

#endif
