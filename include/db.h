/* db.h - SQLite connections for the SQLite backend (store_sqlite*.c):
 * the one writer (all writes and checkpoints) and read-only readers;
 * schema migration by PRAGMA user_version. */
#ifndef HOOKD_DB_H
#define HOOKD_DB_H
#include <sqlite3.h>
#include <stddef.h>

#include "config.h"

/* Highest schema version this binary knows. */
int db_schema_version(void);

/* Take the single-instance lock (DBPATH.lock, flock) before anything
 * touches the database; fd stays open for the process's life. */
int db_lock(const struct config *c, int *fd, char *err, size_t errlen);

/* Open (creating the file and its directory 0750 if needed), refuse a
 * newer schema or a file that is not a hookd database, apply pending
 * migrations, set WAL, synchronous and busy_timeout. */
int db_open_writer(const struct config *c, sqlite3 **out, char *err, size_t errlen);
/* Read-only connection that never checkpoints (not even on close). */
int db_open_reader(const struct config *c, sqlite3 **out, char *err, size_t errlen);
void db_close(sqlite3 *db);
/* A copy about to become the database (hookd restore): readable, a hookd
 * schema no newer than this binary's, integrity_check clean. Returns its
 * schema version, or -1 with the reason in err. */
int db_check_file(const char *path, char *err, size_t errlen);

int db_exec(sqlite3 *db, const char *sql);
/* PRAGMA synchronous at a configuration level (enum cfg_sync order) */
int db_set_synchronous(sqlite3 *db, int level);
int db_begin(sqlite3 *db);     /* BEGIN IMMEDIATE */
int db_commit(sqlite3 *db);
void db_rollback(sqlite3 *db); /* no-op outside a transaction */
/* Prepare for the connection's life (SQLITE_PREPARE_PERSISTENT). */
int db_prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql);

#endif
