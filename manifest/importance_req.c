/*
 * importance_req.c - POST /_s3cached/importance bodies (importance_req.h):
 * validated in a first pass that also sizes everything, copied and scored
 * per minibatch in a second.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/policy.h"
#include "importance_req.h"
#include "../proto/json_in.h"
#include "plan.h"

#define WHERE_MAX 48 /* "minibatch 12345: " */

/* What the first pass learned. */
struct sizes {
    size_t batches;
    size_t samples;
    size_t bytes;       /* of all copied strings, NULs included */
    size_t max_samples; /* in one minibatch */
};

void importance_limits_default(struct importance_limits *l)
{
    l->max_body = IMPORTANCE_MAX_BODY;
    l->max_batches = IMPORTANCE_MAX_BATCHES;
    l->max_samples = IMPORTANCE_MAX_SAMPLES;
    l->max_key_len = IMPORTANCE_MAX_KEY_LEN;
    l->max_depth = IMPORTANCE_MAX_DEPTH;
}

static sc_code check_loss(const struct importance_limits *lim, const char *where, const char *key,
                          json_t *v, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    size_t len = strlen(key);
    json_in_excerpt(q, sizeof(q), key, len);
    if (len == 0 || len > lim->max_key_len) {
        api_err_set(err, API_INVALID_FIELD,
                    "%s\"losses\" key \"%s\" is %zu bytes; a key is 1..%u bytes", where, q, len,
                    lim->max_key_len);
        return SC_EINVAL;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        api_err_set(err, API_INVALID_FIELD, "%sthe loss of \"%s\" must be a finite number", where,
                    q);
        return SC_EINVAL;
    }
    return SC_OK;
}

/* Validates one minibatch object and adds its sizes to sz. */
static sc_code check_batch(const struct importance_limits *lim, json_t *b, const char *where,
                           struct sizes *sz, struct api_err *err)
{
    char q[JSON_IN_EXCERPT_CAP];
    const char *name;
    json_t *v;
    if (!json_is_object(b)) {
        api_err_set(err, API_INVALID_JSON, "%sa minibatch must be a JSON object", where);
        return SC_EINVAL;
    }
    json_object_foreach(b, name, v)
    {
        if (strcmp(name, "bucket") != 0 && strcmp(name, "losses") != 0) {
            api_err_set(err, API_UNKNOWN_FIELD, "%sunknown field \"%s\"", where,
                        json_in_excerpt(q, sizeof(q), name, strlen(name)));
            return SC_EINVAL;
        }
    }
    json_t *bucket = json_object_get(b, "bucket");
    json_t *losses = json_object_get(b, "losses");
    if (bucket == NULL || losses == NULL) {
        api_err_set(err, API_MISSING_FIELD, "%sfield \"%s\" is required", where,
                    bucket == NULL ? "bucket" : "losses");
        return SC_EINVAL;
    }
    if (!json_is_string(bucket) ||
        !plan_bucket_valid(json_string_value(bucket), json_string_length(bucket))) {
        api_err_set(err, API_INVALID_FIELD, "%sfield \"bucket\" must be a valid bucket name",
                    where);
        return SC_EINVAL;
    }
    if (!json_is_object(losses)) {
        api_err_set(err, API_INVALID_FIELD,
                    "%sfield \"losses\" must be an object mapping keys to losses", where);
        return SC_EINVAL;
    }
    size_t n = json_object_size(losses);
    if (n > lim->max_samples - sz->samples) {
        api_err_set(err, API_TOO_LARGE, "the body holds more than %u samples; the limit is %u",
                    lim->max_samples, lim->max_samples);
        return SC_ETOOBIG;
    }
    json_object_foreach(losses, name, v)
    {
        sc_code rc = check_loss(lim, where, name, v, err);
        if (rc != SC_OK)
            return rc;
        sz->bytes += strlen(name) + 1;
    }
    sz->bytes += json_string_length(bucket) + 1;
    sz->samples += n;
    sz->batches++;
    if (n > sz->max_samples)
        sz->max_samples = n;
    return SC_OK;
}

