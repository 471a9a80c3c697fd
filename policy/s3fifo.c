/*
 * s3fifo.c - S3-FIFO eviction (policy "s3fifo"), after Yang et al., "FIFO
 * queues are all you need for cache eviction", SOSP 2023.
 *
 * Three FIFO queues, sized in bytes:
 *  - small: new objects, about 10% of the capacity. Most objects are read
 *    once (a scan, a one-epoch sample) and leave from here without ever
 *    disturbing the main queue.
 *  - main: the rest. An object reaches it when it was read again while in
 *    small, or when its key is found in the ghost queue at insertion.
 *  - ghost: the key hashes (sc_key_hash) of objects evicted from small
 *    without a second read, bounded to about as many entries as main holds
 *    objects. An object that comes back while remembered goes straight to
 *    main.
 * Each cached object has a 2-bit read counter (0..3) that a hit increments.
 * Choosing a victim walks the tails: while small holds at least its share
 * (or main is empty), small's tail moves to main if it was read (counter
 * reset) and is the victim otherwise; else main's tail is reinserted at
 * main's head with its counter decremented if it was read, and is the victim
 * otherwise. Moves happen inside pick_victim(); the victim itself leaves only
 * when the store calls on_remove(), which also remembers it in ghost.
 *
 * One deviation from the paper, as in libCacheSim's S3FIFO.c: until the
 * store first asks for a victim (the cache has not yet filled), objects that
 * would overflow small go to main, so a warm restart (every object replayed
 * through on_insert) rebuilds a full main queue instead of a huge small one.
 *
 * Cost: a 40-byte node per cached object and per ghost entry, plus 8 to 16
 * bytes of hash table each; every operation is O(1) amortized.
 */
#include "policy.h"

#include <stdlib.h>

#include "nodes.h"

#define SMALL_SHARE 10u /* percent of the capacity for the small queue */
#define FREQ_MAX    3u  /* the 2-bit counter's ceiling */

enum s3_queue { Q_SMALL, Q_MAIN, Q_GHOST };

struct s3_node {
    struct node link; /* key: the store id, or the key hash once in ghost */
    uint64_t khash;   /* sc_key_hash(bucket, key) */
    uint64_t size;
    uint8_t freq;  /* reads since insertion or the last move, up to FREQ_MAX */
    uint8_t queue; /* enum s3_queue */
};

struct s3fifo {
    struct node_set set;    /* every node; set.map finds cached nodes by id */
    struct idmap ghost_map; /* key hash -> ghost node */
    struct node_list small, main, ghost;
    uint64_t capacity;
    uint64_t small_target; /* small's share of the capacity */
    uint64_t small_bytes, main_bytes;
    bool filled;      /* a victim has been asked for: the cache has been full */
    bool named_small; /* named is a victim chosen from small */
    uint64_t named;   /* the last victim named by pick_victim */
};

static struct s3_node *at(const struct s3fifo *s, uint32_t n)
{
    return node_at(&s->set.pool, n);
}

static struct node_list *queue_of(struct s3fifo *s, uint32_t n)
{
    switch (at(s, n)->queue) {
    case Q_SMALL:
        return &s->small;
    case Q_MAIN:
        return &s->main;
    default:
        return &s->ghost;
    }
}

/* Puts cached node n at the head of queue q, keeping the byte counts. */
static void enqueue(struct s3fifo *s, uint32_t n, enum s3_queue q)
{
    struct s3_node *node = at(s, n);
    node->queue = (uint8_t)q;
    if (q == Q_SMALL)
        s->small_bytes += node->size;
    else
        s->main_bytes += node->size;
    node_push_head(&s->set.pool, queue_of(s, n), n);
}

/* Takes cached node n off its queue, keeping the byte counts. */
static void dequeue(struct s3fifo *s, uint32_t n)
{
    struct s3_node *node = at(s, n);
    if (node->queue == Q_SMALL)
        s->small_bytes -= node->size;
    else
        s->main_bytes -= node->size;
    node_unlink(&s->set.pool, queue_of(s, n), n);
}

static void ghost_drop(struct s3fifo *s, uint32_t g)
{
    node_unlink(&s->set.pool, &s->ghost, g);
    idmap_del(&s->ghost_map, at(s, g)->link.key);
    node_release(&s->set.pool, g);
}

/* About as many objects as main holds when full: its bytes over the mean object size. */
static size_t ghost_bound(const struct s3fifo *s)
{
    size_t cached = s->small.count + s->main.count;
    uint64_t bytes = s->small_bytes + s->main_bytes;
    size_t bound = s->main.count;
    if (cached > 0 && bytes >= cached) {
        uint64_t fits = (s->capacity - s->small_target) / (bytes / cached);
        if (fits > bound)
            bound = (size_t)fits;
    }
    return bound;
}

