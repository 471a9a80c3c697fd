/* deliver.c - relay -> client (see deliver.h). */
#include "deliver.h"

#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "req.h"
#include "respond.h"

/* The upstream's request ids pass: its error bodies name them (gw_respond_common_headers). */
static const char *const dropped_response_headers[] = {
    "connection",     "keep-alive", "transfer-encoding",
    "content-length", "upgrade",    "proxy-authenticate",
    "trailer",        "te",         "server",
};

/* False for hop-by-hop and per-hop upstream response headers. */
static bool passes_header(const char *name)
{
    for (size_t i = 0; i < sizeof(dropped_response_headers) / sizeof(dropped_response_headers[0]);
         i++)
        if (strcasecmp(name, dropped_response_headers[i]) == 0)
            return false;
    return true;
}

void gw_deliver_drop(struct gw_req *q)
{
    relay *r = q->deliver.relay;
    if (r == NULL)
        return;
    relay_unpark(r, &q->waiter);
    relay_detach(r, &q->deliver.cursor);
    relay_unref(r);
    q->deliver.relay = NULL;
}

static void drop_at_end(void *arg)
{
    gw_deliver_drop(arg);
}

void gw_deliver_use(struct gw_req *q, relay *r)
{
    gw_deliver_drop(q);
    relay_ref(r);
    q->deliver.relay = r;
    gw_req_cleanup_add(q, drop_at_end, q);
}

const struct relay_head *gw_deliver_head(struct gw_req *q, bool *failed)
{
    *failed = false;
    return relay_head(q->deliver.relay, &q->waiter, failed);
}

static ssize_t read_relay(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct gw_req *q = cls;
    if (q->deliver.len != GW_LENGTH_UNKNOWN) {
        uint64_t left = q->deliver.start + q->deliver.len - q->deliver.cursor.pos;
        if (left == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (max > left)
            max = (size_t)left;
    }
    ssize_t n = relay_read(q->deliver.relay, &q->deliver.cursor, buf, max, &q->waiter);
    if (n == RELAY_AGAIN)
        return 0; /* the connection is suspended until data arrives */
    if (n == RELAY_ERROR)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    q->bytes_out += (uint64_t)n;
    return n;
}

struct MHD_Response *gw_deliver_stream(struct gw_req *q, uint64_t start, uint64_t len)
{
    q->deliver.start = start;
    q->deliver.len = len;
    relay_attach(q->deliver.relay, &q->deliver.cursor, start);
    return MHD_create_response_from_callback(len == GW_LENGTH_UNKNOWN ? MHD_SIZE_UNKNOWN : len,
                                             64 * 1024, read_relay, q, NULL);
}

void gw_deliver_relayed_headers(struct MHD_Response *resp, const struct relay_head *h)
{
    for (size_t i = 0; i < h->n_headers; i++) {
        if (passes_header(h->headers[i].name))
            MHD_add_response_header(resp, h->headers[i].name, h->headers[i].value);
    }
}

enum MHD_Result gw_deliver_as_upstream(struct gw_req *q, const struct relay_head *h)
{
    bool bodiless = h->status == 204 || h->status == 304 || h->status < 200;
    bool head = strcmp(q->method, "HEAD") == 0;
    uint64_t len = h->content_length >= 0 ? (uint64_t)h->content_length : GW_LENGTH_UNKNOWN;
    if (bodiless && !head)
        len = 0;
    struct MHD_Response *resp = head ? gw_respond_head(len) : gw_deliver_stream(q, 0, len);
    if (resp == NULL)
        return MHD_NO;
    gw_deliver_relayed_headers(resp, h);
    return gw_respond_queue(q, (int)h->status, resp);
}

enum MHD_Result gw_deliver_refuse_lie(struct gw_req *q, const char *what, long status)
{
    sc_warn("upstream answered %s of %s/%s with status %ld: refused as a bad gateway", what,
            q->tgt.bucket, q->tgt.key, status);
    return gw_respond_known_error(q, S3_XML_BAD_GATEWAY, NULL);
}
