/*
 * idmap.c - open-addressing table from a 64-bit key to a node index (see
 * idmap.h).
 */
#include "idmap.h"

#include <stdbool.h>
#include <stdlib.h>

#include "../common/hash.h"

#define MIN_SLOTS 64u

static uint64_t slot_key(const struct idmap *m, size_t i)
{
    return m->key_of(m->ctx, m->slots[i] - 1);
}

/* Returns the slot holding key, or the empty slot where it would go (sequential ids, mixed,
 * spread over the whole table). */
static size_t find_slot(const struct idmap *m, uint64_t key)
{
    size_t mask = m->n_slots - 1;
    size_t i = (size_t)sc_hash_mix(key) & mask;
    while (m->slots[i] != 0 && slot_key(m, i) != key)
        i = (i + 1) & mask;
    return i;
}

sc_code idmap_init(struct idmap *m, idmap_key_fn key_of, const void *ctx)
{
    *m = (struct idmap){.key_of = key_of, .ctx = ctx};
    m->slots = calloc(MIN_SLOTS, sizeof(*m->slots));
    if (m->slots == NULL)
        return SC_ENOMEM;
    m->n_slots = MIN_SLOTS;
    return SC_OK;
}

void idmap_free(struct idmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->n_slots = 0;
    m->count = 0;
}

uint32_t idmap_get(const struct idmap *m, uint64_t key)
{
    size_t i = find_slot(m, key);
    return m->slots[i] == 0 ? IDMAP_NONE : m->slots[i] - 1;
}

/* Moves every entry to a table of n_slots (a power of two). On failure the old table stays. */
static sc_code resize(struct idmap *m, size_t n_slots)
{
    size_t old_n = m->n_slots;
    uint32_t *old = m->slots;
    uint32_t *fresh = calloc(n_slots, sizeof(*fresh));
    if (fresh == NULL)
        return SC_ENOMEM;
    m->slots = fresh;
    m->n_slots = n_slots;
    for (size_t i = 0; i < old_n; i++)
        if (old[i] != 0)
            m->slots[find_slot(m, m->key_of(m->ctx, old[i] - 1))] = old[i];
    free(old);
    return SC_OK;
}

sc_code idmap_reserve(struct idmap *m, size_t count)
{
    size_t n = m->n_slots;
    while (count * 2 > n)
        n *= 2;
    return n == m->n_slots ? SC_OK : resize(m, n);
}

sc_code idmap_put(struct idmap *m, uint32_t v)
{
    uint64_t key = m->key_of(m->ctx, v);
    size_t i = find_slot(m, key);
    if (m->slots[i] == 0) {
        if ((m->count + 1) * 2 > m->n_slots) {
            if (resize(m, m->n_slots * 2) != SC_OK)
                return SC_ENOMEM;
            i = find_slot(m, key);
        }
        m->count++;
    }
    m->slots[i] = v + 1;
    return SC_OK;
}

/*
 * Empties slot hole and moves back any later entry of the same probe run that
 * could no longer be reached across the gap (backward-shift deletion).
 */
static void clear_slot(struct idmap *m, size_t hole)
{
    size_t mask = m->n_slots - 1;
    size_t i = hole;
    for (;;) {
        i = (i + 1) & mask;
        if (m->slots[i] == 0)
            break;
        size_t home = (size_t)sc_hash_mix(slot_key(m, i)) & mask;
        /* The entry at i may move to hole unless its home lies in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = 0;
}

uint32_t idmap_del(struct idmap *m, uint64_t key)
{
    size_t i = find_slot(m, key);
    if (m->slots[i] == 0)
        return IDMAP_NONE;
    uint32_t v = m->slots[i] - 1;
    clear_slot(m, i);
    m->count--;
    return v;
}
