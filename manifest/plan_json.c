/*
 * plan_json.c - the JSON a plan contributes to the admin API's replies
 * (plan.h): the order endpoint's body and the static part of a progress object.
 */
#include <stdlib.h>

#include "plan_int.h"

/* Adds value under key to o, taking the reference; false if anything failed. */
static bool put(json_t *o, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(o, key, value) == 0;
}

/* [offset, length] of dataset item idx, or null for a whole object. */
static json_t *range_json(const struct plan *p, uint32_t idx)
{
    struct plan_range r;
    if (!plan_item_range(p, idx, &r))
        return json_null();
    return json_pack("[I, I]", (json_int_t)r.offset, (json_int_t)r.length);
}

/* The order's "keys", and its "indices" and "ranges" (NULL when the plan has none). */
struct order_arrays {
    json_t *keys, *indices, *ranges;
};

static void order_arrays_free(struct order_arrays *a)
{
    json_decref(a->keys);
    json_decref(a->indices);
    json_decref(a->ranges);
    *a = (struct order_arrays){NULL, NULL, NULL};
}

static bool order_arrays_fill(const struct plan *p, const uint32_t *order, uint64_t n,
                              struct order_arrays *a)
{
    a->keys = json_array();
    a->indices = plan_has_indices(p) ? json_array() : json_null();
    a->ranges = plan_has_ranges(p) ? json_array() : NULL;
    if (a->keys == NULL || a->indices == NULL || (plan_has_ranges(p) && a->ranges == NULL))
        return false;
    for (uint64_t i = 0; i < n; i++) {
        if (json_array_append_new(a->keys, json_string_nocheck(plan_key(p, order[i]))) != 0)
            return false;
        if (plan_has_indices(p) && json_array_append_new(a->indices, json_integer(order[i])) != 0)
            return false;
        if (a->ranges != NULL && json_array_append_new(a->ranges, range_json(p, order[i])) != 0)
            return false;
    }
    return true;
}

/* How many accesses of an order of decided epoch e read an item cached when it was decided. */
static uint64_t cached_first(const struct plan *p, uint32_t e, const uint32_t *order, uint64_t n)
{
    const uint8_t *bits = plan_epoch_decision(p, e);
    uint64_t count = 0;
    for (uint64_t i = 0; i < n; i++)
        count += (bits[order[i] / 8] >> (order[i] % 8)) & 1;
    return count;
}

json_t *plan_order_json(const struct plan *p, const char *id, uint32_t e, uint32_t rank)
{
    uint32_t *order = NULL;
    uint64_t n;
    struct order_arrays a = {NULL, NULL, NULL};
    json_t *o = NULL;
    if (plan_rank_order(p, e, rank, &order, &n) != SC_OK)
        goto out;
    o = json_object();
    if (o == NULL || !order_arrays_fill(p, order, n, &a))
        goto fail;
    if (!put(o, "id", json_string(id)) || !put(o, "epoch", json_integer(e)) ||
        !put(o, "rank", rank == PLAN_ALL_RANKS ? json_null() : json_integer(rank)) ||
        (plan_epoch_decision(p, e) != NULL &&
         !put(o, "cached_first", json_integer((json_int_t)cached_first(p, e, order, n)))) ||
        json_object_set(o, "indices", a.indices) != 0 || json_object_set(o, "keys", a.keys) != 0 ||
        (a.ranges != NULL && json_object_set(o, "ranges", a.ranges) != 0))
        goto fail;
    goto out;
fail:
    json_decref(o);
    o = NULL;
out:
    order_arrays_free(&a);
    free(order);
    return o;
}

static json_t *sampling_json(const struct plan_params *prm)
{
    json_t *ranks = json_array();
    for (uint32_t i = 0; ranks && i < prm->n_ranks; i++)
        if (json_array_append_new(ranks, json_integer(prm->ranks[i])) != 0) {
            json_decref(ranks);
            ranks = NULL;
        }
    if (ranks == NULL)
        return NULL;
    return json_pack("{s:I, s:b, s:I, s:I, s:I, s:o, s:o, s:b, s:b}", "num_epochs",
                     (json_int_t)prm->num_epochs, "shuffle", prm->shuffle, "seed",
                     (json_int_t)prm->seed, "world_size", (json_int_t)prm->world_size, "rank",
                     (json_int_t)prm->rank, "ranks", ranks, "job",
                     prm->job ? json_string(prm->job) : json_null(), "drop_last", prm->drop_last,
                     "cache_aware", prm->cache_aware);
}

json_t *plan_describe_json(const struct plan *p)
{
    static const char *const forms[] = {
        [PLAN_FORM_KEYS] = "keys", [PLAN_FORM_EPOCHS] = "epochs", [PLAN_FORM_PREFIX] = "prefix"};
    const struct plan_params *prm = &p->prm;
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    bool ok = put(o, "name", prm->name ? json_string(prm->name) : json_null()) &&
              put(o, "bucket", json_string(prm->bucket)) &&
              put(o, "form", json_string(forms[prm->form])) &&
              (prm->prefix == NULL || put(o, "prefix", json_string(prm->prefix))) &&
              put(o, "epochs", json_integer(plan_epochs(p))) &&
              put(o, "accesses", json_integer((json_int_t)plan_accesses(p))) &&
              put(o, "objects_total", json_integer(plan_objects(p))) &&
              put(o, "prefetch", json_boolean(prm->prefetch)) &&
              (prm->form == PLAN_FORM_EPOCHS || put(o, "sampling", sampling_json(prm)));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}
