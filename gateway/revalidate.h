/*
 * revalidate.h - asking the upstream whether a cached object changed before serving
 * it (--revalidate-after): a HEAD with If-None-Match, while the client's connection
 * waits suspended (ask.h); the access handler then runs gw_serve_revalidated().
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

#include "ask.h"

enum reval_outcome { REVAL_FRESH, REVAL_CHANGED, REVAL_UNREACHABLE };

struct gw_req;

/* @brief True if q's cached copy, stored at stored_at (seconds), is due for revalidation. */
bool gw_reval_due(const struct gw_req *q, int64_t stored_at);

/*
 * @brief Starts revalidating q's object, cached with etag (NULL or "": none), into
 * q->ask. @return what the access handler returns.
 */
enum MHD_Result gw_reval_start(struct gw_req *q, const char *etag);

/* @brief What answer means for a copy cached with cached_etag ("" for none). */
enum reval_outcome gw_reval_outcome(const char *cached_etag, const struct gw_ask *answer);

#endif
