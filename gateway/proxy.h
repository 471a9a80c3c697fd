/*
 * proxy.h - the steps of a request forwarded upstream as it came (proxy.c): the request
 * body streamed up, the answer relayed back (deliver.h).
 */
#ifndef GW_PROXY_H
#define GW_PROXY_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "gw.h"

/*
 * @brief GW_STEP_PROXY: prepares the transfer (and notes what a write changes). Next:
 * GW_STEP_UPLOAD when a body goes up, else GW_STEP_PASS_HEAD (the request went); done
 * when refused.
 */
struct gw_next gw_proxy_start(struct gw_req *q);

/*
 * @brief GW_STEP_UPLOAD: takes the call's body bytes (q->in_data, *q->in_size) into the
 * pipe; at the body's end (a call without bytes), checks it and lets it go. Next: wait
 * for more bytes (the connection may be parked while the pipe is full), done (a bad
 * body), or GW_STEP_PASS_HEAD.
 */
struct gw_next gw_proxy_upload(struct gw_req *q);

/*
 * @brief GW_STEP_PASS_HEAD: once the upstream's head is in, drops the cached copies the
 * request changed and relays the answer as it is; a read answered with a status that
 * cannot be an answer to it is refused (502). Next: wait, or done.
 */
struct gw_next gw_proxy_pass_head(struct gw_req *q);

/*
 * @brief Fetches bytes [start, start + len) of the request's object with an explicit
 * ranged GET, If-Match: etag (the version the fill serves), into a fresh windowed relay
 * that q then reads (q->serve.fill is kept).
 */
sc_code gw_proxy_fetch_range(struct gw_req *q, uint64_t start, uint64_t len, const char *etag);

/*
 * @brief False if q's body would go upstream but q does not say how long it is
 * (Transfer-Encoding: chunked without a Content-Length, or aws-chunked without
 * x-amz-decoded-content-length). Needs q's target; reads only its headers.
 */
bool gw_proxy_length_known(struct gw_req *q);

/* @brief Ends q's transfer (canceled if it still runs), e.g. a range fetched beside a fill
 * that is read from the fill instead. No-op without one; also run when q is finished. */
void gw_proxy_end(struct gw_req *q);

#endif
