/*
 * dataset.c - the synthetic dataset: every object's key, size and bytes are a
 * pure function of the dataset options and its index, so a reader can
 * regenerate and compare each byte it downloads without storing anything.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trainsim.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t ts_splitmix64(uint64_t *state)
{
    *state += GOLDEN;
    return mix64(*state);
}

/* The seed of object i's streams; salt tells the size stream from the content stream. */
static uint64_t object_seed(const struct ts_dataset *d, uint32_t i, uint64_t salt)
{
    return mix64(mix64(d->data_seed ^ salt) + (uint64_t)i * GOLDEN);
}

/* A uniform double in (0, 1]. */
static double unit_open0(uint64_t *state)
{
    return (double)((ts_splitmix64(state) >> 11) + 1) * 0x1.0p-53;
}

uint64_t ts_object_size(const struct ts_dataset *d, uint32_t i)
{
    if (d->dist == TS_SIZE_FIXED)
        return d->size;
    uint64_t st = object_seed(d, i, 0x73697a65); /* "size" */
    double u1 = unit_open0(&st);
    double u2 = unit_open0(&st);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    double mu = log((double)d->size) - d->sigma * d->sigma / 2.0; /* so that the mean is size */
    double v = floor(exp(mu + d->sigma * z) + 0.5);
    double hi = (double)d->size * 32.0;
    if (hi > (double)TS_MAX_SIZE)
        hi = (double)TS_MAX_SIZE;
    if (!(v >= 1.0)) /* also catches NaN */
        return 1;
    return v > hi ? (uint64_t)hi : (uint64_t)v;
}

uint64_t ts_dataset_bytes(const struct ts_dataset *d)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < d->objects; i++)
        sum += ts_object_size(d, i);
    return sum;
}

sc_code ts_object_key(const struct ts_dataset *d, uint32_t i, char *out, size_t out_len)
{
    int n = snprintf(out, out_len, "%s%08" PRIu32 ".bin", d->prefix, i);
    if (n < 0 || (size_t)n >= out_len) {
        if (out_len > 0)
            out[0] = '\0';
        return SC_ETOOBIG;
    }
    return SC_OK;
}

sc_code ts_key_index(const struct ts_dataset *d, const char *key, uint32_t *i)
{
    size_t plen = strlen(d->prefix);
    if (strncmp(key, d->prefix, plen) != 0)
        return SC_EINVAL;
    const char *p = key + plen;
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) {
        if (p[k] < '0' || p[k] > '9')
            return SC_EINVAL;
        v = v * 10 + (uint64_t)(p[k] - '0');
    }
    if (strcmp(p + 8, ".bin") != 0 || v >= d->objects)
        return SC_EINVAL;
    *i = (uint32_t)v;
    return SC_OK;
}

/* The 8-byte word w of object i: the header words, then the content stream. */
static uint64_t object_word(uint64_t base, uint32_t i, uint64_t size, uint64_t w)
{
    if (w == 0)
        return i;
    if (w == 1)
        return size;
    return mix64(base + w * GOLDEN);
}

/* Bytes [from, to) of an 8-byte word, least significant first, to buf. */
static void put_word_bytes(uint8_t *buf, uint64_t word, unsigned from, unsigned to)
{
    for (unsigned b = from; b < to; b++)
        *buf++ = (uint8_t)(word >> (8 * b));
}

/* A whole word, least significant byte first (written out so the compiler makes it one store). */
static void put_word(uint8_t *p, uint64_t w)
{
    p[0] = (uint8_t)w;
    p[1] = (uint8_t)(w >> 8);
    p[2] = (uint8_t)(w >> 16);
    p[3] = (uint8_t)(w >> 24);
    p[4] = (uint8_t)(w >> 32);
    p[5] = (uint8_t)(w >> 40);
    p[6] = (uint8_t)(w >> 48);
    p[7] = (uint8_t)(w >> 56);
}

/*
 * Whole words are stored 8 bytes at a time: the trainer checks every byte it reads against
 * this, and a byte-at-a-time loop took a fifth of the machine's CPU in bench/epochs.sh, CPU
 * the servers under test need on 2 cores.
 */
void ts_object_fill(const struct ts_dataset *d, uint32_t i, uint64_t size, uint64_t off,
                    uint8_t *buf, size_t len)
{
    uint64_t base = object_seed(d, i, 0x62797465); /* "byte" */
    size_t k = 0;
    unsigned lead = (unsigned)(off & 7);
    if (lead != 0 && len > 0) { /* the rest of the word off falls in */
        unsigned to = len < 8 - lead ? lead + (unsigned)len : 8;
        put_word_bytes(buf, object_word(base, i, size, off >> 3), lead, to);
        k = to - lead;
    }
    uint64_t w = (off + k) >> 3;
    for (; len - k >= 8 && w < 2; k += 8, w++) /* the header words */
        put_word(buf + k, object_word(base, i, size, w));
    for (; len - k >= 8; k += 8, w++)
        put_word(buf + k, mix64(base + w * GOLDEN));
    if (k < len)
        put_word_bytes(buf + k, object_word(base, i, size, w), 0, (unsigned)(len - k));
}

bool ts_object_check(const struct ts_dataset *d, uint32_t i, uint64_t size, uint64_t off,
                     const uint8_t *data, size_t len, uint64_t *bad)
{
    uint8_t want[4096];
    for (size_t k = 0; k < len; k += sizeof(want)) {
        size_t n = len - k < sizeof(want) ? len - k : sizeof(want);
        ts_object_fill(d, i, size, off + k, want, n);
        if (memcmp(want, data + k, n) == 0)
            continue;
        for (size_t j = 0; j < n; j++)
            if (want[j] != data[k + j]) {
                *bad = off + k + j;
                return false;
            }
    }
    return true;
}
