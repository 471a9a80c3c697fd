/*
 * plan.c - parsing and validating a manifest body into a struct plan, and
 * filling a PREFIX plan's dataset from the listing (plan.h). Orders are
 * derived in plan_order.c, replies rendered in plan_json.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "../proto/json_in.h"
#include "plan_int.h"

#define BUCKET_MIN     3
#define BUCKET_MAX     63  /* current S3 rules */
#define BUCKET_LEGACY  255 /* legacy and path-style names */
#define PLAN_MAX_WORLD 1000000u
#define LABEL_MAX      64 /* "epochs[<20 digits>][<20 digits>].length" */
#define KEYSET_EMPTY   0  /* slot value; a slot holds index + 1 */

static const char *const fields[] = {
    "bucket", "keys",      "epochs",   "prefix", "num_epochs",  "shuffle",    "seed",       "job",
    "rank",   "drop_last", "prefetch", "name",   "local_ranks", "world_size", "cache_aware"};
static const char *const sampling[] = {"num_epochs",  "shuffle", "seed",      "world_size", "rank",
                                       "local_ranks", "job",     "drop_last", "cache_aware"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

void plan_limits_default(struct plan_limits *l)
{
    l->max_body = PLAN_MAX_BODY;
    l->max_keys = PLAN_MAX_KEYS;
    l->max_key_len = PLAN_MAX_KEY_LEN;
    l->max_epochs = PLAN_MAX_EPOCHS;
    l->max_accesses = PLAN_MAX_ACCESSES;
    l->max_name = PLAN_MAX_NAME;
    l->max_depth = PLAN_MAX_DEPTH;
}

static bool is_bucket_alnum(char c, bool legacy)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (legacy && c >= 'A' && c <= 'Z');
}

bool plan_bucket_valid(const char *name, size_t len)
{
    bool legacy = len > BUCKET_MAX;
    if (len < BUCKET_MIN || len > BUCKET_LEGACY)
        return false;
    for (size_t i = 0; i < len && !legacy; i++)
        legacy = (name[i] >= 'A' && name[i] <= 'Z') || name[i] == '_';
    if (!is_bucket_alnum(name[0], true) || !is_bucket_alnum(name[len - 1], true))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!is_bucket_alnum(c, legacy) && c != '-' && c != '.' && !(legacy && c == '_'))
            return false;
        if (c == '.' && i + 1 < len && name[i + 1] == '.')
            return false;
    }
    return true;
}

/* ---- the dataset: a key arena, items, and transient hash sets over them ---- */

/* Makes room for item p->n in off (and rng, when there). */
static sc_code reserve_item(struct plan *p)
{
    if (p->n >= PLAN_KEYS_CAP)
        return SC_ETOOBIG; /* callers check their smaller limit first */
    if (p->n < p->off_cap)
        return SC_OK;
    uint32_t cap = p->off_cap < 1024 ? 1024 : p->off_cap + p->off_cap / 2;
    if (cap < p->off_cap || cap > PLAN_KEYS_CAP)
        cap = PLAN_KEYS_CAP;
    uint64_t *off = realloc(p->off, (size_t)cap * sizeof(*off));
    if (off == NULL)
        return SC_ENOMEM;
    p->off = off;
    if (p->rng != NULL) {
        struct plan_range *rng = realloc(p->rng, (size_t)cap * sizeof(*rng));
        if (rng == NULL)
            return SC_ENOMEM; /* off grew alone; off_cap still bounds both */
        memset(rng + p->off_cap, 0, (size_t)(cap - p->off_cap) * sizeof(*rng));
        p->rng = rng;
    }
    p->off_cap = cap;
    return SC_OK;
}

/* Appends item p->n: the key string at arena offset at, of range r (length 0: whole). */
static sc_code push_item(struct plan *p, uint64_t at, const struct plan_range *r)
{
    sc_code rc = reserve_item(p);
    if (rc != SC_OK)
        return rc;
    if (r->length > 0 && p->rng == NULL) {
        p->rng = calloc(p->off_cap, sizeof(*p->rng));
        if (p->rng == NULL)
            return SC_ENOMEM;
    }
    if (p->rng != NULL)
        p->rng[p->n] = *r;
    p->off[p->n++] = at;
    return SC_OK;
}

/* Appends key[0..len) and a NUL to the arena. @param[out] at where it starts. */
static sc_code push_string(struct plan *p, const char *key, size_t len, uint64_t *at)
{
    *at = p->arena.len;
    sc_code rc = sc_buf_append(&p->arena, key, len);
    return rc == SC_OK ? sc_buf_putc(&p->arena, '\0') : rc;
}

