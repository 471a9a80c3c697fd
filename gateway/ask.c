/* ask.c - a HEAD to the upstream while the client's connection waits (see ask.h). */
#include "ask.h"

#include <stdio.h>
#include <stdlib.h>

#include "../proto/hdrblob.h"

#include "gw.h"
#include "req.h"

/* ---- the upstream side (upstream thread) ---------------------------------- */

static void on_head(void *arg, const struct http_head *head)
{
    struct gw_ask *a = arg;
    const char *etag = http_header_get(head->headers, head->n_headers, "ETag");
    a->status = head->status;
    a->length = head->content_length;
    snprintf(a->etag, sizeof(a->etag), "%s", etag ? etag : "");
    if (a->keep_headers && head->status == 200 && a->hdrs == NULL &&
        hdrblob_encode(head->headers, head->n_headers, &a->hdrs, &a->hdrs_len) != SC_OK)
        a->hdrs = NULL;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    return true; /* a HEAD has none; an error body is dropped */
}

static void on_done(void *arg, sc_code result)
{
    struct gw_ask *a = arg;
    a->result = result;
    MHD_resume_connection(a->q->conn); /* the step that waits reads the answer */
}

static const struct up_handler ask_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_done,
};

/* ---- the request side ------------------------------------------------------- */

static void release_at_end(void *arg)
{
    gw_ask_release(arg);
}

void gw_ask_head(struct gw_req *q, struct gw_ask *a, const struct http_header *header,
                 bool keep_headers)
{
    struct up_request req = {
        .method = "HEAD",
        .bucket = q->tgt.bucket,
        .key = q->tgt.key,
        .headers = header,
        .n_headers = header ? 1 : 0,
        .body_length = -1,
        .idempotent = true,
    };
    req.as = q->as;    /* asked as the client, so its own permissions apply */
    gw_ask_release(a); /* an earlier question's leftovers */
    *a = (struct gw_ask){.q = q, .length = -1, .keep_headers = keep_headers};
    gw_req_cleanup_add(q, release_at_end, a);
    MHD_suspend_connection(q->conn);
    sc_code rc = up_submit(q->g->up, &req, &ask_handler, a, &a->req);
    if (rc != SC_OK) {
        a->result = rc;
        MHD_resume_connection(q->conn);
    }
}

void gw_ask_release(struct gw_ask *a)
{
    free(a->hdrs);
    a->hdrs = NULL;
    a->hdrs_len = 0;
    if (a->req == NULL)
        return;
    up_req_cancel(a->req);
    up_req_release(a->req);
    a->req = NULL;
}