/* Turns cached node n (off every queue, still found by id) into the newest ghost entry. */
static void to_ghost(struct s3fifo *s, uint32_t n)
{
    struct s3_node *node = at(s, n);
    idmap_del(&s->set.map, node->link.key);
    uint32_t old = idmap_get(&s->ghost_map, node->khash);
    if (old != IDMAP_NONE)
        ghost_drop(s, old);
    node->link.key = node->khash;
    node->queue = Q_GHOST;
    if (idmap_put(&s->ghost_map, n) != SC_OK) {
        node_release(&s->set.pool, n); /* ghost is advice: forgetting is safe */
        return;
    }
    node_push_head(&s->set.pool, &s->ghost, n);
    size_t bound = ghost_bound(s);
    while (s->ghost.count > bound)
        ghost_drop(s, s->ghost.tail);
}

static sc_code s3_init(uint64_t capacity, void **state)
{
    struct s3fifo *s = calloc(1, sizeof(*s));
    *state = NULL;
    if (s == NULL)
        return SC_ENOMEM;
    if (node_set_init(&s->set, sizeof(struct s3_node)) != SC_OK)
        goto fail;
    if (idmap_init(&s->ghost_map, node_key, &s->set.pool) != SC_OK) {
        node_set_free(&s->set);
        goto fail;
    }
    node_list_init(&s->small);
    node_list_init(&s->main);
    node_list_init(&s->ghost);
    s->capacity = capacity;
    s->small_target = capacity / 100 * SMALL_SHARE + capacity % 100 * SMALL_SHARE / 100;
    *state = s;
    return SC_OK;
fail:
    free(s);
    return SC_ENOMEM;
}

static void s3_on_hit(void *state, uint64_t id)
{
    struct s3fifo *s = state;
    uint32_t n = node_set_find(&s->set, id);
    if (n != NODE_NIL && at(s, n)->freq < FREQ_MAX)
        at(s, n)->freq++;
}

/* Remembered in ghost: main. Still filling and small is full: main. Otherwise small. */
static enum s3_queue entry_queue(struct s3fifo *s, uint64_t khash, uint64_t size)
{
    uint32_t g = idmap_get(&s->ghost_map, khash);
    if (g != IDMAP_NONE) {
        ghost_drop(s, g);
        return Q_MAIN;
    }
    if (!s->filled && s->small_bytes + size > s->small_target)
        return Q_MAIN;
    return Q_SMALL;
}

/* An id already tracked counts as a hit. */
static sc_code s3_on_insert(void *state, const struct policy_obj *obj)
{
    struct s3fifo *s = state;
    if (node_set_find(&s->set, obj->id) != NODE_NIL) {
        s3_on_hit(s, obj->id);
        return SC_OK;
    }
    uint32_t n = node_set_add(&s->set, obj->id);
    if (n == NODE_NIL)
        return SC_ENOMEM;
    struct s3_node *node = at(s, n);
    node->khash = sc_key_hash(obj->bucket, obj->key);
    node->size = obj->size;
    node->freq = 0;
    enqueue(s, n, entry_queue(s, node->khash, obj->size));
    return SC_OK;
}

/* An id not tracked is ignored. A victim named from small is remembered in ghost. */
static void s3_on_remove(void *state, uint64_t id)
{
    struct s3fifo *s = state;
    uint32_t n = node_set_find(&s->set, id);
    if (n == NODE_NIL)
        return;
    bool evicted_from_small = s->named_small && s->named == id && at(s, n)->queue == Q_SMALL;
    if (s->named == id)
        s->named_small = false;
    dequeue(s, n);
    if (evicted_from_small)
        to_ghost(s, n);
    else
        node_set_drop(&s->set, n);
}

/*
 * Looks at the tail of small (when it holds its share, or main is empty) or
 * of main. @return true and sets *victim if that tail is to be evicted;
 * false after moving it to main's head because it was read.
 */
static bool examine_tail(struct s3fifo *s, uint32_t *victim)
{
    bool from_small =
        s->small.count > 0 && (s->small_bytes >= s->small_target || s->main.count == 0);
    uint32_t t = from_small ? s->small.tail : s->main.tail;
    struct s3_node *node = at(s, t);
    if (node->freq == 0) {
        *victim = t;
        s->named_small = from_small;
        return true;
    }
    node->freq = from_small ? 0 : node->freq - 1;
    dequeue(s, t);
    enqueue(s, t, Q_MAIN);
    return false;
}

static bool s3_pick_victim(void *state, uint64_t *id)
{
    struct s3fifo *s = state;
    s->filled = true;
    if (s->small.count + s->main.count == 0)
        return false;
    uint32_t victim;
    while (!examine_tail(s, &victim))
        ; /* ends: each pass lowers a counter or moves a node out of small */
    s->named = at(s, victim)->link.key;
    *id = s->named;
    return true;
}

static void s3_free(void *state)
{
    struct s3fifo *s = state;
    if (s == NULL)
        return;
    idmap_free(&s->ghost_map);
    node_set_free(&s->set);
    free(s);
}

const struct policy_ops policy_s3fifo = {
    .name = "s3fifo",
    .init = s3_init,
    .on_insert = s3_on_insert,
    .on_hit = s3_on_hit,
    .on_remove = s3_on_remove,
    .pick_victim = s3_pick_victim,
    .free = s3_free,
};