sc_code plan_arena_push(struct plan *p, const char *key, size_t len)
{
    static const struct plan_range whole = {0, 0};
    uint64_t at;
    sc_code rc = reserve_item(p); /* first, so a refused item leaves no string behind */
    if (rc == SC_OK)
        rc = push_string(p, key, len, &at);
    return rc == SC_OK ? push_item(p, at, &whole) : rc;
}

/* An open-addressing set of item indices (each stored + 1; KEYSET_EMPTY is a free slot). */
struct keyset {
    uint32_t *slot;
    uint64_t mask;
};

static sc_code keyset_init(struct keyset *ks, uint64_t expected)
{
    uint64_t cap = 16;
    while (cap < expected + expected / 3 + 1)
        cap *= 2;
    ks->slot = calloc(cap, sizeof(*ks->slot));
    ks->mask = cap - 1;
    return ks->slot ? SC_OK : SC_ENOMEM;
}

/*
 * While parsing: strings finds an item whose key is a given string (so that items of one key
 * share it), items finds an item by (string, range) (so that repeats are found).
 */
struct itemsets {
    struct keyset strings, items;
};

static sc_code itemsets_init(struct itemsets *s, uint64_t expected)
{
    sc_code rc = keyset_init(&s->strings, expected);
    return rc == SC_OK ? keyset_init(&s->items, expected) : rc;
}

static void itemsets_free(struct itemsets *s)
{
    free(s->strings.slot);
    free(s->items.slot);
}

static struct plan_range range_of(const struct plan *p, uint32_t idx)
{
    return p->rng != NULL ? p->rng[idx] : (struct plan_range){0, 0};
}

/* The slot of the string key[0..len) in ss: an item whose key it is, or the free slot. */
static uint64_t string_slot(const struct keyset *ss, const struct plan *p, const char *key,
                            size_t len)
{
    uint64_t i = sc_bytes_hash(key, len) & ss->mask;
    for (; ss->slot[i] != KEYSET_EMPTY; i = (i + 1) & ss->mask) {
        /* strncmp stops at the arena string's NUL: nothing past the arena's end is read */
        const char *k = p->arena.data + p->off[ss->slot[i] - 1];
        if (strncmp(k, key, len) == 0 && k[len] == '\0')
            break;
    }
    return i;
}

static uint64_t item_hash(uint64_t at, const struct plan_range *r)
{
    return sc_hash_mix(sc_hash_mix(at ^ sc_hash_mix(r->offset)) ^ r->length);
}

/* The slot of item (string at `at`, range r) in is: that item, or the free slot. */
static uint64_t item_slot(const struct keyset *is, const struct plan *p, uint64_t at,
                          const struct plan_range *r)
{
    uint64_t i = item_hash(at, r) & is->mask;
    for (; is->slot[i] != KEYSET_EMPTY; i = (i + 1) & is->mask) {
        uint32_t idx = is->slot[i] - 1;
        struct plan_range had = range_of(p, idx);
        if (p->off[idx] == at && had.offset == r->offset && had.length == r->length)
            break;
    }
    return i;
}

/*
 * Finds item (key[0..len), r) in p's dataset or adds it (the sets must have room: at most
 * `expected` items). @param[out] idx its index. @param[out] added whether it was new.
 */
static sc_code item_add(struct itemsets *s, struct plan *p, const char *key, size_t len,
                        const struct plan_range *r, uint32_t *idx, bool *added)
{
    uint64_t si = string_slot(&s->strings, p, key, len);
    bool new_string = s->strings.slot[si] == KEYSET_EMPTY;
    uint64_t at = 0, ii = 0;
    *added = false;
    if (!new_string) {
        at = p->off[s->strings.slot[si] - 1];
        ii = item_slot(&s->items, p, at, r);
        if (s->items.slot[ii] != KEYSET_EMPTY) {
            *idx = s->items.slot[ii] - 1;
            return SC_OK;
        }
    }
    sc_code rc = reserve_item(p); /* first, so a refused item leaves no string behind */
    if (rc == SC_OK && new_string)
        rc = push_string(p, key, len, &at);
    if (rc == SC_OK)
        rc = push_item(p, at, r);
    if (rc != SC_OK)
        return rc;
    *idx = p->n - 1;
    *added = true;
    if (new_string) {
        s->strings.slot[si] = p->n;
        ii = item_slot(&s->items, p, at, r);
    }
    s->items.slot[ii] = p->n;
    return SC_OK;
}

/* ---- scalar fields ---- */

