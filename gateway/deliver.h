/*
 * deliver.h - relay -> client: the bytes of a relay (a fill's, or a pass-through's)
 * streamed as a response body, shared by misses, ranges and pass-through.
 *
 * The request reads one relay at a time (q->deliver), holding a reference to it, and
 * parks its connection through q->waiter when there is nothing to read yet.
 */
#ifndef GW_DELIVER_H
#define GW_DELIVER_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "gw.h"
#include "respond.h"

/* @brief Makes r the relay q reads (a reference is taken), after letting go of the one it
 * read before; the cleanup that lets go when q is finished is registered here. */
void gw_deliver_use(struct gw_req *q, relay *r);

/* @brief Lets go of the relay q reads, if any (unparked, detached, unreferenced). */
void gw_deliver_drop(struct gw_req *q);

/* @brief The head of the relay q reads; NULL after parking q's connection until it arrives,
 * or, with *failed set, when the transfer failed without one. */
const struct relay_head *gw_deliver_head(struct gw_req *q, bool *failed);

/* @brief A response that streams [start, start + len) of the relay's body (len may be
 * GW_LENGTH_UNKNOWN). NULL when out of memory. */
struct MHD_Response *gw_deliver_stream(struct gw_req *q, uint64_t start, uint64_t len);

/* @brief Adds the upstream's response headers that pass to resp. */
void gw_deliver_relayed_headers(struct MHD_Response *resp, const struct relay_head *h);

/* @brief Relays the upstream's answer h as it is (status, headers, body), for a request of
 * q->method. @return what the access handler returns. */
enum MHD_Result gw_deliver_as_upstream(struct gw_req *q, const struct relay_head *h);

/* @brief Refuses an answer the upstream cannot have given to what was asked (what: "a fill",
 * "a forwarded read") with 502, logged. @return what the access handler returns. */
enum MHD_Result gw_deliver_refuse_lie(struct gw_req *q, const char *what, long status);

#endif
