/*
 * fixed.c - the static cache of CoorDL and MinIO's training caches (policy
 * "fixed").
 *
 * Objects are admitted only while they fit in the capacity that is left, so
 * the first objects to arrive fill the cache and then stay: under a uniform
 * random order of reads (shuffled training epochs) every epoch hits on about
 * the cached fraction of the data set, which no recency policy achieves,
 * since each would evict objects just before they are read again.
 *
 * Used bytes are counted through on_insert/on_remove, so admit() sees the
 * same fill as the store. A victim is only needed when the capacity shrank
 * between restarts (or for invalidation): it is the most recently inserted
 * object, so the longest-held ones survive. Cost: a 24-byte node and 8 to 16
 * bytes of hash table per object; every operation is O(1) amortized.
 */
#include "policy.h"

#include <stdlib.h>

#include "nodes.h"

struct fixed_node {
    struct node link; /* key: the store id */
    uint64_t size;
};

struct fixed {
    struct node_set set;
    struct node_list order; /* head: the most recently inserted */
    uint64_t capacity;
    uint64_t used; /* bytes of the objects tracked */
};

static struct fixed_node *at(const struct fixed *f, uint32_t n)
{
    return node_at(&f->set.pool, n);
}

static sc_code fixed_init(uint64_t capacity, void **state)
{
    struct fixed *f = calloc(1, sizeof(*f));
    *state = NULL;
    if (f == NULL || node_set_init(&f->set, sizeof(struct fixed_node)) != SC_OK) {
        free(f);
        return SC_ENOMEM;
    }
    node_list_init(&f->order);
    f->capacity = capacity;
    *state = f;
    return SC_OK;
}

/* Yes while obj fits in what is left. */
static bool fixed_admit(void *state, const struct policy_obj *obj)
{
    const struct fixed *f = state;
    return f->used <= f->capacity && obj->size <= f->capacity - f->used;
}

/* Called for every object found at start-up too, admitted or not. A tracked id is ignored. */
static sc_code fixed_on_insert(void *state, const struct policy_obj *obj)
{
    struct fixed *f = state;
    if (node_set_find(&f->set, obj->id) != NODE_NIL)
        return SC_OK;
    uint32_t n = node_set_add(&f->set, obj->id);
    if (n == NODE_NIL)
        return SC_ENOMEM;
    at(f, n)->size = obj->size;
    node_push_head(&f->set.pool, &f->order, n);
    f->used += obj->size;
    return SC_OK;
}

/* Reads change nothing: what is in stays in. */
static void fixed_on_hit(void *state, uint64_t id)
{
}

static void fixed_on_remove(void *state, uint64_t id)
{
    struct fixed *f = state;
    uint32_t n = node_set_find(&f->set, id);
    if (n == NODE_NIL)
        return;
    f->used -= at(f, n)->size;
    node_set_remove(&f->set, &f->order, n);
}

static bool fixed_pick_victim(void *state, uint64_t *id)
{
    const struct fixed *f = state;
    return node_list_end_key(&f->set.pool, &f->order, false, id);
}

static void fixed_free(void *state)
{
    struct fixed *f = state;
    if (f == NULL)
        return;
    node_set_free(&f->set);
    free(f);
}

const struct policy_ops policy_fixed = {
    .name = "fixed",
    .init = fixed_init,
    .admit = fixed_admit,
    .on_insert = fixed_on_insert,
    .on_hit = fixed_on_hit,
    .on_remove = fixed_on_remove,
    .pick_victim = fixed_pick_victim,
    .free = fixed_free,
};
