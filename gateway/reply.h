/*
 * reply.h - the parts of an answer to GET or HEAD Object that do not depend on where the
 * bytes come from (a whole cached object, a fill, cached or fetched blocks): the decision
 * from the conditional and Range headers, the bodiless answers, and the object's headers.
 */
#ifndef GW_REPLY_H
#define GW_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>
#include <sys/uio.h>

#include "../proto/answer.h"
#include "../store/store.h"
#include "gw.h"

/*
 * @brief A response whose body is n iovecs into the store's map, sent as they are. It takes
 * over view, whose read transaction keeps those bytes in place, and closes it when freed.
 * @return the response, or NULL (out of memory; view is still the caller's).
 */
struct MHD_Response *gw_reply_from_view(store_obj *view, const struct iovec *iov, size_t n);

/* @brief The answer to q's conditional and Range headers for an object of that ETag,
 * Last-Modified (either may be NULL) and size, with S3's precedence (answer.h). */
struct answer gw_reply_decide(struct gw_req *q, const char *etag, const char *last_modified,
                              uint64_t size);

/* @brief Sends the 304, 412 or 416 of an answer without a body. @return what the access
 * handler returns. */
enum MHD_Result gw_reply_bodiless(struct gw_req *q, const struct answer *a, uint64_t size,
                                  const char *etag, const char *last_modified);

/*
 * @brief True if the object's header name goes out on an answer of this status: the
 * object's checksums (x-amz-checksum-*) only on a whole object to a client that asked
 * (x-amz-checksum-mode: ENABLED), as S3 sends them; on a part they would not match.
 */
bool gw_reply_sends_header(struct gw_req *q, const char *name, int status);

/* @brief Adds the headers of a header blob (hdrblob.h) that go out on this status. */
void gw_reply_blob_headers(struct gw_req *q, struct MHD_Response *resp, const char *blob,
                           size_t len, int status);

/* @brief Adds Accept-Ranges and, on a 206, the Content-Range of a in an object of size. */
void gw_reply_range_headers(struct MHD_Response *resp, const struct answer *a, uint64_t size);

#endif
