/*
 * blocks.h - GET and HEAD of a large object, read by blocks (see store.h's block objects).
 *
 * The object's metadata (size, ETag, the headers to replay) comes from the store, from a
 * fill's head, or from a HEAD asked for a range of an object not cached yet. The answer
 * (conditionals, then Range) is decided on it; the body is then sent block by block: each
 * block from the store when it holds the block at that ETag, else from its block fetch
 * (block_fetch.h), with up to --fetch-parallelism fetches kept running ahead of the reader,
 * in order. One response is of one ETag: a block found of another version fails the
 * transfer (before the first byte, the object is dropped and fetched afresh once).
 * X-Cache says HIT (every block of the answer was cached), PARTIAL (some) or MISS (none).
 *
 * Steps: GW_STEP_BLOCK_META (the answer of that HEAD) and GW_STEP_BLOCKS (the answer).
 */
#ifndef GW_BLOCKS_H
#define GW_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw.h"

struct http_header;

/* The metadata of one version of a large object. Strings are borrowed for the call. */
struct gw_blocks_meta {
    const char *etag; /* the ETag header's value, quotes included; required */
    const char *hdrs; /* the header blob to replay (hdrblob.h) */
    size_t hdrs_len;
    uint64_t size;
    uint32_t block_size; /* the store's record's (cached), else --block-size */
    bool from_cache;     /* read from the store: a HEAD or a bodiless answer is a hit */
    bool stale;          /* served although its revalidation failed (a Warning says so) */
};

/* @brief Takes the metadata GW_STEP_BLOCKS answers from (copied).
 * @return SC_OK, SC_EINVAL (no ETag), SC_ENOMEM. */
sc_code gw_blocks_take_meta(struct gw_req *q, const struct gw_blocks_meta *m);

/* @brief gw_blocks_take_meta() from an upstream head of a 200 of size bytes, not cached. */
sc_code gw_blocks_take_head(struct gw_req *q, const struct http_header *headers, size_t n,
                            uint64_t size);

/* @brief True when an object of size bytes is read by blocks: over --block-size, and not
 * over --max-object-size. */
bool gw_blocks_is_large(const struct gw_req *q, uint64_t size);

/*
 * @brief Before a GET with Range misses: asks the upstream for the object's size and version,
 * so that a range of a large object fetches only its blocks. Asked with a GET of the range's
 * first block (block_fetch_open, signed as q->as) whose bytes then start the answer: one
 * round trip, as going direct; with a HEAD for a suffix range, or when that GET was not
 * answered as a range.
 * @return true and *next (GW_STEP_BLOCK_META) when it asked; false when there is nothing to
 *         ask (not a ranged GET, or asked already): go on with the miss.
 */
bool gw_blocks_ask_size(struct gw_req *q, struct gw_next *next);

/* @brief GW_STEP_BLOCK_META: a large object goes on to GW_STEP_BLOCKS with its metadata
 * recorded; anything else (small, an error, no answer) to GW_STEP_MISS, or to a HEAD when
 * the opening GET's answer said nothing either way. */
struct gw_next gw_blocks_meta_answer(struct gw_req *q);

/* @brief GW_STEP_BLOCKS: answers from the metadata q took. Next: done, wait (the first
 * block's fetch has no head yet), or GW_STEP_MISS (the object changed: fetched afresh). */
struct gw_next gw_blocks_serve(struct gw_req *q);

#endif
