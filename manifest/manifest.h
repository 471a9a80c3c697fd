/*
 * manifest.h - manifests: warm the cache and tell the policy the future.
 *
 * A manifest (POST /_s3cached/manifests, parsed by plan.c) names the objects,
 * or byte ranges of objects, a trainer will read, in order. The registry keeps every manifest of
 * this gateway, lists prefix manifests through the upstream, hands the newest active plan's future
 * to the policy (POLICY_HINT_FUTURE), follows the trainer's position from the reads it serves
 * (mf_observe), and runs the prefetcher: one thread that walks each plan ahead of the trainer and
 * starts cache fills with bounded concurrency, never further ahead than the cache holds and never
 * for an object the policy would not admit (an object needed later than everything cached).
 * Progress is JSON for the admin API.
 *
 * All functions are thread-safe. Created manifests are written to the
 * cache directory and registered again at start-up (their trainer position
 * starts over).
 */
#ifndef GW_MANIFEST_H
#define GW_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../store/store.h"
#include "../proto/api_err.h"
#include "../upstream/fill.h"
#include "../common/stats.h"
#include "../upstream/upstream.h"
#include "../fleet/fleet.h"

typedef struct mf_registry mf_registry;

struct mf_config {
    store *st;
    upstream *up;           /* for listing prefixes */
    fill_table *fills;      /* prefetches are fills nobody reads yet */
    uint64_t capacity;      /* the cache's capacity in bytes */
    uint32_t block_size;    /* the gateway's --block-size: a ranged item is planned, warmed and
                               counted by the blocks it covers; 0: STORE_DEFAULT_BLOCK_SIZE */
    unsigned concurrency;   /* prefetches in flight at once, over all manifests */
    const char *dir;        /* where manifests are kept across restarts; NULL: not kept */
    struct sc_stats *stats; /* counts prefetched objects */
    fleet *fleet;           /* NULL: no fleet; else each gateway plans and warms the names it
                               owns, and sees every read of them; with up, registrations and
                               withdrawals go to every live peer and progress is the fleet's
                               (fleet_sync.c, docs/fleet.md) */
};

/*
 * @brief Creates the registry, registers the manifests kept in cfg->dir and
 * starts the prefetcher.
 * @param[out] out owned by the caller: mf_registry_stop() then mf_registry_free().
 * @return SC_OK, SC_ENOMEM, SC_EIO (cannot create cfg->dir or start the thread).
 */
sc_code mf_registry_start(const struct mf_config *cfg, mf_registry **out);

/* @brief Stops the prefetcher (no new fetches). Fetches in flight end on their own. */
void mf_registry_stop(mf_registry *r);

/*
 * @brief Frees the registry. Call after every fill has ended (upstream stopped
 * and store closed), since their completions refer to it. NULL is a no-op.
 */
void mf_registry_free(mf_registry *r);

/*
 * @brief Registers a manifest from a request body. On a fleet its id is fleet-unique and the
 * registration is sent to every live peer by the fleet thread (it does not wait for them).
 * @param[out] reply the 201 body ({"id", "state", ...}), owned by the caller.
 * @param[out] err the API error when the result is not SC_OK.
 * @return SC_OK, SC_EINVAL or SC_ETOOBIG (err says why), SC_ENOMEM.
 */
sc_code mf_create(mf_registry *r, const char *body, size_t len, json_t **reply,
                  struct api_err *err);

/*
 * @brief Registers a manifest a peer forwarded (docs/fleet.md): as mf_create(), under the id
 * it has on the peer (fleet-unique: "m<n>-<6 hex>"), and never forwarded again.
 * @return as mf_create(); SC_EINVAL also for an id of another shape or registered already.
 */
sc_code mf_create_forwarded(mf_registry *r, const char *id, const char *body, size_t len,
                            json_t **reply, struct api_err *err);

/* @brief One manifest's progress (with failures), or NULL if unknown / out of memory. */
json_t *mf_progress(mf_registry *r, const char *id);

/* @brief Whether registration id is registered here (a progress that could not be built for
 * want of memory is not an unknown id: the fleet takes a 404 as "withdrawn"). */
bool mf_known(mf_registry *r, const char *id);

/* @brief {"manifests": [progress without failures, ...]}, or NULL when out of memory. */
json_t *mf_list(mf_registry *r);

#define MF_RANK_OWN UINT32_MAX /* mf_order: the registration's rank (all, if it has several) */

/*
 * @brief The keys of epoch e in the gateway's order, for one rank of the manifest's job (or
 * MF_RANK_OWN).
 * @return the reply, or NULL with err set (NotFound, InvalidField) or, when
 *         err->code is API_OK, out of memory.
 */
json_t *mf_order(mf_registry *r, const char *id, uint32_t e, uint32_t rank, struct api_err *err);

/*
 * @brief Withdraws a registration: its ranks leave its job's plan. With the job's last rank
 * the job is canceled: no new fetches; it leaves the listing and the policy's plan. On a fleet
 * the withdrawal is sent to every live peer, as registrations are.
 * @return the job's progress (state "canceled" when it ended), or NULL if unknown or
 *         withdrawn already / out of memory.
 */
json_t *mf_cancel(mf_registry *r, const char *id);

/* @brief mf_cancel() of a withdrawal a peer forwarded: never forwarded again. */
json_t *mf_cancel_forwarded(mf_registry *r, const char *id);

/* Sums over the manifests still at work (listing, warming, warm, planned), for metrics. */
struct mf_totals {
    uint32_t active;
    uint64_t objects, cached, inflight, failed; /* distinct objects of this rank */
    uint64_t prefetch_inflight; /* fills the prefetcher has running, all manifests */
    uint64_t registered_client; /* registrations posted here (mf_create), since start */
    uint64_t registered_peer;   /* registrations a peer forwarded that arrived here
                                   (mf_create_forwarded), registered or refused */
};

/* @brief Fills t. Any thread. */
void mf_get_totals(mf_registry *r, struct mf_totals *t);

/* The bytes a read asked for: [first, last], last UINT64_MAX for "to the end" (range_span()). */
struct mf_read {
    uint64_t first, last;
};

/* Blocks one bounded read consumes at most (a longer one consumes its first ones). */
#define MF_OBSERVE_BLOCKS 1024u

/*
 * @brief The trainer read (bucket, key): moves the plans that name it forward. A whole read
 * (range NULL; also a suffix range, whose bytes are not known before the size) consumes the
 * key's planned occurrence. A ranged read, in a plan that names ranges, consumes the planned
 * occurrence of each block it covers (up to MF_OBSERVE_BLOCKS; a read "to the end" only its
 * first block, since the reader may stop anywhere), and the key's when the plan holds none of
 * those blocks. A ranged read that does not start a planned range continues one: it consumes
 * only occurrences before the plan's position plus the blocks it covers, so a second part
 * never takes the next epoch's occurrence. A ranged read of an object planned whole consumes
 * its occurrence unless one was consumed lately (future_take's once): parts in any order.
 */
void mf_observe(mf_registry *r, const char *bucket, const char *key, const struct mf_read *range);

#endif
