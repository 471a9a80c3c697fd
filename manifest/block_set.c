/* block_set.c - the blocks a prefetch walk charged (see block_set.h). */
#include "block_set.h"

#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"

#define MIN_CAP 64u

struct block_set_slot {
    uint64_t khash;
    uint32_t block;
    uint32_t gen; /* the set's generation when written; another: the slot is free */
    bool fetching;
};

static uint32_t home(uint64_t khash, uint32_t block, uint32_t cap)
{
    return (uint32_t)(sc_block_key_hash(khash, block) & (cap - 1)); /* cap: a power of 2 */
}

/* The slot of (khash, block), or the free slot where it would go. cap > n: one is free. */
static struct block_set_slot *find(const block_set *s, uint64_t khash, uint32_t block)
{
    for (uint32_t i = home(khash, block, s->cap);; i = (i + 1) & (s->cap - 1)) {
        struct block_set_slot *e = &s->slots[i];
        if (e->gen != s->gen || (e->khash == khash && e->block == block))
            return e;
    }
}

void block_set_clear(block_set *s)
{
    s->n = 0;
    if (++s->gen != 0)
        return;
    if (s->slots) /* wrapped: entries of generation 1 would look current */
        memset(s->slots, 0, (size_t)s->cap * sizeof(*s->slots));
    s->gen = 1;
}

enum block_set_state block_set_get(const block_set *s, uint64_t khash, uint32_t block)
{
    if (s->n == 0)
        return BLOCK_SET_ABSENT;
    const struct block_set_slot *e = find(s, khash, block);
    if (e->gen != s->gen)
        return BLOCK_SET_ABSENT;
    return e->fetching ? BLOCK_SET_FETCHING : BLOCK_SET_CHARGED;
}

/* Doubles the table (at least MIN_CAP), keeping the current generation's entries. */
static sc_code grow(block_set *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : MIN_CAP;
    if (cap < s->cap)
        return SC_ENOMEM;
    block_set bigger = {calloc(cap, sizeof(*bigger.slots)), cap, 0, s->gen ? s->gen : 1};
    if (bigger.slots == NULL)
        return SC_ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++) {
        const struct block_set_slot *e = &s->slots[i];
        if (e->gen == s->gen && s->n > 0) {
            *find(&bigger, e->khash, e->block) = (struct block_set_slot){
                .khash = e->khash, .block = e->block, .gen = bigger.gen, .fetching = e->fetching};
            bigger.n++;
        }
    }
    free(s->slots);
    *s = bigger;
    return SC_OK;
}

sc_code block_set_put(block_set *s, uint64_t khash, uint32_t block, bool fetching)
{
    if (s->gen == 0 || (uint64_t)(s->n + 1) * 2 > s->cap) {
        sc_code rc = grow(s);
        if (rc != SC_OK)
            return rc;
    }
    struct block_set_slot *e = find(s, khash, block);
    if (e->gen == s->gen) {
        e->fetching = e->fetching || fetching;
        return SC_OK;
    }
    *e = (struct block_set_slot){
        .khash = khash, .block = block, .gen = s->gen, .fetching = fetching};
    s->n++;
    return SC_OK;
}

void block_set_free(block_set *s)
{
    free(s->slots);
    *s = (block_set){0};
}
