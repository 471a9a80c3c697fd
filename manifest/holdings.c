/*
 * holdings.c - what the cache holds of a manifest's items, asked of the store without counting
 * a read with the policy: for the prefetcher's walk and for a cache-aware epoch's decision.
 */
#include "../store/store.h"
#include "manifest_int.h"

/* Whether every block of store view obj that bytes r of it cover is cached. */
static bool range_blocks_cached(store_obj *obj, const struct plan_range *r)
{
    uint64_t size = store_obj_size(obj);
    uint32_t bs = store_obj_block_size(obj);
    if (r->offset >= size)
        return true; /* no byte of it exists */
    uint64_t end = r->length < size - r->offset ? r->offset + r->length : size;
    uint32_t first = (uint32_t)(r->offset / bs), last = (uint32_t)((end - 1) / bs);
    return store_obj_blocks_cached(obj, first, last) == (uint64_t)last - first + 1;
}

bool mf_item_cached(struct mf *m, uint32_t idx, uint64_t *size)
{
    store *st = m->reg->cfg.st;
    const char *bucket = plan_params(m->plan)->bucket;
    const char *key = plan_key(m->plan, idx);
    struct plan_range r;
    store_obj *obj = NULL;
    *size = 0;
    if (plan_item_range(m->plan, idx, &r) && m->size[idx] != 0 && r.offset >= m->size[idx]) {
        *size = m->size[idx];
        return true;
    }
    if (store_peek(st, bucket, key, size) == SC_OK)
        return true;
    if (!plan_item_range(m->plan, idx, &r) || store_obj_open(st, bucket, key, &obj) != SC_OK)
        return false;
    /* a whole object found here was stored since the peek (and this open counted a read) */
    bool cached = !store_obj_is_blocks(obj) || range_blocks_cached(obj, &r);
    *size = store_obj_size(obj);
    store_obj_close(obj);
    return cached;
}
