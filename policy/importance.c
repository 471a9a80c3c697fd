/*
 * importance.c - importance-driven eviction and admission, as in SHADE (Khan
 * et al., FAST 2023) (policy "importance").
 *
 * A trainer reports each minibatch's per-sample losses; the gateway turns
 * them into rank scores (policy_rank_scores) and posts them as
 * POLICY_HINT_SCORE hints keyed by sc_key_hash(bucket, key). Each cached
 * object keeps its latest score, its read count and the tick of its last
 * read; objects are ordered by (score, count, tick) and the minimum is the
 * victim. Objects never scored rank below every scored one (score -inf), so
 * without any hints the order is least-read, then least-recently-read.
 *
 * A binary min-heap holds the order; each object knows its heap position, so
 * a hit, a hint or a removal costs O(log n). Scores of objects not cached
 * wait in a ghost table (oldest dropped first, at most the larger of
 * GHOST_MIN and GHOST_PER_CACHED times the cached count) and are taken up
 * when the object is inserted; an evicted object's score goes back there.
 *
 * admit(): yes while the object fits in the free capacity; otherwise only if
 * the newcomer, ranked as (its score or -inf, one read, now), would outrank
 * the cache's minimum, so a cache full of important samples is not flushed by
 * unimportant ones.
 *
 * Several entries may share one key hash: the blocks of a block object (the
 * store's STORE_BLOCK_ID entries) all carry their object's bucket and key.
 * They form a chain through kprev/knext whose head by_khash finds; a score
 * reaches every node of the chain, a block inserted beside cached ones takes
 * their score, and the score goes to the ghost table only when the last node
 * of the chain leaves.
 *
 * Cost: a 64-byte node, 4 bytes of heap and 16 to 32 bytes of hash tables per
 * cached object or block; a 24-byte node and 8 to 16 bytes of table per ghost
 * score.
 */
#include "policy.h"

#include <math.h>
#include <stdlib.h>

#include "nodes.h"

#define GHOST_MIN        (1u << 20) /* ghost scores always allowed */
#define GHOST_PER_CACHED 4u         /* ghost scores allowed per cached object beyond that */
#define HEAP_MIN         64u

struct imp_node {
    struct node link; /* key: the store id */
    uint64_t khash;   /* sc_key_hash(bucket, key) */
    uint64_t size;
    double score;   /* latest score, or -INFINITY */
    uint64_t tick;  /* when last inserted or read */
    uint32_t count; /* reads, the insertion included */
    uint32_t pos;   /* index in the heap */
    uint32_t kprev; /* the chain of cached nodes of this khash: towards its head, or NODE_NIL */
    uint32_t knext; /* away from its head, or NODE_NIL */
};

struct ghost_node {
    struct node link; /* key: sc_key_hash(bucket, key) */
    double score;
};

struct importance {
    struct node_set set;   /* cached objects, found by id */
    struct idmap by_khash; /* key hash -> the head of its chain of cached nodes */
    uint32_t *heap;        /* cached nodes, a min-heap by rank_less */
    size_t heap_cap;
    struct node_set ghost;       /* scores of objects not cached, found by key hash */
    struct node_list ghost_fifo; /* head: the newest score */
    uint64_t capacity, used;
    uint64_t clock; /* ticks: one per insertion or read */
};

struct rank {
    double score;
    uint32_t count;
    uint64_t tick;
};

static struct imp_node *at(const struct importance *p, uint32_t n)
{
    return node_at(&p->set.pool, n);
}

static uint64_t khash_of(const void *pool, uint32_t n)
{
    return ((const struct imp_node *)node_at(pool, n))->khash;
}

static struct rank rank_of(const struct imp_node *node)
{
    return (struct rank){.score = node->score, .count = node->count, .tick = node->tick};
}

/* (score, count, tick) ascending. */
static bool rank_less(struct rank a, struct rank b)
{
    if (a.score != b.score)
        return a.score < b.score;
    if (a.count != b.count)
        return a.count < b.count;
    return a.tick < b.tick;
}

static bool heap_less(const struct importance *p, size_t i, size_t j)
{
    return rank_less(rank_of(at(p, p->heap[i])), rank_of(at(p, p->heap[j])));
}

static void heap_set(struct importance *p, size_t i, uint32_t n)
{
    p->heap[i] = n;
    at(p, n)->pos = (uint32_t)i;
}

static void heap_swap(struct importance *p, size_t i, size_t j)
{
    uint32_t n = p->heap[i];
    heap_set(p, i, p->heap[j]);
    heap_set(p, j, n);
}

static size_t heap_len(const struct importance *p)
{
    return p->set.map.count;
}

