/* origin.c - the source of cache fills: the upstream bucket (see origin.h). */
#include "origin.h"

#include <inttypes.h>
#include <stdio.h>

#include "../proto/digest.h"

sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, const struct up_handler *h, void *arg,
                     up_req **out)
{
    /* The full-object checksum, for bodies whose ETag is no MD5 (digest.h). */
    static const struct http_header checksum_mode = {DIGEST_MODE_HEADER, DIGEST_MODE_VALUE};
    struct up_request req = {
        .method = "GET",
        .bucket = bucket,
        .key = key,
        .query = NULL,
        .headers = &checksum_mode,
        .n_headers = 1,
        .body_length = -1,
        .idempotent = true,
        .exact_length = true,
        .as = *as,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}

sc_code origin_fetch_range(struct origin *o, const char *bucket, const char *key,
                           const struct up_identity *as, uint64_t first, uint64_t last,
                           const char *etag, const struct up_handler *h, void *arg, up_req **out)
{
    char range[64];
    snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, first, last);
    const struct http_header headers[] = {{"Range", range}, {"If-Match", etag}};
    struct up_request req = {
        .method = "GET",
        .bucket = bucket,
        .key = key,
        .headers = headers,
        .n_headers = etag != NULL ? 2 : 1, /* no If-Match: whichever version is there */
        .body_length = -1,
        .idempotent = true,
        .exact_length = true,
        .as = *as,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}

sc_code origin_head(struct origin *o, const char *bucket, const char *key,
                    const struct up_identity *as, const struct up_handler *h, void *arg,
                    up_req **out)
{
    struct up_request req = {
        .method = "HEAD",
        .bucket = bucket,
        .key = key,
        .body_length = -1,
        .idempotent = true,
        .as = *as,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}
