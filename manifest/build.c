/*
 * build.c - what a job's plan is made into for the prefetcher, the policy and the trainers'
 * position: its order as dataset indices, its future (a whole item by its key's hash, a ranged
 * item by the hash of each block it covers at the gateway's block size), where ranged items
 * start, and the items it reads; and each item's size and bytes in progress. A build reads
 * only the plan and the job's constants, so it runs with no lock held (see manifest_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "manifest_int.h"

uint32_t mf_block_size(const struct mf_registry *r)
{
    return r->cfg.block_size ? r->cfg.block_size : STORE_DEFAULT_BLOCK_SIZE;
}

uint64_t mf_item_bytes(const struct mf *m, uint32_t idx)
{
    struct plan_range r;
    uint64_t size = m->size[idx];
    if (!plan_item_range(m->plan, idx, &r))
        return size;
    if (size == 0)
        return r.length;
    if (r.offset >= size)
        return 0;
    return r.length < size - r.offset ? r.length : size - r.offset;
}

void mf_learn_size(struct mf *m, uint32_t idx, uint64_t size)
{
    if (size == 0 || m->size[idx] != 0)
        return;
    bool ranged = plan_item_range(m->plan, idx, NULL);
    uint64_t before = ranged ? mf_item_bytes(m, idx) : 0; /* a range counted its length */
    m->size[idx] = size;
    uint64_t after = mf_item_bytes(m, idx);
    m->bytes_known = m->bytes_known - before + after;
    if (!ranged) { /* a range's object is not a sample of the whole objects' sizes */
        m->whole_bytes += size;
        m->whole_known++;
    }
    if (mf_obj_counted(m->obj[idx]))
        m->bytes_cached = m->bytes_cached - before + after;
}

void mf_mark_cached(struct mf *m, uint32_t idx, uint64_t size)
{
    if (mf_obj_counted(m->obj[idx])) {
        m->obj[idx] = MF_OBJ_CACHED;
        return;
    }
    mf_learn_size(m, idx, size);
    m->obj[idx] = MF_OBJ_CACHED;
    m->cached++;
    m->bytes_cached += mf_item_bytes(m, idx);
}

/* Sizes from the listing, where the sorted dataset still matches the listing order. */
void mf_take_listed_sizes(struct mf *m)
{
    if (m->list_sizes == NULL || m->n_listed != m->n)
        return;
    for (uint32_t i = 0; i < m->n; i++) {
        m->size[i] = m->list_sizes[i];
        m->whole_bytes += m->size[i]; /* a listing names whole objects only */
        m->whole_known++;
    }
    free(m->list_sizes);
    m->list_sizes = NULL;
}

/*
 * The blocks dataset index idx's range is planned by, at block size bs: those it covers, up
 * to MF_OBSERVE_BLOCKS (a read consumes no more; and a few bytes of body cannot make the
 * future millions of entries per access). False for a whole item.
 */
static bool item_blocks(const struct mf *m, uint32_t idx, uint32_t bs, uint32_t *first,
                        uint32_t *last)
{
    struct plan_range r;
    if (!plan_item_range(m->plan, idx, &r))
        return false;
    *first = (uint32_t)(r.offset / bs); /* ranges end within 5 TiB: indices fit */
    *last = (uint32_t)((r.offset + r.length - 1) / bs);
    if (*last - *first >= MF_OBSERVE_BLOCKS)
        *last = *first + MF_OBSERVE_BLOCKS - 1;
    return true;
}

/*
 * Which items this gateway plans for, a bit each: every item without a fleet; on a fleet, the
 * items whose name it owns (a ranged item by its first block's), decided once per build so
 * that fstart and the future agree. NULL: all (no fleet), or out of memory (*rc says).
 */
static uint8_t *items_planned_here(const struct mf *m, const uint64_t *hashes, sc_code *rc)
{
    fleet *f = m->reg->cfg.fleet;
    *rc = SC_OK;
    if (f == NULL)
        return NULL;
    uint8_t *mine = calloc(((size_t)m->n + 7) / 8 + 1, 1);
    if (mine == NULL) {
        *rc = SC_ENOMEM;
        return NULL;
    }
    uint32_t bs = mf_block_size(m->reg), first, last;
    for (uint32_t idx = 0; idx < m->n; idx++) {
        bool ranged = item_blocks(m, idx, bs, &first, &last);
        uint64_t name = ranged ? sc_block_key_hash(hashes[idx], first) : hashes[idx];
        if (fleet_owns(f, name))
            mine[idx / 8] |= (uint8_t)(1u << (idx % 8));
    }
    return mine;
}

static bool is_mine(const uint8_t *mine, uint32_t idx)
{
    return mine == NULL || ((mine[idx / 8] >> (idx % 8)) & 1);
}

/*
 * With ranges, or on a fleet: where each access starts in the future (fstart). An access
 * takes one entry per block its range covers, one for a whole item, none for an item another
 * gateway of the fleet plans for. The future must fit the limit on accesses (a future costs
 * 8 to 20 bytes per entry: docs/manifests.md, "What a large plan costs").
 */
