/*
 * revalidate.h - asking the upstream whether a cached object changed before serving
 * it (--revalidate-after): a HEAD with If-None-Match, while the client's connection
 * waits suspended (ask.h); the dispatcher then runs step GW_STEP_REVAL_ANSWER
 * (gw_reval_answer), which says what the lookup does with the copy:
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

#include "ask.h"
#include "gw.h"

enum reval_outcome { REVAL_FRESH, REVAL_CHANGED, REVAL_UNREACHABLE };

/* @brief True if q's cached copy, stored at stored_at (seconds), is due for revalidation. */
bool gw_reval_due(const struct gw_req *q, int64_t stored_at);

/*
 * @brief Starts revalidating q's object, cached with etag (NULL or "": none), into
 * q->ask. @return wait for GW_STEP_REVAL_ANSWER.
 */
struct gw_next gw_reval_start(struct gw_req *q, const char *etag);

/* @brief What answer means for a copy cached with cached_etag ("" for none). Pure. */
enum reval_outcome gw_reval_outcome(const char *cached_etag, const struct gw_ask *answer);

/*
 * @brief GW_STEP_REVAL_ANSWER: acts on the answer. Next: GW_STEP_LOOKUP (fresh, or no
 * answer: the copy is served once without revalidating, marked stale when unanswered),
 * GW_STEP_MISS (changed: the copy is dropped), or done (403 to an identity the upstream
 * judges on its own: it may no longer read it; the copy stays for the others).
 */
struct gw_next gw_reval_answer(struct gw_req *q);

#endif
