/* origin.c - the source of cache fills: the owning fleet peer, then the bucket (see origin.h). */
#include "origin.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "../proto/digest.h"

sc_code origin_init(struct origin *o, upstream *bucket, fleet *f, enum fleet_copy copy,
                    uint32_t block_size)
{
    *o = (struct origin){.bucket = bucket, .fleet = f, .copy = copy, .block_size = block_size};
    if (f != NULL && copy == FLEET_COPY_HOT)
        return ghost_set_new(ORIGIN_HOT_NAMES, ORIGIN_HOT_WINDOW, &o->hot);
    return SC_OK;
}

void origin_cleanup(struct origin *o)
{
    ghost_set_free(o->hot);
    o->hot = NULL;
}

static const char *const copy_names[] = {"none", "hot", "all"};

sc_code fleet_copy_parse(const char *text, enum fleet_copy *out)
{
    for (unsigned i = 0; i < sizeof(copy_names) / sizeof(copy_names[0]); i++)
        if (text != NULL && strcmp(text, copy_names[i]) == 0) {
            *out = (enum fleet_copy)i;
            return SC_OK;
        }
    return SC_EINVAL;
}

const char *fleet_copy_name(enum fleet_copy copy)
{
    return (unsigned)copy < sizeof(copy_names) / sizeof(copy_names[0]) ? copy_names[copy] : "?";
}

/* The peer to ask first for name (its URL in *owner), or NULL: the bucket. */
static const char *owner_peer(struct origin *o, uint64_t name, struct fleet_owner *owner)
{
    if (o->fleet == NULL)
        return NULL;
    fleet_owner_of(o->fleet, name, owner);
    return owner->self ? NULL : owner->url;
}

/* Whether what is fetched of name may be stored here: the copy rule for a peer's names. */
static bool keeps(struct origin *o, uint64_t name, bool from_peer)
{
    if (!from_peer)
        return true;
    switch (o->copy) {
    case FLEET_COPY_NONE:
        return false;
    case FLEET_COPY_HOT:
        return o->hot == NULL || ghost_seen(o->hot, name, sc_now_seconds());
    case FLEET_COPY_ALL:
        break;
    }
    return true;
}

/* Where a fetch of name goes: the peer to ask first (NULL: the bucket), told in *way (unless
 * NULL) with whether to store what comes. */
static const char *route(struct origin *o, uint64_t name, struct fleet_owner *owner,
                         struct origin_route *way)
{
    const char *peer = owner_peer(o, name, owner);
    if (way != NULL) {
        way->peer = peer != NULL;
        way->keep = !way->by_rule || keeps(o, name, way->peer);
    }
    return peer;
}

sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, struct origin_route *way,
                     const struct up_handler *h, void *arg, up_req **out)
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
    struct fleet_owner owner;
    req.peer = route(o, sc_key_hash(bucket, key), &owner, way);
    return up_submit(o->bucket, &req, h, arg, out);
}

/* A ranged GET of [first, last] (If-Match etag unless NULL), to the bucket unless peer. */
static sc_code fetch_range(struct origin *o, const char *bucket, const char *key,
                           const struct up_identity *as, uint64_t first, uint64_t last,
                           const char *etag, const char *peer, const struct up_handler *h,
                           void *arg, up_req **out)
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
        .peer = peer,
    };
    return up_submit(o->bucket, &req, h, arg, out);
}

sc_code origin_fetch_range(struct origin *o, const char *bucket, const char *key,
                           const struct up_identity *as, uint64_t first, uint64_t last,
                           const char *etag, struct origin_route *way, const struct up_handler *h,
                           void *arg, up_req **out)
{
    struct fleet_owner owner;
    const char *peer =
        route(o, fleet_range_name(sc_key_hash(bucket, key), first, o->block_size), &owner, way);
    return fetch_range(o, bucket, key, as, first, last, etag, peer, h, arg, out);
}

sc_code origin_bucket_range(struct origin *o, const char *bucket, const char *key,
                            const struct up_identity *as, uint64_t first, uint64_t last,
                            const char *etag, const struct up_handler *h, void *arg, up_req **out)
{
    return fetch_range(o, bucket, key, as, first, last, etag, NULL, h, arg, out);
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
