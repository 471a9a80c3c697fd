/*
 * plan.h - a training manifest (POST /_s3cached/manifests) parsed, validated
 * and turned into this rank's deterministic access order. Pure: no network,
 * no threads, no globals; see docs/manifests.md for the user-facing API.
 *
 * Three forms (exactly one of "keys", "epochs", "prefix" beside "bucket"):
 *  - PLAN_FORM_KEYS: the dataset is the entries as given (must be unique); the
 *    epochs are derived with the sampling fields (num_epochs, shuffle, seed,
 *    world_size, rank, drop_last).
 *  - PLAN_FORM_PREFIX: like KEYS, but the dataset is every key under the
 *    prefix, listed by the engine through the upstream: it feeds the listing
 *    with plan_dataset_append() and ends it with plan_dataset_finish(), which
 *    sorts the keys ascending by bytes (S3's order) and drops duplicates.
 *  - PLAN_FORM_EPOCHS: the epochs are the lists given, in access order. The
 *    dataset is the distinct entries in order of first appearance, so every form
 *    is read alike (dataset indices); plan_has_indices() is false because the
 *    order endpoint answers "indices": null for this form.
 *
 * An entry of "keys" or of an inner list of "epochs" is a key (the whole
 * object) or {"key": k, "offset": o, "length": l}: bytes [o, o + l) of it, with
 * o >= 0, l >= 1 and o + l <= PLAN_MAX_OBJECT_SIZE (no other field). A dataset
 * item is (key, range or whole): a key may be named whole and with several
 * ranges, each its own item; the sampling contract below works on items.
 *
 * Order of epoch e for KEYS and PREFIX (the contract; reproducible in Python):
 *   perm = [0..n-1]; if shuffle, Fisher-Yates from i = n-1 down to 1 with
 *   j = splitmix64_next() % (i + 1), swap(perm[i], perm[j]), the generator
 *   seeded with seed + e (uint64 wrapping). Then PyTorch's DistributedSampler:
 *   total = drop_last && n % ws ? (n / ws) * ws : ceil(n / ws) * ws, the
 *   permutation padded by repeating itself from the start (position i >= n is
 *   perm[i % n]), and the rank reads perm[rank], perm[rank + ws], ... below
 *   total: total / ws accesses per epoch.
 * The future is this rank's epochs concatenated: plan_accesses() positions.
 *
 * Dataset indices are uint32_t: a plan holds at most PLAN_KEYS_CAP items.
 * Keys live in one arena of NUL-terminated strings (one per distinct key) plus
 * one offset per item; the ranges, 16 bytes per item, only once an item has one.
 *
 * Lifetime: plan_parse() creates, plan_free() frees. Not thread-safe while
 * being filled (append/finish); after that, every const function may be called
 * from several threads at once.
 */
#ifndef PLAN_H
#define PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../common/sc_err.h"
#include "../proto/api_err.h"

/* Defaults of struct plan_limits (the documented limits of the API). */
#define PLAN_MAX_BODY        (64u * 1024 * 1024) /* bytes of request body */
#define PLAN_MAX_KEYS        10000000u           /* key strings in the body / listed keys */
#define PLAN_MAX_KEY_LEN     1024u               /* bytes per key (and per prefix) */
#define PLAN_MAX_EPOCHS      1000u               /* num_epochs, or lists in "epochs" */
#define PLAN_MAX_ACCESSES    100000000u          /* this rank's accesses over all epochs */
#define PLAN_MAX_NAME        256u                /* bytes of "name" */
#define PLAN_MAX_DEPTH       8u                  /* JSON nesting (a manifest needs up to 4) */
#define PLAN_MAX_OBJECT_SIZE (5ull << 40)        /* S3's largest object: a range ends within it */
#define PLAN_KEYS_CAP        (UINT32_MAX - 1u)   /* hard cap on max_keys: indices are uint32_t */

/* Limits applied by plan_parse() and plan_dataset_append(); tests pass small ones. */
struct plan_limits {
    size_t max_body;       /* TooLarge above */
    uint32_t max_keys;     /* entries: TooLarge above; at most PLAN_KEYS_CAP */
    uint32_t max_key_len;  /* InvalidField above */
    uint32_t max_epochs;   /* InvalidField above */
    uint64_t max_accesses; /* TooLarge above (a future costs ~16 bytes per access) */
    uint32_t max_name;     /* InvalidField above */
    uint32_t max_depth;    /* InvalidJSON above */
};