static sc_code fail(struct api_err *err, enum api_err_code code, sc_code rc, const char *fmt,
                    const char *arg)
{
    api_err_set(err, code, fmt, arg);
    return rc;
}

static sc_code check_fields(json_t *root, struct api_err *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v)
    {
        size_t i = 0;
        while (i < COUNT(fields) && strcmp(name, fields[i]) != 0)
            i++;
        if (i == COUNT(fields)) {
            char q[JSON_IN_EXCERPT_CAP];
            return fail(err, API_UNKNOWN_FIELD, SC_EINVAL, "unknown field \"%s\"",
                        json_in_excerpt(q, sizeof(q), name, strlen(name)));
        }
    }
    return SC_OK;
}

/* An integer field in min..max, or def when absent. */
static sc_code get_int(json_t *root, const char *name, json_int_t min, json_int_t max,
                       json_int_t def, json_int_t *out, struct api_err *err)
{
    json_t *v = json_object_get(root, name);
    *out = def;
    if (v == NULL)
        return SC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        api_err_set(err, API_INVALID_FIELD, "field \"%s\" must be an integer in %lld..%lld", name,
                    (long long)min, (long long)max);
        return SC_EINVAL;
    }
    *out = json_integer_value(v);
    return SC_OK;
}

static sc_code get_bool(json_t *root, const char *name, bool def, bool *out, struct api_err *err)
{
    json_t *v = json_object_get(root, name);
    *out = def;
    if (v == NULL)
        return SC_OK;
    if (!json_is_boolean(v))
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "field \"%s\" must be true or false", name);
    *out = json_is_true(v);
    return SC_OK;
}

/* An optional string of at most max bytes, copied into *out (NULL when absent). */
static sc_code get_string(json_t *root, const char *name, uint32_t max, char **out,
                          struct api_err *err)
{
    json_t *v = json_object_get(root, name);
    *out = NULL;
    if (v == NULL)
        return SC_OK;
    if (!json_is_string(v) || json_string_length(v) > max) {
        api_err_set(err, API_INVALID_FIELD, "field \"%s\" must be a string of at most %u bytes",
                    name, max);
        return SC_EINVAL;
    }
    *out = strdup(json_string_value(v));
    return *out ? SC_OK : SC_ENOMEM;
}

static sc_code parse_bucket(struct plan *p, json_t *root, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    json_t *v = json_object_get(root, "bucket");
    if (v == NULL)
        return fail(err, API_MISSING_FIELD, SC_EINVAL, "field \"%s\" is required", "bucket");
    if (!json_is_string(v))
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "field \"%s\" must be a string", "bucket");
    if (!plan_bucket_valid(json_string_value(v), json_string_length(v)))
        return fail(err, API_INVALID_FIELD, SC_EINVAL,
                    "field \"bucket\" is not a valid bucket name: \"%s\" (3 to 63 characters of "
                    "a-z, 0-9, '.' and '-', starting and ending with a letter or digit)",
                    json_in_excerpt(q, sizeof(q), json_string_value(v), json_string_length(v)));
    p->bucket = strdup(json_string_value(v));
    return p->bucket ? SC_OK : SC_ENOMEM;
}

/* Exactly one of keys, epochs, prefix; sampling fields not with epochs. */
static sc_code parse_form(struct plan *p, json_t *root, struct api_err *err)
{
    static const char *const forms[] = {"keys", "epochs", "prefix"};
    const char *given[3];
    size_t n = 0;
    for (size_t i = 0; i < COUNT(forms); i++) {
        if (json_object_get(root, forms[i]) != NULL) {
            given[n++] = forms[i];
            p->prm.form = (enum plan_form)(PLAN_FORM_KEYS + i);
        }
    }
    if (n == 0)
        return fail(err, API_MISSING_FIELD, SC_EINVAL, "%s",
                    "one of the fields \"keys\", \"epochs\" and \"prefix\" is required");
    if (n > 1) {
        api_err_set(err, API_INVALID_FIELD,
                    "only one of the fields \"keys\", \"epochs\" and \"prefix\" may be given "
                    "(got \"%s\" and \"%s\")",
                    given[0], given[1]);
        return SC_EINVAL;
    }
    for (size_t i = 0; p->prm.form == PLAN_FORM_EPOCHS && i < COUNT(sampling); i++) {
        if (json_object_get(root, sampling[i]) != NULL)
            return fail(err, API_INVALID_FIELD, SC_EINVAL,
                        "field \"%s\" is not allowed with \"epochs\" (the epochs are the lists "
                        "given)",
                        sampling[i]);
    }
    return SC_OK;
}

