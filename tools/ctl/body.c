/*
 * body.c - the manifest warm posts (see ctl.h): a FILE passes through as it
 * is unless options override some of its fields; --prefix and --keys-from
 * build one. The gateway validates the result and explains any refusal;
 * only what cannot be sent at all (not JSON, a key that is not UTF-8, keys
 * from two buckets) is refused here.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define BUCKET_MAX 256 /* the longest legacy bucket name is 255 */

sc_code ctl_s3_uri_parse(const char *uri, char *bucket, size_t bucket_cap, const char **prefix)
{
    if (strncmp(uri, "s3://", 5) != 0)
        return SC_EINVAL;
    const char *b = uri + 5;
    size_t n = strcspn(b, "/");
    if (n == 0 || n >= bucket_cap)
        return SC_EINVAL;
    memcpy(bucket, b, n);
    bucket[n] = '\0';
    *prefix = b[n] == '/' ? b + n + 1 : b + n;
    return SC_OK;
}

static bool has_overrides(const struct ctl_args *a)
{
    return a->bucket || a->name || a->epochs != CTL_UNSET || a->seed != CTL_UNSET ||
           a->world_size != CTL_UNSET || a->rank != CTL_UNSET || a->shuffle >= 0 ||
           a->drop_last >= 0;
}

/* Sets o[key] to v (taking it); false if v is NULL or jansson failed. */
static bool put(json_t *o, const char *key, json_t *v)
{
    return v != NULL && json_object_set_new(o, key, v) == 0;
}

static bool put_count(json_t *o, const char *key, uint64_t v)
{
    return v == CTL_UNSET || put(o, key, json_integer((json_int_t)v));
}

static bool put_flag(json_t *o, const char *key, int v)
{
    return v < 0 || put(o, key, json_boolean(v));
}

/* The sampling fields, --name and --bucket, over whatever o holds. */
static bool add_overrides(json_t *o, const struct ctl_args *a)
{
    return (a->bucket == NULL || put(o, "bucket", json_string(a->bucket))) &&
           (a->name == NULL || put(o, "name", json_string(a->name))) &&
           put_count(o, "num_epochs", a->epochs) && put_count(o, "seed", a->seed) &&
           put_flag(o, "shuffle", a->shuffle) && put_count(o, "world_size", a->world_size) &&
           put_count(o, "rank", a->rank) && put_flag(o, "drop_last", a->drop_last);
}

static sc_code from_file(const struct ctl_args *a, const char *data, size_t len, json_t **out,
                         char *err, size_t err_len)
{
    json_error_t je;
    const char *name = strcmp(a->input, "-") == 0 ? "stdin" : a->input;
    *out = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (*out == NULL) {
        snprintf(err, err_len, "%s is not valid JSON: %s (line %d, column %d)", name, je.text,
                 je.line, je.column);
        return SC_EINVAL;
    }
    if (!json_is_object(*out)) {
        snprintf(err, err_len, "%s: a manifest is a JSON object (docs/manifests.md)", name);
        return SC_EINVAL;
    }
    return SC_OK;
}

static sc_code from_prefix(const struct ctl_args *a, json_t **out, char *err, size_t err_len)
{
    char bucket[BUCKET_MAX];
    const char *prefix = a->prefix;
    if (strncmp(prefix, "s3://", 5) == 0 &&
        ctl_s3_uri_parse(a->prefix, bucket, sizeof(bucket), &prefix) != SC_OK) {
        snprintf(err, err_len, "--prefix '%s' is not s3://BUCKET/PREFIX", a->prefix);
        return SC_EINVAL;
    }
    if (prefix == a->prefix) /* a bare prefix: cli.c made sure --bucket is there */
        snprintf(bucket, sizeof(bucket), "%s", a->bucket ? a->bucket : "");
    *out = json_object();
    if (*out == NULL || !put(*out, "bucket", json_string(bucket)) ||
        !put(*out, "prefix", json_string(prefix))) {
        snprintf(err, err_len, "--prefix or --bucket is not valid UTF-8");
        return SC_EINVAL;
    }
    return SC_OK;
}

