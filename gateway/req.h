/*
 * req.h - what every step may do with its request besides answering: register a
 * cleanup for the state it owns (as nginx's ngx_pool_cleanup_add), and the waiter that
 * suspends the connection while a relay has nothing for it and resumes it when bytes
 * come (q->waiter, handed to relay.h). A HEAD asked upstream (ask.h) suspends and
 * resumes the connection itself, around that one question.
 */
#ifndef GW_REQ_H
#define GW_REQ_H

#include "gw.h"

/*
 * @brief Registers fn(arg), run once when q is finished, after the cleanups registered
 * later (reverse order). Registering the same fn and arg again is a no-op, so a step
 * may register each time it takes its state. At most GW_CLEANUPS_MAX (asserted).
 */
void gw_req_cleanup_add(struct gw_req *q, void (*fn)(void *arg), void *arg);

/* @brief Runs q's cleanups, last registered first. server.c, when q is finished. */
void gw_req_cleanup_run(struct gw_req *q);

/* @brief The value of request header name (the first, if sent more than once), or NULL. */
const char *gw_req_header(const struct gw_req *q, const char *name);

/* @brief Sets q->waiter to suspend and resume q's connection (relay.h's relay_waiter). */
void gw_req_waiter_init(struct gw_req *q);

#endif
