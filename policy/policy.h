/*
 * policy.h - the eviction policy interface.
 *
 * A policy only decides; store/ carries out its decisions. The store owns one
 * policy instance, tells it about every object that enters, is read, or leaves
 * the cache, and asks it which object to evict when it needs room. All calls
 * on one instance are serialized by the store, so a policy needs no locking.
 *
 * Objects are named by the store's 64-bit object id, which is never reused.
 * Policies that must recognise an object before it is cached (importance
 * scores, the future access order) name it by sc_key_hash(bucket, key)
 * (common/hash.h, included here as part of this contract); a future names a
 * block of an object read by range by sc_block_key_hash(key hash, index).
 * A new policy is one file defining a `const struct policy_ops` plus one line
 * in the table in policy.c.
 *
 * What the world tells a policy beyond the store's own events (a trainer's
 * importance scores, a manifest's access order) arrives as a policy_hint,
 * through store_hint(), under the same serialization.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/hash.h"
#include "../common/sc_err.h"

/*
 * What a policy is told about an entry: a whole object, or one block of a large object
 * (is_block). Strings are only valid during the call.
 */
struct policy_obj {
    uint64_t id;        /* the store's object id (a block's: STORE_BLOCK_ID, store.h) */
    uint64_t size;      /* body bytes charged against the capacity */
    const char *bucket; /* bucket name */
    const char *key;    /* object key */
    bool is_block;      /* one block of a large object; false for a whole object */
    uint32_t block;     /* is_block: the block's index in its object; else 0 */
};

struct future_set; /* the known order of coming accesses, of every job: see future_set.h */

enum policy_hint_kind {
    POLICY_HINT_SCORE = 1, /* khash has importance score; higher is more important */
    POLICY_HINT_FUTURE,    /* futures: the access orders to plan by (NULL: none any more) */
};

struct policy_hint {
    enum policy_hint_kind kind;
    uint64_t khash;             /* SCORE: sc_key_hash() of the object */
    double score;               /* SCORE */
    struct future_set *futures; /* FUTURE: the policy takes its own reference */
};

struct policy_ops {
    const char *name;

    /*
     * @brief Creates a policy instance for a cache of capacity bytes.
     * @param[out] state the new instance, owned by the caller until free().
     * @return SC_OK, or SC_ENOMEM.
     */
    sc_code (*init)(uint64_t capacity, void **state);

    /*
     * @brief Asks whether obj (not yet cached) should be admitted.
     * Optional: NULL admits everything. Called before on_insert.
     */
    bool (*admit)(void *state, const struct policy_obj *obj);

    /*
     * @brief obj entered the cache (also called for each object found at start-up).
     * @return SC_OK or SC_ENOMEM; on error the store does not insert the object.
     */
    sc_code (*on_insert)(void *state, const struct policy_obj *obj);

    /* @brief The object with this id was served from the cache. */
    void (*on_hit)(void *state, uint64_t id);

    /* @brief The object with this id left the cache (evicted or invalidated). */
    void (*on_remove)(void *state, uint64_t id);

    /*
     * @brief Chooses the next object to evict without removing it; the store
     * evicts it and then calls on_remove().
     * @param[out] id the victim.
     * @return true if a victim was chosen, false if the policy tracks nothing.
     */
    bool (*pick_victim)(void *state, uint64_t *id);

    /*
     * @brief Takes a hint (see policy_hint). Optional: NULL ignores every hint,
     * and a policy ignores kinds it has no use for.
     * @return SC_OK or SC_ENOMEM (the hint is dropped; the policy stays consistent).
     */
    sc_code (*hint)(void *state, const struct policy_hint *h);

    /* @brief Frees the instance and everything it owns. */
    void (*free)(void *state);
};

/* Returns the policy registered under name, or NULL. */
const struct policy_ops *policy_find(const char *name);

/* Returns the number of policies in the table. */
size_t policy_count(void);

/* Returns the i-th policy of the table (i < policy_count()), or NULL past its end. */
const struct policy_ops *policy_at(size_t i);

/*
 * @brief SHADE's importance scores for one minibatch: the samples are ranked
 * by ascending loss (rank r = 1 for the smallest; equal losses share the
 * smaller rank) and each scores log(r + 10), so the hardest samples of a
 * minibatch score highest. NaN losses rank below every number.
 * @param[in] losses n losses. @param[out] scores n scores, same order.
 * @return SC_OK, or SC_ENOMEM (scores untouched).
 */
sc_code policy_rank_scores(const double *losses, size_t n, double *scores);

/* Returns a comma-separated list of policy names, for --help; static storage. */
const char *policy_names(void);

#endif
