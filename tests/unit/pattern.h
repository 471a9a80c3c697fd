/* pattern.h - the unit tests' one pseudo-random byte pattern: the same bytes for the same seed. */
#ifndef TEST_PATTERN_H
#define TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf with len bytes of xorshift32 from seed. */
static inline void fill_bytes(unsigned char *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)(x >> 24);
    }
}

#endif
