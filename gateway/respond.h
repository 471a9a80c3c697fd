/*
 * respond.h - the one place a response is built and queued. Every step answers
 * through these; each returns what libmicrohttpd is told (MHD_NO closes the
 * connection), which a step turns into its result with GW_SENT() (gw.h).
 */
#ifndef GW_RESPOND_H
#define GW_RESPOND_H

#include <microhttpd.h>

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
struct MHD_Response *gw_buffer_response(const char *content_type, void *body, size_t len,
                                        enum MHD_ResponseMemoryMode mode);

/* Adds the headers every response carries: the request id (x-amz-request-id, x-amz-id-2), or,
 * when resp already has the upstream's, x-s3cached-request-id beside them. */
void gw_add_common_headers(struct gw_req *q, struct MHD_Response *resp);

/* Queues resp with status, adds common headers, destroys the caller's reference. At most once
 * per request (asserted); q->status says it was done. */
enum MHD_Result gw_queue(struct gw_req *q, int status, struct MHD_Response *resp);

#endif