static sc_code map_future_positions(struct mf *m, const uint8_t *mine, struct api_err *err)
{
    uint32_t bs = mf_block_size(m->reg), first, last;
    uint64_t at = 0;
    if (!plan_has_ranges(m->plan) && mine == NULL)
        return SC_OK;
    m->fstart = malloc((m->accesses ? m->accesses : 1) * sizeof(*m->fstart));
    if (m->fstart == NULL)
        return SC_ENOMEM;
    for (uint64_t pos = 0; pos < m->accesses; pos++) {
        uint32_t idx = m->order[pos];
        m->fstart[pos] = (uint32_t)at;
        if (!is_mine(mine, idx))
            continue;
        at += item_blocks(m, idx, bs, &first, &last) ? (uint64_t)last - first + 1 : 1;
        if (at > PLAN_MAX_ACCESSES) {
            api_err_set(err, API_TOO_LARGE,
                        "the plan's ranges cover more blocks of %u bytes over this rank's "
                        "accesses than a plan may read (%u)",
                        bs, PLAN_MAX_ACCESSES);
            return SC_ETOOBIG;
        }
    }
    return SC_OK;
}

/* Access pos of the plan into the future: its key's hash, or its blocks' (see the top); none
 * for an item another gateway of the fleet plans for. */
static sc_code append_access(struct mf *m, future *f, uint64_t pos, const uint64_t *hashes,
                             const uint8_t *mine)
{
    uint32_t idx = m->order[pos], first, last;
    if (!is_mine(mine, idx))
        return SC_OK;
    if (!item_blocks(m, idx, mf_block_size(m->reg), &first, &last))
        return future_append(f, hashes[idx]);
    sc_code rc = SC_OK;
    for (uint64_t b = first; rc == SC_OK && b <= last; b++)
        rc = future_append(f, sc_block_key_hash(hashes[idx], (uint32_t)b));
    return rc;
}

