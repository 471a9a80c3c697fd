/*
 * clairvoyant.c - evicts by the known future (policy "clairvoyant").
 *
 * With a future (a POLICY_HINT_FUTURE from a manifest), this is Belady's MIN:
 * the victim is the cached object needed furthest in the future. Objects the
 * plan does not need again (keys it does not name, and planned keys whose
 * occurrences are all consumed or skipped) go first, least recently used
 * first. Without a future every object is "not needed again", so the policy
 * is exactly LRU.
 *
 * Blocks. A block of a large object is its own entry (policy_obj.is_block). A
 * manifest's future names an object read whole by its key hash and a ranged
 * read by the hash of each block it covers (sc_block_key_hash), so an entry's
 * next use is the earlier of its key's and its block's (future_next_use_block;
 * block 0 for a whole object, which holds every range of it): a block the plan
 * reads soon is kept over a sibling block it does not read again. The node
 * keeps the block index; the block's hash is computed when asked.
 *
 * Unequal sizes. Like libCacheSim's BeladySize, an object's cost of staying
 * is size * distance, where distance = next_use - position (0 for an object
 * due at or behind the trainer's position); the victim has the largest cost.
 * Computed exactly that would mean rescanning every object, because the
 * position moves and reorders the costs. Instead the objects sit in one
 * max-heap per size class (class = bit length of the size), each ordered by
 * next use, and the victim is the top of some class with the largest
 * size * distance. With equal sizes there is one class and the rule is
 * exactly MIN; across classes it is exact; within a class, where sizes differ
 * by less than 2x, the furthest next use wins.
 *
 * Admission. An object that fits in the free capacity is admitted. Otherwise
 * it is refused if it would itself be the first to go: no cached object is
 * already unneeded, and the object is not needed again or its cost exceeds
 * the victim's. Objects larger than the whole capacity are refused. Without
 * a future everything is admitted, as by lru. With equal sizes this is MIN
 * with bypass, the offline optimum.
 *
 * Several jobs. The hint is a future_set: each job's plan, merged by the jobs' read rates into
 * one scale of positions (future_set.h), so a job twice as fast has its next uses come twice
 * as soon. With one job it is that job's future.
 *
 * Staleness. The future's next use of an object only ever moves later
 * (consumption, skipping; with several jobs, a change of rates may also move
 * it earlier). The store reports hits after the gateway consumes the access,
 * and on_hit re-reads the next use, O(log n). Other changes (accesses served
 * without a hit report, skipped occurrences, rates) are corrected lazily: a
 * heap top is re-read before it is chosen (at most MAX_REREADS), and each pick_victim
 * also re-reads SWEEP_STEPS objects round-robin, so none stays stale for
 * longer than about n / SWEEP_STEPS evictions. Every operation is O(log n)
 * amortized, plus a constant scan of the 65 class tops.
 *
 * Store ids find their nodes through the shared idmap (idmap.h).
 */
#include "future_set.h"
#include "idmap.h"
#include "policy.h"

#include <stdlib.h>

#define NIL         IDMAP_NONE /* "no node" */
#define MIN_NODES   32u
#define MAX_NODES   (UINT32_MAX - 1u)
#define N_CLASSES   65 /* bit lengths 0..64 */
#define IN_LIST     255
#define IS_FREE     254
#define SWEEP_STEPS 2u
#define MAX_REREADS                                                                                \
    1024u /* heap tops re-read per class and pick: estimates of several jobs                       \
             move with their rates, and need not settle while others read */

struct clv_node {
    uint64_t id;
    uint64_t khash;
    uint64_t size;
    uint64_t next_use; /* as last read from the future; the heap key */
    uint64_t stamp;    /* last insert or hit, for LRU order */
    uint32_t a;        /* heap: index in its class heap; list: prev (towards head) */
    uint32_t b;        /* list: next (towards tail); free: next free node */
    uint32_t block;    /* a block entry's index in its object; 0 for a whole object */
    uint8_t cls;       /* size class while in a heap, IN_LIST, or IS_FREE */
};

/* The block index fits in what was padding: a node stays 56 bytes. */
_Static_assert(sizeof(struct clv_node) <= 56, "a clairvoyant node grew");

