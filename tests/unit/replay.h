/*
 * replay.h - a small stand-in for the store, for policy unit tests: replays
 * a trace of object reads against a policy as the store would, and checks on
 * every step that the policy keeps the cache within its byte capacity and
 * only names cached objects as victims.
 *
 * Objects are numbered 0..n-1 and named ("b", "k<n>"); each cached copy gets
 * a fresh store id (ids are never reused). Header-only: include it after
 * <cmocka.h>; every function is static inline.
 */
#ifndef TESTS_UNIT_REPLAY_H
#define TESTS_UNIT_REPLAY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../policy/policy.h"

struct replay {
    const struct policy_ops *ops;
    void *state;
    uint64_t capacity, used;
    size_t n_objects;
    uint64_t *size;      /* per object: its bytes */
    uint64_t *cached_id; /* per object: the id of its cached copy, or 0 */
    uint32_t *obj_of_id; /* per id: the object it was given to */
    uint64_t next_id;    /* ids start at 1 */
    size_t cap_ids;
    uint64_t reads, hits;
};

static inline const struct policy_ops *replay_ops(const char *name)
{
    const struct policy_ops *ops = policy_find(name);
    assert_non_null(ops);
    return ops;
}

static inline void replay_key(uint32_t obj, char *buf, size_t len)
{
    snprintf(buf, len, "k%u", obj);
}

static inline uint64_t replay_khash(uint32_t obj)
{
    char key[32];
    replay_key(obj, key, sizeof(key));
    return sc_key_hash("b", key);
}

/* A new policy instance, and every object size bytes (tests may change r->size). */
static inline void replay_init(struct replay *r, const char *policy, uint64_t capacity,
                               size_t n_objects, uint64_t size)
{
    memset(r, 0, sizeof(*r));
    r->ops = replay_ops(policy);
    assert_int_equal(r->ops->init(capacity, &r->state), SC_OK);
    r->capacity = capacity;
    r->n_objects = n_objects;
    r->size = malloc(n_objects * sizeof(*r->size));
    r->cached_id = calloc(n_objects, sizeof(*r->cached_id));
    r->cap_ids = 1024;
    r->obj_of_id = malloc(r->cap_ids * sizeof(*r->obj_of_id));
    assert_true(r->size != NULL && r->cached_id != NULL && r->obj_of_id != NULL);
    for (size_t i = 0; i < n_objects; i++)
        r->size[i] = size;
    r->next_id = 1;
}

static inline void replay_free(struct replay *r)
{
    r->ops->free(r->state);
    free(r->size);
    free(r->cached_id);
    free(r->obj_of_id);
}

static inline bool replay_cached(const struct replay *r, uint32_t obj)
{
    return r->cached_id[obj] != 0;
}

/* The object whose cached copy has id, asserting there is one. */
static inline uint32_t replay_obj_of(const struct replay *r, uint64_t id)
{
    assert_true(id >= 1 && id < r->next_id);
    uint32_t obj = r->obj_of_id[id];
    assert_int_equal(r->cached_id[obj], id);
    return obj;
}

/* Invalidates obj's cached copy (a delete or overwrite), as the store tells the policy. */
static inline void replay_drop(struct replay *r, uint32_t obj)
{
    assert_true(replay_cached(r, obj));
    r->ops->on_remove(r->state, r->cached_id[obj]);
    r->used -= r->size[obj];
    r->cached_id[obj] = 0;
}

/* Asks for one victim and removes it; returns its object. */
static inline uint32_t replay_evict_one(struct replay *r)
{
    uint64_t id = 0;
    assert_true(r->ops->pick_victim(r->state, &id));
    uint32_t obj = replay_obj_of(r, id);
    replay_drop(r, obj);
    return obj;
}

/* Evicts until need more bytes fit. */
static inline void replay_make_room(struct replay *r, uint64_t need)
{
    while (r->used + need > r->capacity)
        replay_evict_one(r);
}

