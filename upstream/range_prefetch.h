/*
 * range_prefetch.h - a byte range of an object warmed into the cache with no client reading
 * it: a manifest's ranged item (a sample of a tokenized file, a parquet row group).
 *
 * An object not larger than the block size is cached whole, so it is warmed whole, by a fill
 * (fill_prefetch). Of a large one, only the blocks the range covers are fetched
 * (block_object_fetch_range, `parallelism` of the fill table's context at a time). What the
 * object is (its size and ETag) comes from the store when it holds the object's metadata at
 * the context's block size; else from a HEAD signed as the gateway, whose answer is recorded
 * as the object's metadata (fill_put_meta: not if a write to the key began since the HEAD was
 * sent) before the blocks are fetched. A cold range thus costs a HEAD and its blocks, never
 * the rest of the object. Blocks fetched at the store's ETag that the upstream no longer
 * serves (the object was replaced there: SC_EMISMATCH) are asked for once more through the
 * HEAD, which records the new version. A range that starts past the object's end warms
 * nothing, of a small object as of a large one.
 */
#ifndef GW_RANGE_PREFETCH_H
#define GW_RANGE_PREFETCH_H

#include <stdint.h>

#include "fill.h"

/*
 * @brief Warms bytes [first, last] of (bucket, key) (last may lie past the object's end).
 * w->done follows exactly once, on the calling, upstream or store thread, and must not block,
 * with a fill_result: rc SC_OK when the blocks the range covers (or the whole object, when it
 * is stored whole) are cached now (also for a range that starts past the end: nothing to
 * warm); SC_ENOTFOUND (404), SC_EUPSTREAM (another status, or no answer), SC_EINVAL (no ETag),
 * SC_ECANCELED (a write to the key in flight, or shutting down), or the outcome of a block or
 * of the fill (SC_EFULL: the store refused). size is the object's size when known.
 * w->arrived may come before it only when the object is stored whole (fill_prefetch); the
 * blocks of a large one are in flight until stored.
 * @param[in] w copied.
 * @return SC_OK (done follows), SC_EINVAL (first > last, or the table fetches no blocks),
 *         SC_ENOMEM, SC_ECANCELED; on error no callback is called.
 */
sc_code range_prefetch(fill_table *t, const char *bucket, const char *key, uint64_t first,
                       uint64_t last, const struct fill_watcher *w);

#endif
