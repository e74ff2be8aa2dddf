/* urlmask.h - URLs as people see them (endpoint listings, attempt logs,
 * check-config): credentials a URL carries are replaced by URLMASK.
 * Pure: no I/O.
 *
 * A query parameter is masked when its name, percent-decoded, holds one
 * of URLMASK_WORDS (case-insensitive: "api_key", "X-Auth", "signature",
 * "passwd", "access_token"...), or is one of the endpoint's mask_params;
 * its value is masked up to the next '&'.
 * A path segment is masked when
 *  - it comes after a segment named one of URLMASK_HOOK_SEGMENTS: the
 *    shapes of incoming-webhook URLs whose path is the credential (Slack
 *    /services/T../B../XXXX, Discord /api/webhooks/ID/TOKEN, Teams
 *    /webhookb2/..., Mattermost and Zapier /hooks/...), or
 *  - it looks generated: URLMASK_RANDOM_MIN or more characters, at least
 *    one letter and one digit, and no '.' (tokens, keys, GUIDs, digests,
 *    Telegram's bot<id>:<token>; a file name keeps its dot).
 * Scheme, host and port are shown as they are. */
#ifndef HOOKD_URLMASK_H
#define HOOKD_URLMASK_H
#include <stddef.h>

#include "util.h"

#define URLMASK "***"
#define URLMASK_WORDS "key, token, auth, sig, pass, secret, hash"
#define URLMASK_HOOK_SEGMENTS "hooks, webhook, webhooks, webhookb2, services"
#define URLMASK_RANDOM_MIN 20

/* url with its secrets masked into out (appended). extra: the endpoint's
 * mask_params (names, comma or blank separated, case-insensitive; NULL:
 * none). 0, or -1 out of memory. */
int urlmask_url(const char *url, const char *extra, struct buf *out);

/* The rules one at a time (n bytes of name or segment, as in the URL). */
int urlmask_param_secret(const char *name, size_t n, const char *extra);
int urlmask_segment_random(const char *seg, size_t n);

#endif
