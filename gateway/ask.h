/*
 * ask.h - a HEAD of the request's object to the upstream, signed as the request's
 * identity, while the client's connection waits suspended. Revalidation
 * (revalidate.c) and authorization checks (authz.c) both ask this way.
 *
 * The caller calls gw_ask_head(), then returns GW_WAIT with the step that reads
 * the answer; the connection is suspended before the HEAD exists, so the answer
 * can never resume it too early, and the HEAD's last callback resumes it: the
 * dispatcher then runs that step, which reads the gw_ask.
 */
#ifndef GW_ASK_H
#define GW_ASK_H

#include <microhttpd.h>

#include "../upstream/upstream.h"

#define GW_ASK_ETAG_MAX 80

/* One question in flight, and its answer once the connection is resumed. */
struct gw_ask {
    struct gw_req *q;
    up_req *req;
    long status;                /* the answer's status, 0 if none came */
    char etag[GW_ASK_ETAG_MAX]; /* the answer's ETag, "" if none */
    int64_t length;             /* the answer's Content-Length, -1 if none */
    bool keep_headers;          /* asked to keep the object's headers */
    char *hdrs;                 /* then those of a 200 (hdrblob.h), owned; NULL if none */
    size_t hdrs_len;
    sc_code result; /* of the upstream request */
};

struct gw_req;

/*
 * @brief Suspends q and sends the HEAD, with header (may be NULL) added. A failure to
 * send is an answer too (result set, connection resumed at once). Signed as q->as. The
 * request is released when q is finished, if gw_ask_release() was not called before.
 * keep_headers: a 200's replayable headers are kept in a->hdrs.
 */
void gw_ask_head(struct gw_req *q, struct gw_ask *a, const struct http_header *header,
                 bool keep_headers);

/* @brief Releases the upstream request, cancelling it if it still runs, and the headers
 * kept. Safe when idle. */
void gw_ask_release(struct gw_ask *a);

#endif
