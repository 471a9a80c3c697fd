/* reply.c - answers to GET and HEAD Object, wherever the bytes come from (see reply.h). */
#include "reply.h"
#include "req.h"

#include <string.h>
#include <strings.h>

#include "../proto/cond.h"
#include "../proto/hdrblob.h"
#include "../proto/range.h"
#include "respond.h"

static void close_view(void *view)
{
    store_obj_close(view);
}

struct MHD_Response *gw_reply_from_view(store_obj *view, const struct iovec *iov, size_t n)
{
    return gw_respond_iovec(iov, n, close_view, view);
}

bool gw_reply_sends_header(struct gw_req *q, const char *name, int status)
{
    if (strncasecmp(name, "x-amz-checksum-", 15) != 0)
        return true;
    const char *mode = gw_req_header(q, "x-amz-checksum-mode");
    return status == 200 && mode != NULL && strcmp(mode, "ENABLED") == 0;
}

struct answer gw_reply_decide(struct gw_req *q, const char *etag, const char *last_modified,
                              uint64_t size)
{
    struct cond_headers ch = {gw_req_header(q, "If-Match"), gw_req_header(q, "If-None-Match"),
                              gw_req_header(q, "If-Modified-Since"),
                              gw_req_header(q, "If-Unmodified-Since")};
    return answer_decide(&ch, gw_req_header(q, "Range"), etag, last_modified, size);
}

enum MHD_Result gw_reply_bodiless(struct gw_req *q, const struct answer *a, uint64_t size,
                                  const char *etag, const char *last_modified)
{
    if (a->status == 412)
        return gw_respond_known_error(q, S3_XML_PRECONDITION_FAILED, NULL);
    if (a->status == 416) {
        q->x_cache = q->x_cache ? q->x_cache : "MISS";
        return gw_respond_known_error(q, S3_XML_INVALID_RANGE, NULL);
    }
    struct MHD_Response *resp = gw_respond_empty();
    if (resp == NULL)
        return MHD_NO;
    if (etag)
        MHD_add_response_header(resp, "ETag", etag);
    if (last_modified)
        MHD_add_response_header(resp, "Last-Modified", last_modified);
    (void)size;
    return gw_respond_queue(q, 304, resp);
}

void gw_reply_blob_headers(struct gw_req *q, struct MHD_Response *resp, const char *blob,
                           size_t len, int status)
{
    size_t pos = 0;
    const char *name, *value;
    while (hdrblob_next(blob, len, &pos, &name, &value)) {
        if (gw_reply_sends_header(q, name, status))
            MHD_add_response_header(resp, name, value);
    }
}

void gw_reply_range_headers(struct MHD_Response *resp, const struct answer *a, uint64_t size)
{
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
    if (a->status != 206)
        return;
    char cr[RANGE_CONTENT_RANGE_LEN];
    if (range_content_range(a->start, a->len, size, cr) == SC_OK)
        MHD_add_response_header(resp, "Content-Range", cr);
}
