/* store_seal.h - the endpoints' secrets and header values as the store
 * backends keep them: sealed (seal.h) under the store's key. */
#ifndef HOOKD_STORE_SEAL_H
#define HOOKD_STORE_SEAL_H
#include "epdef.h"
#include "store.h"

/* d's secrets and headers as the stored JSON arrays, sealed; the caller
 * frees both with seal_free. 0 / -1 (store_fail: no key, out of memory). */
int store_seal_def(struct store *s, const struct ep_def *d, char **secrets, char **headers);
/* Stored columns back to plain JSON arrays (seal_free both); plain_seen
 * set when a value was still stored plain (an older version's row).
 * 0 / -1 (store_fail: no key, another key, altered). */
int store_open_cols(struct store *s, const char *name, const char *secrets, const char *headers, char **psecrets,
                    char **pheaders, int *plain_seen);

#endif
