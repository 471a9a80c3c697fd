/*
 * s3_target.c - parsing and classifying S3 request targets (see s3_target.h).
 *
 * The steps, in order: check the raw target, split path and query, decode the
 * query, find the bucket (Host or first path segment) and the key, then
 * classify. Each refusal sets one fault and jumps to out.
 */
#include "s3_target.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/uri.h"

#define ADMIN_PREFIX "/_s3cached"
#define BUCKET_MIN   3
#define BUCKET_MAX   63  /* current rules */
#define LEGACY_MAX   255 /* legacy us-east-1 rules, path style only */
#define HOST_MAX     255

static bool is_lower_or_digit(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_or_digit(c) || (c >= 'A' && c <= 'Z');
}

/* Checks a bucket name; legacy admits uppercase, '_' and up to 255 characters. */
static bool bucket_valid(const char *name, bool legacy)
{
    size_t len = strlen(name);
    size_t max = legacy ? LEGACY_MAX : BUCKET_MAX;
    if (len < BUCKET_MIN || len > max)
        return false;
    if (!is_alnum(name[0]) || !is_alnum(name[len - 1]) || strstr(name, "..") != NULL)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = is_lower_or_digit(c) || c == '.' || c == '-' ||
                  (legacy && ((c >= 'A' && c <= 'Z') || c == '_'));
        if (!ok)
            return false;
    }
    return true;
}

static enum s3_method parse_method(const char *m)
{
    static const struct {
        const char *name;
        enum s3_method method;
    } methods[] = {
        {"GET", S3_METHOD_GET},   {"HEAD", S3_METHOD_HEAD},     {"PUT", S3_METHOD_PUT},
        {"POST", S3_METHOD_POST}, {"DELETE", S3_METHOD_DELETE}, {"OPTIONS", S3_METHOD_OPTIONS},
    };
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strcmp(m, methods[i].name) == 0)
            return methods[i].method;
    }
    return S3_METHOD_OTHER;
}

/* Control characters, space and DEL never appear in a well-formed request-target. */
static bool target_chars_ok(const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c == 0x7F)
            return false;
    }
    return true;
}

/* Decodes one "name[=value]" query segment into p. */
static sc_code parse_param(const char *s, size_t len, struct s3_param *p)
{
    const char *eq = memchr(s, '=', len);
    size_t name_len = eq != NULL ? (size_t)(eq - s) : len;
    sc_code rc = uri_decode(s, name_len, &p->name);
    if (rc != SC_OK || eq == NULL)
        return rc;
    return uri_decode(eq + 1, len - name_len - 1, &p->value);
}

/* Splits the raw query on '&' into t->params, skipping empty segments. */
static sc_code parse_query(const char *q, struct s3_target *t)
{
    size_t count = 1;
    for (const char *s = q; *s != '\0' && count <= S3_TARGET_PARAMS_MAX; s++)
        count += *s == '&';
    if (count > S3_TARGET_PARAMS_MAX)
        count = S3_TARGET_PARAMS_MAX; /* enough; a further segment is refused below */
    t->params = calloc(count, sizeof(*t->params));
    if (t->params == NULL)
        return SC_ENOMEM;
    const char *s = q;
    for (;;) {
        const char *amp = strchr(s, '&');
        size_t len = amp != NULL ? (size_t)(amp - s) : strlen(s);
        if (len > 0) {
            if (t->nparams == S3_TARGET_PARAMS_MAX)
                return SC_EINVAL;
            sc_code rc = parse_param(s, len, &t->params[t->nparams++]);
            if (rc != SC_OK)
                return rc;
        }
        if (amp == NULL)
            return SC_OK;
        s = amp + 1;
    }
}

/*
 * If host names a bucket under vhost_domain, returns its length in host
 * (the prefix before ".<domain>"); otherwise 0.
 */
static size_t vhost_bucket_len(const char *host, const char *domain)
{
    if (domain[0] == '.')
        domain++;
    size_t hlen = strlen(host);
    size_t dlen = strlen(domain);
    if (hlen > HOST_MAX || dlen == 0 || host[0] == '[')
        return 0;
    const char *colon = memchr(host, ':', hlen);
    if (colon != NULL)
        hlen = (size_t)(colon - host);
    if (hlen > 0 && host[hlen - 1] == '.')
        hlen--;
    if (hlen < dlen + 2 || host[hlen - dlen - 1] != '.')
        return 0;
    if (strncasecmp(host + hlen - dlen, domain, dlen) != 0)
        return 0;
    return hlen - dlen - 1;
}