/* One --keys-from line: the key (and the bucket of an s3:// line) into *key, *key_len. */
static sc_code key_of_line(const struct ctl_args *a, const char *s, size_t n, size_t line,
                           char *bucket, const char **key, size_t *key_len, char *err,
                           size_t err_len)
{
    *key = s;
    *key_len = n;
    if (memchr(s, '\0', n) != NULL) {
        snprintf(err, err_len, "%s line %zu: a NUL byte", a->keys_from, line);
        return SC_EINVAL;
    }
    if (n < 5 || memcmp(s, "s3://", 5) != 0) {
        if (a->bucket != NULL)
            return SC_OK;
        snprintf(err, err_len, "%s line %zu: a bare key needs --bucket (or write s3://BUCKET/KEY)",
                 a->keys_from, line);
        return SC_EINVAL;
    }
    const char *b = s + 5;
    const char *slash = memchr(b, '/', n - 5);
    size_t bn = slash ? (size_t)(slash - b) : 0;
    if (slash == NULL || bn == 0 || bn >= BUCKET_MAX || slash + 1 == s + n) {
        snprintf(err, err_len, "%s line %zu: not s3://BUCKET/KEY", a->keys_from, line);
        return SC_EINVAL;
    }
    if (bucket[0] != '\0' && (strlen(bucket) != bn || memcmp(bucket, b, bn) != 0)) {
        snprintf(err, err_len,
                 "%s line %zu: bucket %.*s differs from %s; a manifest covers one bucket",
                 a->keys_from, line, (int)bn, b, bucket);
        return SC_EINVAL;
    }
    memcpy(bucket, b, bn);
    bucket[bn] = '\0';
    *key = slash + 1;
    *key_len = (size_t)(s + n - *key);
    return SC_OK;
}

/* The keys array from data, one key per line ("\r\n" too; empty lines skipped). */
static sc_code read_keys(const struct ctl_args *a, const char *data, size_t len, char *bucket,
                         json_t *keys, char *err, size_t err_len)
{
    size_t line = 0;
    for (size_t i = 0; i < len;) {
        const char *s = data + i;
        const char *nl = memchr(s, '\n', len - i);
        size_t n = nl ? (size_t)(nl - s) : len - i;
        i += n + 1;
        line++;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        const char *key;
        size_t key_len;
        sc_code rc = key_of_line(a, s, n, line, bucket, &key, &key_len, err, err_len);
        if (rc != SC_OK)
            return rc;
        json_t *k = json_stringn(key, key_len);
        if (k == NULL) {
            snprintf(err, err_len, "%s line %zu: the key is not valid UTF-8", a->keys_from, line);
            return SC_EINVAL;
        }
        if (json_array_append_new(keys, k) != 0)
            return SC_ENOMEM;
    }
    if (json_array_size(keys) == 0) {
        snprintf(err, err_len, "%s has no keys", a->keys_from);
        return SC_EINVAL;
    }
    return SC_OK;
}

static sc_code from_keys(const struct ctl_args *a, const char *data, size_t len, json_t **out,
                         char *err, size_t err_len)
{
    char bucket[BUCKET_MAX] = "";
    json_t *keys = json_array();
    if (keys == NULL)
        return SC_ENOMEM;
    if (a->bucket != NULL)
        snprintf(bucket, sizeof(bucket), "%s", a->bucket);
    sc_code rc = read_keys(a, data, len, bucket, keys, err, err_len);
    if (rc != SC_OK) {
        json_decref(keys);
        return rc;
    }
    *out = json_object();
    if (*out == NULL) {
        json_decref(keys);
        return SC_ENOMEM;
    }
    if (!put(*out, "keys", keys) || !put(*out, "bucket", json_string(bucket))) {
        snprintf(err, err_len, "out of memory, or --bucket is not valid UTF-8");
        return SC_EINVAL;
    }
    return SC_OK;
}

sc_code ctl_manifest_body(const struct ctl_args *a, const char *data, size_t len, char **body,
                          size_t *body_len, char *err, size_t err_len)
{
    json_t *o = NULL;
    sc_code rc;
    *body = NULL;
    *body_len = 0;
    if (a->input != NULL && !has_overrides(a)) { /* as given: the gateway's messages apply */
        *body = malloc(len + 1);
        if (*body == NULL)
            return SC_ENOMEM;
        memcpy(*body, data, len);
        (*body)[len] = '\0';
        *body_len = len;
        return SC_OK;
    }
    if (a->input != NULL)
        rc = from_file(a, data, len, &o, err, err_len);
    else if (a->prefix != NULL)
        rc = from_prefix(a, &o, err, err_len);
    else
        rc = from_keys(a, data, len, &o, err, err_len);
    if (rc == SC_OK && !add_overrides(o, a)) {
        snprintf(err, err_len, "--bucket or --name is not valid UTF-8");
        rc = SC_EINVAL;
    }
    if (rc == SC_OK)
        *body = json_dumps(o, JSON_COMPACT);
    if (rc == SC_OK && *body == NULL)
        rc = SC_ENOMEM;
    if (rc == SC_OK)
        *body_len = strlen(*body);
    if (rc == SC_ENOMEM)
        snprintf(err, err_len, "out of memory");
    json_decref(o);
    return rc;
}