/* @brief Fills l with the PLAN_MAX_* defaults. Cannot fail. */
void plan_limits_default(struct plan_limits *l);

enum plan_form {
    PLAN_FORM_KEYS = 1,
    PLAN_FORM_EPOCHS,
    PLAN_FORM_PREFIX,
};

/* The scalar fields of a manifest, defaults filled in. Owned by the plan. */
struct plan_params {
    enum plan_form form;
    const char *bucket; /* validated bucket name */
    const char *prefix; /* PREFIX form: the prefix (may be ""); NULL otherwise */
    const char *name;   /* "name", or NULL when not given */
    bool prefetch;      /* default true */
    /* Sampling (KEYS and PREFIX forms; EPOCHS: num_epochs is the list count, rest default). */
    uint32_t num_epochs; /* default 1 */
    bool shuffle;        /* default false */
    uint64_t seed;       /* default 0; 0..2^63-1 as JSON allows */
    uint32_t world_size; /* default 1 */
    uint32_t rank;       /* default 0; with several ranks, the lowest */
    bool drop_last;      /* default false */
    bool cache_aware;    /* "cache_aware": epochs may be ordered cached items first */
    /* The job's ranks this plan reads for, ascending: "rank", or "local_ranks", or the ranks
     * of every manifest that joined it (plan_set_ranks). EPOCHS form: {0}. */
    const uint32_t *ranks;
    uint32_t n_ranks;
    const char *job; /* "job", or NULL: the job is named by its sampling fields alone */
};

struct plan;

/*
 * @brief Parses and validates a manifest body.
 * @param[in] body the request body, len bytes (need not be NUL-terminated).
 * @param[in] lim limits, or NULL for the defaults.
 * @param[out] out the plan, owned by the caller (plan_free); NULL on error.
 *             KEYS and EPOCHS plans are ready (plan_ready); a PREFIX plan
 *             waits for its listing (plan_dataset_append/plan_dataset_finish).
 * @param[out] err on SC_EINVAL/SC_ETOOBIG, the API error code and message; may be NULL.
 * @return SC_OK; SC_EINVAL (InvalidJSON, UnknownField, MissingField,
 *         InvalidField); SC_ETOOBIG (TooLarge); SC_ENOMEM.
 */
sc_code plan_parse(const char *body, size_t len, const struct plan_limits *lim, struct plan **out,
                   struct api_err *err);

/* @brief Frees p and everything it owns. NULL is a no-op. */
void plan_free(struct plan *p);

/* @brief The manifest's fields; valid as long as p. */
const struct plan_params *plan_params(const struct plan *p);

/*
 * @brief Adds one listed key to a PREFIX plan's dataset (before plan_dataset_finish).
 * @param[in] key len bytes, copied. Keys may come in any order; duplicates are dropped at finish.
 * @return SC_OK; SC_EINVAL (not a PREFIX plan, already finished, empty key,
 *         key over max_key_len or holding NUL: InvalidField); SC_ETOOBIG (more
 *         than max_keys keys: TooLarge); SC_ENOMEM. err as in plan_parse.
 */
sc_code plan_dataset_append(struct plan *p, const char *key, size_t len, struct api_err *err);

/*
 * @brief Ends a PREFIX plan's listing: sorts the keys ascending by bytes,
 * drops duplicates and makes the orders available.
 * @return SC_OK; SC_EINVAL (no key listed: "prefix matched no objects", or
 *         drop_last leaving no access; already finished; not a PREFIX plan);
 *         SC_ETOOBIG (over max_accesses); SC_ENOMEM. err as in plan_parse.
 */
sc_code plan_dataset_finish(struct plan *p, struct api_err *err);

/* @brief Whether the dataset is known and the orders can be asked for. */
bool plan_ready(const struct plan *p);

/* @brief Dataset size n: the distinct items (objects or ranges) the plan names (0 until ready). */
uint32_t plan_objects(const struct plan *p);

/* @brief The key of dataset index idx (< plan_objects); valid as long as p. */
const char *plan_key(const struct plan *p, uint32_t idx);

/* A byte range of an object as a manifest names it: bytes [offset, offset + length). */
struct plan_range {
    uint64_t offset;
    uint64_t length; /* at least 1; 0 means the whole object */
};

