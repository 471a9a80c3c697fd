/*
 * origin.h - where the bytes of a cache miss come from.
 *
 * The bucket, or first the fleet peer that owns the name (fleet.h): a whole object's name is
 * sc_key_hash(bucket, key), a range's is the name of the block its first byte lies in
 * (sc_block_key_hash). When the owner is another peer, the request asks it first and falls
 * back to the bucket by itself when the peer fails (upstream.h: the caller sees one response).
 * HEADs (version checks, freshness) always go to the bucket, and so do pass-through requests,
 * which do not come here.
 *
 * Whether what a peer gave is stored here too is the fleet's copy rule (--fleet-copy):
 * none, all, or hot (stored when the same name was asked of a peer before, within
 * ORIGIN_HOT_WINDOW seconds; remembered in a ghost set of ORIGIN_HOT_NAMES names).
 */
#ifndef GW_ORIGIN_H
#define GW_ORIGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "../fleet/fleet.h"
#include "ghost.h"
#include "upstream.h"

/* Whether an asker keeps a copy of what a peer gave it (--fleet-copy). */
enum fleet_copy {
    FLEET_COPY_NONE, /* relayed to its readers, verified, never stored: most distinct capacity */
    FLEET_COPY_HOT,  /* stored when asked of a peer a second time within the window */
    FLEET_COPY_ALL,  /* stored as any fill: saves the hop next time */
};

/* Where a fetch went, for a caller that stores what it fetches (origin_fetch, _range). */
struct origin_route {
    bool by_rule; /* in: the copy rule applies (a reader's miss); false: stored anyway (a
                     prefetch), and the hot rule's ghosts are left alone */
    bool keep;    /* out: what arrives may be stored here (false only when another peer owns
                     the name and the copy rule says no) */
    bool peer;    /* out: a peer is asked first (its answers say what the peer does, not the
                     bucket: block_fetch.c learns whether the bucket honors If-Match) */
};

#define ORIGIN_HOT_WINDOW 600.0 /* seconds */
#define ORIGIN_HOT_NAMES  16384

struct origin {
    upstream *bucket;     /* the configured upstream */
    fleet *fleet;         /* NULL: no fleet, every miss goes to the bucket */
    enum fleet_copy copy; /* with a fleet */
    uint32_t block_size;  /* names a range by its block (0: by its object) */
    ghost_set *hot;       /* FLEET_COPY_HOT: names asked of a peer lately */
};

/*
 * @brief Sets up an origin: bucket always, fleet may be NULL (then copy is not used).
 * Borrowed pointers must outlive the origin.
 * @return SC_OK, SC_ENOMEM (the ghost set of the hot rule).
 */
sc_code origin_init(struct origin *o, upstream *bucket, fleet *f, enum fleet_copy copy,
                    uint32_t block_size);

/* @brief Frees what origin_init() allocated. */
void origin_cleanup(struct origin *o);

/* @brief Parses "none", "hot" or "all". @return SC_OK or SC_EINVAL. */
sc_code fleet_copy_parse(const char *text, enum fleet_copy *out);

/* @brief "none", "hot" or "all". */
const char *fleet_copy_name(enum fleet_copy copy);

/*
 * @brief Fetches a whole object (GET, no conditions, x-amz-checksum-mode: ENABLED so that a
 * full-object checksum comes with it) for a cache fill, signed as `as` says (the client that
 * started the fill, or the gateway); from its owner first when that is another peer.
 * Callbacks and ownership as for up_submit().
 * @param[in,out] route may be NULL (no copy rule): see struct origin_route.
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_fetch(struct origin *o, const char *bucket, const char *key,
                     const struct up_identity *as, struct origin_route *route,
                     const struct up_handler *h, void *arg, up_req **out);

/*
 * @brief Fetches bytes [first, last] of an object for a block of the cache: GET with
 * "Range: bytes=first-last" and "If-Match: etag", so that the bytes are of that version or
 * the answer is 412; etag NULL asks without If-Match (an opening, block_fetch.h: the answer
 * names its version). Signed as `as`; the response must not run past its Content-Length.
 * From the owner of the block of `first` first, when that is another peer.
 * Callbacks and ownership as for up_submit().
 * @param[in,out] route as for origin_fetch(), for the block's name.
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_fetch_range(struct origin *o, const char *bucket, const char *key,
                           const struct up_identity *as, uint64_t first, uint64_t last,
                           const char *etag, struct origin_route *route, const struct up_handler *h,
                           void *arg, up_req **out);

/*
 * @brief origin_fetch_range() from the bucket only: what the bucket itself does (whether it
 * honors If-Match, block_fetch.c), never a peer's answer.
 */
sc_code origin_bucket_range(struct origin *o, const char *bucket, const char *key,
                            const struct up_identity *as, uint64_t first, uint64_t last,
                            const char *etag, const struct up_handler *h, void *arg, up_req **out);

/*
 * @brief Asks for an object's head (HEAD), signed as `as`, of the bucket: after a block's
 * bytes arrived, whether the object is still of the version they were fetched at.
 * Callbacks and ownership as for up_submit().
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED.
 */
sc_code origin_head(struct origin *o, const char *bucket, const char *key,
                    const struct up_identity *as, const struct up_handler *h, void *arg,
                    up_req **out);

#endif
