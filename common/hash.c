/* hash.c - FNV-1a and the (bucket, key) hash (see hash.h). */
#include "hash.h"

#include <string.h>

#define FNV1A_PRIME 0x100000001b3ull

uint64_t sc_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV1A_PRIME;
    return h;
}

uint64_t sc_hash_mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

uint64_t sc_key_hash(const char *bucket, const char *key)
{
    uint64_t h = sc_fnv1a(SC_FNV1A_BASIS, bucket, strlen(bucket) + 1); /* with its NUL */
    return sc_hash_mix(sc_fnv1a(h, key, strlen(key)));
}

uint64_t sc_block_key_hash(uint64_t khash, uint32_t idx)
{
    return sc_hash_mix(khash ^ (0x9E3779B97F4A7C15ull * ((uint64_t)idx + 1)));
}

uint64_t sc_bytes_hash(const void *p, size_t n)
{
    return sc_hash_mix(sc_fnv1a(SC_FNV1A_BASIS, p, n));
}
