/*
 * xcache.h - the X-Cache of an answer read by blocks (blocks.c): HIT when none of its blocks
 * needed upstream work for this request, PARTIAL when some did not, MISS when all did.
 */
#ifndef GW_XCACHE_H
#define GW_XCACHE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * @brief Whether one block of the answer needed no upstream work for this request: the store
 * holds it, or another request's fetch has it whole. The request's own block (the one its
 * fill or its opening fetched for it) never counts, even once stored: its bytes came from the
 * upstream for this request, and a first read of a cold object is a MISS however soon its
 * block 0 reaches the store.
 */
bool gw_xcache_block_counts(bool own, bool stored, bool arrived);

/* @brief "HIT" when counted == all, "PARTIAL" when 0 < counted < all, "MISS" when none. */
const char *gw_xcache_of(uint64_t counted, uint64_t all);

#endif
