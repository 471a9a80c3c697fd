/*
 * plan_order.c - a plan's deterministic access order (plan.h): splitmix64
 * Fisher-Yates per epoch, PyTorch's DistributedSampler split, the walk over
 * all epochs, and the plan's read-only accessors.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/policy.h"
#include "plan_int.h"

/* splitmix64, exactly as the contract spells it: state starts at seed + epoch. */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

sc_code plan_derive(struct plan *p, struct api_err *err)
{
    uint64_t n = p->n, ws = p->prm.world_size;
    p->per_rank = p->prm.drop_last ? n / ws : (n + ws - 1) / ws;
    p->per_epoch = p->per_rank * p->n_ranks;
    p->accesses = p->per_epoch * p->prm.num_epochs;
    if (p->per_rank == 0) {
        api_err_set(err, API_INVALID_FIELD,
                    "drop_last with world_size %" PRIu64 " leaves no samples of the %" PRIu64
                    " keys to any rank",
                    ws, n);
        return SC_EINVAL;
    }
    if (p->accesses > p->lim.max_accesses) {
        api_err_set(err, API_TOO_LARGE,
                    "the plan has %" PRIu64 " accesses for %s (%" PRIu64
                    " per epoch, %u epochs); the limit is %" PRIu64,
                    p->accesses, p->n_ranks > 1 ? "its ranks" : "this rank", p->per_epoch,
                    p->prm.num_epochs, p->lim.max_accesses);
        return SC_ETOOBIG;
    }
    return SC_OK;
}

