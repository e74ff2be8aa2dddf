/* fuzz_export.c - libFuzzer target for the lines hookd import reads
 * (src/export_fmt.c): an export file is input from elsewhere, possibly
 * edited by hand or cut short.
 *
 * Input: one line (a NUL ends it early).
 *
 * Properties:
 *  - parse either fails with a reason that echoes no payload, or succeeds
 *    with a kind it names;
 *  - a parsed message, written again and read back, is the same message
 *    (payload byte for byte, every field);
 *  - a parsed endpoint, written again and read back, has the same stored
 *    form (settings and requests) and the same secrets and headers;
 *  - no read out of bounds, no leak (ASan). */
#include "fuzz_common.h"
#include "endpoint.h"
#include "export_fmt.h"

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fuzz_strndup(data, size), err[256] = "";
    struct xf_item it, again;
    struct buf b = {0};
    size_t i;

    if (xf_parse(line, &it, err, sizeof err) < 0) {
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        FUZZ_CHECK(!strstr(err, "\"payload\":"), "the reason quotes the line: %s", err);
        xf_item_free(&it);
        free(line);
        return 0;
    }
    FUZZ_CHECK(it.kind != XF_UNKNOWN, "accepted without a kind");
    if (it.kind == XF_MESSAGE) {
        struct store_row *p = &it.row, *q;
        FUZZ_CHECK(xf_message(it.endpoint, p, &b) == 0, "cannot write back");
        b.p[--b.len] = '\0';
        FUZZ_CHECK(xf_parse(b.p, &again, err, sizeof err) == 0, "own line refused: %s", err);
        q = &again.row;
        FUZZ_CHECK(strcmp(again.endpoint, it.endpoint) == 0 && strcmp(q->event_id, p->event_id) == 0 &&
                       same_str(q->event_type, p->event_type) && q->payload_len == p->payload_len &&
                       memcmp(q->payload, p->payload, p->payload_len) == 0 && q->status == p->status &&
                       q->attempt_count == p->attempt_count && q->max_attempts == p->max_attempts &&
                       q->created_at == p->created_at && q->next_attempt_at == p->next_attempt_at &&
                       same_str(q->last_error, p->last_error) && same_str(q->last_error_class, p->last_error_class) &&
                       q->last_status_code == p->last_status_code && q->last_response_ms == p->last_response_ms &&
                       same_str(q->ordering_key, p->ordering_key) && q->deliver_at == p->deliver_at,
                   "a message changed on its way round");
        xf_item_free(&again);
    } else if (it.kind == XF_ENDPOINT) {
        char *x, *y;
        FUZZ_CHECK(xf_endpoint(&it.def, it.from_config, &b) == 0, "cannot write back");
        b.p[--b.len] = '\0';
        FUZZ_CHECK(xf_parse(b.p, &again, err, sizeof err) == 0, "own line refused: %s", err);
        x = ep_json_overrides(&it.def);
        y = ep_json_overrides(&again.def);
        FUZZ_CHECK(x && y && strcmp(x, y) == 0 && strcmp(it.def.url, again.def.url) == 0 &&
                       it.def.nsecrets == again.def.nsecrets && it.def.nheaders == again.def.nheaders &&
                       it.def.paused == again.def.paused && same_str(it.def.event_types, again.def.event_types),
                   "an endpoint changed on its way round");
        for (i = 0; i < it.def.nsecrets; i++)
            FUZZ_CHECK(strcmp(it.def.secrets[i], again.def.secrets[i]) == 0, "a secret changed");
        for (i = 0; i < it.def.nheaders; i++)
            FUZZ_CHECK(strcmp(it.def.headers[i], again.def.headers[i]) == 0, "a header changed");
        free(x);
        free(y);
        xf_item_free(&again);
    }
    xf_item_free(&it);
    buf_free(&b);
    free(line);
    return 0;
}