/*
 * @brief Whether dataset index idx (< plan_objects) names a byte range.
 * @param[out] r its range; {0, 0} for a whole object. May be NULL.
 */
bool plan_item_range(const struct plan *p, uint32_t idx, struct plan_range *r);

/* @brief Whether some item of the dataset names a byte range. */
bool plan_has_ranges(const struct plan *p);

/* @brief sc_key_hash(bucket, plan_key(p, idx)). */
uint64_t plan_key_hash(const struct plan *p, uint32_t idx);

/* @brief False for the EPOCHS form, whose order reply has "indices": null. */
bool plan_has_indices(const struct plan *p);

/* @brief Number of epochs (num_epochs, or the number of lists given). */
uint32_t plan_epochs(const struct plan *p);

/* @brief The plan's accesses in epoch e (< plan_epochs), all its ranks; 0 until ready. */
uint64_t plan_epoch_length(const struct plan *p, uint32_t e);

/* @brief The plan's accesses over all epochs (the future's length); 0 until ready. */
uint64_t plan_accesses(const struct plan *p);

/*
 * @brief The plan's order for epoch e as dataset indices: its ranks' orders merged as they
 * advance together under DDP's step barrier, step by step, each step the ranks' reads in
 * ascending rank order (rank r's i-th read beside every other rank's i-th read).
 * @param[out] out a new array of *n indices the caller frees with free()
 *             (NULL when *n is 0).
 * @param[out] n plan_epoch_length(p, e).
 * @return SC_OK; SC_EINVAL (not ready, e >= plan_epochs); SC_ENOMEM.
 * @note Costs O(n) time and memory for KEYS/PREFIX (the whole permutation).
 */
sc_code plan_epoch_order(const struct plan *p, uint32_t e, uint32_t **out, uint64_t *n);

#define PLAN_ALL_RANKS UINT32_MAX /* plan_rank_order: every rank of the plan, merged */

/*
 * @brief One rank's order for epoch e (rank one of plan_params()->ranks), or with
 * PLAN_ALL_RANKS plan_epoch_order(). As plan_epoch_order; SC_EINVAL also for a rank the
 * plan does not read for.
 */
sc_code plan_rank_order(const struct plan *p, uint32_t e, uint32_t rank, uint32_t **out,
                        uint64_t *n);

/*
 * Cache-aware order ("cache_aware": true, KEYS/PREFIX). When an epoch starts, the gateway
 * may decide it: each rank's share of the epoch (its DistributedSampler positions of the
 * seeded permutation, unchanged) is read cached items first, the others after, each part in
 * the share's order (a stable partition). Every item is still read once per epoch, by the
 * rank the seed gives it to, so ranks on other nodes (deciding by their own caches) stay
 * consistent. The decision is the set of items cached, one bit per dataset index (bit i:
 * byte i / 8, bit i % 8); with the seed it gives the order again.
 */

/*
 * @brief Decides epoch e of a cache-aware plan: bits (plan_objects / 8 rounded up bytes, copied)
 * has the items to read first.
 * @return SC_OK; SC_EINVAL (not cache-aware, not ready, e out of range, or decided already);
 *         SC_ENOMEM.
 */
sc_code plan_decide_epoch(struct plan *p, uint32_t e, const uint8_t *bits);

/* @brief Epoch e's decision (plan_objects / 8 rounded up bytes), or NULL while undecided. */
const uint8_t *plan_epoch_decision(const struct plan *p, uint32_t e);

/* @brief Whether the plan reads for rank (one of its ranks). */
bool plan_has_rank(const struct plan *p, uint32_t rank);

/*
 * @brief Makes the plan read for these n ranks of its job (in any order, distinct, each below
 * world_size) and derives its length again. KEYS/PREFIX form, or {0} for EPOCHS.
 * @return SC_OK; SC_EINVAL (none, a repeat, out of range); SC_ETOOBIG (the accesses of so
 *         many ranks are over max_accesses); SC_ENOMEM. On error the plan is unchanged.
 */
sc_code plan_set_ranks(struct plan *p, const uint32_t *ranks, uint32_t n, struct api_err *err);

