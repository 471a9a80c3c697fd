/*
 * revalidate.h - asking the upstream whether a cached object changed before serving
 * it (--revalidate-after): a HEAD with If-None-Match, while the client's connection
 * waits suspended.
 *
 *   304, or 200 with the cached ETag     the copy is fresh: marked so, served as a hit
 *   5xx, or no answer at all             the stale copy is served, and says so
 *   anything else (200 with another      the copy is dropped; the request becomes a
 *   ETag, 404, 403, ...)                 miss, which fetches (or refuses) anew
 */
#ifndef GW_REVALIDATE_H
#define GW_REVALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "upstream.h"

enum reval_outcome { REVAL_FRESH, REVAL_CHANGED, REVAL_UNREACHABLE };

/* One revalidation; lives in its request. */
struct reval {
    up_req *req;
    char etag[80];     /* the cached copy's ETag, as stored */
    long status;       /* the upstream's answer, 0 if none */
    char got_etag[80]; /* the ETag of a 200 answer */
    sc_code result;    /* of the upstream request */
};

struct gw_req;

/* @brief True if q's cached copy, stored at stored_at (seconds), is due for revalidation. */
bool gw_reval_due(const struct gw_req *q, int64_t stored_at);

/*
 * @brief Starts revalidating q's object, cached with etag (NULL or "": none). The
 * connection stays suspended until the upstream answers; then the access handler
 * calls gw_reval_finish(). @return what the access handler returns.
 */
enum MHD_Result gw_reval_start(struct gw_req *q, const char *etag);

/* @brief The outcome, once the upstream answered (phase GW_PHASE_REVALIDATE). */
enum reval_outcome gw_reval_outcome(const struct reval *rv);

/* @brief Releases the upstream request, cancelling it if it still runs. */
void gw_reval_cleanup(struct reval *rv);

#endif
