/* origin.c - the source of cache fills: the upstream bucket (see origin.h). */
#include "origin.h"

/* Asked always, so that the object's checksums are stored with it and a client asking
 * for them on a hit gets them as from S3 (serve.c). */
static const struct up_header ask_checksums = {"x-amz-checksum-mode", "ENABLED"};

sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, const struct up_handler *h, void *arg,
                     up_req **out)
{
    struct up_request req = {
        .method = "GET",
        .bucket = bucket,
        .key = key,
        .query = NULL,
        .headers = &ask_checksums,
        .n_headers = 1,
        .body_length = -1,
        .idempotent = true,
        .exact_length = true,
        .as = *as,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}
