/* revalidate.c - conditional HEADs for cached objects older than --revalidate-after. */
#include "revalidate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gw.h"

bool gw_reval_due(const struct gw_req *q, int64_t stored_at)
{
    uint64_t after = q->g->cfg->revalidate_after;
    if (after == 0)
        return false;
    int64_t now = (int64_t)time(NULL);
    return now - stored_at >= (int64_t)after;
}

enum MHD_Result gw_reval_start(struct gw_req *q, const char *etag)
{
    snprintf(q->cached_etag, sizeof(q->cached_etag), "%s", etag ? etag : "");
    struct http_header cond = {"If-None-Match", q->cached_etag};
    q->phase = GW_PHASE_REVALIDATE;
    return gw_ask_head(q, &q->ask, q->cached_etag[0] ? &cond : NULL);
}

enum reval_outcome gw_reval_outcome(const char *cached_etag, const struct gw_ask *answer)
{
    if (answer->result != SC_OK || answer->status == 0 || answer->status >= 500)
        return REVAL_UNREACHABLE;
    /* A 304 says the cached ETag matched (RFC 9110 13.1.2): one to a HEAD without a
     * condition, or carrying another ETag, is an upstream that lies. Not every upstream
     * repeats the ETag in a 304 (s3rver does not): one without is taken as it says. */
    if (answer->status == 304)
        return cached_etag[0] && (answer->etag[0] == '\0' || strcmp(cached_etag, answer->etag) == 0)
                   ? REVAL_FRESH
                   : REVAL_CHANGED;
    if (answer->status == 200 && cached_etag[0] && strcmp(cached_etag, answer->etag) == 0)
        return REVAL_FRESH;
    return REVAL_CHANGED;
}
