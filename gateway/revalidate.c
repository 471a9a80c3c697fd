/* revalidate.c - conditional HEADs for cached objects older than --revalidate-after. */
#include "revalidate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "authz.h"
#include "respond.h"
#include "config.h"
#include "../store/store.h"
#include "../upstream/fill.h"

bool gw_reval_due(const struct gw_req *q, int64_t stored_at)
{
    uint64_t after = q->g->cfg->revalidate_after;
    if (after == 0)
        return false;
    int64_t now = (int64_t)time(NULL);
    return now - stored_at >= (int64_t)after;
}

struct gw_next gw_reval_start(struct gw_req *q, const char *etag)
{
    snprintf(q->reval.cached_etag, sizeof(q->reval.cached_etag), "%s", etag ? etag : "");
    struct http_header cond = {"If-None-Match", q->reval.cached_etag};
    gw_ask_head(q, &q->ask, q->reval.cached_etag[0] ? &cond : NULL, false);
    return GW_WAIT(GW_STEP_REVAL_ANSWER);
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

struct gw_next gw_reval_answer(struct gw_req *q)
{
    enum reval_outcome outcome = gw_reval_outcome(q->reval.cached_etag, &q->ask);
    long status = q->ask.status;
    sc_code result = q->ask.result;
    gw_ask_release(&q->ask);
    switch (outcome) {
    case REVAL_FRESH:
        store_touch(q->g->st, q->tgt.bucket, q->tgt.key);
        q->reval.answered = true;
        return GW_NEXT(GW_STEP_LOOKUP);
    case REVAL_UNREACHABLE:
        sc_warn("revalidating %s/%s failed (%s, status %ld): serving the stale copy", q->tgt.bucket,
                q->tgt.key, sc_strerror(result), status);
        q->reval.answered = true;
        q->reval.stale = true;
        return GW_NEXT(GW_STEP_LOOKUP);
    case REVAL_CHANGED:
        if (status == 403 && gw_authz_needed(q)) {
            /* This identity may no longer read it; the copy stays for the others. */
            gw_authz_record(q, false);
            sc_stat_add(q->g->stats.authz_denied, 1);
            return GW_SENT(gw_respond_known_error(q, S3_XML_ACCESS_DENIED, NULL));
        }
        fill_invalidate(q->g->fills, q->tgt.bucket, q->tgt.key);
        store_remove(q->g->st, q->tgt.bucket, q->tgt.key);
        break;
    }
    return GW_NEXT(GW_STEP_MISS);
}
