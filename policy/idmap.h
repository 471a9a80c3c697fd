/*
 * idmap.h - a hash table from a 64-bit key to a 32-bit node index, shared by
 * the policies (store ids, and sc_key_hash() values, to their nodes).
 *
 * Open addressing with linear probing, kept at most half full, growing by
 * doubling; removal shifts later entries of a probe run back instead of
 * leaving tombstones. A slot holds only the 32-bit index: the key of an index
 * is read back through the key_of function given at init, from wherever the
 * caller keeps it (normally the node itself), so an entry costs 8 to 16 bytes
 * of table. The caller must therefore store a node's key before idmap_put()
 * and leave it unchanged until idmap_del().
 *
 * Not thread-safe; the policies are serialized by the store.
 */
#ifndef POLICY_IDMAP_H
#define POLICY_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define IDMAP_NONE UINT32_MAX /* "no index": returned for absent keys; never a value */

/* Returns the key of node index v; ctx is the pointer given to idmap_init. */
typedef uint64_t (*idmap_key_fn)(const void *ctx, uint32_t v);

struct idmap {
    uint32_t *slots; /* index + 1, or 0 for an empty slot */
    size_t n_slots;  /* a power of two */
    size_t count;    /* entries */
    idmap_key_fn key_of;
    const void *ctx;
};

/*
 * @brief Makes an empty map.
 * @param[out] m the map; release it with idmap_free().
 * @param[in] key_of reads a value's key; ctx is passed to it and must outlive m.
 * @return SC_OK, or SC_ENOMEM (m holds nothing to free).
 */
sc_code idmap_init(struct idmap *m, idmap_key_fn key_of, const void *ctx);

/* @brief Frees the table; m may then be initialized again. Safe on a zeroed map. */
void idmap_free(struct idmap *m);

/* @return the index stored under key, or IDMAP_NONE. */
uint32_t idmap_get(const struct idmap *m, uint64_t key);

/*
 * @brief Maps key_of(v) to v, replacing any index stored under that key.
 * @param[in] v a node index other than IDMAP_NONE whose key is already stored.
 * @return SC_OK, or SC_ENOMEM (the map is unchanged).
 */
sc_code idmap_put(struct idmap *m, uint32_t v);

/*
 * @brief Makes room for count entries in all (at most half full), so that puts up to that
 * many never grow the table: one move of the entries instead of one per doubling.
 * @return SC_OK, or SC_ENOMEM (the map is unchanged).
 */
sc_code idmap_reserve(struct idmap *m, size_t count);

/* @brief Removes key. @return the index it held, or IDMAP_NONE if it was absent. */
uint32_t idmap_del(struct idmap *m, uint64_t key);

#endif
