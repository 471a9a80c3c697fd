/*
 * order.c - the order in which an epoch reads the dataset: the tool's own
 * shuffle (the gateway's documented one, so both sides agree on a seed), the
 * order a gateway manifest answers, a rank's share of an epoch, the manifest
 * that plans a run, and a fingerprint of an order.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim.h"

void ts_order_shuffle(uint32_t n, uint64_t seed, uint32_t epoch, uint32_t *perm)
{
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    uint64_t state = seed + epoch;
    for (uint32_t i = n; i-- > 1;) {
        uint32_t j = (uint32_t)(ts_splitmix64(&state) % ((uint64_t)i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

uint32_t ts_split_len(uint32_t n, const struct ts_split *s)
{
    return (uint32_t)(((uint64_t)n + s->world_size - 1) / s->world_size);
}

void ts_split_take(const uint32_t *perm, uint32_t n, const struct ts_split *s, uint32_t *out)
{
    uint32_t len = ts_split_len(n, s);
    for (uint32_t i = 0; i < len; i++)
        out[i] = perm[(s->rank + (uint64_t)i * s->world_size) % n];
}

sc_code ts_order_parse(const struct ts_dataset *d, const char *json, uint32_t **order,
                       uint32_t *len, char *why, size_t why_len)
{
    sc_code rc = SC_EINVAL;
    uint32_t *out = NULL;
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    json_t *keys = root ? json_object_get(root, "keys") : NULL;
    *order = NULL;
    *len = 0;
    snprintf(why, why_len, "the order is not JSON with a \"keys\" array");
    if (!json_is_array(keys))
        goto out;
    size_t n = json_array_size(keys);
    if (n == 0 || n > UINT32_MAX) {
        snprintf(why, why_len, "the order has %zu keys", n);
        goto out;
    }
    rc = SC_ENOMEM;
    out = malloc(n * sizeof(*out));
    if (out == NULL)
        goto out;
    rc = SC_EINVAL;
    for (size_t k = 0; k < n; k++) {
        const char *key = json_string_value(json_array_get(keys, k));
        if (key == NULL || ts_key_index(d, key, &out[k]) != SC_OK) {
            snprintf(why, why_len, "keys[%zu] (%.200s) is not an object of this dataset", k,
                     key ? key : "not a string");
            goto out;
        }
    }
    *order = out;
    *len = (uint32_t)n;
    out = NULL;
    why[0] = '\0';
    rc = SC_OK;
out:
    free(out);
    json_decref(root);
    return rc;
}

sc_code ts_manifest_body(const struct ts_dataset *d, const char *bucket, uint32_t epochs,
                         uint64_t seed, const struct ts_split *split, char **out)
{
    char key[TS_MAX_KEY];
    sc_code rc = SC_EINVAL;
    json_t *keys = NULL;
    json_t *root = NULL;
    *out = NULL;
    if (seed > (uint64_t)INT64_MAX)
        goto out;
    rc = SC_ENOMEM;
    keys = json_array();
    if (keys == NULL)
        goto out;
    for (uint32_t i = 0; i < d->objects; i++) {
        rc = ts_object_key(d, i, key, sizeof(key));
        if (rc != SC_OK)
            goto out;
        rc = SC_ENOMEM;
        if (json_array_append_new(keys, json_string(key)) != 0)
            goto out;
    }
    root = json_pack("{s:s, s:O, s:I, s:I, s:b}", "bucket", bucket, "keys", keys, "num_epochs",
                     (json_int_t)epochs, "seed", (json_int_t)seed, "shuffle", 1);
    if (root == NULL)
        goto out;
    if (split->world_size > 1 &&
        (json_object_set_new(root, "world_size", json_integer(split->world_size)) != 0 ||
         json_object_set_new(root, "rank", json_integer(split->rank)) != 0))
        goto out;
    if (split->cache_aware && json_object_set_new(root, "cache_aware", json_true()) != 0)
        goto out;
    *out = json_dumps(root, JSON_COMPACT);
    rc = *out ? SC_OK : SC_ENOMEM;
out:
    json_decref(keys);
    json_decref(root);
    return rc;
}

void ts_order_digest(const struct ts_dataset *d, const uint32_t *order, uint32_t len, char out[65])
{
    char key[TS_MAX_KEY];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    bool ok = false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    out[0] = '\0';
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    for (uint32_t k = 0; k < len; k++) {
        if (ts_object_key(d, order[k], key, sizeof(key)) != SC_OK)
            goto out;
        size_t n = strlen(key);
        key[n] = '\n';
        if (EVP_DigestUpdate(ctx, key, n + 1) != 1)
            goto out;
    }
    ok = EVP_DigestFinal_ex(ctx, md, &md_len) == 1 && md_len == 32;
out:
    EVP_MD_CTX_free(ctx);
    for (unsigned k = 0; ok && k < md_len; k++)
        snprintf(out + 2 * k, 3, "%02x", md[k]);
}
