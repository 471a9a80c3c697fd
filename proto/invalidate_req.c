/* invalidate_req.c - POST /_s3cached/invalidate bodies (see invalidate_req.h). */
#include "invalidate_req.h"

#include <stdlib.h>
#include <string.h>

#include "json_in.h"

#define MAX_DEPTH   4
#define KEY_MAX_LEN 1024

static sc_code check_fields(json_t *o, struct api_err *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(o, name, v)
    {
        if (strcmp(name, "bucket") != 0 && strcmp(name, "keys") != 0 &&
            strcmp(name, "prefix") != 0) {
            char q[JSON_IN_EXCERPT_CAP];
            api_err_set(err, API_UNKNOWN_FIELD,
                        "unknown field \"%s\"; expected \"bucket\" and \"keys\" or \"prefix\"",
                        json_in_excerpt(q, sizeof(q), name, strlen(name)));
            return SC_EINVAL;
        }
    }
    return SC_OK;
}

static sc_code take_keys(json_t *keys, struct invalidate_req *out, struct api_err *err)
{
    if (!json_is_array(keys) || json_array_size(keys) == 0) {
        api_err_set(err, API_INVALID_FIELD, "\"keys\" must be a non-empty array of strings");
        return SC_EINVAL;
    }
    size_t n = json_array_size(keys);
    if (n > INVALIDATE_MAX_KEYS) {
        api_err_set(err, API_TOO_LARGE, "%zu keys; at most %u per request (or use \"prefix\")", n,
                    INVALIDATE_MAX_KEYS);
        return SC_ETOOBIG;
    }
    out->keys = calloc(n, sizeof(*out->keys));
    if (out->keys == NULL)
        return SC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *k = json_string_value(json_array_get(keys, i));
        size_t len = k ? strlen(k) : 0;
        if (len == 0 || len > KEY_MAX_LEN) {
            api_err_set(err, API_INVALID_FIELD, "\"keys\"[%zu] must be a string of 1..%u bytes", i,
                        KEY_MAX_LEN);
            return SC_EINVAL;
        }
        if ((out->keys[i] = strdup(k)) == NULL)
            return SC_ENOMEM;
        out->n_keys++;
    }
    return SC_OK;
}

static sc_code take(json_t *o, struct invalidate_req *out, struct api_err *err)
{
    if (!json_is_object(o)) {
        api_err_set(err, API_INVALID_JSON, "the body must be a JSON object");
        return SC_EINVAL;
    }
    sc_code rc = check_fields(o, err);
    if (rc != SC_OK)
        return rc;
    const char *bucket = json_string_value(json_object_get(o, "bucket"));
    if (bucket == NULL || *bucket == '\0') {
        api_err_set(err, API_MISSING_FIELD, "\"bucket\" (a non-empty string) is required");
        return SC_EINVAL;
    }
    json_t *keys = json_object_get(o, "keys"), *prefix = json_object_get(o, "prefix");
    if ((keys == NULL) == (prefix == NULL)) {
        api_err_set(err, API_MISSING_FIELD, "give exactly one of \"keys\" and \"prefix\"");
        return SC_EINVAL;
    }
    if ((out->bucket = strdup(bucket)) == NULL)
        return SC_ENOMEM;
    if (keys != NULL)
        return take_keys(keys, out, err);
    const char *p = json_string_value(prefix);
    if (p == NULL || strlen(p) > KEY_MAX_LEN) {
        api_err_set(err, API_INVALID_FIELD, "\"prefix\" must be a string of at most %u bytes",
                    KEY_MAX_LEN);
        return SC_EINVAL;
    }
    return (out->prefix = strdup(p)) ? SC_OK : SC_ENOMEM;
}

sc_code invalidate_parse(const char *body, size_t len, struct invalidate_req *out,
                         struct api_err *err)
{
    *out = (struct invalidate_req){0};
    json_t *o = NULL;
    sc_code rc = json_in_load(body, len, INVALIDATE_MAX_BODY, MAX_DEPTH, &o, err);
    if (rc == SC_OK)
        rc = take(o, out, err);
    json_decref(o);
    if (rc != SC_OK)
        invalidate_req_free(out);
    return rc;
}

void invalidate_req_free(struct invalidate_req *r)
{
    for (size_t i = 0; i < r->n_keys; i++)
        free(r->keys[i]);
    free(r->keys);
    free(r->bucket);
    free(r->prefix);
    *r = (struct invalidate_req){0};
}