/* "local_ranks": the ranks of the job this gateway serves, unique, each in 0..world_size-1. */
static sc_code parse_local_ranks(struct plan *p, json_t *arr, json_t *rank, struct api_err *err)
{
    uint32_t ws = p->prm.world_size;
    if (rank != NULL)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s",
                    "give \"rank\" or \"local_ranks\", not both");
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    if (n == 0 || n > ws) {
        api_err_set(err, API_INVALID_FIELD,
                    "field \"local_ranks\" must be an array of 1..%u distinct integers in "
                    "0..world_size-1 (world_size is %u)",
                    ws, ws);
        return SC_EINVAL;
    }
    uint32_t *ranks = malloc(n * sizeof(*ranks));
    if (ranks == NULL)
        return SC_ENOMEM;
    sc_code rc = SC_OK;
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= ws) {
            api_err_set(err, API_INVALID_FIELD,
                        "local_ranks[%zu] must be an integer in 0..world_size-1 (world_size is %u)",
                        i, ws);
            rc = SC_EINVAL;
        } else {
            ranks[i] = (uint32_t)json_integer_value(v);
        }
    }
    if (rc == SC_OK)
        rc = plan_set_ranks(p, ranks, (uint32_t)n, err);
    free(ranks);
    return rc;
}

static sc_code parse_sampling(struct plan *p, json_t *root, struct api_err *err)
{
    json_int_t epochs, seed, world, rank;
    sc_code rc = get_int(root, "num_epochs", 1, p->lim.max_epochs, 1, &epochs, err);
    if (rc == SC_OK)
        rc = get_int(root, "seed", 0, INT64_MAX, 0, &seed, err);
    if (rc == SC_OK)
        rc = get_int(root, "world_size", 1, PLAN_MAX_WORLD, 1, &world, err);
    if (rc == SC_OK)
        rc = get_bool(root, "shuffle", false, &p->prm.shuffle, err);
    if (rc == SC_OK)
        rc = get_bool(root, "drop_last", false, &p->prm.drop_last, err);
    if (rc == SC_OK)
        rc = get_bool(root, "cache_aware", false, &p->prm.cache_aware, err);
    if (rc != SC_OK)
        return rc;
    if (get_int(root, "rank", 0, world - 1, 0, &rank, err) != SC_OK) {
        api_err_set(err, API_INVALID_FIELD,
                    "field \"rank\" must be an integer in 0..world_size-1 (world_size is %lld)",
                    (long long)world);
        return SC_EINVAL;
    }
    p->prm.num_epochs = (uint32_t)epochs;
    p->prm.seed = (uint64_t)seed;
    p->prm.world_size = (uint32_t)world;
    rc = get_string(root, "job", p->lim.max_name, &p->job, err);
    if (rc == SC_OK && p->job != NULL && p->job[0] == '\0')
        rc = fail(err, API_INVALID_FIELD, SC_EINVAL, "field \"%s\" must not be empty", "job");
    if (rc != SC_OK)
        return rc;
    if (json_object_get(root, "local_ranks") == NULL)
        return plan_set_ranks(p, &(uint32_t){(uint32_t)rank}, 1, err);
    return parse_local_ranks(p, json_object_get(root, "local_ranks"), json_object_get(root, "rank"),
                             err);
}

static sc_code parse_scalars(struct plan *p, json_t *root, struct api_err *err)
{
    sc_code rc = get_bool(root, "prefetch", true, &p->prm.prefetch, err);
    if (rc == SC_OK)
        rc = get_string(root, "name", p->lim.max_name, &p->name, err);
    if (rc == SC_OK && p->prm.form == PLAN_FORM_PREFIX)
        rc = get_string(root, "prefix", p->lim.max_key_len, &p->prefix, err);
    if (rc == SC_OK && p->prm.form != PLAN_FORM_EPOCHS)
        rc = parse_sampling(p, root, err);
    else if (rc == SC_OK)
        rc = plan_set_ranks(p, &(uint32_t){0}, 1, err);
    return rc;
}

/* ---- the dataset ---- */

/* A key at label ("keys[3]"): a non-empty string of at most max_key_len bytes. */
static sc_code check_key(const struct plan *p, json_t *v, const char *label, struct api_err *err)
{
    if (!json_is_string(v))
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s must be a string (an object key)",
                    label);
    if (json_string_length(v) == 0)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s must not be empty", label);
    if (json_string_length(v) > p->lim.max_key_len) {
        api_err_set(err, API_INVALID_FIELD, "%s is %zu bytes; a key is at most %u bytes", label,
                    json_string_length(v), p->lim.max_key_len);
        return SC_EINVAL;
    }
    return SC_OK;
}