/* Epoch e's permutation of the dataset (NULL without shuffle: the identity). */
static sc_code permutation(const struct plan *p, uint32_t e, uint32_t **out)
{
    uint32_t n = p->n;
    uint64_t state = p->prm.seed + e;
    *out = NULL;
    if (!p->prm.shuffle)
        return SC_OK;
    uint32_t *perm = malloc((size_t)n * sizeof(*perm));
    if (perm == NULL)
        return SC_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n - 1; i >= 1; i--) {
        uint32_t j = (uint32_t)(splitmix64_next(&state) % ((uint64_t)i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    *out = perm;
    return SC_OK;
}

/* Puts the items of share[0..len) that a decided epoch found cached first, each part in its
 * order (a stable partition); tmp holds len entries. */
static void cached_first(const uint8_t *bits, uint32_t *share, uint64_t len, uint32_t *tmp)
{
    uint64_t at = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (uint64_t i = 0; i < len; i++)
            if (((bits[share[i] / 8] >> (share[i] % 8)) & 1) == (unsigned)pass)
                tmp[at++] = share[i];
    memcpy(share, tmp, (size_t)len * sizeof(*share));
}

/*
 * Fills order for epoch e of a KEYS/PREFIX plan: step j of each of the n ranks, in turn
 * (per_rank * n entries). A rank's share is its DistributedSampler positions of the epoch's
 * permutation (padded position k >= n repeats it: perm[k % n]); in a decided cache-aware
 * epoch the share is read cached items first, so the shares, and what each rank reads, stay
 * those of the seed on every node.
 */
static sc_code sampled_order(const struct plan *p, uint32_t e, const uint32_t *ranks, uint32_t n,
                             uint32_t *order)
{
    uint64_t ws = p->prm.world_size, len = p->per_rank;
    const uint8_t *bits = plan_epoch_decision(p, e);
    uint32_t *perm, *share = malloc((size_t)(2 * len + 1) * sizeof(*share));
    if (share == NULL || permutation(p, e, &perm) != SC_OK) {
        free(share);
        return SC_ENOMEM;
    }
    for (uint32_t r = 0; r < n; r++) {
        for (uint64_t j = 0; j < len; j++) {
            uint32_t k = (uint32_t)((ranks[r] + j * ws) % p->n);
            share[j] = perm ? perm[k] : k;
        }
        if (bits != NULL)
            cached_first(bits, share, len, share + len);
        for (uint64_t j = 0; j < len; j++)
            order[j * n + r] = share[j];
    }
    free(perm);
    free(share);
    return SC_OK;
}

uint64_t plan_epoch_length(const struct plan *p, uint32_t e)
{
    if (!p->ready || e >= p->prm.num_epochs)
        return 0;
    if (p->prm.form == PLAN_FORM_EPOCHS)
        return p->ep_start[e + 1] - p->ep_start[e];
    return p->per_epoch;
}

sc_code plan_rank_order(const struct plan *p, uint32_t e, uint32_t rank, uint32_t **out,
                        uint64_t *n)
{
    bool all = rank == PLAN_ALL_RANKS;
    *out = NULL;
    *n = 0;
    if (!p->ready || e >= p->prm.num_epochs || (!all && !plan_has_rank(p, rank)))
        return SC_EINVAL;
    uint64_t len = plan_epoch_length(p, e);
    if (!all && p->prm.form != PLAN_FORM_EPOCHS)
        len = p->per_rank;
    uint32_t *order = malloc((size_t)(len ? len : 1) * sizeof(*order));
    if (order == NULL)
        return SC_ENOMEM;
    if (p->prm.form == PLAN_FORM_EPOCHS) {
        memcpy(order, p->acc + p->ep_start[e], (size_t)len * sizeof(*order));
    } else if (sampled_order(p, e, all ? p->ranks : &rank, all ? p->n_ranks : 1, order) != SC_OK) {
        free(order);
        return SC_ENOMEM;
    }
    *out = order;
    *n = len;
    return SC_OK;
}

sc_code plan_decide_epoch(struct plan *p, uint32_t e, const uint8_t *bits)
{
    if (!p->prm.cache_aware || !p->ready || e >= p->prm.num_epochs ||
        plan_epoch_decision(p, e) != NULL)
        return SC_EINVAL;
    if (p->decided == NULL && (p->decided = calloc(p->prm.num_epochs, sizeof(*p->decided))) == NULL)
        return SC_ENOMEM;
    size_t len = ((size_t)p->n + 7) / 8;
    if ((p->decided[e] = malloc(len ? len : 1)) == NULL)
        return SC_ENOMEM;
    memcpy(p->decided[e], bits, len);
    return SC_OK;
}

const uint8_t *plan_epoch_decision(const struct plan *p, uint32_t e)
{
    return p->decided != NULL && e < p->prm.num_epochs ? p->decided[e] : NULL;
}

sc_code plan_epoch_order(const struct plan *p, uint32_t e, uint32_t **out, uint64_t *n)
{
    return plan_rank_order(p, e, PLAN_ALL_RANKS, out, n);
}

static int by_rank(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

bool plan_has_rank(const struct plan *p, uint32_t rank)
{
    return bsearch(&rank, p->ranks, p->n_ranks, sizeof(rank), by_rank) != NULL;
}

sc_code plan_set_ranks(struct plan *p, const uint32_t *ranks, uint32_t n, struct api_err *err)
{
    if (n == 0) {
        api_err_set(err, API_INVALID_FIELD, "a plan reads for at least one rank");
        return SC_EINVAL;
    }
    uint32_t *sorted = malloc((size_t)n * sizeof(*sorted));
    if (sorted == NULL)
        return SC_ENOMEM;
    memcpy(sorted, ranks, (size_t)n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), by_rank);
    for (uint32_t i = 0; i < n; i++)
        if (sorted[i] >= p->prm.world_size || (i > 0 && sorted[i] == sorted[i - 1])) {
            api_err_set(err, API_INVALID_FIELD,
                        "rank %u is %s; the ranks must be distinct, in 0..world_size-1 "
                        "(world_size is %u)",
                        sorted[i], sorted[i] >= p->prm.world_size ? "out of range" : "repeated",
                        p->prm.world_size);
            free(sorted);
            return SC_EINVAL;
        }
    uint32_t *old = p->ranks, old_n = p->n_ranks;
    p->ranks = sorted;
    p->n_ranks = n;
    sc_code rc = p->ready && p->prm.form != PLAN_FORM_EPOCHS ? plan_derive(p, err) : SC_OK;
    if (rc != SC_OK) {
        p->ranks = old;
        p->n_ranks = old_n;
        free(sorted);
        if (p->ready)
            plan_derive(p, NULL); /* it held before */
        return rc;
    }
    free(old);
    p->prm.ranks = p->ranks;
    p->prm.n_ranks = n;
    p->prm.rank = p->ranks[0];
    return SC_OK;
}

void plan_iter_init(struct plan_iter *it, const struct plan *p)
{
    memset(it, 0, sizeof(*it));
    it->p = p;
}

sc_code plan_iter_next(struct plan_iter *it, uint32_t *idx, uint64_t *pos)
{
    while (it->order == NULL || it->at == it->len) {
        if (it->order != NULL) {
            free(it->order);
            it->order = NULL;
            it->epoch++;
        }
        if (!it->p->ready || it->epoch >= it->p->prm.num_epochs)
            return SC_ENOTFOUND;
        sc_code rc = plan_epoch_order(it->p, it->epoch, &it->order, &it->len);
        if (rc != SC_OK)
            return rc;
        it->at = 0;
    }
    *idx = it->order[it->at++];
    if (pos != NULL)
        *pos = it->pos;
    it->pos++;
    return SC_OK;
}

void plan_iter_free(struct plan_iter *it)
{
    free(it->order);
    it->order = NULL;
    it->len = it->at = 0;
}

sc_code plan_key_hashes(const struct plan *p, uint64_t **out)
{
    *out = NULL;
    if (!p->ready)
        return SC_EINVAL;
    uint64_t *h = malloc((size_t)p->n * sizeof(*h));
    if (h == NULL)
        return SC_ENOMEM;
    const char *key = p->n ? plan_key(p, 0) : NULL;
    for (uint32_t i = 0; i < p->n; i++) {
        h[i] = sc_key_hash(p->bucket, key);
        /* a sparse plan's strings follow each other in item order: no search per key */
        key = i + 1 == p->n ? NULL : p->sparse ? key + strlen(key) + 1 : plan_key(p, i + 1);
    }
    *out = h;
    return SC_OK;
}

sc_code plan_used_objects(const struct plan *p, uint32_t *used)
{
    struct plan_iter it;
    uint32_t idx, count = 0;
    sc_code rc;
    *used = 0;
    if (!p->ready)
        return SC_EINVAL;
    uint8_t *seen = calloc((size_t)p->n / 8 + 1, 1);
    if (seen == NULL)
        return SC_ENOMEM;
    plan_iter_init(&it, p);
    while ((rc = plan_iter_next(&it, &idx, NULL)) == SC_OK) {
        if (!(seen[idx / 8] & (1u << (idx % 8)))) {
            seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
            count++;
        }
    }
    plan_iter_free(&it);
    free(seen);
    if (rc != SC_ENOTFOUND)
        return rc;
    *used = count;
    return SC_OK;
}

const struct plan_params *plan_params(const struct plan *p)
{
    return &p->prm;
}

bool plan_ready(const struct plan *p)
{
    return p->ready;
}

uint32_t plan_objects(const struct plan *p)
{
    return p->ready ? p->n : 0;
}

const char *plan_key(const struct plan *p, uint32_t idx)
{
    if (!p->sparse)
        return p->arena.data + p->off[idx];
    const char *s = p->arena.data + p->off[idx / PLAN_OFF_STRIDE];
    for (uint32_t k = idx % PLAN_OFF_STRIDE; k > 0; k--)
        s += strlen(s) + 1;
    return s;
}

bool plan_item_range(const struct plan *p, uint32_t idx, struct plan_range *r)
{
    struct plan_range got = p->rng != NULL ? p->rng[idx] : (struct plan_range){0, 0};
    if (r != NULL)
        *r = got;
    return got.length > 0;
}

bool plan_has_ranges(const struct plan *p)
{
    return p->rng != NULL;
}

uint64_t plan_key_hash(const struct plan *p, uint32_t idx)
{
    return sc_key_hash(p->bucket, plan_key(p, idx));
}

bool plan_has_indices(const struct plan *p)
{
    return p->prm.form != PLAN_FORM_EPOCHS;
}

uint32_t plan_epochs(const struct plan *p)
{
    return p->prm.num_epochs;
}

uint64_t plan_accesses(const struct plan *p)
{
    return p->ready ? p->accesses : 0;
}
