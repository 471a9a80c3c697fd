/*
 * lru.c - least-recently-used eviction (policy "lru").
 *
 * A doubly linked list orders the objects from most recently used (head) to
 * least recently used (tail); a hash table finds an object's list node by id.
 * Inserting or hitting moves a node to the head, the victim is the tail, and
 * every operation is O(1) (amortized, as the table and node pool grow by
 * doubling).
 *
 * Nodes live in one growable array and link to each other by index, so a
 * node costs 16 bytes and the table 4 bytes per slot. Freed nodes are reused
 * through a free list. The table is open addressing with linear probing, kept
 * at most half full; removal shifts later entries back instead of leaving
 * tombstones.
 */
#include "policy.h"

#include <stdlib.h>

#define NIL       UINT32_MAX /* "no node" in links and in the free list */
#define EMPTY     0u         /* an unused table slot; slots hold node index + 1 */
#define MIN_SLOTS 64u
#define MIN_NODES 32u
#define MAX_NODES (UINT32_MAX - 1u)

struct lru_node {
    uint64_t id;
    uint32_t prev; /* towards the head (more recently used) */
    uint32_t next; /* towards the tail; also links the free list */
};

struct lru {
    struct lru_node *nodes;
    uint32_t n_nodes;   /* nodes ever handed out (high-water mark) */
    uint32_t cap_nodes; /* allocated nodes */
    uint32_t free_head; /* first reusable node, or NIL */
    uint32_t head;      /* most recently used, or NIL */
    uint32_t tail;      /* least recently used, or NIL */
    uint32_t *slots;    /* node index + 1, or EMPTY */
    size_t n_slots;     /* a power of two */
    size_t count;       /* objects tracked */
};

/* The finalizer of splitmix64: spreads sequential ids over the whole table. */
static size_t hash_id(uint64_t id)
{
    id ^= id >> 30;
    id *= 0xbf58476d1ce4e5b9ull;
    id ^= id >> 27;
    id *= 0x94d049bb133111ebull;
    id ^= id >> 31;
    return (size_t)id;
}

/* Returns the slot holding id, or the empty slot where it would go. */
static size_t find_slot(const struct lru *l, uint64_t id)
{
    size_t mask = l->n_slots - 1;
    size_t i = hash_id(id) & mask;
    while (l->slots[i] != EMPTY && l->nodes[l->slots[i] - 1].id != id)
        i = (i + 1) & mask;
    return i;
}

/* Returns the node index for id, or NIL if id is not tracked. */
static uint32_t lookup(const struct lru *l, uint64_t id)
{
    size_t i = find_slot(l, id);
    return l->slots[i] == EMPTY ? NIL : l->slots[i] - 1;
}

/* Doubles the table and re-inserts every entry. On failure the old table stays. */
static sc_code grow_slots(struct lru *l)
{
    size_t old_n = l->n_slots;
    uint32_t *old = l->slots;
    uint32_t *fresh = calloc(old_n * 2, sizeof(*fresh));
    if (fresh == NULL)
        return SC_ENOMEM;
    l->slots = fresh;
    l->n_slots = old_n * 2;
    for (size_t i = 0; i < old_n; i++)
        if (old[i] != EMPTY)
            l->slots[find_slot(l, l->nodes[old[i] - 1].id)] = old[i];
    free(old);
    return SC_OK;
}

/*
 * Empties slot hole and moves back any later entry of the same probe run that
 * could no longer be reached across the gap (backward-shift deletion).
 */
