/* origin.c - the source of cache fills: the upstream bucket (see origin.h). */
#include "origin.h"

sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, const struct up_handler *h, void *arg,
                     up_req **out)
{
    struct up_request req = {
        .method = "GET",
        .bucket = bucket,
        .key = key,
        .query = NULL,
        .headers = NULL,
        .n_headers = 0,
        .body_length = -1,
        .idempotent = true,
        .exact_length = true,
        .as = *as,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}