/* Tells the policy that obj's copy with id entered the cache. */
static inline void replay_insert_id(struct replay *r, uint32_t obj, uint64_t id)
{
    char key[32];
    replay_key(obj, key, sizeof(key));
    struct policy_obj o = {.id = id, .size = r->size[obj], .bucket = "b", .key = key};
    assert_int_equal(r->ops->on_insert(r->state, &o), SC_OK);
    r->cached_id[obj] = id;
    r->used += r->size[obj];
}

/* A read of obj: a hit, or a miss that the policy may admit. Returns whether it hit. */
static inline bool replay_read(struct replay *r, uint32_t obj)
{
    r->reads++;
    if (replay_cached(r, obj)) {
        r->ops->on_hit(r->state, r->cached_id[obj]);
        r->hits++;
        return true;
    }
    char key[32];
    replay_key(obj, key, sizeof(key));
    struct policy_obj o = {.id = r->next_id, .size = r->size[obj], .bucket = "b", .key = key};
    if (o.size > r->capacity || (r->ops->admit != NULL && !r->ops->admit(r->state, &o)))
        return false;
    replay_make_room(r, o.size);
    if (r->next_id == r->cap_ids) {
        r->cap_ids *= 2;
        r->obj_of_id = realloc(r->obj_of_id, r->cap_ids * sizeof(*r->obj_of_id));
        assert_non_null(r->obj_of_id);
    }
    r->obj_of_id[r->next_id] = obj;
    replay_insert_id(r, obj, r->next_id++);
    assert_true(r->used <= r->capacity);
    return false;
}

static inline double replay_hit_ratio(const struct replay *r)
{
    return r->reads ? (double)r->hits / (double)r->reads : 0.0;
}

static inline void replay_reset_counts(struct replay *r)
{
    r->reads = 0;
    r->hits = 0;
}

/*
 * A restart: a fresh instance of policy with capacity, told about every cached
 * object, oldest id first, as the store does at start-up; then evicts until
 * the cache fits a capacity that shrank.
 */
static inline void replay_restart(struct replay *r, const char *policy, uint64_t capacity)
{
    r->ops->free(r->state);
    r->ops = replay_ops(policy);
    r->capacity = capacity;
    assert_int_equal(r->ops->init(capacity, &r->state), SC_OK);
    r->used = 0;
    for (uint64_t id = 1; id < r->next_id; id++) {
        uint32_t obj = r->obj_of_id[id];
        if (r->cached_id[obj] == id)
            replay_insert_id(r, obj, id);
    }
    replay_make_room(r, 0);
}

/* Posts a minibatch's losses as the gateway does: rank scores, one hint per sample. */
static inline void replay_post_losses(struct replay *r, const uint32_t *objs, const double *losses,
                                      size_t n)
{
    double *scores = malloc(n * sizeof(*scores));
    assert_non_null(scores);
    assert_int_equal(policy_rank_scores(losses, n, scores), SC_OK);
    for (size_t i = 0; i < n && r->ops->hint != NULL; i++) {
        struct policy_hint h = {
            .kind = POLICY_HINT_SCORE, .khash = replay_khash(objs[i]), .score = scores[i]};
        assert_int_equal(r->ops->hint(r->state, &h), SC_OK);
    }
    free(scores);
}

/* splitmix64: a reproducible stream of random numbers from *seed. */
static inline uint64_t replay_rand(uint64_t *seed)
{
    uint64_t z = (*seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform number below n. */
static inline uint32_t replay_below(uint64_t *seed, uint32_t n)
{
    return (uint32_t)(replay_rand(seed) % n);
}

/* Shuffles objs in place (Fisher-Yates). */
static inline void replay_shuffle(uint32_t *objs, size_t n, uint64_t *seed)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = replay_rand(seed) % i;
        uint32_t t = objs[i - 1];
        objs[i - 1] = objs[j];
        objs[j] = t;
    }
}

#endif