#define RANGE_FORM "a range is {\"key\", \"offset\", \"length\"}"

/* Field name of a range object at label: present, and an integer in min..max. */
static sc_code range_number(json_t *o, const char *label, const char *name, uint64_t min,
                            uint64_t max, uint64_t *out, struct api_err *err)
{
    json_t *v = json_object_get(o, name);
    if (v == NULL) {
        api_err_set(err, API_MISSING_FIELD, "%s has no \"%s\" (" RANGE_FORM ")", label, name);
        return SC_EINVAL;
    }
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
        json_integer_value(v) > (json_int_t)max) {
        api_err_set(err, API_INVALID_FIELD, "%s.%s must be an integer in %llu..%llu", label, name,
                    (unsigned long long)min, (unsigned long long)max);
        return SC_EINVAL;
    }
    *out = (uint64_t)json_integer_value(v);
    return SC_OK;
}

/* A range entry {"key", "offset", "length"} at label: *key its key, *r its bytes. */
static sc_code read_range(const struct plan *p, json_t *o, const char *label, json_t **key,
                          struct plan_range *r, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    char key_label[LABEL_MAX];
    const char *name;
    json_t *v;
    json_object_foreach(o, name, v)
    {
        if (strcmp(name, "key") != 0 && strcmp(name, "offset") != 0 &&
            strcmp(name, "length") != 0) {
            api_err_set(err, API_UNKNOWN_FIELD, "unknown field \"%s\" in %s (" RANGE_FORM ")",
                        json_in_excerpt(q, sizeof(q), name, strlen(name)), label);
            return SC_EINVAL;
        }
    }
    *key = json_object_get(o, "key");
    if (*key == NULL) {
        api_err_set(err, API_MISSING_FIELD, "%s has no \"key\" (" RANGE_FORM ")", label);
        return SC_EINVAL;
    }
    snprintf(key_label, sizeof(key_label), "%s.key", label);
    sc_code rc = check_key(p, *key, key_label, err);
    if (rc == SC_OK)
        rc = range_number(o, label, "offset", 0, PLAN_MAX_OBJECT_SIZE - 1, &r->offset, err);
    if (rc == SC_OK)
        rc = range_number(o, label, "length", 1, PLAN_MAX_OBJECT_SIZE, &r->length, err);
    if (rc == SC_OK && r->length > PLAN_MAX_OBJECT_SIZE - r->offset) {
        api_err_set(err, API_INVALID_FIELD,
                    "%s ends at byte %llu; an object is at most 5 TiB (%llu bytes)", label,
                    (unsigned long long)(r->offset + r->length),
                    (unsigned long long)PLAN_MAX_OBJECT_SIZE);
        rc = SC_EINVAL;
    }
    return rc;
}

/* An entry at label: a key (*r whole, {0, 0}) or a range object. *key is its key string. */
static sc_code read_entry(const struct plan *p, json_t *v, const char *label, json_t **key,
                          struct plan_range *r, struct api_err *err)
{
    *r = (struct plan_range){0, 0};
    *key = v;
    if (json_is_object(v))
        return read_range(p, v, label, key, r, err);
    return check_key(p, v, label, err);
}

/* keys[i] repeats dataset item idx: the error, naming the range when it has one. */
static sc_code repeated(struct api_err *err, size_t i, json_t *key, const struct plan_range *r,
                        uint32_t idx)
{
    char q[JSON_IN_EXCERPT_CAP];
    json_in_excerpt(q, sizeof(q), json_string_value(key), json_string_length(key));
    if (r->length == 0)
        api_err_set(err, API_INVALID_FIELD,
                    "keys[%zu] (\"%s\") repeats keys[%" PRIu32
                    "]; the keys of a dataset must be unique",
                    i, q, idx);
    else
        api_err_set(err, API_INVALID_FIELD,
                    "keys[%zu] (\"%s\", offset %llu, length %llu) repeats keys[%" PRIu32
                    "]; the entries of a dataset must be unique",
                    i, q, (unsigned long long)r->offset, (unsigned long long)r->length, idx);
    return SC_EINVAL;
}

