/* cpeer.h - the control socket's local peers (see cpeer.c): each user's
 * connections and the bytes they hold, who may connect (climit.h's rules
 * applied at accept), the memory gates that stop reading, and the
 * refused, expired and forbidden clients counted and logged once per
 * sweep.
 *
 * A peer is one uid, admin or not (with admin_groups the same uid can be
 * both, on different connections). conns.c owns the connections and
 * tells this module what they hold; the module never calls back: what
 * the connections must do about a gate that moved is cpeer_account's
 * answer. Not thread safe: the event loop's thread only. */
#ifndef HOOKD_CPEER_H
#define HOOKD_CPEER_H
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "climit.h"
#include "config.h"

struct cpeer;

/* c: who is an admin; lim: the limits (both outlive the module). 0, or
 * -1 with errno (the descriptor kept spare for refusals). */
int cpeer_init(const struct config *c, const struct climit *lim);
void cpeer_free(void);

/* cpeer_accept: one refused or lost: call again (within the caller's
 * bound per turn). */
#define CPEER_AGAIN (-2)

/* Accept one client from the listening socket lfd and decide on it by
 * its credentials. Its descriptor (non-blocking) with *peer, *cred and
 * *admin set: the caller either cpeer_join()s it or refuses it; -1:
 * nobody waits; CPEER_AGAIN. A refused client is told why (busy). */
int cpeer_accept(int lfd, struct cpeer **peer, struct ucred *cred, int *admin);
/* Tell a client busy (why) and close fd; counted for the sweep's line. */
void cpeer_refuse(int fd, enum climit_refusal why);
/* An accepted client is a connection of p from now on. */
void cpeer_join(struct cpeer *p);
/* p is freed if it has no connection (after a refused accept). */
void cpeer_put(struct cpeer *p);
/* A connection of p closes; it had counted bytes in (cpeer_account). */
void cpeer_leave(struct cpeer *p, size_t counted);

/* May p's connections read: neither its own gate nor, for a non-admin,
 * the gate of all non-admin connections closed? */
int cpeer_open(const struct cpeer *p);
/* Is p's own gate (user_memory) closed? */
int cpeer_user_closed(const struct cpeer *p);

#define CPEER_USER_GATE 1u   /* p's gate moved: its connections are looked at again */
#define CPEER_ALL_GATE 2u    /* the non-admins' gate moved: theirs are */
/* A connection of p that counted `before` bytes holds `now`: the counts
 * and the gates brought up to date. Which gates moved (CPEER_*_GATE). */
unsigned cpeer_account(struct cpeer *p, size_t before, size_t now);

/* A connection closed for overstaying (the sweep's line counts it). */
void cpeer_expired(enum climit_expiry why);
/* A non-admin peer asked for an admin op: logged, a few per sweep. */
void cpeer_forbidden(const char *op, uid_t uid, pid_t pid);
/* The end of a sweep: one line for what was counted since the last. */
void cpeer_sweep_log(void);

#endif
