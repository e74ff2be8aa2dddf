/* fuzz_proto.c - libFuzzer target for proto_parse, the request parser and
 * validator (src/proto.c), and proto_find_member.
 *
 * Properties checked beyond "no crash, no sanitizer report":
 *  - an accepted request has a known op, and an error has a code;
 *  - an accepted enqueue's payload is the raw text of a JSON object or
 *    array, at most max_payload bytes, that parses to the same value the
 *    validator looked at (cJSON's "payload" member): what is stored is
 *    what was validated;
 *  - event_id / event_type are 1..200 printable ASCII bytes;
 *  - no accepted request has a member its op does not list, or one
 *    member twice (a misspelt event_id must not pass unnoticed), or more
 *    than PROTO_MAX_MEMBERS members;
 *  - error replies render as one JSON line of valid UTF-8. */
#include "fuzz_common.h"
#include "proto.h"
#include "util.h"

#include <cjson/cJSON.h>

/* Known bugs (tests/fuzz/crashes/): listed in FUZZ_KNOWN they are not
 * reported, so a fuzz run can look past them until they are fixed.
 *   proto-payload-key: the validator judges the first member cJSON decodes
 *   as "payload" (escapes allowed, e.g. "pay\u006coad"), while the bytes
 *   stored are those of the first member spelled "payload" literally.
 *   proto-op-utf8: "unknown op '%.64s'" cuts a multi-byte UTF-8 character
 *   of the op name in half: the error reply is not valid UTF-8.
 *   proto-nul-escape: a "\u0000" escape in a string field (event_id,
 *   endpoint, event_type, op, name) is accepted and cut there by cJSON:
 *   "evt\u0000x" and "evt\u0000y" both become event id "evt", so the
 *   second enqueue is answered duplicate:true and never delivered. */
static int known(const char *id)
{
    const char *k = getenv("FUZZ_KNOWN");
    return k && strstr(k, id) != NULL;
}

static void check_printable(const char *s, size_t max, const char *what)
{
    size_t n = strlen(s);
    FUZZ_CHECK(n >= 1 && n <= max, "%s has %zu bytes", what, n);
    for (; *s; s++)
        FUZZ_CHECK((unsigned char)*s > 0x20 && (unsigned char)*s != 0x7f, "%s has byte 0x%02x", what,
                   (unsigned char)*s);
}