static sc_code parse_keys(struct plan *p, json_t *arr, struct api_err *err)
{
    struct itemsets sets = {{NULL, 0}, {NULL, 0}};
    size_t cnt = json_array_size(arr);
    char label[LABEL_MAX];
    sc_code rc = SC_EINVAL;
    if (!json_is_array(arr) || cnt == 0)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s",
                    "field \"keys\" must be a non-empty array of keys");
    if (cnt > p->lim.max_keys) {
        api_err_set(err, API_TOO_LARGE, "field \"keys\" has %zu keys; the limit is %u", cnt,
                    p->lim.max_keys);
        return SC_ETOOBIG;
    }
    p->off = malloc(cnt * sizeof(*p->off)); /* exactly one offset per item */
    if (p->off == NULL || itemsets_init(&sets, cnt) != SC_OK) {
        rc = SC_ENOMEM;
        goto out;
    }
    p->off_cap = (uint32_t)cnt;
    for (size_t i = 0; i < cnt; i++) {
        json_t *key;
        struct plan_range r;
        uint32_t idx;
        bool added;
        snprintf(label, sizeof(label), "keys[%zu]", i);
        rc = read_entry(p, json_array_get(arr, i), label, &key, &r, err);
        if (rc == SC_OK)
            rc = item_add(&sets, p, json_string_value(key), json_string_length(key), &r, &idx,
                          &added);
        if (rc == SC_OK && !added)
            rc = repeated(err, i, key, &r, idx);
        if (rc != SC_OK)
            goto out;
    }
    rc = SC_OK;
out:
    itemsets_free(&sets);
    return rc;
}

/* Checks the shape of "epochs" and counts its keys. */
static sc_code count_epochs(const struct plan *p, json_t *arr, uint64_t *total, struct api_err *err)
{
    size_t ne = json_array_size(arr);
    *total = 0;
    if (!json_is_array(arr) || ne == 0)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s",
                    "field \"epochs\" must be a non-empty array of epochs (arrays of keys)");
    if (ne > p->lim.max_epochs) {
        api_err_set(err, API_INVALID_FIELD, "field \"epochs\" has %zu epochs; the limit is %u", ne,
                    p->lim.max_epochs);
        return SC_EINVAL;
    }
    for (size_t e = 0; e < ne; e++) {
        json_t *ep = json_array_get(arr, e);
        if (!json_is_array(ep) || json_array_size(ep) == 0) {
            api_err_set(err, API_INVALID_FIELD, "epochs[%zu] must be a non-empty array of keys", e);
            return SC_EINVAL;
        }
        *total += json_array_size(ep);
    }
    if (*total > p->lim.max_keys) {
        api_err_set(err, API_TOO_LARGE, "field \"epochs\" holds %" PRIu64 " keys; the limit is %u",
                    *total, p->lim.max_keys);
        return SC_ETOOBIG;
    }
    if (*total > p->lim.max_accesses) {
        api_err_set(err, API_TOO_LARGE, "the plan has %" PRIu64 " accesses; the limit is %" PRIu64,
                    *total, p->lim.max_accesses);
        return SC_ETOOBIG;
    }
    return SC_OK;
}

static sc_code parse_epochs(struct plan *p, json_t *arr, struct api_err *err)
{
    struct itemsets sets = {{NULL, 0}, {NULL, 0}};
    char label[LABEL_MAX];
    uint64_t total, pos = 0;
    size_t ne = json_array_size(arr);
    sc_code rc = count_epochs(p, arr, &total, err);
    if (rc != SC_OK)
        return rc;
    rc = SC_ENOMEM;
    p->acc = malloc(total * sizeof(*p->acc));
    p->ep_start = malloc((ne + 1) * sizeof(*p->ep_start));
    if (p->acc == NULL || p->ep_start == NULL || itemsets_init(&sets, total) != SC_OK)
        goto out;
    for (size_t e = 0; e < ne; e++) {
        json_t *ep = json_array_get(arr, e);
        p->ep_start[e] = pos;
        for (size_t i = 0; i < json_array_size(ep); i++) {
            json_t *key;
            struct plan_range r;
            bool added;
            snprintf(label, sizeof(label), "epochs[%zu][%zu]", e, i);
            rc = read_entry(p, json_array_get(ep, i), label, &key, &r, err);
            if (rc == SC_OK)
                rc = item_add(&sets, p, json_string_value(key), json_string_length(key), &r,
                              &p->acc[pos], &added);
            if (rc != SC_OK)
                goto out;
            pos++;
        }
    }
    p->ep_start[ne] = pos;
    p->prm.num_epochs = (uint32_t)ne;
    p->accesses = pos;
    rc = SC_OK;
out:
    itemsets_free(&sets);
    return rc;
}

