/*
 * nodes.h - a growable pool of policy nodes and doubly linked lists through
 * it, shared by the policies.
 *
 * A policy declares its own node struct whose first member is a struct node,
 * and makes a pool of them. Nodes are named by their 32-bit index, so lists
 * link by index and stay valid when the pool grows (by doubling, which may
 * move the nodes: never keep a node pointer across node_alloc()). Freed
 * nodes are reused through a free list. node_key() reads a node's key and
 * fits idmap_key_fn, with the pool as its context.
 */
#ifndef POLICY_NODES_H
#define POLICY_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "idmap.h"

#define NODE_NIL UINT32_MAX /* "no node" in links and lists */

/* The first member of every policy node. */
struct node {
    uint64_t key;  /* what the node is found by: a store id or a sc_key_hash() */
    uint32_t prev; /* towards the list's head */
    uint32_t next; /* towards its tail; also links the free list */
};

struct node_pool {
    unsigned char *mem;
    size_t elem;        /* bytes per node: sizeof the policy's node struct */
    uint32_t used;      /* nodes ever handed out (high-water mark) */
    uint32_t cap;       /* nodes allocated */
    uint32_t free_head; /* first reusable node, or NODE_NIL */
};

/* A list through a pool: head is the newest end, tail the oldest. */
struct node_list {
    uint32_t head;
    uint32_t tail;
    size_t count;
};

/*
 * @brief Makes an empty pool of nodes of elem bytes (a multiple of 8, at
 * least sizeof(struct node)).
 * @return SC_OK, or SC_ENOMEM (nothing to free).
 */
sc_code node_pool_init(struct node_pool *p, size_t elem);

/* @brief Frees the pool's memory. Safe on a zeroed pool. */
void node_pool_free(struct node_pool *p);

/* @brief Hands out an unused node (contents undefined). @return its index, or NODE_NIL. */
uint32_t node_alloc(struct node_pool *p);

/* @brief Returns node n (not on any list) to the pool. */
void node_release(struct node_pool *p, uint32_t n);

/* @return node n; valid until the next node_alloc(). */
static inline void *node_at(const struct node_pool *p, uint32_t n)
{
    return p->mem + (size_t)n * p->elem;
}

/* @brief The key of node n; pool is a const struct node_pool *. Fits idmap_key_fn. */
uint64_t node_key(const void *pool, uint32_t n);

/*
 * A pool whose nodes are also found by key: the common case of a policy that
 * tracks one node per id. The map's context is the pool inside the set, so a
 * set must not move once made.
 */
struct node_set {
    struct node_pool pool;
    struct idmap map; /* node key -> node index */
};

/* @brief Makes an empty set of nodes of elem bytes. @return SC_OK or SC_ENOMEM. */
sc_code node_set_init(struct node_set *s, size_t elem);

/* @brief Frees the set's memory. Safe on a zeroed set. */
void node_set_free(struct node_set *s);

/* @return the node with key, or NODE_NIL. */
uint32_t node_set_find(const struct node_set *s, uint64_t key);

/*
 * @brief Adds a node with key (which must not be in the set); the rest of the
 * node is for the caller to fill. @return its index, or NODE_NIL on ENOMEM.
 */
uint32_t node_set_add(struct node_set *s, uint64_t key);

/* @brief Forgets node n (on no list) and returns it to the pool. */
void node_set_drop(struct node_set *s, uint32_t n);

/* @brief Takes node n off l and forgets it: node_unlink() then node_set_drop(). */
void node_set_remove(struct node_set *s, struct node_list *l, uint32_t n);

/* @brief Makes l empty. */
void node_list_init(struct node_list *l);

/* @brief Puts node n (on no list) at the head of l. */
void node_push_head(struct node_pool *p, struct node_list *l, uint32_t n);

/* @brief Takes node n off l, which must hold it. */
void node_unlink(struct node_pool *p, struct node_list *l, uint32_t n);

/*
 * @brief Reads the key of l's oldest (tail) or newest (head) node.
 * @return false if l is empty (*key untouched).
 */
bool node_list_end_key(const struct node_pool *p, const struct node_list *l, bool oldest,
                       uint64_t *key);

#endif
