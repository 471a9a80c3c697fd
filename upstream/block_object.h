/*
 * block_object.h - every block of a large object, or of a run of its blocks, fetched into the
 * cache a few at a time (a manifest's warm-up of a WebDataset or MDS shard, or of the byte range
 * of a tokenized file or a parquet row group it names), through block_fetch.h's fetches.
 */
#ifndef GW_BLOCK_OBJECT_H
#define GW_BLOCK_OBJECT_H

#include "block_fetch.h"

/* How a fetch by blocks ended: rc SC_OK when every block asked for is cached now. */
typedef void (*block_object_fn)(void *arg, sc_code rc, uint64_t bytes_fetched);

/*
 * @brief Fetches every block of the object b names (b->idx is ignored) that store st lacks
 * at b->etag, at most `parallelism` at a time, signed as `as` (a manifest's warm-up of a
 * large object). done follows exactly once, on the calling, upstream or store thread.
 * @return SC_OK (done follows), SC_EINVAL, SC_ENOMEM; on error done is not called.
 */
sc_code block_object_fetch(block_table *t, store *st, const struct block_ref *b,
                           const struct up_identity *as, unsigned parallelism, block_object_fn done,
                           void *arg);

/*
 * @brief block_object_fetch() for blocks first..last (inclusive) only: the blocks a byte range
 * covers (a manifest's ranged item). done as there.
 * @return SC_OK (done follows), SC_EINVAL (also first > last, or last past the object's last
 *         block), SC_ENOMEM; on error done is not called.
 */
sc_code block_object_fetch_range(block_table *t, store *st, const struct block_ref *b,
                                 uint32_t first, uint32_t last, const struct up_identity *as,
                                 unsigned parallelism, block_object_fn done, void *arg);

#endif