/* Gives back the unused tail of the arena, offsets and ranges (a large plan lives long). */
static void shrink(struct plan *p)
{
    uint64_t *o = p->n ? realloc(p->off, (size_t)p->n * sizeof(*o)) : NULL;
    struct plan_range *r = p->n && p->rng ? realloc(p->rng, (size_t)p->n * sizeof(*r)) : NULL;
    sc_buf_shrink(&p->arena);
    if (o != NULL)
        p->off = o;
    if (r != NULL)
        p->rng = r;
    p->off_cap = p->n; /* at most what each holds now; nothing is added after this */
}

static sc_code parse_root(struct plan *p, json_t *root, struct api_err *err)
{
    sc_code rc;
    if (!json_is_object(root))
        return fail(err, API_INVALID_JSON, SC_EINVAL, "%s", "the body must be a JSON object");
    rc = check_fields(root, err);
    if (rc == SC_OK)
        rc = parse_bucket(p, root, err);
    if (rc == SC_OK)
        rc = parse_form(p, root, err);
    if (rc == SC_OK)
        rc = parse_scalars(p, root, err);
    if (rc != SC_OK)
        return rc;
    if (p->prm.form == PLAN_FORM_PREFIX)
        return SC_OK; /* the dataset comes from the listing */
    if (p->prm.form == PLAN_FORM_KEYS)
        rc = parse_keys(p, json_object_get(root, "keys"), err);
    else
        rc = parse_epochs(p, json_object_get(root, "epochs"), err);
    if (rc == SC_OK && p->prm.form == PLAN_FORM_KEYS)
        rc = plan_derive(p, err);
    if (rc == SC_OK) {
        shrink(p);
        p->ready = true;
    }
    return rc;
}

static void set_defaults(struct plan *p, const struct plan_limits *lim)
{
    if (lim != NULL)
        p->lim = *lim;
    else
        plan_limits_default(&p->lim);
    if (p->lim.max_keys > PLAN_KEYS_CAP)
        p->lim.max_keys = PLAN_KEYS_CAP;
    p->prm.prefetch = true;
    p->prm.num_epochs = 1;
    p->prm.world_size = 1;
}

sc_code plan_parse(const char *body, size_t len, const struct plan_limits *lim, struct plan **out,
                   struct api_err *err)
{
    json_t *root = NULL;
    struct plan *p = calloc(1, sizeof(*p));
    sc_code rc = SC_ENOMEM;
    *out = NULL;
    if (p == NULL)
        goto out;
    set_defaults(p, lim);
    rc = json_in_load(body, len, p->lim.max_body, p->lim.max_depth, &root, err);
    if (rc == SC_OK)
        rc = parse_root(p, root, err);
    if (rc != SC_OK)
        goto out;
    p->prm.bucket = p->bucket;
    p->prm.prefix = p->prefix;
    p->prm.name = p->name;
    p->prm.job = p->job;
    *out = p;
    p = NULL;
out:
    json_decref(root);
    plan_free(p);
    return rc;
}

void plan_free(struct plan *p)
{
    if (p == NULL)
        return;
    free(p->bucket);
    free(p->prefix);
    free(p->name);
    free(p->job);
    free(p->ranks);
    for (uint32_t e = 0; p->decided != NULL && e < p->prm.num_epochs; e++)
        free(p->decided[e]);
    free(p->decided);
    sc_buf_free(&p->arena);
    free(p->off);
    free(p->rng);
    free(p->acc);
    free(p->ep_start);
    free(p);
}

/* ---- the PREFIX form's listing ---- */

sc_code plan_dataset_append(struct plan *p, const char *key, size_t len, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    if (p->prm.form != PLAN_FORM_PREFIX || p->ready)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s",
                    "keys can only be added to a prefix manifest that is still listing");
    if (len == 0 || len > p->lim.max_key_len || memchr(key, '\0', len) != NULL) {
        api_err_set(err, API_INVALID_FIELD,
                    "listed key \"%s\" (%zu bytes) is not a key of 1..%u bytes without NUL",
                    json_in_excerpt(q, sizeof(q), key, len), len, p->lim.max_key_len);
        return SC_EINVAL;
    }
    if (p->n >= p->lim.max_keys) {
        api_err_set(err, API_TOO_LARGE,
                    "the prefix \"%s\" lists more than %u keys; the limit is %u",
                    json_in_excerpt(q, sizeof(q), p->prefix, strlen(p->prefix)), p->lim.max_keys,
                    p->lim.max_keys);
        return SC_ETOOBIG;
    }
    return plan_arena_push(p, key, len);
}

