/*
 * fuzz_invalidate_req.c - POST /_s3cached/invalidate bodies (proto/invalidate_req.h).
 *
 * Input: the body.
 * Invariants: a body is accepted with a bucket and exactly one of a prefix and a list of at
 * most INVALIDATE_MAX_KEYS keys; a refused
 * body leaves nothing allocated and an error code and message; parsing is deterministic, and
 * what was accepted, written back as JSON, is accepted again as the same request.
 */
#include <stdbool.h>

#include <jansson.h>

#include "../../proto/invalidate_req.h"
#include "fuzz.h"

static bool same(const struct invalidate_req *a, const struct invalidate_req *b)
{
    if (strcmp(a->bucket, b->bucket) != 0 || (a->prefix == NULL) != (b->prefix == NULL) ||
        a->n_keys != b->n_keys)
        return false;
    if (a->prefix != NULL && strcmp(a->prefix, b->prefix) != 0)
        return false;
    for (size_t i = 0; i < a->n_keys; i++)
        if (strcmp(a->keys[i], b->keys[i]) != 0)
            return false;
    return true;
}

/* The request as JSON again, malloc'd. */
static char *rebuild(const struct invalidate_req *r)
{
    json_t *o = json_pack("{s:s}", "bucket", r->bucket);
    FZ_CHECK(o != NULL);
    if (r->prefix != NULL) {
        FZ_CHECK(json_object_set_new(o, "prefix", json_string(r->prefix)) == 0);
    } else {
        json_t *keys = json_array();
        for (size_t i = 0; i < r->n_keys; i++)
            FZ_CHECK(json_array_append_new(keys, json_string(r->keys[i])) == 0);
        FZ_CHECK(json_object_set_new(o, "keys", keys) == 0);
    }
    char *text = json_dumps(o, JSON_COMPACT);
    FZ_CHECK(text != NULL);
    json_decref(o);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *body = fz_rest(&f, &len);
    struct invalidate_req r, r2;
    struct api_err err = {API_OK, ""}, err2 = {API_OK, ""};
    sc_code rc = invalidate_parse(body, len, &r, &err);
    sc_code rc2 = invalidate_parse(body, len, &r2, &err2);
    FZ_CHECK(rc == rc2);
    if (rc != SC_OK) {
        FZ_CHECK(err.code != API_OK && err.message[0] != '\0');
        FZ_CHECK(err.code == err2.code && strcmp(err.message, err2.message) == 0);
        FZ_CHECK(r.bucket == NULL && r.prefix == NULL && r.keys == NULL && r.n_keys == 0);
    } else {
        FZ_CHECK(r.bucket != NULL);
        FZ_CHECK(r.prefix == NULL || (r.keys == NULL && r.n_keys == 0)); /* one or the other */
        FZ_CHECK(r.n_keys <= INVALIDATE_MAX_KEYS);
        for (size_t i = 0; i < r.n_keys; i++)
            FZ_CHECK(r.keys[i] != NULL);
        FZ_CHECK(same(&r, &r2));
        char *text = rebuild(&r);
        struct invalidate_req r3;
        struct api_err err3 = {API_OK, ""};
        FZ_CHECK(invalidate_parse(text, strlen(text), &r3, &err3) == SC_OK);
        FZ_CHECK(same(&r, &r3));
        invalidate_req_free(&r3);
        free(text);
    }
    invalidate_req_free(&r);
    invalidate_req_free(&r2);
    free(body);
    return 0;
}
