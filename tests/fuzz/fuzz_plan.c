/*
 * fuzz_plan.c - manifest bodies (manifest/plan.h, POST /_s3cached/manifests)
 * and, for prefix manifests, the keys their listing returns.
 *
 * Input: the JSON body up to the first NUL byte; after it, '\n'-separated
 * keys fed to a prefix plan as its listing. Limits are small so that each run
 * stays fast: 1000 keys, 50 epochs, 20000 accesses.
 * Invariants: an error gives no plan, an error code with a message, and
 * TooLarge exactly for SC_ETOOBIG. A plan's fields are in range; a prefix
 * plan is not ready until its listing ends, and then holds the listed keys
 * sorted and distinct. A ready plan's counts agree: the epoch lengths add up
 * to plan_accesses(), every index is below plan_objects(), the iterator walks
 * exactly the epoch orders, plan_used_objects() is at most plan_objects()
 * (all of them for one rank), items are distinct as (key, range), keys are
 * non-empty and within the key limit and one string per key, ranges lie within
 * 5 TiB and plan_has_ranges() says whether there is one; keys plans keep the
 * given order, epochs plans the given lists (key and range); an unshuffled
 * single rank reads 0..n-1; a shuffled epoch is a permutation; the JSON replies
 * hold the same counts, and "ranges" beside "keys" exactly when there are ranges.
 */
#include <stdbool.h>

#include <jansson.h>

#include "../../manifest/plan.h"
#include "../../policy/policy.h"
#include "fuzz.h"

static const struct plan_limits limits = {
    .max_body = 64 * 1024,
    .max_keys = 1000,
    .max_key_len = 1024,
    .max_epochs = 50,
    .max_accesses = 20000,
    .max_name = 256,
    .max_depth = 8,
};

static void check_error(sc_code rc, const struct plan *p, const struct api_err *err)
{
    FZ_CHECK(p == NULL);
    FZ_CHECK(rc == SC_EINVAL || rc == SC_ETOOBIG || rc == SC_ENOMEM);
    if (rc == SC_ENOMEM)
        return;
    FZ_CHECK(err->code != API_OK && err->message[0] != '\0');
    FZ_CHECK((rc == SC_ETOOBIG) == (err->code == API_TOO_LARGE));
    char *json = api_err_json(err);
    FZ_CHECK(json != NULL);
    free(json);
}

static void check_params(const struct plan *p)
{
    const struct plan_params *prm = plan_params(p);
    FZ_CHECK(prm->form == PLAN_FORM_KEYS || prm->form == PLAN_FORM_EPOCHS ||
             prm->form == PLAN_FORM_PREFIX);
    FZ_CHECK(prm->bucket != NULL && plan_bucket_valid(prm->bucket, strlen(prm->bucket)));
    FZ_CHECK((prm->prefix != NULL) == (prm->form == PLAN_FORM_PREFIX));
    FZ_CHECK(prm->prefix == NULL || strlen(prm->prefix) <= limits.max_key_len);
    FZ_CHECK(prm->name == NULL || strlen(prm->name) <= limits.max_name);
    FZ_CHECK(prm->num_epochs >= 1 && prm->num_epochs <= limits.max_epochs);
    FZ_CHECK(prm->world_size >= 1 && prm->rank < prm->world_size);
    FZ_CHECK(plan_epochs(p) == prm->num_epochs);
    FZ_CHECK(plan_has_indices(p) == (prm->form != PLAN_FORM_EPOCHS));
    if (prm->form == PLAN_FORM_EPOCHS)
        FZ_CHECK(!prm->shuffle && prm->world_size == 1 && prm->rank == 0 && !prm->drop_last);
}

/* One dataset item, to sort. */
struct item {
    const char *key;
    struct plan_range r;
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c != 0)
        return c;
    if (x->r.offset != y->r.offset)
        return x->r.offset < y->r.offset ? -1 : 1;
    return x->r.length < y->r.length ? -1 : x->r.length > y->r.length;
}