static int cmp_keys(const void *a, const void *b, void *arena)
{
    return strcmp((const char *)arena + *(const uint64_t *)a,
                  (const char *)arena + *(const uint64_t *)b);
}

/* Sorts the offsets by key bytes (listing pages are already in order) and drops repeats. */
static void sort_unique(struct plan *p)
{
    bool sorted = true;
    for (uint32_t i = 1; i < p->n && sorted; i++)
        sorted = cmp_keys(&p->off[i - 1], &p->off[i], p->arena.data) < 0;
    if (sorted)
        return;
    qsort_r(p->off, p->n, sizeof(*p->off), cmp_keys, p->arena.data);
    uint32_t w = p->n ? 1 : 0;
    for (uint32_t i = 1; i < p->n; i++) {
        if (cmp_keys(&p->off[w - 1], &p->off[i], p->arena.data) != 0)
            p->off[w++] = p->off[i];
    }
    p->n = w; /* the arena keeps the bytes of dropped repeats until plan_free */
}

sc_code plan_dataset_finish(struct plan *p, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    if (p->prm.form != PLAN_FORM_PREFIX || p->ready)
        return fail(err, API_INVALID_FIELD, SC_EINVAL, "%s",
                    "only a prefix manifest that is still listing can be finished");
    if (p->n == 0) {
        api_err_set(err, API_INVALID_FIELD, "the prefix \"%s\" matched no objects in bucket \"%s\"",
                    json_in_excerpt(q, sizeof(q), p->prefix, strlen(p->prefix)), p->bucket);
        return SC_EINVAL;
    }
    sort_unique(p);
    sc_code rc = plan_derive(p, err);
    if (rc != SC_OK)
        return rc;
    shrink(p);
    p->ready = true;
    return SC_OK;
}

/* ---- jobs ---- */

/* Whether a and b name the same dataset: the same prefix, or the same entries in order. */
static bool same_dataset(const struct plan *a, const struct plan *b)
{
    if (a->prm.form == PLAN_FORM_PREFIX)
        return strcmp(a->prefix, b->prefix) == 0;
    if (a->n != b->n || (a->rng == NULL) != (b->rng == NULL))
        return false;
    for (uint32_t i = 0; i < a->n; i++) {
        struct plan_range x = range_of(a, i), y = range_of(b, i);
        if (strcmp(plan_key(a, i), plan_key(b, i)) != 0 || x.offset != y.offset ||
            x.length != y.length)
            return false;
    }
    return true;
}

/*
 * Why p cannot join job's plan, or NULL when it may. *fatal: a difference a job's name cannot
 * span (bucket, dataset, world_size): a name given to another dataset is a mistake; the rest
 * (another seed or number of epochs: the next window of a run; a rank again: a restarted
 * trainer) makes another job under the same name.
 */
static const char *job_difference(const struct plan *job, const struct plan *p, bool *fatal)
{
    const struct plan_params *a = &job->prm, *b = &p->prm;
    *fatal = true;
    if (a->form == PLAN_FORM_EPOCHS || b->form == PLAN_FORM_EPOCHS)
        return "a job is a sampling plan (\"keys\" or \"prefix\"), not explicit \"epochs\"";
    if (strcmp(a->bucket, b->bucket) != 0)
        return "its bucket differs";
    if (a->form != b->form || !same_dataset(job, p))
        return "its dataset differs";
    if (a->world_size != b->world_size)
        return "its world_size differs";
    *fatal = false;
    if (a->num_epochs != b->num_epochs || a->shuffle != b->shuffle || a->seed != b->seed ||
        a->drop_last != b->drop_last || a->cache_aware != b->cache_aware)
        return "its sampling differs";
    for (uint32_t i = 0; i < b->n_ranks; i++)
        if (plan_has_rank(job, b->ranks[i]))
            return "one of its ranks is in the job already";
    return NULL;
}

sc_code plan_same_job(const struct plan *job, const struct plan *p, bool *same, struct api_err *err)
{
    const char *a = job->prm.job, *b = p->prm.job;
    bool fatal;
    *same = false;
    if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
        return SC_OK;
    const char *differs = job_difference(job, p, &fatal);
    if (differs == NULL) {
        *same = true;
        return SC_OK;
    }
    if (b == NULL || !fatal)
        return SC_OK; /* another job (under the same name, if any) */
    char q[JSON_IN_EXCERPT_CAP];
    api_err_set(err, API_INVALID_FIELD, "this plan cannot join job \"%s\": %s",
                json_in_excerpt(q, sizeof(q), b, strlen(b)), differs);
    return SC_EINVAL;
}
