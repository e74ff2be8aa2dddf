/* climit.c - the control socket's limits on its clients (climit.h). Pure. */
#include "climit.h"

void climit_init(struct climit *l, const struct config *c)
{
    l->max_clients = c->max_clients;
    l->per_user = c->max_clients_per_user;
    l->reserve = c->admin_reserve < c->max_clients / 2 ? c->admin_reserve : c->max_clients / 2;
    l->client_memory = (size_t)c->client_memory;
    l->user_memory = (size_t)c->user_memory;
    if (l->user_memory < 2 * (size_t)c->max_line)
        l->user_memory = 2 * (size_t)c->max_line;
    l->clients_memory = (size_t)c->clients_memory;
    if (l->clients_memory < l->user_memory)
        l->clients_memory = l->user_memory;
    l->idle_ms = c->idle_timeout_ms;
    l->line_ms = c->line_timeout_ms;
    l->send_ms = c->send_timeout_ms;
}

enum climit_refusal climit_admit(const struct climit *l, int64_t nconns, int64_t user_conns, int admin)
{
    if (nconns >= l->max_clients)
        return CLIMIT_FULL;
    if (admin)
        return CLIMIT_ADMIT;
    if (nconns >= l->max_clients - l->reserve)
        return CLIMIT_RESERVED;
    if (user_conns >= l->per_user)
        return CLIMIT_USER;
    return CLIMIT_ADMIT;
}

const char *climit_refusal_text(enum climit_refusal r)
{
    switch (r) {
    case CLIMIT_FULL:
        return "too many clients ([server] max_clients)";
    case CLIMIT_RESERVED:
        return "too many clients; the remaining connections are kept for admins ([server] admin_reserve)";
    case CLIMIT_USER:
        return "too many connections from this user ([server] max_clients_per_user)";
    default:
        return "";
    }
}

int climit_gate(size_t limit, int closed, size_t bytes)
{
    if (!closed)
        return bytes >= limit;
    return bytes >= limit / 4 * 3;
}

enum climit_expiry climit_expired(const struct climit *l, const struct climit_conn *t, int64_t now)
{
    if (l->line_ms > 0 && t->line && now - t->line >= l->line_ms)
        return CLIMIT_LINE;
    if (l->send_ms > 0 && t->out && now - t->out >= l->send_ms)
        return CLIMIT_SEND;
    if (l->idle_ms > 0 && !t->busy && now - t->active >= l->idle_ms)
        return CLIMIT_IDLE;
    return CLIMIT_LIVE;
}

const char *climit_expiry_name(enum climit_expiry e)
{
    static const char *const names[] = {"live", "idle", "partial_line", "not_reading"};
    return names[e];
}

int64_t climit_sweep_ms(const struct climit *l)
{
    int64_t m = -1, v[3] = {l->idle_ms, l->line_ms, l->send_ms};
    int i;

    for (i = 0; i < 3; i++)
        if (v[i] > 0 && (m < 0 || v[i] < m))
            m = v[i];
    if (m < 0)
        return -1;
    m /= 4;
    return m < 50 ? 50 : m > 1000 ? 1000 : m;
}
