/* revalidate.c - conditional HEADs for cached objects older than --revalidate-after. */
#include "revalidate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "gw.h"

bool gw_reval_due(const struct gw_req *q, int64_t stored_at)
{
    uint64_t after = q->g->cfg->revalidate_after;
    if (after == 0)
        return false;
    int64_t now = (int64_t)time(NULL);
    return now - stored_at >= (int64_t)after;
}

/* ---- the upstream side (upstream thread) ---------------------------------- */

static void on_head(void *arg, const struct up_head *head)
{
    struct gw_req *q = arg;
    q->reval.status = head->status;
    const char *etag = up_header_get(head->headers, head->n_headers, "ETag");
    snprintf(q->reval.got_etag, sizeof(q->reval.got_etag), "%s", etag ? etag : "");
}

static bool on_body(void *arg, const char *p, size_t n)
{
    return true; /* a HEAD has none; anything else is dropped */
}

static void on_done(void *arg, sc_code result)
{
    struct gw_req *q = arg;
    q->reval.result = result;
    MHD_resume_connection(q->conn); /* the access handler runs again: gw_reval_outcome() */
}

static const struct up_handler reval_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_done,
};

/* ---- the request side ------------------------------------------------------- */

enum MHD_Result gw_reval_start(struct gw_req *q, const char *etag)
{
    struct reval *rv = &q->reval;
    snprintf(rv->etag, sizeof(rv->etag), "%s", etag ? etag : "");
    struct up_header cond = {"If-None-Match", rv->etag};
    struct up_request req = {
        .method = "HEAD",
        .bucket = q->tgt.bucket,
        .key = q->tgt.key,
        .headers = &cond,
        .n_headers = rv->etag[0] ? 1 : 0,
        .body_length = -1,
        .idempotent = true,
    };
    gw_sign_as(q, &req.as); /* asked as the client, so its own permissions apply */
    q->phase = GW_PHASE_REVALIDATE;
    /* Suspended before the request exists, so that its answer can never resume too early. */
    MHD_suspend_connection(q->conn);
    sc_code rc = up_submit(q->g->up, &req, &reval_handler, q, &rv->req);
    if (rc != SC_OK) {
        rv->result = rc;
        MHD_resume_connection(q->conn);
    }
    return MHD_YES;
}

enum reval_outcome gw_reval_outcome(const struct reval *rv)
{
    if (rv->result != SC_OK || rv->status == 0 || rv->status >= 500)
        return REVAL_UNREACHABLE;
    if (rv->status == 304)
        return REVAL_FRESH;
    if (rv->status == 200 && rv->etag[0] && strcmp(rv->etag, rv->got_etag) == 0)
        return REVAL_FRESH;
    return REVAL_CHANGED;
}

void gw_reval_cleanup(struct reval *rv)
{
    if (rv->req == NULL)
        return;
    up_req_cancel(rv->req);
    up_req_release(rv->req);
    rv->req = NULL;
}
