/*
 * plan_int.h - the inside of struct plan, shared by plan.c (parsing and the
 * dataset), plan_order.c (orders) and plan_json.c (replies). Not for other modules.
 */
#ifndef PLAN_INT_H
#define PLAN_INT_H

#include "../common/buf.h"
#include "plan.h"

#define PLAN_OFF_STRIDE 8u /* items per offset kept by a sparse plan: 0.5 byte per key */

struct plan {
    struct plan_params prm; /* strings point at the owned copies below */
    struct plan_limits lim;
    char *bucket;
    char *prefix;
    char *name;

    /*
     * The dataset: item i's key is arena.data + off[i], NUL-terminated (the NULs are in
     * arena.len); items naming one key share its string. rng[i] is item i's byte range
     * (length 0: the whole object), allocated with off's capacity once an item has a range.
     * Once ready, a plan whose items have a string each, one after the other in item order
     * (no ranges; a listing that came sorted), keeps only every PLAN_OFF_STRIDE-th offset
     * (sparse): item i's key is the (i % PLAN_OFF_STRIDE)-th string after off[i / stride].
     */
    struct sc_buf arena; /* at most PLAN_MAX_ARENA bytes: offsets are 32-bit */
    uint32_t *off;
    bool sparse;
    struct plan_range *rng;
    uint32_t n, off_cap;
    bool ready;

    /* EPOCHS form: epoch e is acc[ep_start[e] .. ep_start[e + 1]). */
    uint32_t *acc;
    uint64_t *ep_start;

    /* KEYS/PREFIX: the job's ranks this plan reads for, ascending (one: "rank"). */
    uint32_t *ranks;
    uint32_t n_ranks;
    char *job;         /* "job", or NULL */
    uint8_t **decided; /* cache-aware: per epoch, the items read first (plan.h), or NULL */

    uint64_t per_rank;  /* KEYS/PREFIX: one rank's accesses per epoch */
    uint64_t per_epoch; /* the plan's accesses per epoch: per_rank for each of its ranks */
    uint64_t accesses;  /* the plan's accesses over all epochs */
};

/*
 * Appends key[0..len) to the dataset as index p->n, a whole object.
 * @return SC_OK, SC_ENOMEM, SC_ETOOBIG (the keys pass PLAN_MAX_ARENA bytes).
 */
sc_code plan_arena_push(struct plan *p, const char *key, size_t len);

/*
 * Computes per_epoch and accesses for a KEYS/PREFIX plan with n keys and
 * checks them. @return SC_OK, SC_EINVAL (no access), SC_ETOOBIG (over max_accesses).
 */
sc_code plan_derive(struct plan *p, struct api_err *err);

#endif