struct clv_heap {
    uint32_t *at; /* node indices; at[0] is needed furthest ahead */
    uint32_t n;
    uint32_t cap;
};

struct clv {
    uint64_t capacity;
    uint64_t used;   /* bytes of the objects tracked */
    uint64_t clock;  /* stamps */
    future_set *fut; /* our reference, or NULL */
    struct clv_node *nodes;
    uint32_t n_nodes;   /* high-water mark */
    uint32_t cap_nodes; /* allocated */
    uint32_t free_head;
    uint32_t head;    /* unneeded objects: most recently used */
    uint32_t tail;    /* unneeded objects: least recently used, the first victim */
    struct idmap ids; /* store id -> node */
    uint32_t sweep;   /* next node the round-robin re-check visits */
    struct clv_heap heaps[N_CLASSES];
};

/* ---- nodes ------------------------------------------------------------ */

/* The idmap's key of node v: its store id. */
static uint64_t node_id(const void *ctx, uint32_t v)
{
    const struct clv *c = ctx;
    return c->nodes[v].id;
}

/* Hands out a node index, growing the pool; NIL on failure. */
static uint32_t alloc_node(struct clv *c)
{
    if (c->free_head != NIL) {
        uint32_t n = c->free_head;
        c->free_head = c->nodes[n].b;
        return n;
    }
    if (c->n_nodes == c->cap_nodes) {
        if (c->cap_nodes > MAX_NODES / 2)
            return NIL;
        uint32_t cap = c->cap_nodes * 2;
        struct clv_node *nodes = realloc(c->nodes, (size_t)cap * sizeof(*nodes));
        if (nodes == NULL)
            return NIL;
        c->nodes = nodes;
        c->cap_nodes = cap;
    }
    return c->n_nodes++;
}

/* ---- the list of unneeded objects -------------------------------------- */

static void list_unlink(struct clv *c, uint32_t n)
{
    struct clv_node *x = &c->nodes[n];
    if (x->a != NIL)
        c->nodes[x->a].b = x->b;
    else
        c->head = x->b;
    if (x->b != NIL)
        c->nodes[x->b].a = x->a;
    else
        c->tail = x->a;
}

static void list_push_head(struct clv *c, uint32_t n)
{
    struct clv_node *x = &c->nodes[n];
    x->next_use = FUTURE_NEVER;
    x->cls = IN_LIST;
    x->a = NIL;
    x->b = c->head;
    if (c->head != NIL)
        c->nodes[c->head].a = n;
    c->head = n;
    if (c->tail == NIL)
        c->tail = n;
}

/* The old end: for objects found unneeded only now, whose last use was a while ago. */
static void list_push_tail(struct clv *c, uint32_t n)
{
    struct clv_node *x = &c->nodes[n];
    x->next_use = FUTURE_NEVER;
    x->cls = IN_LIST;
    x->b = NIL;
    x->a = c->tail;
    if (c->tail != NIL)
        c->nodes[c->tail].b = n;
    c->tail = n;
    if (c->head == NIL)
        c->head = n;
}

/* ---- per-class max-heaps on next use ----------------------------------- */

static uint8_t size_class(uint64_t size)
{
    return size == 0 ? 0 : (uint8_t)(64 - __builtin_clzll(size));
}

static void heap_put(struct clv *c, struct clv_heap *h, uint32_t i, uint32_t n)
{
    h->at[i] = n;
    c->nodes[n].a = i;
}

static bool later(const struct clv *c, uint32_t x, uint32_t y)
{
    return c->nodes[x].next_use > c->nodes[y].next_use;
}

