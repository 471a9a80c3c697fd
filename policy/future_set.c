/*
 * future_set.c - the futures of several jobs merged by their read rates (see future_set.h).
 *
 * Rates are doubles kept as their bits in atomics, so that the prefetcher may set them while
 * the store's policy reads them.
 */
#include "future_set.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct member {
    future *f;
    atomic_uint_least64_t rate_bits; /* a double; 0.0: unknown */
};

struct future_set {
    atomic_uint refs;
    size_t n;
    struct member m[];
};

sc_code future_set_new(future *const *futs, size_t n, future_set **out)
{
    *out = NULL;
    if (n == 0)
        return SC_EINVAL;
    future_set *s = calloc(1, sizeof(*s) + n * sizeof(s->m[0]));
    if (s == NULL)
        return SC_ENOMEM;
    atomic_init(&s->refs, 1);
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        future_ref(futs[i]);
        s->m[i].f = futs[i];
        atomic_init(&s->m[i].rate_bits, 0);
    }
    *out = s;
    return SC_OK;
}

void future_set_ref(future_set *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void future_set_unref(future_set *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (size_t i = 0; i < s->n; i++)
        future_unref(s->m[i].f);
    free(s);
}

size_t future_set_count(const future_set *s)
{
    return s->n;
}

future *future_set_at(const future_set *s, size_t i)
{
    return s->m[i].f;
}

void future_set_rate(future_set *s, size_t i, double per_second)
{
    uint64_t bits;
    double r = per_second > 0 ? per_second : 0.0;
    memcpy(&bits, &r, sizeof(bits));
    atomic_store(&s->m[i].rate_bits, bits);
}

static double rate_known(const future_set *s, size_t i)
{
    uint64_t bits = atomic_load(&s->m[i].rate_bits);
    double r;
    memcpy(&r, &bits, sizeof(r));
    return r;
}

/* The rate a future without one is taken at: the mean of the known (1 when none is). */
static double mean_rate(const future_set *s)
{
    double known = 0;
    size_t n_known = 0;
    for (size_t i = 0; i < s->n; i++)
        if (rate_known(s, i) > 0) {
            known += rate_known(s, i);
            n_known++;
        }
    return n_known ? known / (double)n_known : 1.0;
}

static double rate_of(const future_set *s, size_t i, double mean)
{
    double r = rate_known(s, i);
    return r > 0 ? r : mean;
}

uint64_t future_set_position(future_set *s)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += future_position(s->m[i].f);
    return sum;
}

uint64_t future_set_next_use_block(future_set *s, uint64_t khash, uint32_t block)
{
    if (s->n == 1)
        return future_next_use_block(s->m[0].f, khash, block);
    double mean = mean_rate(s), total = 0, soonest = -1;
    uint64_t position = 0;
    for (size_t i = 0; i < s->n; i++) {
        double rate = rate_of(s, i, mean);
        uint64_t pos = future_position(s->m[i].f);
        uint64_t next = future_next_use_block(s->m[i].f, khash, block);
        position += pos;
        total += rate;
        if (next == FUTURE_NEVER)
            continue;
        double secs = next > pos ? (double)(next - pos) / rate : 0;
        if (soonest < 0 || secs < soonest)
            soonest = secs;
    }
    if (soonest < 0)
        return FUTURE_NEVER;
    double ahead = soonest * total;
    double room = (double)(FUTURE_NEVER - 1 - position);
    return position + (uint64_t)(ahead < room ? ahead : room);
}