static void clear_slot(struct lru *l, size_t hole)
{
    size_t mask = l->n_slots - 1;
    size_t i = hole;
    for (;;) {
        i = (i + 1) & mask;
        if (l->slots[i] == EMPTY)
            break;
        size_t home = hash_id(l->nodes[l->slots[i] - 1].id) & mask;
        /* The entry at i may move to hole unless its home lies in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            l->slots[hole] = l->slots[i];
            hole = i;
        }
    }
    l->slots[hole] = EMPTY;
}

/* Hands out an unused node index, growing the pool when needed; NIL on failure. */
static uint32_t alloc_node(struct lru *l)
{
    if (l->free_head != NIL) {
        uint32_t n = l->free_head;
        l->free_head = l->nodes[n].next;
        return n;
    }
    if (l->n_nodes == l->cap_nodes) {
        if (l->cap_nodes > MAX_NODES / 2)
            return NIL;
        uint32_t cap = l->cap_nodes * 2;
        struct lru_node *nodes = realloc(l->nodes, (size_t)cap * sizeof(*nodes));
        if (nodes == NULL)
            return NIL;
        l->nodes = nodes;
        l->cap_nodes = cap;
    }
    return l->n_nodes++;
}

static void unlink_node(struct lru *l, uint32_t n)
{
    struct lru_node *node = &l->nodes[n];
    if (node->prev != NIL)
        l->nodes[node->prev].next = node->next;
    else
        l->head = node->next;
    if (node->next != NIL)
        l->nodes[node->next].prev = node->prev;
    else
        l->tail = node->prev;
}

static void push_head(struct lru *l, uint32_t n)
{
    l->nodes[n].prev = NIL;
    l->nodes[n].next = l->head;
    if (l->head != NIL)
        l->nodes[l->head].prev = n;
    l->head = n;
    if (l->tail == NIL)
        l->tail = n;
}

static sc_code lru_init(uint64_t capacity, void **state)
{
    sc_code rc = SC_ENOMEM;
    struct lru *l = calloc(1, sizeof(*l));
    *state = NULL;
    if (l == NULL)
        goto out;
    l->nodes = malloc(MIN_NODES * sizeof(*l->nodes));
    l->slots = calloc(MIN_SLOTS, sizeof(*l->slots));
    if (l->nodes == NULL || l->slots == NULL)
        goto out;
    l->cap_nodes = MIN_NODES;
    l->n_slots = MIN_SLOTS;
    l->free_head = NIL;
    l->head = NIL;
    l->tail = NIL;
    *state = l;
    l = NULL;
    rc = SC_OK;
out:
    if (l != NULL) {
        free(l->nodes);
        free(l->slots);
        free(l);
    }
    return rc;
}

static void lru_on_hit(void *state, uint64_t id)
{
    struct lru *l = state;
    uint32_t n = lookup(l, id);
    if (n == NIL || n == l->head)
        return;
    unlink_node(l, n);
    push_head(l, n);
}

/* An id already tracked counts as a hit. */
static sc_code lru_on_insert(void *state, const struct policy_obj *obj)
{
    struct lru *l = state;
    if (lookup(l, obj->id) != NIL) {
        lru_on_hit(l, obj->id);
        return SC_OK;
    }
    if ((l->count + 1) * 2 > l->n_slots && grow_slots(l) != SC_OK)
        return SC_ENOMEM;
    uint32_t n = alloc_node(l);
    if (n == NIL)
        return SC_ENOMEM;
    l->nodes[n].id = obj->id;
    push_head(l, n);
    l->slots[find_slot(l, obj->id)] = n + 1;
    l->count++;
    return SC_OK;
}

/* An id not tracked is ignored. */
static void lru_on_remove(void *state, uint64_t id)
{
    struct lru *l = state;
    size_t slot = find_slot(l, id);
    if (l->slots[slot] == EMPTY)
        return;
    uint32_t n = l->slots[slot] - 1;
    clear_slot(l, slot);
    unlink_node(l, n);
    l->nodes[n].next = l->free_head;
    l->free_head = n;
    l->count--;
}

static bool lru_pick_victim(void *state, uint64_t *id)
{
    const struct lru *l = state;
    if (l->tail == NIL)
        return false;
    *id = l->nodes[l->tail].id;
    return true;
}

static void lru_free(void *state)
{
    struct lru *l = state;
    if (l == NULL)
        return;
    free(l->nodes);
    free(l->slots);
    free(l);
}

const struct policy_ops policy_lru = {
    .name = "lru",
    .init = lru_init,
    .admit = NULL,
    .on_insert = lru_on_insert,
    .on_hit = lru_on_hit,
    .on_remove = lru_on_remove,
    .pick_victim = lru_pick_victim,
    .free = lru_free,
};