/*
 * @brief Whether plan p belongs to the same job as plan job, so that its ranks may join it:
 * both sampling plans (KEYS or PREFIX) over the same bucket and dataset (the same entries in
 * the same order, or the same prefix) with the same num_epochs, shuffle, seed, world_size
 * and drop_last, both named by the same "job" or neither by any, and no rank in common.
 * @param[out] same the answer.
 * @return SC_OK; SC_EINVAL when p names job's "job" but another bucket, dataset or world_size
 *         (err says which). Another seed, number of epochs or sampling, or a rank already in
 *         the job, is another job under the same name (the next window of a run, a trainer
 *         restarted): *same false, SC_OK.
 */
sc_code plan_same_job(const struct plan *job, const struct plan *p, bool *same,
                      struct api_err *err);

/*
 * Walks the whole future (all epochs of this rank, concatenated) one dataset
 * index at a time, holding one epoch's order in memory. Init, next until it
 * returns SC_ENOTFOUND, then plan_iter_free (also after an error).
 */
struct plan_iter {
    const struct plan *p;
    uint32_t epoch;  /* epoch of the next index */
    uint32_t *order; /* that epoch's order (owned) */
    uint64_t len;    /* entries in order */
    uint64_t at;     /* next entry in order */
    uint64_t pos;    /* position in the future of the next index */
};

/* @brief Starts at position 0. p must be ready and outlive it. Cannot fail. */
void plan_iter_init(struct plan_iter *it, const struct plan *p);

/*
 * @brief The next access.
 * @param[out] idx its dataset index. @param[out] pos its position in the future (may be NULL).
 * @return SC_OK; SC_ENOTFOUND past the end; SC_ENOMEM (iteration can resume with another call).
 */
sc_code plan_iter_next(struct plan_iter *it, uint32_t *idx, uint64_t *pos);

/* @brief Frees what it holds. Cannot fail; safe to call twice. */
void plan_iter_free(struct plan_iter *it);

/*
 * @brief plan_key_hash() of every dataset index, so that building the future
 * hashes each key once: for each access of plan_iter_next(), future_append(
 * f, hashes[idx]). (plan.c does not build the future itself: policy/future.c
 * is not linked into every branch yet.)
 * @param[out] out a new array of plan_objects(p) hashes, freed with free().
 * @return SC_OK; SC_EINVAL (not ready); SC_ENOMEM.
 */
sc_code plan_key_hashes(const struct plan *p, uint64_t **out);

/*
 * @brief The distinct objects this rank reads at least once over all epochs:
 * below plan_objects(p) with world_size > 1 or drop_last. O(accesses) time.
 * @return SC_OK; SC_EINVAL (not ready); SC_ENOMEM.
 */
sc_code plan_used_objects(const struct plan *p, uint32_t *used);

/*
 * @brief The reply of GET .../order?epoch=e: {"id", "epoch", "rank", "indices", "keys"} of
 * plan_rank_order(p, e, rank) ("rank" null for PLAN_ALL_RANKS), with "cached_first" in a
 * decided cache-aware epoch: how many of its accesses read an item the decision found cached
 * ("indices" null for the EPOCHS form), and when the plan has ranges, "ranges":
 * [offset, length] of each access's range beside its key, null for a whole object.
 * @param[in] id the manifest's id, copied.
 * @return a new reference the caller json_decref()s; NULL if not ready, e is
 *         out of range, or out of memory.
 */
json_t *plan_order_json(const struct plan *p, const char *id, uint32_t e, uint32_t rank);

/*
 * @brief The static part of a progress object: "name" (null when absent),
 * "bucket", "form" ("keys"|"epochs"|"prefix"), "prefix" (PREFIX form only),
 * "epochs", "accesses", "objects_total" (plan_objects), "prefetch" and, for
 * KEYS/PREFIX, "sampling": {num_epochs, shuffle, seed, world_size, rank, drop_last}.
 * @return a new object the caller json_decref()s and may add fields to; NULL on ENOMEM.
 */
json_t *plan_describe_json(const struct plan *p);

/*
 * @brief S3 bucket-name check used for "bucket": 3..63 bytes of a-z, 0-9, '.',
 * '-', first and last a letter or digit, no "..". Also accepted, as the
 * gateway's path-style routing (s3_target.h), s3rver, radosgw and legacy
 * us-east-1 buckets allow: A-Z and '_', up to 255 bytes.
 */
bool plan_bucket_valid(const char *name, size_t len);

#endif