static void sift_up(struct importance *p, size_t i)
{
    while (i > 0 && heap_less(p, i, (i - 1) / 2)) {
        heap_swap(p, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct importance *p, size_t i, size_t len)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < len && heap_less(p, l, least))
            least = l;
        if (r < len && heap_less(p, r, least))
            least = r;
        if (least == i)
            return;
        heap_swap(p, i, least);
        i = least;
    }
}

/* Restores the heap after the rank of the node at i changed either way. */
static void heap_fix(struct importance *p, size_t i, size_t len)
{
    uint32_t n = p->heap[i];
    sift_up(p, i);
    sift_down(p, at(p, n)->pos, len);
}

/* Makes room for one more heap entry. */
static sc_code heap_reserve(struct importance *p)
{
    if (heap_len(p) < p->heap_cap)
        return SC_OK;
    size_t cap = p->heap_cap * 2;
    uint32_t *heap = realloc(p->heap, cap * sizeof(*heap));
    if (heap == NULL)
        return SC_ENOMEM;
    p->heap = heap;
    p->heap_cap = cap;
    return SC_OK;
}

static struct ghost_node *ghost_at(const struct importance *p, uint32_t g)
{
    return node_at(&p->ghost.pool, g);
}

static void ghost_drop(struct importance *p, uint32_t g)
{
    node_set_remove(&p->ghost, &p->ghost_fifo, g);
}

/* Records score as the newest ghost score of khash, dropping the oldest beyond the bound. */
static sc_code ghost_put(struct importance *p, uint64_t khash, double score)
{
    uint32_t g = node_set_find(&p->ghost, khash);
    if (g != NODE_NIL) {
        node_unlink(&p->ghost.pool, &p->ghost_fifo, g);
    } else {
        g = node_set_add(&p->ghost, khash);
        if (g == NODE_NIL)
            return SC_ENOMEM;
    }
    ghost_at(p, g)->score = score;
    node_push_head(&p->ghost.pool, &p->ghost_fifo, g);
    size_t bound = heap_len(p) * GHOST_PER_CACHED;
    if (bound < GHOST_MIN)
        bound = GHOST_MIN;
    while (p->ghost_fifo.count > bound)
        ghost_drop(p, p->ghost_fifo.tail);
    return SC_OK;
}

/* The ghost score of khash, or -INFINITY; take also forgets it. */
static double ghost_score(struct importance *p, uint64_t khash, bool take)
{
    uint32_t g = node_set_find(&p->ghost, khash);
    if (g == NODE_NIL)
        return -INFINITY;
    double score = ghost_at(p, g)->score;
    if (take)
        ghost_drop(p, g);
    return score;
}

/* The score of khash: its cached nodes' (they share one), else its ghost score, else -inf. */
static double known_score(struct importance *p, uint64_t khash)
{
    uint32_t head = idmap_get(&p->by_khash, khash);
    return head != IDMAP_NONE ? at(p, head)->score : ghost_score(p, khash, false);
}

/*
 * Puts the new node n (its khash set) in the chain of its khash, taking the chain's score,
 * or starts the chain with the ghost score. @return SC_OK or SC_ENOMEM (n in no chain).
 */
static sc_code chain_add(struct importance *p, uint32_t n)
{
    struct imp_node *node = at(p, n);
    uint32_t head = idmap_get(&p->by_khash, node->khash);
    node->kprev = NODE_NIL;
    node->knext = NODE_NIL;
    if (head == IDMAP_NONE) {
        if (idmap_put(&p->by_khash, n) != SC_OK)
            return SC_ENOMEM;
        node->score = ghost_score(p, node->khash, true);
        return SC_OK;
    }
    struct imp_node *h = at(p, head);
    node->score = h->score;
    node->kprev = head;
    node->knext = h->knext;
    if (h->knext != NODE_NIL)
        at(p, h->knext)->kprev = n;
    h->knext = n;
    return SC_OK;
}

/* Takes node n out of its chain. @return true if it was the chain's last node. */
static bool chain_remove(struct importance *p, uint32_t n)
{
    const struct imp_node *node = at(p, n);
    uint32_t prev = node->kprev, next = node->knext;
    if (next != NODE_NIL)
        at(p, next)->kprev = prev;
    if (prev != NODE_NIL) {
        at(p, prev)->knext = next;
        return false;
    }
    if (next == NODE_NIL) {
        idmap_del(&p->by_khash, node->khash);
        return true;
    }
    (void)idmap_put(&p->by_khash, next); /* replaces n under the same key: cannot fail */
    return false;
}

static void imp_free(void *state)
{
    struct importance *p = state;
    if (p == NULL)
        return;
    idmap_free(&p->by_khash);
    node_set_free(&p->set);
    node_set_free(&p->ghost);
    free(p->heap);
    free(p);
}

