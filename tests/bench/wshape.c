/* wshape.c - the writer's transaction shapes in a real run, counted
 * natively: an LD_PRELOAD library for hookd (which links SQLite
 * dynamically) that wraps sqlite3_step, sqlite3_reset and sqlite3_exec.
 *
 *   WSHAPE_OUT=FILE LD_PRELOAD=build/bench/wshape.so hookd serve -c hookd.ini
 *
 * At exit it writes to FILE (stderr without it) how many transactions
 * were committed, how many of them enqueued, settled and claimed rows,
 * and rows per commit and per claim statement, with the distribution of
 * settled and claimed rows per commit. These are the round sizes
 * rawcycle's -E, -b and -p stand for (tests/bench/README.md). The
 * statements are recognised by the start of their SQL text
 * (src/store_sqlite_sql.c); only the writer runs them. */
#include <dlfcn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKET 7
static const char *const bucket_name = "0,1-4,5-16,17-64,65-256,257-1024,>1024";

static int (*real_step)(sqlite3_stmt *);
static int (*real_reset)(sqlite3_stmt *);
static int (*real_exec)(sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **);

/* totals; the t_ counts are the open transaction's (the writer's thread) */
static long commits, c_enq, c_set, c_claim, enq, set, claims, claimed;
static long t_enq, t_set, t_claim;
static long h_set[NBUCKET], h_claim[NBUCKET];
static sqlite3_stmt *started[8];   /* claim statements stepped since their reset */

static int bucket(long n)
{
    return n <= 0 ? 0 : n <= 4 ? 1 : n <= 16 ? 2 : n <= 64 ? 3 : n <= 256 ? 4 : n <= 1024 ? 5 : 6;
}

static int is_claim(const char *sql)
{
    return sql && strncmp(sql, "SELECT id, event_id, payload", 28) == 0;
}

static void *next_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);

    if (!p) {
        fprintf(stderr, "wshape: no %s\n", name);
        abort();
    }
    return p;
}

int sqlite3_step(sqlite3_stmt *st)
{
    const char *sql = sqlite3_sql(st);
    int rc, i;

    if (!real_step)
        real_step = next_sym("sqlite3_step");
    if (is_claim(sql)) {
        for (i = 0; i < 8 && started[i] != st; i++)
            ;
        if (i == 8) {   /* its first step since the reset: one claim statement */
            claims++;
            for (i = 0; i < 8 && started[i]; i++)
                ;
            if (i < 8)
                started[i] = st;
        }
    }
    rc = real_step(st);
    if (!sql)
        return rc;
    if (rc == SQLITE_DONE && strncmp(sql, "INSERT INTO webhook_queue (endpoint_id, event_id", 48) == 0 &&
        sqlite3_changes(sqlite3_db_handle(st)) > 0) {
        enq++;
        t_enq++;
    } else if (rc == SQLITE_DONE && strncmp(sql, "UPDATE webhook_queue SET status = 'delivered'", 45) == 0) {
        set++;
        t_set++;
    } else if (rc == SQLITE_ROW && is_claim(sql)) {
        claimed++;
        t_claim++;
    }
    return rc;
}

int sqlite3_reset(sqlite3_stmt *st)
{
    int i;

    if (!real_reset)
        real_reset = next_sym("sqlite3_reset");
    for (i = 0; i < 8; i++)
        if (started[i] == st)
            started[i] = NULL;
    return real_reset(st);
}

int sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *arg, char **err)
{
    if (!real_exec)
        real_exec = next_sym("sqlite3_exec");
    if (sql && strcmp(sql, "COMMIT") == 0) {
        commits++;
        c_enq += t_enq > 0;
        if (t_set) {
            c_set++;
            h_set[bucket(t_set)]++;
        }
        if (t_claim) {
            c_claim++;
            h_claim[bucket(t_claim)]++;
        }
        t_enq = t_set = t_claim = 0;
    }
    return real_exec(db, sql, cb, arg, err);
}

static double per(long a, long b)
{
    return b ? (double)a / (double)b : 0.0;
}

__attribute__((destructor)) static void wshape_report(void)
{
    const char *path = getenv("WSHAPE_OUT");
    FILE *f = path ? fopen(path, "w") : stderr;
    int i;

    if (!f)
        return;
    fprintf(f, "shape_commits=%ld with_enqueue=%ld with_settle=%ld with_claim=%ld enqueued=%ld settled=%ld "
               "claim_statements=%ld claimed=%ld\n",
            commits, c_enq, c_set, c_claim, enq, set, claims, claimed);
    fprintf(f, "shape_enqueued_per_commit=%.1f settled_per_commit=%.1f claimed_per_commit=%.1f "
               "claim_statements_per_commit=%.1f claimed_per_statement=%.1f\n",
            per(enq, c_enq), per(set, c_set), per(claimed, c_claim), per(claims, c_claim), per(claimed, claims));
    fprintf(f, "shape_settled_rows_per_commit(%s)=", bucket_name);
    for (i = 0; i < NBUCKET; i++)
        fprintf(f, "%s%ld", i ? "," : "", h_set[i]);
    fprintf(f, " shape_claimed_rows_per_commit=");
    for (i = 0; i < NBUCKET; i++)
        fprintf(f, "%s%ld", i ? "," : "", h_claim[i]);
    fprintf(f, "\n");
    if (f != stderr)
        fclose(f);
}
