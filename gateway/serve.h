/*
 * serve.h - the steps of GET and HEAD Object through the cache (serve.c). Each returns
 * what comes next (gw.h); server.c runs them.
 */
#ifndef GW_SERVE_H
#define GW_SERVE_H

#include "gw.h"

/*
 * @brief GW_STEP_LOOKUP: serves the cached copy when there is a usable one. Next: done
 * (a hit, or refused), wait for an authorization (GW_STEP_AUTHZ_ANSWER) or a
 * revalidation (GW_STEP_REVAL_ANSWER), or GW_STEP_MISS.
 */
struct gw_next gw_serve_lookup(struct gw_req *q);

/*
 * @brief GW_STEP_MISS: joins or starts the object's fill, signed as q->as. Next:
 * GW_STEP_FILL_HEAD; GW_STEP_PROXY for a HEAD no complete fill answers; or done/wait
 * when another identity's fill needs an authorization first.
 */
struct gw_next gw_serve_miss(struct gw_req *q);

/*
 * @brief GW_STEP_FILL_HEAD: once the fill's head (or that of a range fetched beside it) is
 * in, answers from it. Next: wait (the connection is parked until the head arrives), done,
 * GW_STEP_FILL_HEAD again (a range fetched on its own), or GW_STEP_PROXY (a fill of another
 * identity that was not answered 200: asked again as this one, uncached).
 */
struct gw_next gw_serve_fill_head(struct gw_req *q);

#endif