static sc_code imp_init(uint64_t capacity, void **state)
{
    struct importance *p = calloc(1, sizeof(*p));
    *state = NULL;
    if (p == NULL)
        return SC_ENOMEM;
    p->heap = malloc(HEAP_MIN * sizeof(*p->heap));
    p->heap_cap = HEAP_MIN;
    if (p->heap == NULL || node_set_init(&p->set, sizeof(struct imp_node)) != SC_OK ||
        idmap_init(&p->by_khash, khash_of, &p->set.pool) != SC_OK ||
        node_set_init(&p->ghost, sizeof(struct ghost_node)) != SC_OK) {
        imp_free(p);
        return SC_ENOMEM;
    }
    node_list_init(&p->ghost_fifo);
    p->capacity = capacity;
    *state = p;
    return SC_OK;
}

/* Yes if obj fits in the free capacity, or would outrank the cache's minimum. */
static bool imp_admit(void *state, const struct policy_obj *obj)
{
    struct importance *p = state;
    if (p->used <= p->capacity && obj->size <= p->capacity - p->used)
        return true;
    if (heap_len(p) == 0)
        return true;
    struct rank newcomer = {
        .score = known_score(p, sc_key_hash(obj->bucket, obj->key)),
        .count = 1,
        .tick = p->clock + 1,
    };
    return rank_less(rank_of(at(p, p->heap[0])), newcomer);
}

static void imp_on_hit(void *state, uint64_t id)
{
    struct importance *p = state;
    uint32_t n = node_set_find(&p->set, id);
    if (n == NODE_NIL)
        return;
    struct imp_node *node = at(p, n);
    if (node->count < UINT32_MAX)
        node->count++;
    node->tick = ++p->clock;
    sift_down(p, node->pos, heap_len(p));
}

/* An id already tracked counts as a hit. */
static sc_code imp_on_insert(void *state, const struct policy_obj *obj)
{
    struct importance *p = state;
    if (node_set_find(&p->set, obj->id) != NODE_NIL) {
        imp_on_hit(p, obj->id);
        return SC_OK;
    }
    if (heap_reserve(p) != SC_OK)
        return SC_ENOMEM;
    uint32_t n = node_set_add(&p->set, obj->id);
    if (n == NODE_NIL)
        return SC_ENOMEM;
    struct imp_node *node = at(p, n);
    node->khash = sc_key_hash(obj->bucket, obj->key);
    if (chain_add(p, n) != SC_OK) {
        node_set_drop(&p->set, n);
        return SC_ENOMEM;
    }
    node->size = obj->size;
    node->count = 1;
    node->tick = ++p->clock;
    size_t last = heap_len(p) - 1;
    heap_set(p, last, n);
    sift_up(p, last);
    p->used += obj->size;
    return SC_OK;
}

/* An id not tracked is ignored. The score goes to the ghost table with the khash's last node. */
static void imp_on_remove(void *state, uint64_t id)
{
    struct importance *p = state;
    uint32_t n = node_set_find(&p->set, id);
    if (n == NODE_NIL)
        return;
    struct imp_node node = *at(p, n);
    bool last = chain_remove(p, n);
    node_set_drop(&p->set, n);
    size_t len = heap_len(p); /* after the drop: the index of the last entry */
    if (node.pos != len) {
        heap_set(p, node.pos, p->heap[len]);
        heap_fix(p, node.pos, len);
    }
    p->used -= node.size;
    if (last && node.score != -INFINITY)
        (void)ghost_put(p, node.khash, node.score); /* on ENOMEM the score is forgotten */
}

static bool imp_pick_victim(void *state, uint64_t *id)
{
    const struct importance *p = state;
    if (heap_len(p) == 0)
        return false;
    *id = at(p, p->heap[0])->link.key;
    return true;
}

/*
 * Scores: the rank of every cached node of the key hash moves, or the score waits in ghost.
 * Other kinds are ignored.
 */
static sc_code imp_hint(void *state, const struct policy_hint *h)
{
    struct importance *p = state;
    if (h->kind != POLICY_HINT_SCORE)
        return SC_OK;
    double score = isnan(h->score) ? -INFINITY : h->score;
    uint32_t n = idmap_get(&p->by_khash, h->khash);
    if (n == IDMAP_NONE)
        return ghost_put(p, h->khash, score);
    for (; n != NODE_NIL; n = at(p, n)->knext) {
        at(p, n)->score = score;
        heap_fix(p, at(p, n)->pos, heap_len(p));
    }
    return SC_OK;
}

const struct policy_ops policy_importance = {
    .name = "importance",
    .init = imp_init,
    .admit = imp_admit,
    .on_insert = imp_on_insert,
    .on_hit = imp_on_hit,
    .on_remove = imp_on_remove,
    .pick_victim = imp_pick_victim,
    .free = imp_free,
    .hint = imp_hint,
};
