/* req.c - a request's cleanups and its connection's waiter (see req.h). */
#include "req.h"
#include "conn_guard.h"

#include <assert.h>

void gw_req_cleanup_add(struct gw_req *q, void (*fn)(void *arg), void *arg)
{
    for (unsigned i = 0; i < q->n_cleanups; i++)
        if (q->cleanups[i].fn == fn && q->cleanups[i].arg == arg)
            return;
    assert(q->n_cleanups < GW_CLEANUPS_MAX);
    q->cleanups[q->n_cleanups++] = (struct gw_cleanup){fn, arg};
}

void gw_req_cleanup_run(struct gw_req *q)
{
    while (q->n_cleanups > 0) {
        struct gw_cleanup c = q->cleanups[--q->n_cleanups];
        c.fn(c.arg);
    }
}

static void park_connection(void *arg)
{
    struct gw_req *q = arg;
    conn_guard_hold(q->g->guard, q->guard, true); /* waiting is not the client's fault */
    MHD_suspend_connection(q->conn);
}

static void wake_connection(void *arg)
{
    struct gw_req *q = arg;
    conn_guard_hold(q->g->guard, q->guard, false); /* on the upstream thread */
    MHD_resume_connection(q->conn);
}

void gw_req_waiter_init(struct gw_req *q)
{
    q->waiter = (struct relay_waiter){park_connection, wake_connection, q, NULL, false};
}

const char *gw_req_header(const struct gw_req *q, const char *name)
{
    return MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, name);
}
