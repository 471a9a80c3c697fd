/*
 * body.c - the manifests plan-bench measures: ImageNet-like keys
 * ("train/n01440764/00001234.JPEG", 29 bytes) in a "keys" body, an "epochs" body
 * (each epoch the keys shuffled), or the keys a prefix listing would return. Every body says
 * "prefetch": false: a gateway it is sent to (bench/plans.sh) only plans by it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planbench.h"

#define CLASSES 1000u /* ImageNet's */

void pb_key(uint32_t i, uint32_t n, char *out, size_t cap)
{
    uint32_t per_class = (n + CLASSES - 1) / CLASSES;
    snprintf(out, cap, "train/n%08" PRIu32 "/%08" PRIu32 ".JPEG", 1440764u + i / per_class * 17u,
             i % per_class);
}

/* Appends "key" (quoted; the keys need no escapes) and a comma unless last. */
static sc_code put_key(struct sc_buf *b, uint32_t i, uint32_t n, bool last)
{
    char key[PB_KEY_CAP];
    pb_key(i, n, key, sizeof(key));
    sc_buf_putc(b, '"');
    sc_buf_puts(b, key);
    return sc_buf_puts(b, last ? "\"" : "\",");
}

/* splitmix64, for the explicit epochs' shuffles (any fixed generator would do). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Shuffles perm[0..n) in place. */
static void shuffle(uint32_t *perm, uint32_t n, uint64_t *state)
{
    for (uint32_t i = n - 1; i >= 1; i--) {
        uint32_t j = (uint32_t)(next_random(state) % ((uint64_t)i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* 0..n-1, shuffled when asked; NULL when out of memory. */
static uint32_t *identity(uint32_t n)
{
    uint32_t *perm = malloc((size_t)n * sizeof(*perm));
    for (uint32_t i = 0; perm != NULL && i < n; i++)
        perm[i] = i;
    return perm;
}

/* The "epochs" lists: each epoch the n keys in a shuffled order. */
static sc_code put_epochs(struct sc_buf *b, const struct pb_opts *o)
{
    uint32_t *perm = identity(o->keys);
    uint64_t state = o->seed;
    if (perm == NULL)
        return SC_ENOMEM;
    sc_buf_putc(b, '[');
    for (uint32_t e = 0; e < o->epochs; e++) {
        shuffle(perm, o->keys, &state);
        sc_buf_puts(b, e ? ",[" : "[");
        for (uint32_t i = 0; i < o->keys; i++)
            put_key(b, perm[i], o->keys, i + 1 == o->keys);
        sc_buf_putc(b, ']');
    }
    free(perm);
    return sc_buf_putc(b, ']');
}

sc_code pb_body(const struct pb_opts *o, struct sc_buf *b)
{
    char head[256];
    if (o->form == PB_EPOCHS) {
        sc_buf_puts(b, "{\"bucket\":\"imagenet\",\"name\":\"plan-bench\",\"prefetch\":false,"
                       "\"epochs\":");
        put_epochs(b, o);
        return sc_buf_putc(b, '}');
    }
    snprintf(head, sizeof(head),
             "{\"bucket\":\"imagenet\",\"name\":\"plan-bench\",\"prefetch\":false,"
             "\"num_epochs\":%" PRIu32 ",\"shuffle\":%s,\"seed\":%" PRIu64
             ",\"world_size\":%" PRIu32 ",\"rank\":0,",
             o->epochs, o->shuffle ? "true" : "false", o->seed, o->world_size);
    sc_buf_puts(b, head);
    if (o->form == PB_PREFIX)
        return sc_buf_puts(b, "\"prefix\":\"train/\"}");
    sc_buf_puts(b, "\"keys\":[");
    uint32_t *perm = identity(o->keys);
    uint64_t state = o->seed + 1000;
    if (perm == NULL)
        return SC_ENOMEM;
    if (o->unsorted)
        shuffle(perm, o->keys, &state);
    for (uint32_t i = 0; i < o->keys; i++)
        put_key(b, perm[i], o->keys, i + 1 == o->keys);
    free(perm);
    return sc_buf_puts(b, "]}");
}