static void check_keys(const struct plan *p)
{
    uint32_t n = plan_objects(p);
    struct item *items = calloc(n, sizeof(*items));
    uint64_t *hashes = NULL;
    bool ranged = false;
    FZ_CHECK(items != NULL);
    for (uint32_t i = 0; i < n; i++) {
        const char *key = plan_key(p, i);
        items[i].key = key;
        FZ_CHECK(key[0] != '\0' && strlen(key) <= limits.max_key_len);
        FZ_CHECK(plan_key_hash(p, i) == sc_key_hash(plan_params(p)->bucket, key));
        bool has = plan_item_range(p, i, &items[i].r);
        FZ_CHECK(has == (items[i].r.length > 0));
        FZ_CHECK(has || items[i].r.offset == 0);
        FZ_CHECK(items[i].r.offset <= PLAN_MAX_OBJECT_SIZE - items[i].r.length);
        ranged |= has;
    }
    FZ_CHECK(plan_has_ranges(p) == ranged);
    if (plan_params(p)->form == PLAN_FORM_PREFIX) {
        for (uint32_t i = 1; i < n; i++)
            FZ_CHECK(strcmp(items[i - 1].key, items[i].key) < 0); /* sorted by bytes, no repeat */
    }
    qsort(items, n, sizeof(*items), cmp_item);
    for (uint32_t i = 1; i < n; i++) {
        FZ_CHECK(cmp_item(&items[i - 1], &items[i]) != 0);
        FZ_CHECK(strcmp(items[i - 1].key, items[i].key) != 0 || items[i - 1].key == items[i].key);
    }
    FZ_CHECK(plan_key_hashes(p, &hashes) == SC_OK);
    for (uint32_t i = 0; i < n; i++)
        FZ_CHECK(hashes[i] == plan_key_hash(p, i));
    free(hashes);
    free(items);
}

/* Entry v of the JSON (a key, or a range object) is dataset item idx. */
static void check_entry(const struct plan *p, json_t *v, uint32_t idx)
{
    struct plan_range r;
    bool ranged = plan_item_range(p, idx, &r);
    FZ_CHECK(ranged == json_is_object(v));
    if (ranged) {
        FZ_CHECK((uint64_t)json_integer_value(json_object_get(v, "offset")) == r.offset);
        FZ_CHECK((uint64_t)json_integer_value(json_object_get(v, "length")) == r.length);
        v = json_object_get(v, "key");
    }
    FZ_CHECK(strcmp(json_string_value(v), plan_key(p, idx)) == 0);
}

/* Keys and epochs plans against the JSON they came from. */
static void check_against_json(const struct plan *p, json_t *root)
{
    const struct plan_params *prm = plan_params(p);
    if (prm->form == PLAN_FORM_KEYS) {
        json_t *keys = json_object_get(root, "keys");
        FZ_CHECK(json_array_size(keys) == plan_objects(p));
        for (uint32_t i = 0; i < plan_objects(p); i++)
            check_entry(p, json_array_get(keys, i), i);
    } else if (prm->form == PLAN_FORM_EPOCHS) {
        json_t *epochs = json_object_get(root, "epochs");
        FZ_CHECK(json_array_size(epochs) == plan_epochs(p));
        for (uint32_t e = 0; e < plan_epochs(p); e++) {
            json_t *ep = json_array_get(epochs, e);
            uint32_t *order = NULL;
            uint64_t n = 0;
            FZ_CHECK(plan_epoch_order(p, e, &order, &n) == SC_OK && n == json_array_size(ep));
            for (uint64_t i = 0; i < n; i++)
                check_entry(p, json_array_get(ep, i), order[i]);
            free(order);
        }
    }
}

static void check_orders(const struct plan *p)
{
    const struct plan_params *prm = plan_params(p);
    uint32_t n = plan_objects(p), used = 0, idx;
    uint64_t sum = 0, pos, at = 0;
    FZ_CHECK(n >= 1);
    struct plan_iter it;
    plan_iter_init(&it, p);
    for (uint32_t e = 0; e < plan_epochs(p); e++) {
        uint32_t *order = NULL;
        uint64_t len = 0;
        FZ_CHECK(plan_epoch_order(p, e, &order, &len) == SC_OK);
        FZ_CHECK(len == plan_epoch_length(p, e) && len >= 1);
        sum += len;
        bool unshuffled = prm->form != PLAN_FORM_EPOCHS && !prm->shuffle && prm->world_size == 1;
        bool *seen = calloc(n, sizeof(*seen));
        FZ_CHECK(seen != NULL);
        for (uint64_t i = 0; i < len; i++) {
            FZ_CHECK(order[i] < n);
            FZ_CHECK(!unshuffled || order[i] == i);
            if (prm->form != PLAN_FORM_EPOCHS && prm->world_size == 1)
                FZ_CHECK(!seen[order[i]]); /* one rank: each key once per epoch */
            seen[order[i]] = true;
            FZ_CHECK(plan_iter_next(&it, &idx, &pos) == SC_OK);
            FZ_CHECK(idx == order[i] && pos == at++);
        }
        free(seen);
        free(order);
    }
    FZ_CHECK(plan_iter_next(&it, &idx, &pos) == SC_ENOTFOUND);
    plan_iter_free(&it);
    uint32_t *none = (uint32_t *)1;
    uint64_t zero = 1;
    FZ_CHECK(plan_epoch_order(p, plan_epochs(p), &none, &zero) == SC_EINVAL);
    FZ_CHECK(none == NULL && zero == 0);
    FZ_CHECK(sum == plan_accesses(p) && sum <= limits.max_accesses);
    FZ_CHECK(plan_used_objects(p, &used) == SC_OK && used >= 1 && used <= n);
    if (prm->world_size == 1)
        FZ_CHECK(used == n);
}