/* Names where an item of the object khash starts, at byte offset. */
static uint64_t item_start(uint64_t khash, uint64_t offset)
{
    return sc_hash_mix(khash ^ sc_hash_mix(offset + 1));
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* m->starts: where the plan's ranged items start, for consume() to tell a read that starts
 * an item from one that continues it. */
static sc_code map_item_starts(struct mf *m)
{
    if (!plan_has_ranges(m->plan))
        return SC_OK;
    m->starts = malloc((m->n ? m->n : 1) * sizeof(*m->starts));
    if (m->starts == NULL)
        return SC_ENOMEM;
    struct plan_range r;
    for (uint32_t idx = 0; idx < m->n; idx++)
        if (plan_item_range(m->plan, idx, &r))
            m->starts[m->n_starts++] = item_start(plan_key_hash(m->plan, idx), r.offset);
    qsort(m->starts, m->n_starts, sizeof(*m->starts), by_value);
    return SC_OK;
}

/*
 * The future, in access order. A plan with ranges keeps its items' key hashes for the walk
 * (m->khash). Its ranks advance together, so each may lag FUTURE_SLACK of its own reads.
 */
static sc_code build_future(struct mf *m, struct api_err *err)
{
    future *f = NULL;
    uint64_t *hashes = NULL;
    uint8_t *mine = NULL;
    sc_code rc = plan_key_hashes(m->plan, &hashes);
    if (rc == SC_OK)
        mine = items_planned_here(m, hashes, &rc);
    if (rc == SC_OK)
        rc = map_future_positions(m, mine, err);
    if (rc == SC_OK)
        rc = map_item_starts(m);
    if (rc == SC_OK)
        rc = future_new(&f);
    if (rc == SC_OK)
        future_slack_to(f, (uint64_t)FUTURE_SLACK * plan_params(m->plan)->n_ranks);
    for (uint64_t pos = 0; rc == SC_OK && pos < m->accesses; pos++)
        rc = append_access(m, f, pos, hashes, mine);
    free(mine);
    if (rc == SC_OK && plan_has_ranges(m->plan))
        m->khash = hashes;
    else
        free(hashes);
    if (rc == SC_OK)
        rc = future_seal(f);
    if (rc != SC_OK) {
        future_unref(f);
        return rc;
    }
    m->fut = f;
    return SC_OK;
}

struct mf_built mf_built_detach(struct mf *m)
{
    struct mf_built b = {m->order,    m->fstart, m->starts,    m->khash,      m->n_starts,
                         m->accesses, m->fut,    m->used_bits, m->built_ranks};
    m->order = m->fstart = NULL;
    m->starts = m->khash = NULL;
    m->n_starts = 0;
    m->accesses = 0;
    m->fut = NULL;
    m->used_bits = NULL;
    m->built_ranks = 0;
    return b;
}

void mf_built_attach(struct mf *m, const struct mf_built *b)
{
    m->order = b->order;
    m->fstart = b->fstart;
    m->starts = b->starts;
    m->khash = b->khash;
    m->n_starts = b->n_starts;
    m->accesses = b->accesses;
    m->fut = b->fut;
    m->used_bits = b->used;
    m->built_ranks = b->ranks;
}

void mf_built_free(struct mf_built *b)
{
    free(b->order);
    free(b->fstart);
    free(b->starts);
    free(b->khash);
    free(b->used);
    future_unref(b->fut);
    *b = (struct mf_built){0};
}

/*
 * The counts of progress, from the items the plan's ranks read (m->used_bits): distinct
 * items, their bytes (a range's known before its object is seen), and of those cached. Run
 * when a built plan is attached (m->mu held). O(items).
 */
void mf_recount(struct mf *m)
{
    m->used = m->cached = 0;
    m->bytes_known = m->bytes_cached = 0;
    for (uint32_t idx = 0; idx < m->n; idx++) {
        if (!((m->used_bits[idx / 8] >> (idx % 8)) & 1))
            continue;
        m->used++;
        m->bytes_known += mf_item_bytes(m, idx);
        if (mf_obj_counted(m->obj[idx])) {
            m->cached++;
            m->bytes_cached += mf_item_bytes(m, idx);
        }
    }
    memset(m->stamp, 0, (size_t)m->n * sizeof(*m->stamp));
    m->walk = 0;
}

uint64_t mf_position(struct mf *m)
{
    uint64_t fpos = future_position(m->fut);
    if (m->fstart == NULL)
        return fpos;
    /* the last access starting at or before fpos; past the future's end, all of them */
    if (fpos >= future_length(m->fut))
        return m->accesses;
    uint64_t lo = 0, hi = m->accesses;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->fstart[mid] <= fpos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Where step (reads of each rank) lies in m's future: step * ranks accesses in. */
static uint64_t future_pos_of_step(const struct mf *m, uint32_t ranks, uint64_t step)
{
    uint64_t pos = step < m->accesses / ranks ? step * ranks : m->accesses;
    if (pos == m->accesses)
        return future_length(m->fut);
    return m->fstart != NULL ? m->fstart[pos] : pos;
}

/* The items the order reads, a bit each. */
static uint8_t *used_bits(const uint32_t *order, uint64_t accesses, uint32_t n)
{
    uint8_t *bits = calloc(((size_t)n + 7) / 8 + 1, 1);
    for (uint64_t pos = 0; bits && pos < accesses; pos++)
        bits[order[pos] / 8] |= (uint8_t)(1u << (order[pos] % 8));
    return bits;
}

/*
 * Builds job m's order and future for the plan's ranks into b, the trainers at step. Reads
 * only the plan (which changes under the registry's reg_mu alone) and m's constants, so it
 * runs without the list lock or m->mu: readers and fills go on meanwhile.
 */
sc_code mf_build_into(const struct mf *m, uint64_t step, struct mf_built *b, struct api_err *err)
{
    struct mf shell = {.reg = m->reg, .plan = m->plan, .n = m->n};
    shell.accesses = plan_accesses(m->plan);
    shell.order = malloc((shell.accesses ? shell.accesses : 1) * sizeof(*shell.order));
    sc_code rc = shell.order != NULL ? SC_OK : SC_ENOMEM;
    struct plan_iter it;
    plan_iter_init(&it, m->plan);
    uint32_t idx;
    uint64_t pos;
    while (rc == SC_OK && (rc = plan_iter_next(&it, &idx, &pos)) == SC_OK)
        shell.order[pos] = idx;
    plan_iter_free(&it);
    rc = rc == SC_ENOTFOUND ? build_future(&shell, err) : rc;
    uint32_t ranks = plan_params(m->plan)->n_ranks;
    if (rc == SC_OK && m->fut != NULL) /* a rebuild: what was read stays read */
        future_start_like(shell.fut, m->fut, future_pos_of_step(&shell, ranks, step));
    else if (rc == SC_OK && step > 0)
        future_start_at(shell.fut, future_pos_of_step(&shell, ranks, step));
    if (rc == SC_OK && (shell.used_bits = used_bits(shell.order, shell.accesses, m->n)) == NULL)
        rc = SC_ENOMEM;
    shell.built_ranks = ranks;
    *b = mf_built_detach(&shell);
    if (rc != SC_OK)
        mf_built_free(b);
    return rc;
}

uint64_t mf_step(struct mf *m)
{
    return mf_position(m) / (m->built_ranks ? m->built_ranks : 1);
}

bool mf_planned_here(const struct mf *m, uint64_t pos)
{
    if (m->fstart == NULL || pos >= m->accesses)
        return true;
    uint64_t next = pos + 1 < m->accesses ? m->fstart[pos + 1] : future_length(m->fut);
    return m->fstart[pos] != next;
}

/* Whether a read from byte `first` of the object khash starts an item of m's plan: a whole
 * object at byte 0, a range at its offset. */
bool mf_starts_an_item(const struct mf *m, uint64_t khash, uint64_t first)
{
    uint64_t name = item_start(khash, first);
    return first == 0 || (m->starts != NULL && bsearch(&name, m->starts, m->n_starts,
                                                       sizeof(*m->starts), by_value) != NULL);
}
