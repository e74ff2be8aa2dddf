/* store_mem.h - an in-memory storage backend for the unit tests: the
 * same operations as store.h, no SQLite, no files. Several stores (a
 * writer and readers) open the same struct mem_db. A transaction is a
 * deep copy taken at begin and put back by rollback; mem_fail_at() makes
 * one operation fail, to drive the writer's error paths. */
#ifndef HOOKD_TEST_STORE_MEM_H
#define HOOKD_TEST_STORE_MEM_H

#include "store.h"

struct mem_db;

struct mem_db *mem_db_new(void);
void mem_db_free(struct mem_db *db);
struct store *mem_store_open(struct mem_db *db, enum store_role role);

/* The next call of the named op ("commit", "settle", "claim", ...) on any
 * store of db fails with e. */
void mem_fail_at(struct mem_db *db, const char *op, enum store_errc e);

#endif
