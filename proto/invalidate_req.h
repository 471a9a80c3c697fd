/*
 * invalidate_req.h - POST /_s3cached/invalidate bodies: which cached objects to
 * drop, by key list or by prefix. Pure parsing; admin.c carries it out.
 *
 *   {"bucket": "b", "keys": ["k1", "k2", ...]}    those keys
 *   {"bucket": "b", "prefix": "train/"}          every cached key under it ("" for all)
 */
#ifndef INVALIDATE_REQ_H
#define INVALIDATE_REQ_H

#include <stddef.h>

#include "../common/sc_err.h"
#include "api_err.h"

#define INVALIDATE_MAX_BODY (16u * 1024u * 1024u)
#define INVALIDATE_MAX_KEYS 100000u

struct invalidate_req {
    char *bucket;
    char *prefix; /* NULL when keys are given */
    char **keys;
    size_t n_keys;
};

/*
 * @brief Parses and checks a body (exactly one of "keys" and "prefix"; no other field).
 * @param[out] out owned by the caller on SC_OK; release with invalidate_req_free().
 * @return SC_OK, SC_EINVAL / SC_ETOOBIG with err set, SC_ENOMEM.
 */
sc_code invalidate_parse(const char *body, size_t len, struct invalidate_req *out,
                         struct api_err *err);

/* @brief Frees what invalidate_parse() filled in. Safe on a zeroed struct. */
void invalidate_req_free(struct invalidate_req *r);

#endif
