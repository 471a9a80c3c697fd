/*
 * hash.h - the one hash of an object's name, (bucket, key), and the pieces it
 * is made of, for hash tables over names.
 *
 * sc_key_hash() values cross components: the policies file importance hints
 * and ghosts under them, manifests' plans and futures give them to the
 * policies, and tools/sim replays traces with them; sc_block_key_hash() names
 * one block of an object in a future. They must never change:
 * tests/unit/test_hash.c pins known values.
 */
#ifndef SC_HASH_H
#define SC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SC_FNV1A_BASIS 0xcbf29ce484222325ull /* the 64-bit FNV offset basis */

/* @brief 64-bit FNV-1a of n bytes at p, continuing from h (start with SC_FNV1A_BASIS). */
uint64_t sc_fnv1a(uint64_t h, const void *p, size_t n);

/* @brief The splitmix64 finalizer: spreads h's bits, so sequential values scatter. */
uint64_t sc_hash_mix(uint64_t h);

/*
 * @brief The hash of an object's name: sc_hash_mix of the FNV-1a of bucket, a NUL (so
 * ("ab", "c") differs from ("a", "bc")) and key. Both are NUL-terminated, never NULL.
 * Two distinct names collide with probability about 2^-64; a collision only makes a
 * policy mistake one name's hint for another's, never serve wrong bytes.
 */
uint64_t sc_key_hash(const char *bucket, const char *key);

/*
 * @brief The hash of block idx of the object whose sc_key_hash() is khash, as a manifest's
 * future names a ranged read (one entry per block the range covers):
 * sc_hash_mix(khash ^ (0x9E3779B97F4A7C15 * (idx + 1))), arithmetic modulo 2^64. The blocks
 * of one object never share a hash (both steps are bijections); a block's hash meets a key's
 * with probability about 2^-64. Pinned in tests/unit/test_hash.c like sc_key_hash().
 */
uint64_t sc_block_key_hash(uint64_t khash, uint32_t idx);

/* @brief A hash of n bytes for a table in one process: sc_hash_mix of their FNV-1a. */
uint64_t sc_bytes_hash(const void *p, size_t n);

#endif
