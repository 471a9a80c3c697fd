/*
 * admin.c - the gateway's own API under /_s3cached/ (bucket names cannot
 * start with '_', so it never shadows a bucket).
 *
 *   GET /_s3cached/stats   counters as JSON
 */
#include <stdlib.h>
#include <string.h>

#include "gw.h"

static enum MHD_Result respond_json(struct gw_req *q, int status, char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    return gw_queue(q, status, resp);
}

enum MHD_Result gw_admin(struct gw_req *q)
{
    const char *path = q->tgt.raw_path;
    if (strcmp(path, "/_s3cached/stats") == 0) {
        if (strcmp(q->method, "GET") != 0)
            return gw_respond_error(q, 405, "MethodNotAllowed",
                                    "The specified method is not allowed against this resource.");
        char *text = gw_stats_json(&q->g->stats, q->g->st);
        return text ? respond_json(q, 200, text) : MHD_NO;
    }
    return gw_respond_error(q, 404, "NotFound", "No such admin endpoint");
}
