/*
 * sim.h - the pieces of s3cached-sim: an access trace, its generators, the
 * replay of a trace through a real policy against an emulated store, and the
 * offline optimum computed independently of every policy.
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../common/sc_err.h"
#include "../../policy/policy.h"

#define SIM_BUCKET "sim" /* the bucket every simulated object lives in */

struct sim_object {
    char *key;     /* owned by the trace */
    uint64_t size; /* bytes */
};

struct sim_trace {
    struct sim_object *objs; /* the distinct objects */
    uint32_t n_objs;
    uint32_t cap_objs;
    uint32_t *acc; /* object index of each access */
    double *loss;  /* the loss a trainer reports for each access, or NULL */
    uint64_t n_acc;
    uint64_t cap_acc;
    uint32_t batch; /* accesses per minibatch whose losses become score hints (with loss) */
    bool planned;   /* replay delivers the whole trace to the policies as a future */
};

struct sim_gen_opts {
    uint32_t objects;  /* objects in the dataset (the working set for scan) */
    uint32_t epochs;   /* passes (rounds for scan) */
    uint64_t seed;     /* every generator is deterministic in its options */
    uint64_t size_min; /* object sizes are uniform in [size_min, size_max] */
    uint64_t size_max;
    uint32_t batch; /* minibatch length, for importance */
};

struct sim_result {
    uint64_t hits;
    uint64_t accesses;
    uint64_t hit_bytes;
    uint64_t bytes;    /* bytes of all accesses */
    uint64_t max_used; /* the most bytes cached at once */
};

/* @brief Frees what t owns and zeroes it; t itself is the caller's. */
void sim_trace_free(struct sim_trace *t);

/*
 * @brief Appends a new object named key (copied) and returns its index in idx.
 * @return SC_OK, SC_ENOMEM, or SC_ETOOBIG past UINT32_MAX - 1 objects.
 */
sc_code sim_trace_add_object(struct sim_trace *t, const char *key, uint64_t size, uint32_t *idx);

/* @brief Appends an access to object obj; loss is kept when t->loss is in use. */
sc_code sim_trace_add_access(struct sim_trace *t, uint32_t obj, double loss);

/* @brief Sum of the distinct objects' sizes: what "100% of the dataset" means. */
uint64_t sim_trace_bytes(const struct sim_trace *t);

/* @brief Whether every object has the same size (then the optimum is exact). */
bool sim_trace_equal_sizes(const struct sim_trace *t);

/*
 * @brief Reads a trace: one access per line, "key" or "key size" separated by
 * white space; blank lines and lines starting with '#' are ignored. A key's
 * first size wins; lines without one use default_size.
 * @param[out] t filled on success, freed by the caller with sim_trace_free.
 * @param[out] line on SC_EINVAL, the offending line number.
 * @return SC_OK, SC_ENOMEM, SC_EINVAL (a malformed line).
 */
sc_code sim_trace_read(FILE *in, uint64_t default_size, struct sim_trace *t, uint64_t *line);

/*
 * @brief Generators. Each fills t (freed with sim_trace_free) and returns
 * SC_OK, SC_ENOMEM or SC_EINVAL (objects or epochs 0, size_min > size_max).
 *
 * epochs: the dataset read epochs times, each epoch a Fisher-Yates shuffle
 *   seeded with seed + epoch exactly as the manifest API orders it; planned.
 * scan: a working set read with a Zipf(0.9) popularity, and after every
 *   quarter of it a scan of as many objects that are read once and never
 *   again; epochs rounds of both; not planned.
 * importance: epochs * objects samples drawn in proportion to each object's
 *   importance (log-normal), each with a loss of importance * (0.5 .. 1.5);
 *   the replay turns each minibatch's losses into score hints; not planned.
 */
sc_code sim_gen_epochs(const struct sim_gen_opts *o, struct sim_trace *t);
sc_code sim_gen_scan(const struct sim_gen_opts *o, struct sim_trace *t);
sc_code sim_gen_importance(const struct sim_gen_opts *o, struct sim_trace *t);

/*
 * @brief Replays t through one instance of ops at capacity bytes, as the store
 * drives a policy: on a hit on_hit; on a miss admit, then pick_victim and
 * on_remove until the object fits, then on_insert. A planned trace is handed
 * to the policy as a POLICY_HINT_FUTURE first and each access is consumed
 * from it before it is looked up; with losses, each full minibatch is posted
 * as POLICY_HINT_SCORE hints (policy_rank_scores) after its accesses.
 * @return SC_OK, SC_ENOMEM, or SC_EINVAL if the policy names a victim that is
 * not cached or reports no victim while objects are cached.
 */
sc_code sim_replay(const struct sim_trace *t, const struct policy_ops *ops, uint64_t capacity,
                   struct sim_result *out);

/*
 * @brief The offline optimum for equal sizes, Belady's MIN with bypass: on a
 * miss with no room, the object among the cached ones and the new one whose
 * next access is furthest away goes (the new one is then not cached). With
 * unequal sizes it evicts by the same rule until the object fits, a reference
 * point rather than an optimum.
 * @return SC_OK or SC_ENOMEM.
 */
sc_code sim_belady(const struct sim_trace *t, uint64_t capacity, struct sim_result *out);

#endif
