/*
 * lru.c - least-recently-used eviction (policy "lru").
 *
 * A doubly linked list orders the objects from most recently used (head) to
 * least recently used (tail); a hash table (idmap.h) finds an object's node by
 * id. Inserting or hitting moves a node to the head, the victim is the tail,
 * and every operation is O(1) (amortized, as the table and node pool grow by
 * doubling). A node costs 16 bytes and the table 8 to 16 bytes per object.
 */
#include "policy.h"

#include <stdlib.h>

#include "nodes.h"

struct lru {
    struct node_set set;    /* one struct node per object, found by id */
    struct node_list order; /* head: most recently used */
};

static sc_code lru_init(uint64_t capacity, void **state)
{
    struct lru *l = calloc(1, sizeof(*l));
    *state = NULL;
    if (l == NULL)
        return SC_ENOMEM;
    if (node_set_init(&l->set, sizeof(struct node)) != SC_OK) {
        free(l);
        return SC_ENOMEM;
    }
    node_list_init(&l->order);
    *state = l;
    return SC_OK;
}

static void lru_on_hit(void *state, uint64_t id)
{
    struct lru *l = state;
    uint32_t n = node_set_find(&l->set, id);
    if (n == NODE_NIL || n == l->order.head)
        return;
    node_unlink(&l->set.pool, &l->order, n);
    node_push_head(&l->set.pool, &l->order, n);
}

/* An id already tracked counts as a hit. */
static sc_code lru_on_insert(void *state, const struct policy_obj *obj)
{
    struct lru *l = state;
    if (node_set_find(&l->set, obj->id) != NODE_NIL) {
        lru_on_hit(l, obj->id);
        return SC_OK;
    }
    uint32_t n = node_set_add(&l->set, obj->id);
    if (n == NODE_NIL)
        return SC_ENOMEM;
    node_push_head(&l->set.pool, &l->order, n);
    return SC_OK;
}

/* An id not tracked is ignored. */
static void lru_on_remove(void *state, uint64_t id)
{
    struct lru *l = state;
    uint32_t n = node_set_find(&l->set, id);
    if (n == NODE_NIL)
        return;
    node_set_remove(&l->set, &l->order, n);
}

static bool lru_pick_victim(void *state, uint64_t *id)
{
    const struct lru *l = state;
    return node_list_end_key(&l->set.pool, &l->order, true, id);
}

static void lru_free(void *state)
{
    struct lru *l = state;
    if (l == NULL)
        return;
    node_set_free(&l->set);
    free(l);
}

const struct policy_ops policy_lru = {
    .name = "lru",
    .init = lru_init,
    .on_insert = lru_on_insert,
    .on_hit = lru_on_hit,
    .on_remove = lru_on_remove,
    .pick_victim = lru_pick_victim,
    .free = lru_free,
};
