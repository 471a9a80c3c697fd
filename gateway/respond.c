/* respond.c - building and queueing responses (see respond.h). */
#include "respond.h"

#include <assert.h>
#include <stdlib.h>

#include "../common/log.h"
#include "../fleet/fleet.h"

void gw_respond_common_headers(struct gw_req *q, struct MHD_Response *resp)
{
    /* A response relayed from the upstream keeps the upstream's ids, which its error body
     * names too; the gateway's own (the access log's) then goes beside them. */
    if (MHD_get_response_header(resp, "x-amz-request-id") != NULL) {
        MHD_add_response_header(resp, "x-s3cached-request-id", q->request_id);
    } else {
        MHD_add_response_header(resp, "x-amz-request-id", q->request_id);
        MHD_add_response_header(resp, "x-amz-id-2", q->request_id);
    }
    MHD_add_response_header(resp, "Server", "s3cached");
    if (q->peer.refused) /* the asking peer reads from the bucket instead of relaying this */
        MHD_add_response_header(resp, FLEET_H_REFUSED, "true");
    /* A 5xx of this gateway's own, to a peer: it failed, not the bucket, so the asker reads
     * from the bucket and marks it down; a 5xx it relays is the bucket's answer to pass on. */
    if (q->peer.failed &&
        (q->peer.from || q->peer.listener ||
         MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, FLEET_H_SIGNATURE) != NULL))
        MHD_add_response_header(resp, FLEET_H_FAILED, "true");
    if (q->x_cache)
        MHD_add_response_header(resp, "X-Cache", q->x_cache);
}

enum MHD_Result gw_respond_queue(struct gw_req *q, int status, struct MHD_Response *resp)
{
    assert(q->status == 0 && q->step != GW_STEP_RESPONDED); /* one response per request */
    assert(status > 0);
    gw_respond_common_headers(q, resp);
    enum MHD_Result ret = MHD_queue_response(q->conn, (unsigned)status, resp);
    q->status = (unsigned)status;
    MHD_destroy_response(resp);
    return ret;
}

/* An S3 XML error body of code and message, for q's resource and request id. */
static enum MHD_Result respond_error(struct gw_req *q, int status, const char *code,
                                     const char *message)
{
    char *body = NULL;
    size_t len = 0;
    const char *resource = q->have_target ? q->tgt.raw_path : "/";
    if (s3_xml_error_body(code, message, resource, q->request_id, &body, &len) != SC_OK)
        return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    q->peer.failed = status >= 500;
    sc_debug("%s %s -> %d %s", q->method, q->target, status, code);
    return gw_respond_queue(q, status, resp);
}

enum MHD_Result gw_respond_known_error(struct gw_req *q, enum s3_xml_error e, const char *message)
{
    const struct s3_xml_error_info *info = s3_xml_error_info(e);
    return respond_error(q, info->status, info->code, message ? message : info->message);
}

struct MHD_Response *gw_respond_buffer(const char *content_type, void *body, size_t len,
                                       enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
    if (resp == NULL) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return NULL;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    return resp;
}

struct MHD_Response *gw_respond_empty(void)
{
    return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
}

static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_OF_STREAM;
}

struct MHD_Response *gw_respond_head(uint64_t len)
{
    return MHD_create_response_from_callback(len == GW_LENGTH_UNKNOWN ? MHD_SIZE_UNKNOWN : len,
                                             4096, no_body, NULL, NULL);
}

struct MHD_Response *gw_respond_iovec(const struct iovec *iov, size_t n, void (*release)(void *),
                                      void *arg)
{
    struct MHD_IoVec *miov = calloc(n ? n : 1, sizeof(*miov));
    if (miov == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        miov[i] = (struct MHD_IoVec){iov[i].iov_base, iov[i].iov_len};
    struct MHD_Response *resp = MHD_create_response_from_iovec(miov, (unsigned)n, release, arg);
    free(miov); /* libmicrohttpd copied the vector, not the bytes */
    return resp;
}