static void sift_up(struct clv *c, struct clv_heap *h, uint32_t i)
{
    uint32_t n = h->at[i];
    while (i > 0 && later(c, n, h->at[(i - 1) / 2])) {
        heap_put(c, h, i, h->at[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_put(c, h, i, n);
}

static void sift_down(struct clv *c, struct clv_heap *h, uint32_t i)
{
    uint32_t n = h->at[i];
    for (;;) {
        uint32_t kid = 2 * i + 1;
        if (kid >= h->n)
            break;
        if (kid + 1 < h->n && later(c, h->at[kid + 1], h->at[kid]))
            kid++;
        if (!later(c, h->at[kid], n))
            break;
        heap_put(c, h, i, h->at[kid]);
        i = kid;
    }
    heap_put(c, h, i, n);
}

/* Makes room for want entries in h; on failure h is unchanged. */
static sc_code heap_reserve(struct clv_heap *h, uint32_t want)
{
    if (want <= h->cap)
        return SC_OK;
    uint32_t cap = h->cap ? h->cap : MIN_NODES;
    while (cap < want)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    uint32_t *at = realloc(h->at, (size_t)cap * sizeof(*at));
    if (at == NULL)
        return SC_ENOMEM;
    h->at = at;
    h->cap = cap;
    return SC_OK;
}

/* Adds node n, whose next_use is set, to its class heap (room reserved by the caller). */
static void heap_push(struct clv *c, uint32_t n)
{
    uint8_t k = size_class(c->nodes[n].size);
    struct clv_heap *h = &c->heaps[k];
    c->nodes[n].cls = k;
    h->at[h->n] = n;
    sift_up(c, h, h->n++);
}

static void heap_delete(struct clv *c, uint32_t n)
{
    struct clv_heap *h = &c->heaps[c->nodes[n].cls];
    uint32_t i = c->nodes[n].a;
    uint32_t last = h->at[--h->n];
    if (i == h->n)
        return;
    heap_put(c, h, i, last);
    sift_up(c, h, i);
    sift_down(c, h, c->nodes[last].a);
}

/* ---- keeping next uses current ----------------------------------------- */

static uint64_t read_next_use(const struct clv *c, uint32_t n)
{
    const struct clv_node *x = &c->nodes[n];
    return c->fut != NULL ? future_set_next_use_block(c->fut, x->khash, x->block) : FUTURE_NEVER;
}

/*
 * Re-reads node n's next use and moves it to match: into the list when no
 * longer needed (at the head if touched, i.e. just used, else at the old end),
 * or to its new heap place. A listed node stays listed if the heap cannot grow.
 */
static void refresh(struct clv *c, uint32_t n, bool touched)
{
    struct clv_node *x = &c->nodes[n];
    uint64_t nu = read_next_use(c, n);
    if (touched)
        x->stamp = ++c->clock;
    if (x->cls == IN_LIST) {
        struct clv_heap *h = &c->heaps[size_class(x->size)];
        bool to_heap = nu != FUTURE_NEVER && heap_reserve(h, h->n + 1) == SC_OK;
        if (!to_heap && !touched)
            return;
        list_unlink(c, n);
        if (to_heap) {
            x->next_use = nu;
            heap_push(c, n);
        } else {
            list_push_head(c, n);
        }
        return;
    }
    if (nu == FUTURE_NEVER) {
        heap_delete(c, n);
        if (touched)
            list_push_head(c, n);
        else
            list_push_tail(c, n);
        return;
    }
    if (nu == x->next_use)
        return;
    x->next_use = nu;
    struct clv_heap *h = &c->heaps[x->cls];
    sift_up(c, h, x->a);
    sift_down(c, h, x->a);
}

/* Re-reads class k's top until it is current; returns it, or NIL if the class is empty. */
static uint32_t fresh_top(struct clv *c, int k)
{
    struct clv_heap *h = &c->heaps[k];
    for (unsigned reread = 0; h->n > 0; reread++) {
        uint32_t n = h->at[0];
        if (reread == MAX_REREADS || read_next_use(c, n) == c->nodes[n].next_use)
            return n;
        refresh(c, n, false);
    }
    return NIL;
}

/* Re-reads a few nodes round-robin, so stale entries deep in a heap are found too. */
static void sweep(struct clv *c)
{
    for (uint32_t step = 0; step < SWEEP_STEPS && c->n_nodes > 0; step++) {
        if (c->sweep >= c->n_nodes)
            c->sweep = 0;
        uint32_t n = c->sweep++;
        if (c->nodes[n].cls != IS_FREE && c->nodes[n].cls != IN_LIST)
            refresh(c, n, false);
    }
}

/* size * distance, the cost of keeping an object due at next_use; see the top comment. */
static unsigned __int128 cost(uint64_t size, uint64_t next_use, uint64_t position)
{
    uint64_t distance = next_use > position ? next_use - position : 0;
    return (unsigned __int128)size * distance;
}

/* The heap victim: the current class top of largest cost; NIL if the heaps are empty. */
static uint32_t heap_victim(struct clv *c)
{
    uint32_t best = NIL;
    unsigned __int128 best_cost = 0;
    uint64_t pos = c->fut != NULL ? future_set_position(c->fut) : 0;
    for (int k = 0; k < N_CLASSES; k++) {
        uint32_t n = fresh_top(c, k);
        if (n == NIL)
            continue;
        unsigned __int128 x = cost(c->nodes[n].size, c->nodes[n].next_use, pos);
        if (best == NIL || x > best_cost) {
            best = n;
            best_cost = x;
        }
    }
    return best;
}

/* ---- the policy -------------------------------------------------------- */

static void clv_free(void *state)
{
    struct clv *c = state;
    if (c == NULL)
        return;
    future_set_unref(c->fut);
    for (int k = 0; k < N_CLASSES; k++)
        free(c->heaps[k].at);
    idmap_free(&c->ids);
    free(c->nodes);
    free(c);
}

static sc_code clv_init(uint64_t capacity, void **state)
{
    sc_code rc = SC_ENOMEM;
    struct clv *c = calloc(1, sizeof(*c));
    *state = NULL;
    if (c == NULL)
        goto out;
    c->nodes = malloc(MIN_NODES * sizeof(*c->nodes));
    if (c->nodes == NULL || idmap_init(&c->ids, node_id, c) != SC_OK)
        goto out;
    c->capacity = capacity;
    c->cap_nodes = MIN_NODES;
    c->free_head = NIL;
    c->head = NIL;
    c->tail = NIL;
    *state = c;
    c = NULL;
    rc = SC_OK;
out:
    clv_free(c);
    return rc;
}

static void clv_on_hit(void *state, uint64_t id)
{
    struct clv *c = state;
    uint32_t n = idmap_get(&c->ids, id);
    if (n != NIL)
        refresh(c, n, true);
}

static uint64_t obj_khash(const struct policy_obj *obj)
{
    return sc_key_hash(obj->bucket ? obj->bucket : "", obj->key ? obj->key : "");
}

/* The block an entry is planned as: its own for a block, 0 for a whole object. */
static uint32_t obj_block(const struct policy_obj *obj)
{
    return obj->is_block ? obj->block : 0;
}

/* An id already tracked counts as a hit. */
static sc_code clv_on_insert(void *state, const struct policy_obj *obj)
{
    struct clv *c = state;
    if (idmap_get(&c->ids, obj->id) != NIL) {
        clv_on_hit(c, obj->id);
        return SC_OK;
    }
    struct clv_heap *h = &c->heaps[size_class(obj->size)];
    if (heap_reserve(h, h->n + 1) != SC_OK)
        return SC_ENOMEM;
    uint32_t n = alloc_node(c);
    if (n == NIL)
        return SC_ENOMEM;
    c->nodes[n] = (struct clv_node){.id = obj->id,
                                    .khash = obj_khash(obj),
                                    .size = obj->size,
                                    .block = obj_block(obj),
                                    .stamp = ++c->clock,
                                    .cls = IS_FREE};
    if (idmap_put(&c->ids, n) != SC_OK) {
        c->nodes[n].b = c->free_head;
        c->free_head = n;
        return SC_ENOMEM;
    }
    c->nodes[n].next_use = read_next_use(c, n);
    if (c->nodes[n].next_use == FUTURE_NEVER)
        list_push_head(c, n);
    else
        heap_push(c, n);
    c->used += obj->size;
    return SC_OK;
}

/* An id not tracked is ignored. */
static void clv_on_remove(void *state, uint64_t id)
{
    struct clv *c = state;
    uint32_t n = idmap_del(&c->ids, id);
    if (n == NIL)
        return;
    if (c->nodes[n].cls == IN_LIST)
        list_unlink(c, n);
    else
        heap_delete(c, n);
    c->used -= c->nodes[n].size < c->used ? c->nodes[n].size : c->used;
    c->nodes[n].cls = IS_FREE;
    c->nodes[n].b = c->free_head;
    c->free_head = n;
}

static bool clv_pick_victim(void *state, uint64_t *id)
{
    struct clv *c = state;
    if (c->ids.count == 0)
        return false;
    sweep(c);
    uint32_t n = heap_victim(c); /* first, as it may find unneeded objects */
    if (c->tail != NIL)
        n = c->tail;
    if (n == NIL)
        return false; /* cannot happen: every tracked node is in the list or a heap */
    *id = c->nodes[n].id;
    return true;
}

static bool clv_admit(void *state, const struct policy_obj *obj)
{
    struct clv *c = state;
    if (c->fut == NULL || (c->used <= c->capacity && obj->size <= c->capacity - c->used))
        return true;
    if (obj->size > c->capacity)
        return false;
    uint64_t nu = future_set_next_use_block(c->fut, obj_khash(obj), obj_block(obj));
    uint32_t victim = heap_victim(c);
    if (c->tail != NIL)
        return true; /* an unneeded object goes before this one */
    if (victim == NIL)
        return true;
    if (nu == FUTURE_NEVER)
        return false;
    uint64_t pos = future_set_position(c->fut);
    return cost(obj->size, nu, pos) <= cost(c->nodes[victim].size, c->nodes[victim].next_use, pos);
}

/* A pair for ordering the nodes by stamp when the future changes. */
struct by_stamp {
    uint64_t stamp;
    uint32_t n;
};

static int cmp_stamp(const void *a, const void *b)
{
    uint64_t x = ((const struct by_stamp *)a)->stamp, y = ((const struct by_stamp *)b)->stamp;
    return (x > y) - (x < y);
}

/* Reserves every class heap for all its nodes, so the rebuild cannot fail midway. */
static sc_code reserve_all(struct clv *c)
{
    uint32_t want[N_CLASSES] = {0};
    for (uint32_t n = 0; n < c->n_nodes; n++)
        if (c->nodes[n].cls != IS_FREE)
            want[size_class(c->nodes[n].size)]++;
    for (int k = 0; k < N_CLASSES; k++)
        if (heap_reserve(&c->heaps[k], want[k]) != SC_OK)
            return SC_ENOMEM;
    return SC_OK;
}

/* Takes the new future (or none) and re-places every node by it, oldest use first. */
static sc_code clv_hint(void *state, const struct policy_hint *h)
{
    struct clv *c = state;
    if (h->kind != POLICY_HINT_FUTURE)
        return SC_OK;
    struct by_stamp *order = malloc((c->ids.count ? c->ids.count : 1) * sizeof(*order));
    if (order == NULL || reserve_all(c) != SC_OK) {
        free(order);
        return SC_ENOMEM;
    }
    size_t m = 0;
    for (uint32_t n = 0; n < c->n_nodes; n++)
        if (c->nodes[n].cls != IS_FREE)
            order[m++] = (struct by_stamp){.stamp = c->nodes[n].stamp, .n = n};
    qsort(order, m, sizeof(*order), cmp_stamp);
    if (h->futures != NULL)
        future_set_ref(h->futures);
    future_set_unref(c->fut);
    c->fut = h->futures;
    c->head = c->tail = NIL;
    for (int k = 0; k < N_CLASSES; k++)
        c->heaps[k].n = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t n = order[i].n;
        c->nodes[n].next_use = read_next_use(c, n);
        if (c->nodes[n].next_use == FUTURE_NEVER)
            list_push_head(c, n);
        else
            heap_push(c, n);
    }
    free(order);
    return SC_OK;
}

const struct policy_ops policy_clairvoyant = {
    .name = "clairvoyant",
    .init = clv_init,
    .admit = clv_admit,
    .on_insert = clv_on_insert,
    .on_hit = clv_on_hit,
    .on_remove = clv_on_remove,
    .pick_victim = clv_pick_victim,
    .hint = clv_hint,
    .free = clv_free,
};
