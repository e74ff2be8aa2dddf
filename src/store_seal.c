/* store_seal.c - the endpoint columns that hold secrets, sealed on the
 * way into a backend and opened on the way out (seal.h); shared by the
 * SQLite and PostgreSQL backends. */
#include "store_seal.h"
#include "endpoint.h"

#include <stdlib.h>

int store_seal_def(struct store *s, const struct ep_def *d, char **secrets, char **headers)
{
    char *ps = ep_json_secrets(d), *ph = ep_json_strings(d->headers, d->nheaders);
    char why[256];
    int rc = -1;

    *secrets = *headers = NULL;
    if (!ps || !ph) {
        store_fail(s, STORE_E_NOMEM, "endpoint put: out of memory");
        goto out;
    }
    if (seal_json(&s->seal, ps, 0, secrets, why, sizeof why) < 0 ||
        seal_json(&s->seal, ph, 1, headers, why, sizeof why) < 0) {
        seal_free(*secrets);
        *secrets = NULL;
        store_fail(s, STORE_E_OTHER, "endpoint %.64s: %s", d->name, why);
        goto out;
    }
    rc = 0;
out:
    seal_free(ps);
    seal_free(ph);
    return rc;
}

int store_open_cols(struct store *s, const char *name, const char *secrets, const char *headers, char **psecrets,
                    char **pheaders, int *plain_seen)
{
    char why[256];
    int p1 = 0, p2 = 0;

    *psecrets = *pheaders = NULL;
    if (seal_json_open(&s->seal, secrets ? secrets : "[]", 0, psecrets, &p1, why, sizeof why) < 0 ||
        seal_json_open(&s->seal, headers ? headers : "[]", 1, pheaders, &p2, why, sizeof why) < 0) {
        seal_free(*psecrets);
        *psecrets = NULL;
        return store_fail(s, STORE_E_OTHER, "endpoint %.64s: stored secrets: %s", name ? name : "?", why);
    }
    if (plain_seen)
        *plain_seen = p1 || p2;
    return 0;
}