static sc_code vhost_bucket(const char *host, size_t len, struct s3_target *t)
{
    t->bucket = strndup(host, len);
    if (t->bucket == NULL)
        return SC_ENOMEM;
    for (size_t i = 0; i < len; i++) {
        char c = t->bucket[i];
        if (c >= 'A' && c <= 'Z')
            t->bucket[i] = (char)(c - 'A' + 'a');
    }
    t->virtual_host = true;
    return bucket_valid(t->bucket, false) ? SC_OK : SC_EINVAL;
}

static bool is_admin_path(const char *path, size_t len)
{
    size_t plen = sizeof(ADMIN_PREFIX) - 1;
    return len >= plen && memcmp(path, ADMIN_PREFIX, plen) == 0 &&
           (len == plen || path[plen] == '/');
}

/* Fills bucket and key for a path-style target; sets *bad_bucket on a name fault. */
static sc_code path_style(const char *path, size_t len, struct s3_target *t, bool *bad_bucket)
{
    const char *seg = path + 1;
    const char *end = path + len;
    const char *slash = memchr(seg, '/', (size_t)(end - seg));
    const char *seg_end = slash != NULL ? slash : end;
    const char *key = slash != NULL ? slash + 1 : end;
    sc_code rc = uri_decode(seg, (size_t)(seg_end - seg), &t->bucket);
    if (rc != SC_OK)
        return rc;
    if (t->bucket[0] == '\0' && len > 1) {
        *bad_bucket = true;
        return SC_EINVAL;
    }
    if (t->bucket[0] != '\0' && !bucket_valid(t->bucket, true)) {
        *bad_bucket = true;
        return SC_EINVAL;
    }
    return uri_decode(key, (size_t)(end - key), &t->key);
}

static sc_code admin_path(const char *path, size_t len, struct s3_target *t)
{
    size_t plen = sizeof(ADMIN_PREFIX) - 1;
    size_t skip = len > plen ? plen + 1 : plen;
    t->kind = S3_REQ_ADMIN;
    t->bucket = strdup("");
    if (t->bucket == NULL)
        return SC_ENOMEM;
    return uri_decode(path + skip, len - skip, &t->key);
}

/* GET/HEAD on an object with no parameter but x-id can come from the cache. */
static enum s3_req_kind classify(const struct s3_target *t)
{
    if (t->method != S3_METHOD_GET && t->method != S3_METHOD_HEAD)
        return S3_REQ_PASS;
    if (t->bucket[0] == '\0' || t->key_len == 0)
        return S3_REQ_PASS;
    for (size_t i = 0; i < t->nparams; i++) {
        if (strcmp(t->params[i].name, "x-id") != 0)
            return S3_REQ_PASS;
    }
    return t->method == S3_METHOD_GET ? S3_REQ_GET_OBJECT : S3_REQ_HEAD_OBJECT;
}

/* Bucket and key from Host or from the path. */
static sc_code locate(const char *path, size_t path_len, const char *host, const char *domain,
                      struct s3_target *t, enum s3_target_fault *why)
{
    size_t blen = host != NULL && domain != NULL ? vhost_bucket_len(host, domain) : 0;
    bool bad_bucket = false;
    sc_code rc;
    if (blen > 0) {
        rc = vhost_bucket(host, blen, t);
        bad_bucket = rc == SC_EINVAL;
        if (rc == SC_OK)
            rc = uri_decode(path + 1, path_len - 1, &t->key);
    } else if (is_admin_path(path, path_len)) {
        rc = admin_path(path, path_len, t);
    } else {
        rc = path_style(path, path_len, t, &bad_bucket);
    }
    if (rc == SC_EINVAL)
        *why = bad_bucket ? S3_TARGET_FAULT_BUCKET : S3_TARGET_FAULT_URI;
    return rc;
}

