/* proto.h - the socket protocol: one JSON object per line in, one per line
 * out. Parsing and validation are pure (no I/O) so unit tests and fuzzers
 * drive them directly. */
#ifndef HOOKD_PROTO_H
#define HOOKD_PROTO_H
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct cJSON;
struct msgsel;

enum proto_op {
    OP_NONE = 0,
    OP_PING,
    OP_ENQUEUE,
    OP_GET,
    OP_STATS,
    OP_ENDPOINT_LIST,
    OP_ENDPOINT_PUT,     /* admin */
    OP_ENDPOINT_DELETE,  /* admin */
    OP_REQUEUE,          /* admin */
    OP_PURGE,            /* admin */
    OP_PAUSE,            /* admin */
    OP_RESUME,           /* admin */
    OP_DEAD_LETTERS,
    OP_SLOW,
    OP_METRICS,
    OP_ATTEMPTS,
    OP_REPORT,
    OP_MESSAGES,         /* admin when it reads payloads ("where") */
    OP_ERASE,            /* admin */
    OP__COUNT
};

/* Error codes (the documented set, each with whether to retry: hookd-protocol(7)). */
#define PERR_BAD_JSON          "bad_json"
#define PERR_BAD_REQUEST       "bad_request"
#define PERR_UNKNOWN_OP        "unknown_op"
#define PERR_UNKNOWN_ENDPOINT  "unknown_endpoint"
#define PERR_NO_SUBSCRIBERS    "no_subscribers"
#define PERR_PAYLOAD_TOO_LARGE "payload_too_large"
#define PERR_LINE_TOO_LONG     "line_too_long"
#define PERR_NOT_FOUND         "not_found"
#define PERR_AMBIGUOUS         "ambiguous"
#define PERR_FORBIDDEN         "forbidden"
#define PERR_CONFLICT          "conflict"
#define PERR_STORAGE_FULL      "storage_full"
#define PERR_STORAGE_ERROR     "storage_error"
#define PERR_STORAGE_UNAVAILABLE "storage_unavailable"
#define PERR_SHUTTING_DOWN     "shutting_down"
#define PERR_BUSY              "busy"      /* [server] max_clients reached */
#define PERR_INTERNAL          "internal"

/* requeue's "statuses": bit i is queue status i (store.h, enum msg_status) */
#define PROTO_STATUS_FAILED      (1u << 1)
#define PROTO_STATUS_DELIVERED   (1u << 3)
#define PROTO_STATUS_DEAD_LETTER (1u << 4)

#define PROTO_EVENT_ID_MAX 200
#define PROTO_EVENT_TYPE_MAX 200

/* What one request line may hold, so that parsing it costs time linear in
 * the line and a few milliseconds at most on the event loop, whatever it
 * holds: top-level members, and values and string escapes outside the
 * payload (the payload's syntax is checked in one pass and its bytes are
 * kept as written; only the members around it become cJSON values). An
 * endpoint.put (every endpoint key once, 32 headers, 8 secrets) stays far
 * below each. */
#define PROTO_MAX_MEMBERS 64
#define PROTO_MAX_VALUES 2048
#define PROTO_MAX_ESCAPES 4096

struct proto_limits {
    size_t max_payload;
};

/* A parsed request. Strings point into heap copies owned by the request
 * and are released by proto_req_free. */
struct proto_req {
    enum proto_op op;
    int admin_only;
    char *endpoint;      /* enqueue, requeue, purge, pause, resume, endpoint.delete/put (name) */
    char *event_id;      /* enqueue: NULL = generate */
    char *event_type;    /* enqueue */
    char *payload;       /* enqueue: the exact bytes of the "payload" value */
    size_t payload_len;
    int64_t delay_ms;    /* enqueue: -1 none (schedule.h) */
    int64_t deliver_at_ms; /* enqueue: epoch ms, 0 none */
    int64_t id;          /* get, requeue: message id (0 = none) */
    int64_t since_ms;    /* requeue, purge: rows created at/after; 0 = all */
    unsigned statuses;   /* requeue: PROTO_STATUS_* bits; 0 = the default */
    int64_t hours;       /* dead_letters, report */
    int64_t p95_ms;      /* slow: threshold, 0 = configured */
    struct cJSON *body;  /* endpoint.put: the whole request */
    struct msgsel *sel;  /* get, attempts, messages, requeue, purge, erase: which
                          * messages (msgsel.h); NULL for the other ops */
};

struct proto_err {
    const char *code;    /* one of PERR_* */
    char message[200];
};

/* Parse and validate one line (without its newline). 0 on success;
 * -1 with err filled. Never reads past len. */
int proto_parse(const char *line, size_t len, const struct proto_limits *lim,
                struct proto_req *req, struct proto_err *err);
void proto_req_free(struct proto_req *req);

const char *proto_op_name(enum proto_op op);
/* The members op accepts besides "op", blank separated ("" none; NULL
 * for endpoint.put, whose keys the endpoint parser checks). */
const char *proto_op_fields(enum proto_op op);

/* Reply helpers: append one complete line (with "\n") to out. */
int proto_reply_error(struct buf *out, const char *code, const char *message);
/* Start "{\"ok\":true," ... callers append fields then proto_reply_end. */
int proto_reply_begin(struct buf *out);
int proto_reply_end(struct buf *out);

/* A member name, as written (names with escapes are refused). */
struct proto_name {
    const char *p;
    size_t len;
};

/* The index of the first name equal to an earlier one, or -1. Time and
 * memory linear in n and the names' bytes (a hash set). -2 out of memory. */
int proto_first_repeat(const struct proto_name *names, size_t n);

/* Locate the raw bytes of top-level member `key` of a JSON object text
 * that is already known to be valid JSON. Returns 0 and sets start and vlen,
 * or -1 if absent. Pure; exposed for tests. */
int proto_find_member(const char *json, size_t len, const char *key,
                      const char **start, size_t *vlen);

#endif
