/*
 * fuzz_importance_req.c - POST /_s3cached/importance bodies
 * (manifest/importance_req.h).
 *
 * Input: the body. Limits are small (200 minibatches, 2000 samples).
 * Invariants: an error zeroes the result and sets an API error with a
 * message, TooLarge exactly for SC_ETOOBIG; an accepted body has consistent
 * counts (batch_start from 0, non-decreasing, ending at nsamples), and every
 * sample a valid bucket, a key of 1..max_key_len bytes, the key hash of its
 * (bucket, key), a finite loss and the SHADE score of its rank within its
 * minibatch: log(r + 10) with r the 1-based rank by ascending loss, equal
 * losses sharing the smaller rank.
 */
#include <math.h>
#include <stdbool.h>

#include "../../manifest/importance_req.h"
#include "../../manifest/plan.h"
#include "../../policy/policy.h"
#include "fuzz.h"

static const struct importance_limits limits = {
    .max_body = 64 * 1024,
    .max_batches = 200,
    .max_samples = 2000,
    .max_key_len = 1024,
    .max_depth = 4,
};

static bool zeroed(const struct importance_req *r)
{
    return r->nbatches == 0 && r->nsamples == 0 && r->samples == NULL && r->batch_start == NULL &&
           r->priv == NULL;
}

/* Scores of one minibatch, recomputed here: the rank counts the strictly smaller losses. */
static void check_batch(const struct importance_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t smaller = 0;
        for (size_t j = 0; j < n; j++)
            smaller += s[j].loss < s[i].loss;
        FZ_CHECK(isfinite(s[i].score));
        FZ_CHECK(fabs(s[i].score - log((double)(smaller + 1) + 10.0)) < 1e-9);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *body = fz_rest(&f, &len);
    struct importance_req r;
    struct api_err err = {0};
    sc_code rc = importance_req_parse(body, len, &limits, &r, &err);
    if (rc != SC_OK) {
        FZ_CHECK(rc == SC_EINVAL || rc == SC_ETOOBIG || rc == SC_ENOMEM);
        FZ_CHECK(zeroed(&r));
        FZ_CHECK(rc == SC_ENOMEM || (err.code != API_OK && err.message[0] != '\0'));
        FZ_CHECK(rc != SC_ETOOBIG || err.code == API_TOO_LARGE);
        goto out;
    }
    FZ_CHECK(r.nbatches <= limits.max_batches);
    FZ_CHECK(r.nsamples <= limits.max_samples);
    FZ_CHECK(r.batch_start[0] == 0 && r.batch_start[r.nbatches] == r.nsamples);
    for (size_t b = 0; b < r.nbatches; b++) {
        size_t first = r.batch_start[b], end = r.batch_start[b + 1];
        FZ_CHECK(first <= end);
        for (size_t i = first; i < end; i++) {
            const struct importance_sample *s = &r.samples[i];
            FZ_CHECK(plan_bucket_valid(s->bucket, strlen(s->bucket)));
            FZ_CHECK(s->bucket == r.samples[first].bucket); /* one bucket per minibatch */
            FZ_CHECK(s->key[0] != '\0' && strlen(s->key) <= limits.max_key_len);
            FZ_CHECK(s->khash == sc_key_hash(s->bucket, s->key));
            FZ_CHECK(isfinite(s->loss));
        }
        check_batch(r.samples + first, end - first);
    }
out:
    importance_req_free(&r);
    FZ_CHECK(zeroed(&r));
    free(body);
    return 0;
}