sc_code s3_target_parse(const char *method, const char *target, const char *host,
                        const char *vhost_domain, struct s3_target *out,
                        enum s3_target_fault *fault)
{
    enum s3_target_fault why = S3_TARGET_FAULT_URI;
    sc_code rc = SC_EINVAL;
    memset(out, 0, sizeof(*out));
    if (method == NULL || target == NULL)
        goto out;
    size_t tlen = strnlen(target, S3_TARGET_MAX + 1);
    if (tlen > S3_TARGET_MAX) {
        why = S3_TARGET_FAULT_TOO_LONG;
        goto out;
    }
    if (target[0] != '/' || !target_chars_ok(target))
        goto out;
    const char *qmark = strchr(target, '?');
    size_t path_len = qmark != NULL ? (size_t)(qmark - target) : tlen;
    out->method = parse_method(method);
    rc = SC_ENOMEM;
    out->raw_path = strndup(target, path_len);
    if (out->raw_path == NULL)
        goto out;
    if (qmark != NULL) {
        out->raw_query = strdup(qmark + 1);
        if (out->raw_query == NULL)
            goto out;
        rc = parse_query(out->raw_query, out);
    } else {
        rc = SC_OK;
    }
    if (rc != SC_OK)
        goto out;
    rc = locate(target, path_len, host, vhost_domain, out, &why);
    if (rc != SC_OK)
        goto out;
    out->key_len = strlen(out->key);
    if (out->key_len > S3_KEY_MAX) {
        why = S3_TARGET_FAULT_KEY_TOO_LONG;
        rc = SC_EINVAL;
        goto out;
    }
    if (out->kind != S3_REQ_ADMIN)
        out->kind = classify(out);
out:
    if (rc != SC_OK)
        s3_target_free(out);
    if (fault != NULL)
        *fault = rc == SC_EINVAL ? why : S3_TARGET_FAULT_NONE;
    return rc;
}

bool s3_target_header_needs_upstream(const char *name, const char *value)
{
    static const char *const neutral[] = {"x-amz-date", "x-amz-content-sha256",
                                          "x-amz-security-token", "x-amz-user-agent"};
    if (strncasecmp(name, "x-amz-", 6) != 0)
        return false;
    for (size_t i = 0; i < sizeof(neutral) / sizeof(neutral[0]); i++) {
        if (strcasecmp(name, neutral[i]) == 0)
            return false;
    }
    /* S3 knows only ENABLED; anything else is the upstream's to refuse. */
    if (strcasecmp(name, "x-amz-checksum-mode") == 0)
        return value == NULL || strcmp(value, "ENABLED") != 0;
    return true;
}

void s3_target_free(struct s3_target *t)
{
    for (size_t i = 0; i < t->nparams; i++) {
        free(t->params[i].name);
        free(t->params[i].value);
    }
    free(t->params);
    free(t->bucket);
    free(t->key);
    free(t->raw_path);
    free(t->raw_query);
    memset(t, 0, sizeof(*t));
}

const struct s3_param *s3_target_param(const struct s3_target *t, const char *name)
{
    for (size_t i = 0; i < t->nparams; i++) {
        if (strcmp(t->params[i].name, name) == 0)
            return &t->params[i];
    }
    return NULL;
}

/* A multipart step names its upload: radosgw runs a PUT or DELETE whose uploadId has no
 * value ("?uploadId=", "?uploadId") as PutObject or DeleteObject, so such an uploadId, or
 * one of several that has none, makes the request no multipart step. */
static bool names_an_upload(const struct s3_target *t)
{
    bool named = false;
    for (size_t i = 0; i < t->nparams; i++) {
        if (strcmp(t->params[i].name, "uploadId") != 0)
            continue;
        if (t->params[i].value == NULL || t->params[i].value[0] == '\0')
            return false;
        named = true;
    }
    return named;
}

static enum s3_invalidate key_invalidation(const struct s3_target *t)
{
    bool upload = names_an_upload(t);
    switch (t->method) {
    case S3_METHOD_PUT:
    case S3_METHOD_DELETE:
        return upload ? S3_INVALIDATE_NONE : S3_INVALIDATE_KEY;
    case S3_METHOD_POST:
        if (upload)
            return S3_INVALIDATE_KEY;
        if (s3_target_param(t, "uploads") != NULL || s3_target_param(t, "select") != NULL)
            return S3_INVALIDATE_NONE;
        return S3_INVALIDATE_KEY;
    default:
        return S3_INVALIDATE_NONE;
    }
}

enum s3_invalidate s3_target_invalidation(const struct s3_target *t)
{
    if (t->kind == S3_REQ_ADMIN || t->bucket == NULL || t->bucket[0] == '\0')
        return S3_INVALIDATE_NONE;
    if (t->key_len > 0)
        return key_invalidation(t);
    if (t->method == S3_METHOD_POST || t->method == S3_METHOD_DELETE)
        return S3_INVALIDATE_BUCKET;
    return S3_INVALIDATE_NONE;
}
