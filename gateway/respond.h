/*
 * respond.h - the one place a response is queued, and where every response whose body is
 * in memory (an error, the API's JSON, a hit in LMDB's map, none at all) is built; bodies
 * streamed from a relay are built by deliver.h. gw_respond_queue() and
 * gw_respond_known_error() send, and return what libmicrohttpd is told (MHD_NO closes the
 * connection), which a step turns into its result with GW_SENT() (step.h); the others build
 * a response for the caller to add headers to and queue.
 */
#ifndef GW_RESPOND_H
#define GW_RESPOND_H

#include <microhttpd.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../proto/s3_xml.h"
#include "gw.h"

/*
 * Sends the S3 XML error of the gateway's error table (s3_xml.h) for e, with its
 * usual message, or message when one helps more (q->status is set). Every S3 error the
 * gateway answers itself goes through here, so a code always has one status and one
 * usual message; errors the upstream sent are relayed as they came (deliver.c).
 */
enum MHD_Result gw_respond_known_error(struct gw_req *q, enum s3_xml_error e, const char *message);

/*
 * A response of the len bytes at body, of content_type, that no client caches
 * (the gateway's own API and probes). With MHD_RESPMEM_MUST_FREE the response owns body,
 * also when it cannot be made (NULL: out of memory).
 */
struct MHD_Response *gw_respond_buffer(const char *content_type, void *body, size_t len,
                                       enum MHD_ResponseMemoryMode mode);

/* Adds the headers every response carries: the request id (x-amz-request-id, x-amz-id-2), or,
 * when resp already has the upstream's, x-s3cached-request-id beside them; and FLEET_H_REFUSED
 * when q was refused as a peer request (q->peer.refused, auth.c). */
void gw_respond_common_headers(struct gw_req *q, struct MHD_Response *resp);

/* Queues resp with status, adds common headers, destroys the caller's reference. At most once
 * per request (asserted); q->status says it was done. */
enum MHD_Result gw_respond_queue(struct gw_req *q, int status, struct MHD_Response *resp);

/* The length a response announces when it is not known (sent until the connection ends). */
#define GW_LENGTH_UNKNOWN UINT64_MAX

/* @brief A response without a body and without Content-Length's promise of one (a 304).
 * NULL when out of memory. */
struct MHD_Response *gw_respond_empty(void);

/* @brief The response to a HEAD: it announces len bytes (GW_LENGTH_UNKNOWN: unknown) and sends
 * none. NULL when out of memory. */
struct MHD_Response *gw_respond_head(uint64_t len);

/*
 * @brief A response whose body is the n byte ranges of iov, sent without copying them: they
 * must stay valid until release(arg) is called, when libmicrohttpd is done with them (also if
 * the client goes away). On failure (NULL) release is not called.
 */
struct MHD_Response *gw_respond_iovec(const struct iovec *iov, size_t n, void (*release)(void *),
                                      void *arg);

#endif
