/*
 * mutate.h - bodies close to valid ones, for the unit tests that compare a parser with a
 * reference over many generated inputs (test_json_scan.c, test_plan.c): a seed with a few
 * bytes replaced, put in or taken out, each from an alphabet of bytes that matter. The
 * generator is splitmix64, so a test's inputs are the same on every run. Header-only; every
 * function is static inline.
 */
#ifndef TESTS_UNIT_MUTATE_H
#define TESTS_UNIT_MUTATE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* @brief The next number of the generator whose state is *state. */
static inline uint64_t mutate_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * @brief Copies seed into buf (cap bytes, more than the seed's length) and makes min_edits
 * to min_edits + 2 edits to it with bytes of alphabet[0..alen).
 * @return the length of the result (no NUL is added).
 */
static inline size_t mutate(char *buf, size_t cap, const char *seed, const char *alphabet,
                            size_t alen, int min_edits, uint64_t *state)
{
    size_t n = strlen(seed);
    memcpy(buf, seed, n);
    for (int m = 0, edits = min_edits + (int)(mutate_random(state) % 3); m < edits; m++) {
        size_t at = mutate_random(state) % (n + 1);
        char c = alphabet[mutate_random(state) % alen];
        int op = (int)(mutate_random(state) % 3);
        if (op == 0 && at < n) {
            buf[at] = c; /* replace */
        } else if (op == 1 && n + 1 < cap) {
            memmove(buf + at + 1, buf + at, n - at); /* put in */
            buf[at] = c;
            n++;
        } else if (at < n) {
            memmove(buf + at, buf + at + 1, n - at - 1); /* take out */
            n--;
        }
    }
    return n;
}

#endif
