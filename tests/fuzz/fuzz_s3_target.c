/*
 * fuzz_s3_target.c - request targets (proto/s3_target.h): method, Host and
 * the request-target as a client sends them.
 *
 * Input: four '\n'-separated fields: method, Host (empty: absent), the
 * virtual-host domain (empty: none), then the request-target.
 * Invariants: a refusal leaves the struct zeroed and names a fault; an
 * accepted target keeps its raw path and query exactly (raw_path + "?" +
 * raw_query is the target), its key has key_len bytes, at most S3_KEY_MAX, and
 * round-trips: the key percent-encoded again (as the upstream client does)
 * parses back to the same bucket, key bytes, kind and parameters; the
 * cacheable kinds are exactly the plain GET/HEAD of a key with no parameter
 * but x-id; the service ("/") has neither bucket nor key. And what is
 * accepted can be forwarded: its query canonicalizes for SigV4 within the
 * signer's bound (the upstream client sends and signs the canonical query).
 */
#include <stdbool.h>

#include "../../common/uri.h"
#include "../../proto/s3_target.h"
#include "../../sigv4/sigv4.h"
#include "fuzz.h"

static bool all_zero(const struct s3_target *t)
{
    static const struct s3_target zero;
    return memcmp(t, &zero, sizeof(zero)) == 0;
}

static bool only_x_id(const struct s3_target *t)
{
    for (size_t i = 0; i < t->nparams; i++) {
        if (strcmp(t->params[i].name, "x-id") != 0)
            return false;
    }
    return true;
}

static void check_kind(const struct s3_target *t, const char *method)
{
    bool get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
    bool cacheable = (get || head) && t->bucket[0] != '\0' && t->key_len > 0 && only_x_id(t);
    if (t->kind == S3_REQ_ADMIN) {
        FZ_CHECK(!t->virtual_host && t->bucket[0] == '\0');
        FZ_CHECK(strncmp(t->raw_path, "/_s3cached", 10) == 0);
        FZ_CHECK(s3_target_invalidation(t) == S3_INVALIDATE_NONE);
        return;
    }
    FZ_CHECK(t->kind == (cacheable ? (get ? S3_REQ_GET_OBJECT : S3_REQ_HEAD_OBJECT) : S3_REQ_PASS));
    if (get || head)
        FZ_CHECK(s3_target_invalidation(t) == S3_INVALIDATE_NONE);
    if (t->bucket[0] == '\0') {
        FZ_CHECK(t->key_len == 0 && strcmp(t->raw_path, "/") == 0);
        FZ_CHECK(s3_target_invalidation(t) == S3_INVALIDATE_NONE);
    }
}

/* The raw target is exactly raw_path, then "?" and raw_query when there was one. */
static void check_raw(const struct s3_target *t, const char *target)
{
    size_t plen = strlen(t->raw_path);
    FZ_CHECK(strncmp(target, t->raw_path, plen) == 0);
    if (t->raw_query == NULL) {
        FZ_CHECK(target[plen] == '\0');
    } else {
        FZ_CHECK(target[plen] == '?' && strcmp(target + plen + 1, t->raw_query) == 0);
    }
    FZ_CHECK(strchr(t->raw_path, '?') == NULL);
    FZ_CHECK(t->nparams <= S3_TARGET_PARAMS_MAX);
}

/* Builds the target again from the decoded parts and parses it: same bytes must come back. */
static void check_round_trip(const struct s3_target *t, const char *method, const char *host,
                             const char *domain)
{
    char *key = NULL;
    FZ_CHECK(uri_encode(t->key, t->key_len, true, &key) == SC_OK);
    const char *prefix = t->kind == S3_REQ_ADMIN ? "/_s3cached/" : t->virtual_host ? "/" : NULL;
    size_t need = strlen(key) + strlen(t->bucket) + 16 +
                  (t->raw_query != NULL ? strlen(t->raw_query) + 1 : 0);
    char *again = fz_dup("", need);
    if (prefix != NULL)
        snprintf(again, need + 1, "%s%s", prefix, key);
    else if (t->bucket[0] == '\0')
        snprintf(again, need + 1, "/");
    else
        snprintf(again, need + 1, "/%s/%s", t->bucket, key);
    if (t->raw_query != NULL) {
        strcat(again, "?");
        strcat(again, t->raw_query);
    }
    struct s3_target u;
    enum s3_target_fault fault;
    sc_code rc = s3_target_parse(method, again, host, domain, &u, &fault);
    if (strlen(again) > S3_TARGET_MAX) {
        FZ_CHECK(rc == SC_EINVAL && fault == S3_TARGET_FAULT_TOO_LONG);
    } else {
        FZ_CHECK(rc == SC_OK);
        FZ_CHECK(u.kind == t->kind && u.virtual_host == t->virtual_host);
        FZ_CHECK(strcmp(u.bucket, t->bucket) == 0);
        FZ_CHECK(u.key_len == t->key_len && memcmp(u.key, t->key, t->key_len) == 0);
        FZ_CHECK(u.nparams == t->nparams);
        for (size_t i = 0; i < u.nparams; i++) {
            FZ_CHECK(strcmp(u.params[i].name, t->params[i].name) == 0);
            FZ_CHECK((u.params[i].value == NULL) == (t->params[i].value == NULL));
        }
    }
    s3_target_free(&u);
    free(again);
    free(key);
}

/* The query as upstream.c forwards it: canonicalized, then signed with the canonical form. */
static void check_signable(const struct s3_target *t)
{
    char *q = NULL, *again = NULL;
    FZ_CHECK(sigv4_canonical_query(t->raw_query, &q) == SC_OK);
    FZ_CHECK(strlen(q) <= SIGV4_MAX_FIELD);
    FZ_CHECK(sigv4_canonical_query(q, &again) == SC_OK && strcmp(q, again) == 0);
    free(again);
    free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f;
    size_t len;
    fz_init(&f, data, size);
    char *method = fz_line(&f, NULL);
    char *host = fz_line(&f, NULL);
    char *domain = fz_line(&f, NULL);
    char *target = fz_rest(&f, &len);
    const char *h = host[0] != '\0' ? host : NULL;
    const char *d = domain[0] != '\0' ? domain : NULL;

    struct s3_target t;
    enum s3_target_fault fault = S3_TARGET_FAULT_NONE;
    sc_code rc = s3_target_parse(method, target, h, d, &t, &fault);
    if (rc != SC_OK) {
        FZ_CHECK(rc == SC_EINVAL || rc == SC_ENOMEM);
        FZ_CHECK((rc == SC_EINVAL) == (fault != S3_TARGET_FAULT_NONE));
        FZ_CHECK(all_zero(&t));
    } else {
        FZ_CHECK(fault == S3_TARGET_FAULT_NONE);
        FZ_CHECK(t.bucket != NULL && t.key != NULL && t.raw_path != NULL);
        FZ_CHECK(t.key_len == strlen(t.key) && t.key_len <= S3_KEY_MAX);
        check_raw(&t, target);
        check_kind(&t, method);
        check_round_trip(&t, method, h, d);
        check_signable(&t);
    }
    s3_target_free(&t);
    FZ_CHECK(all_zero(&t));
    free(method);
    free(host);
    free(domain);
    free(target);
    return 0;
}