/* Does line contain an unescaped "\u0000" escape outside [skip, skip+n)? */
static int has_nul_escape(const char *line, size_t len, const char *skip, size_t skipn)
{
    for (size_t i = 0; i + 6 <= len; i++) {
        size_t bs = 0;
        if (line[i] != '\\' || line[i + 1] != 'u' || memcmp(line + i + 2, "0000", 4) != 0)
            continue;
        if (skip && line + i >= skip && line + i < skip + skipn)
            continue;
        while (bs < i && line[i - 1 - bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return 1;
    }
    return 0;
}

/* cJSON_Compare says a number that overflows to infinity (1e999) differs
 * from itself (inf - inf is NaN): compare the printed forms as well. */
static int same_value(const cJSON *a, const cJSON *b)
{
    char *pa, *pb;
    int same;

    if (cJSON_Compare(a, b, 1))
        return 1;
    pa = cJSON_PrintUnformatted(a);
    pb = cJSON_PrintUnformatted(b);
    same = pa && pb && strcmp(pa, pb) == 0;
    cJSON_free(pa);
    cJSON_free(pb);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy: proto_parse must never read past len. */
    char *line = malloc(size ? size : 1);
    struct proto_limits lim = {.max_payload = 256};
    struct proto_req req;
    struct proto_err err;
    int rc;

    if (!line)
        return 0;
    memcpy(line, data, size);
    if (size > 0)
        lim.max_payload = 16 + (size_t)data[0] * 4;   /* vary the limit with the input */

    rc = proto_parse(line, size, &lim, &req, &err);
    if (rc == 0) {
        FUZZ_CHECK(req.op > OP_NONE && req.op < OP__COUNT, "op %d", (int)req.op);
        {
            /* the payload keeps its bytes as written; everything else is
             * decoded (the op, endpoint.put's url and secrets too), and a
             * NUL there must not be accepted */
            const char *ps = NULL;
            size_t pn = 0;
            if (req.op == OP_ENQUEUE)
                proto_find_member(line, size, "payload", &ps, &pn);
            FUZZ_CHECK(!has_nul_escape(line, size, ps, pn) || known("proto-nul-escape"),
                       "accepted a \\u0000 escape outside the payload: %.*s", (int)(size < 200 ? size : 200), line);
        }
        FUZZ_CHECK(strcmp(proto_op_name(req.op), "none") != 0, "op has no name");
        {
            cJSON *whole = cJSON_ParseWithLength(line, size);
            const char *fields = proto_op_fields(req.op);
            const cJSON *m, *p;
            FUZZ_CHECK(whole != NULL, "accepted line does not parse");
            FUZZ_CHECK(cJSON_GetArraySize(whole) <= PROTO_MAX_MEMBERS, "accepted %d members (limit %d)",
                       cJSON_GetArraySize(whole), PROTO_MAX_MEMBERS);
            for (m = whole->child; m; m = m->next) {
                for (p = whole->child; p != m; p = p->next)
                    FUZZ_CHECK(strcmp(p->string, m->string) != 0, "member '%s' accepted twice", m->string);
                if (fields && strcmp(m->string, "op") != 0) {
                    size_t n = strlen(m->string);
                    const char *hit = strstr(fields, m->string);
                    while (hit && !((hit == fields || hit[-1] == ' ') && (hit[n] == ' ' || hit[n] == '\0')))
                        hit = strstr(hit + 1, m->string);
                    FUZZ_CHECK(hit != NULL, "member '%s' is not one of op %s's (%s)", m->string,
                               proto_op_name(req.op), fields);
                }
            }
            cJSON_Delete(whole);
        }
        if (req.op == OP_ENQUEUE) {
            cJSON *whole, *mine;
            const cJSON *theirs;

            FUZZ_CHECK(req.payload != NULL, "enqueue accepted without a payload");
            FUZZ_CHECK(req.payload_len <= lim.max_payload, "payload %zu > max %zu", req.payload_len,
                       lim.max_payload);
            FUZZ_CHECK(strlen(req.payload) == req.payload_len, "payload has a NUL or a wrong length");
            FUZZ_CHECK(req.endpoint || req.event_type, "neither endpoint nor event_type");
            if (req.event_id)
                check_printable(req.event_id, PROTO_EVENT_ID_MAX, "event_id");
            if (req.event_type)
                check_printable(req.event_type, PROTO_EVENT_TYPE_MAX, "event_type");

            mine = cJSON_ParseWithLength(req.payload, req.payload_len);
            whole = cJSON_ParseWithLength(line, size);
            FUZZ_CHECK(whole != NULL, "accepted line does not parse");
            theirs = cJSON_GetObjectItemCaseSensitive(whole, "payload");
            FUZZ_CHECK(theirs != NULL, "no payload member");
            if (!(mine && same_value(mine, theirs)) && known("proto-payload-key")) {
                cJSON_Delete(whole);
                cJSON_Delete(mine);
                proto_req_free(&req);
                free(line);
                return 0;
            }
            FUZZ_CHECK(mine != NULL, "stored payload is not JSON: %.200s", req.payload);
            FUZZ_CHECK(cJSON_IsObject(mine) || cJSON_IsArray(mine),
                       "stored payload is not an object or array: %.200s", req.payload);
            FUZZ_CHECK(same_value(mine, theirs),
                       "stored payload differs from the validated one: stored %.200s", req.payload);
            cJSON_Delete(whole);
            cJSON_Delete(mine);
        }
        if (req.op == OP_GET)
            FUZZ_CHECK(req.id >= 1, "get id %lld", (long long)req.id);
        if (req.op == OP_ENDPOINT_PUT)
            FUZZ_CHECK(req.body != NULL && req.endpoint != NULL, "endpoint.put without body or name");
        if (req.endpoint)
            FUZZ_CHECK(strlen(req.endpoint) >= 1 && strlen(req.endpoint) <= 64, "endpoint length");
        proto_req_free(&req);
    } else {
        struct buf out = {0};
        cJSON *reply;

        FUZZ_CHECK(err.code != NULL, "error without a code");
        FUZZ_CHECK(memchr(err.message, '\0', sizeof err.message) != NULL, "message not terminated");
        FUZZ_CHECK(proto_reply_error(&out, err.code, err.message) == 0, "reply_error failed");
        FUZZ_CHECK(out.len > 0 && out.p[out.len - 1] == '\n' && memchr(out.p, '\n', out.len) == out.p + out.len - 1,
                   "error reply is not one line: %s", out.p);
        FUZZ_CHECK(util_utf8_valid(out.p, out.len) || (known("proto-op-utf8") && strcmp(err.code, PERR_UNKNOWN_OP) == 0), "error reply is not valid UTF-8: %s", out.p);
        reply = cJSON_ParseWithLength(out.p, out.len);
        FUZZ_CHECK(reply != NULL, "error reply is not JSON: %s", out.p);
        cJSON_Delete(reply);
        buf_free(&out);
    }

    /* proto_find_member on arbitrary text: must stay inside the buffer and
     * return a slice of it. */
    {
        const char *start = NULL;
        size_t vlen = 0;
        if (proto_find_member(line, size, "payload", &start, &vlen) == 0)
            FUZZ_CHECK(start >= line && start + vlen <= line + size, "member slice outside the input");
    }
    free(line);
    return 0;
}