static void check_json(const struct plan *p)
{
    json_t *d = plan_describe_json(p);
    FZ_CHECK(d != NULL);
    FZ_CHECK((uint64_t)json_integer_value(json_object_get(d, "accesses")) == plan_accesses(p));
    FZ_CHECK((uint32_t)json_integer_value(json_object_get(d, "objects_total")) == plan_objects(p));
    json_decref(d);
    json_t *o = plan_order_json(p, "m1", 0, PLAN_ALL_RANKS);
    FZ_CHECK(o != NULL);
    FZ_CHECK(json_array_size(json_object_get(o, "keys")) == plan_epoch_length(p, 0));
    FZ_CHECK(json_is_null(json_object_get(o, "indices")) == !plan_has_indices(p));
    json_t *ranges = json_object_get(o, "ranges");
    FZ_CHECK((ranges != NULL) == plan_has_ranges(p));
    FZ_CHECK(ranges == NULL || json_array_size(ranges) == plan_epoch_length(p, 0));
    json_decref(o);
    FZ_CHECK(plan_order_json(p, "m1", plan_epochs(p), PLAN_ALL_RANKS) == NULL);
}

/* Feeds the listing to a prefix plan; returns false when the plan cannot become ready. */
static bool list_prefix(struct plan *p, const char *keys, size_t len)
{
    struct api_err err = {0};
    const char *s = keys, *end = keys + len;
    FZ_CHECK(!plan_ready(p) && plan_objects(p) == 0 && plan_accesses(p) == 0);
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        char *key = fz_dup(s, n); /* exact size: ASan sees a read past the key */
        sc_code rc = plan_dataset_append(p, key, n, &err);
        free(key);
        if (rc != SC_OK) {
            FZ_CHECK(rc == SC_EINVAL || rc == SC_ETOOBIG);
            FZ_CHECK(err.code != API_OK && err.message[0] != '\0');
            return false;
        }
        s += n + 1;
    }
    sc_code rc = plan_dataset_finish(p, &err);
    if (rc != SC_OK) {
        FZ_CHECK(!plan_ready(p) && err.code != API_OK && err.message[0] != '\0');
        return false;
    }
    FZ_CHECK(plan_ready(p));
    FZ_CHECK(plan_dataset_finish(p, &err) == SC_EINVAL);
    FZ_CHECK(plan_dataset_append(p, "k", 1, &err) == SC_EINVAL);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t blen = nul ? (size_t)(nul - data) : size;
    char *body = fz_dup((const char *)data, blen);
    char *listing = nul ? fz_dup((const char *)nul + 1, size - blen - 1) : fz_dup("", 0);
    size_t llen = nul ? size - blen - 1 : 0;
    struct plan *p = (struct plan *)1;
    struct api_err err = {0};

    sc_code rc = plan_parse(body, blen, &limits, &p, &err);
    if (rc != SC_OK) {
        check_error(rc, p, &err);
        goto out;
    }
    check_params(p);
    if (plan_params(p)->form == PLAN_FORM_PREFIX && !list_prefix(p, listing, llen))
        goto out;
    FZ_CHECK(plan_ready(p));
    check_keys(p);
    check_orders(p);
    check_json(p);
    json_t *root = json_loadb(body, blen, 0, NULL);
    FZ_CHECK(root != NULL);
    check_against_json(p, root);
    json_decref(root);
out:
    if (rc == SC_OK)
        plan_free(p);
    free(body);
    free(listing);
    return 0;
}
