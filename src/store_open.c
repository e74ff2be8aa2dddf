/* store_open.c - opening the configured storage backend. */
#include "store.h"
#include "store_sqlite.h"

int store_open(const struct config *c, enum store_role role, struct store **out, char *err, size_t errlen)
{
    return store_sqlite_open(c, role, out, err, errlen);
}
