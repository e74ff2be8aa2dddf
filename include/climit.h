/* climit.h - the control socket's limits on its clients: who may take a
 * connection slot, how much memory a connection and a user may hold, and
 * when a connection has overstayed. The pure rules; conns.c and cpeer.c
 * apply them.
 *
 * Local clients are not trusted: one account (a non-admin uid) can hold
 * at most max_clients_per_user connections and user_memory bytes, so it
 * cannot lock other accounts out, and admin_reserve of the max_clients
 * slots stay free for admins (root, hookd's user, admin_uids/admin_groups)
 * whatever the others do. Admins are held to max_clients and the
 * per-connection budget only. */
#ifndef HOOKD_CLIMIT_H
#define HOOKD_CLIMIT_H
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct climit {
    int64_t max_clients;
    int64_t per_user;       /* connections of one non-admin uid */
    int64_t reserve;        /* slots only admins may take */
    size_t client_memory;   /* per connection, see conns.c */
    size_t user_memory;     /* per non-admin uid */
    size_t clients_memory;  /* all non-admin uids together */
    int64_t idle_ms, line_ms, send_ms;   /* 0: no such timeout */
};

/* The limits of c ([server]): admin_reserve at most half of max_clients,
 * user_memory at least twice max_line (one line must always fit),
 * clients_memory at least user_memory. */
void climit_init(struct climit *l, const struct config *c);

enum climit_refusal {
    CLIMIT_ADMIT = 0,
    CLIMIT_FULL,       /* max_clients connections */
    CLIMIT_RESERVED,   /* only the admins' slots are left */
    CLIMIT_USER,       /* this user holds max_clients_per_user */
};

/* May a peer connect while nconns connections are open, user_conns of
 * them its uid's? */
enum climit_refusal climit_admit(const struct climit *l, int64_t nconns, int64_t user_conns, int admin);
/* The busy reply's message for a refusal. */
const char *climit_refusal_text(enum climit_refusal r);

/* A user's gate (limit user_memory) or the gate of all non-admin
 * connections (clients_memory), with hysteresis so that it does not
 * flap: closed at limit bytes, open again below three quarters of it.
 * Returns the new state (1 closed). */
int climit_gate(size_t limit, int closed, size_t bytes);

/* What one connection is doing, in monotonic ms (0: not so). */
struct climit_conn {
    int64_t active;     /* last byte read or sent (or accept) */
    int64_t line;       /* an incomplete request line since */
    int64_t out;        /* replies waiting for the client to read since */
    int busy;           /* requests, replies or input pending */
};

enum climit_expiry { CLIMIT_LIVE = 0, CLIMIT_IDLE, CLIMIT_LINE, CLIMIT_SEND };

/* Has the connection overstayed at now, and why? */
enum climit_expiry climit_expired(const struct climit *l, const struct climit_conn *t, int64_t now);
const char *climit_expiry_name(enum climit_expiry e);
/* How often the server looks for overstaying connections: a quarter of
 * the shortest timeout, 50 ms to 1 s (-1: no timeout configured). */
int64_t climit_sweep_ms(const struct climit *l);

#endif