/* First pass over the whole body; *list is the array of minibatches or NULL for one. */
static sc_code check_body(const struct importance_limits *lim, json_t *root, struct sizes *sz,
                          struct api_err *err)
{
    char where[WHERE_MAX];
    memset(sz, 0, sizeof(*sz));
    if (!json_is_array(root))
        return check_batch(lim, root, "", sz, err);
    if (json_array_size(root) > lim->max_batches) {
        api_err_set(err, API_TOO_LARGE, "the body holds %zu minibatches; the limit is %u",
                    json_array_size(root), lim->max_batches);
        return SC_ETOOBIG;
    }
    for (size_t i = 0; i < json_array_size(root); i++) {
        snprintf(where, sizeof(where), "minibatch %zu: ", i);
        sc_code rc = check_batch(lim, json_array_get(root, i), where, sz, err);
        if (rc != SC_OK)
            return rc;
    }
    return SC_OK;
}

/* Copies s (with its NUL) to *arena and advances it. */
static const char *copy_str(char **arena, const char *s)
{
    size_t len = strlen(s) + 1;
    char *at = *arena;
    memcpy(at, s, len);
    *arena += len;
    return at;
}

/* Second pass: copies minibatch b's samples to r at r->nsamples and scores them. */
static sc_code fill_batch(struct importance_req *r, json_t *b, char **arena, double *tmp)
{
    const char *bucket = copy_str(arena, json_string_value(json_object_get(b, "bucket")));
    json_t *losses = json_object_get(b, "losses");
    size_t first = r->nsamples;
    const char *key;
    json_t *v;
    json_object_foreach(losses, key, v)
    {
        struct importance_sample *s = &r->samples[r->nsamples++];
        s->bucket = bucket;
        s->key = copy_str(arena, key);
        s->khash = sc_key_hash(s->bucket, s->key);
        s->loss = json_number_value(v);
        tmp[r->nsamples - first - 1] = s->loss;
    }
    size_t n = r->nsamples - first;
    sc_code rc = policy_rank_scores(tmp, n, tmp + n);
    for (size_t i = 0; rc == SC_OK && i < n; i++)
        r->samples[first + i].score = tmp[n + i];
    r->batch_start[++r->nbatches] = r->nsamples;
    return rc;
}

sc_code importance_req_parse(const char *body, size_t len, const struct importance_limits *lim,
                             struct importance_req *out, struct api_err *err)
{
    struct importance_limits dl;
    struct sizes sz;
    json_t *root = NULL;
    double *tmp = NULL;
    char *arena;
    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        importance_limits_default(&dl);
        lim = &dl;
    }
    sc_code rc = json_in_load(body, len, lim->max_body, lim->max_depth, &root, err);
    if (rc == SC_OK)
        rc = check_body(lim, root, &sz, err);
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    out->samples = calloc(sz.samples ? sz.samples : 1, sizeof(*out->samples));
    out->batch_start = calloc(sz.batches + 1, sizeof(*out->batch_start));
    out->priv = arena = malloc(sz.bytes ? sz.bytes : 1);
    tmp = malloc(2 * (sz.max_samples ? sz.max_samples : 1) * sizeof(*tmp));
    if (out->samples == NULL || out->batch_start == NULL || arena == NULL || tmp == NULL)
        goto out;
    rc = SC_OK;
    for (size_t i = 0; rc == SC_OK && i < sz.batches; i++)
        rc = fill_batch(out, json_is_array(root) ? json_array_get(root, i) : root, &arena, tmp);
out:
    if (rc != SC_OK)
        importance_req_free(out);
    free(tmp);
    json_decref(root);
    return rc;
}

void importance_req_free(struct importance_req *r)
{
    free(r->samples);
    free(r->batch_start);
    free(r->priv);
    memset(r, 0, sizeof(*r));
}
