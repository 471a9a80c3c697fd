/*
 * block_set.h - the blocks of objects one prefetch walk has charged to its budget, so that
 * ranged items sharing a block (samples of a tokenized file, several ranges of one small
 * object) charge it once per walk, and whether a fetch of each is already on its way.
 *
 * An entry is (khash, block): an object's sc_key_hash() and a block index, or
 * BLOCK_SET_WHOLE for the whole object. Two objects whose hashes collide (about 2^-64) share
 * their entries: a walk then charges one of them too little, nothing worse. The set is an
 * open-addressing table whose entries carry the generation that wrote them, so clearing it
 * for the next walk costs nothing. Not thread-safe: its owner locks it (a manifest's mu).
 */
#ifndef GW_BLOCK_SET_H
#define GW_BLOCK_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define BLOCK_SET_WHOLE UINT32_MAX /* the entry of an object taken whole */

enum block_set_state {
    BLOCK_SET_ABSENT = 0, /* not charged in this walk */
    BLOCK_SET_CHARGED,    /* charged; no fetch of it known to be on its way */
    BLOCK_SET_FETCHING,   /* charged, and being fetched for an item before */
};

struct block_set_slot;

/* Zero-initialized: an empty set. Its owner frees it with block_set_free(). */
typedef struct block_set {
    struct block_set_slot *slots; /* cap of them; a slot is in use if its gen is gen */
    uint32_t cap, n, gen;
} block_set;

/* @brief Empties s for a new walk (O(1), but for a full pass once every 2^32 walks). */
void block_set_clear(block_set *s);

/* @brief What s holds for (khash, block). */
enum block_set_state block_set_get(const block_set *s, uint64_t khash, uint32_t block);

/*
 * @brief Adds (khash, block), as charged, or as fetching if `fetching` (an entry already
 * fetching stays so).
 * @return SC_OK, SC_ENOMEM (the set could not grow: not added).
 */
sc_code block_set_put(block_set *s, uint64_t khash, uint32_t block, bool fetching);

/* @brief Frees what s holds and leaves it empty. */
void block_set_free(block_set *s);

#endif
