/*
 * origin.h - where the bytes of a cache miss come from.
 *
 * Today the origin is the upstream bucket. This is the one seam through
 * which every fill fetches, so that a cluster of gateways can later ask a
 * peer that holds the object before going to the bucket, without the fill
 * logic knowing. Pass-through requests do not come here: they always go to
 * the bucket.
 */
#ifndef GW_ORIGIN_H
#define GW_ORIGIN_H

#include "upstream.h"

struct origin {
    upstream *bucket; /* the configured upstream */
};

/*
 * @brief Fetches a whole object (GET, no conditions, x-amz-checksum-mode: ENABLED so that a
 * full-object checksum comes with it) for a cache fill, signed as `as` says (the client that
 * started the fill, or the gateway).
 * Callbacks and ownership as for up_submit().
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, const struct up_handler *h, void *arg,
                     up_req **out);

/*
 * @brief Fetches bytes [first, last] of an object for a block of the cache: GET with
 * "Range: bytes=first-last" and "If-Match: etag", so that the bytes are of that version or
 * the answer is 412; etag NULL asks without If-Match (an opening, block_fetch.h: the answer
 * names its version). Signed as `as`; the response must not run past its Content-Length.
 * Callbacks and ownership as for up_submit().
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_fetch_range(struct origin *o, const char *bucket, const char *key,
                           const struct up_identity *as, uint64_t first, uint64_t last,
                           const char *etag, const struct up_handler *h, void *arg, up_req **out);

/*
 * @brief Asks for an object's head (HEAD), signed as `as`: after a block's bytes arrived,
 * whether the object is still of the version they were fetched at.
 * Callbacks and ownership as for up_submit().
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_head(struct origin *o, const char *bucket, const char *key,
                    const struct up_identity *as, const struct up_handler *h, void *arg,
                    up_req **out);

#endif
