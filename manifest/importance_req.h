/*
 * importance_req.h - a POST /_s3cached/importance body parsed into scored
 * samples, ready to be sent to the policy as POLICY_HINT_SCORE hints.
 *
 * The body is one minibatch or an array of minibatches:
 *   {"bucket": "b", "losses": {"key1": 0.7, "key2": 1.3}}
 *   [{"bucket": "b", "losses": {...}}, ...]
 * Losses are finite JSON numbers. Within each minibatch the samples are
 * ranked by policy_rank_scores() (policy/policy.h): the hardest score highest.
 * Pure: no network, no threads, no globals.
 */
#ifndef IMPORTANCE_REQ_H
#define IMPORTANCE_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "../proto/api_err.h"

/* Defaults of struct importance_limits. */
#define IMPORTANCE_MAX_BODY    (8u * 1024 * 1024) /* bytes of request body */
#define IMPORTANCE_MAX_BATCHES 10000u             /* minibatches per body */
#define IMPORTANCE_MAX_SAMPLES 1000000u           /* samples per body, all minibatches */
#define IMPORTANCE_MAX_KEY_LEN 1024u              /* bytes per key */
#define IMPORTANCE_MAX_DEPTH   4u                 /* JSON nesting (the format needs 3) */

struct importance_limits {
    size_t max_body;      /* TooLarge above */
    uint32_t max_batches; /* TooLarge above */
    uint32_t max_samples; /* TooLarge above */
    uint32_t max_key_len; /* InvalidField above */
    uint32_t max_depth;   /* InvalidJSON above */
};

/* @brief Fills l with the IMPORTANCE_MAX_* defaults. Cannot fail. */
void importance_limits_default(struct importance_limits *l);

/* One scored sample. Strings are owned by the importance_req. */
struct importance_sample {
    const char *bucket;
    const char *key;
    uint64_t khash; /* sc_key_hash(bucket, key) */
    double loss;
    double score; /* policy_rank_scores() within its minibatch */
};

struct importance_req {
    size_t nbatches;
    size_t nsamples;
    struct importance_sample *samples; /* nsamples, minibatch after minibatch */
    size_t *batch_start; /* nbatches + 1: batch b is samples[start[b] .. start[b+1]) */
    void *priv;          /* owned strings */
};

/*
 * @brief Parses, validates and scores an importance body.
 * @param[in] body len bytes (need not be NUL-terminated). @param[in] lim NULL for defaults.
 * @param[out] out filled on SC_OK; release with importance_req_free(). Zeroed on error.
 * @param[out] err on SC_EINVAL/SC_ETOOBIG, the API error; may be NULL.
 * @return SC_OK; SC_EINVAL (InvalidJSON, UnknownField, MissingField,
 *         InvalidField); SC_ETOOBIG (TooLarge); SC_ENOMEM.
 * @note A minibatch with an empty "losses" object is accepted and scores nothing.
 */
sc_code importance_req_parse(const char *body, size_t len, const struct importance_limits *lim,
                             struct importance_req *out, struct api_err *err);

/* @brief Frees what r holds and zeroes it. Safe on a zeroed or freed r. */
void importance_req_free(struct importance_req *r);

#endif
