/* test_s3_target.c - request target parsing and classification (proto/s3_target.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/s3_target.h"

#define VHOST "s3.local"

/* Parses a request that must succeed; the caller frees t. */
static void parse_ok(const char *method, const char *target, const char *host, struct s3_target *t)
{
    enum s3_target_fault fault = S3_TARGET_FAULT_URI;
    assert_int_equal(s3_target_parse(method, target, host, VHOST, t, &fault), SC_OK);
    assert_int_equal(fault, S3_TARGET_FAULT_NONE);
}

static void assert_fault(const char *method, const char *target, const char *host,
                         enum s3_target_fault expected)
{
    struct s3_target t;
    enum s3_target_fault fault = S3_TARGET_FAULT_NONE;
    assert_int_equal(s3_target_parse(method, target, host, VHOST, &t, &fault), SC_EINVAL);
    assert_int_equal(fault, expected);
    assert_null(t.bucket);
    assert_null(t.key);
    assert_null(t.params);
    s3_target_free(&t); /* safe after failure */
}

/* Parses a path-style GET and checks the decoded key. */
static void assert_key(const char *target, const char *key)
{
    struct s3_target t;
    parse_ok("GET", target, NULL, &t);
    assert_string_equal(t.bucket, "bucket");
    assert_string_equal(t.key, key);
    assert_int_equal(t.key_len, strlen(key));
    s3_target_free(&t);
}

static enum s3_req_kind kind_of(const char *method, const char *target)
{
    struct s3_target t;
    parse_ok(method, target, "localhost:8080", &t);
    enum s3_req_kind k = t.kind;
    s3_target_free(&t);
    return k;
}

static enum s3_invalidate invalidation_of(const char *method, const char *target)
{
    struct s3_target t;
    parse_ok(method, target, NULL, &t);
    enum s3_invalidate inv = s3_target_invalidation(&t);
    s3_target_free(&t);
    return inv;
}

static void path_style_get_is_cacheable(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/bucket/dir/file.bin", "localhost:8080", &t);
    assert_int_equal(t.kind, S3_REQ_GET_OBJECT);
    assert_int_equal(t.method, S3_METHOD_GET);
    assert_false(t.virtual_host);
    assert_string_equal(t.bucket, "bucket");
    assert_string_equal(t.key, "dir/file.bin");
    assert_string_equal(t.raw_path, "/bucket/dir/file.bin");
    assert_null(t.raw_query);
    assert_int_equal(t.nparams, 0);
    s3_target_free(&t);
    assert_null(t.bucket); /* free zeroes */
}

static void head_is_cacheable(void **state)
{
    (void)state;
    assert_int_equal(kind_of("HEAD", "/bucket/k"), S3_REQ_HEAD_OBJECT);
}

static void sdk_v3_x_id_keeps_request_cacheable(void **state)
{
    (void)state;
    assert_int_equal(kind_of("GET", "/bucket/k?x-id=GetObject"), S3_REQ_GET_OBJECT);
    assert_int_equal(kind_of("HEAD", "/bucket/k?x-id=HeadObject"), S3_REQ_HEAD_OBJECT);
    assert_int_equal(kind_of("GET", "/bucket/k?"), S3_REQ_GET_OBJECT);
    assert_int_equal(kind_of("GET", "/bucket/k?&&"), S3_REQ_GET_OBJECT);
}

static void subresources_and_unknown_params_pass(void **state)
{
    (void)state;
    static const char *const pass[] = {
        "/bucket/k?versionId=3HL4kqtJlcpXroDTDmJ",
        "/bucket/k?partNumber=1",
        "/bucket/k?response-content-type=text/plain",
        "/bucket/k?response-cache-control=no-cache",
        "/bucket/k?uploadId=abc",
        "/bucket/k?acl",
        "/bucket/k?tagging",
        "/bucket/k?torrent",
        "/bucket/k?attributes",
        "/bucket/k?whatever=1",
        "/bucket/k?x-id=GetObject&versionId=1",
        "/bucket/k?X-ID=GetObject",
        "/bucket/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00",
        "/bucket/k?=",
    };
    for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
        assert_int_equal(kind_of("GET", pass[i]), S3_REQ_PASS);
}

static void non_object_requests_pass(void **state)
{
    (void)state;
    assert_int_equal(kind_of("GET", "/"), S3_REQ_PASS);        /* ListBuckets */
    assert_int_equal(kind_of("GET", "/bucket"), S3_REQ_PASS);  /* ListObjects */
    assert_int_equal(kind_of("GET", "/bucket/"), S3_REQ_PASS); /* ListObjects */
    assert_int_equal(kind_of("GET", "/bucket?list-type=2&prefix=a"), S3_REQ_PASS);
    assert_int_equal(kind_of("PUT", "/bucket/k"), S3_REQ_PASS);
    assert_int_equal(kind_of("POST", "/bucket/k?uploads"), S3_REQ_PASS);
    assert_int_equal(kind_of("DELETE", "/bucket/k"), S3_REQ_PASS);
    assert_int_equal(kind_of("OPTIONS", "/bucket/k"), S3_REQ_PASS);
    assert_int_equal(kind_of("get", "/bucket/k"), S3_REQ_PASS); /* methods are case-sensitive */
}

static void service_root_has_empty_bucket(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/", NULL, &t);
    assert_string_equal(t.bucket, "");
    assert_string_equal(t.key, "");
    s3_target_free(&t);
}

static void bucket_without_key_has_empty_key(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/bucket?prefix=a%2Bb", NULL, &t);
    assert_string_equal(t.bucket, "bucket");
    assert_string_equal(t.key, "");
    assert_string_equal(t.raw_path, "/bucket");
    assert_string_equal(t.raw_query, "prefix=a%2Bb");
    s3_target_free(&t);
}

static void keys_decode_to_exact_bytes(void **state)
{
    (void)state;
    assert_key("/bucket/a%20b", "a b");
    assert_key("/bucket/a+b", "a+b");
    assert_key("/bucket/a%2Bb", "a+b");
    assert_key("/bucket/100%25", "100%");
    assert_key("/bucket/caf%C3%A9/%E2%82%AC", "caf\xC3\xA9/\xE2\x82\xAC");
    assert_key("/bucket/caf\xC3\xA9", "caf\xC3\xA9"); /* raw UTF-8 is passed through */
    assert_key("/bucket/a%2fb", "a/b");
    assert_key("/bucket/~user/%7Euser", "~user/~user");
}

static void slashes_and_dots_in_keys_are_kept(void **state)
{
    (void)state;
    assert_key("/bucket/dir/", "dir/");
    assert_key("/bucket//", "/");
    assert_key("/bucket//a//b///", "/a//b///");
    assert_key("/bucket/./a/../b", "./a/../b");
    assert_key("/bucket/..", "..");
}

static void query_params_are_decoded(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("POST", "/bucket/k?uploads&uploadId=a%2Bb+c&empty=&x=1&x=2", NULL, &t);
    assert_int_equal(t.nparams, 5);
    assert_string_equal(t.params[0].name, "uploads");
    assert_null(t.params[0].value);
    assert_string_equal(t.params[1].name, "uploadId");
    assert_string_equal(t.params[1].value, "a+b+c");
    assert_string_equal(t.params[2].value, "");
    const struct s3_param *x = s3_target_param(&t, "x");
    assert_non_null(x);
    assert_string_equal(x->value, "1");
    assert_null(s3_target_param(&t, "missing"));
    assert_null(s3_target_param(&t, "UPLOADS"));
    assert_string_equal(t.raw_query, "uploads&uploadId=a%2Bb+c&empty=&x=1&x=2");
    s3_target_free(&t);
}

static void virtual_host_puts_bucket_in_host(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/dir/file.bin", "my-bucket.s3.local:9000", &t);
    assert_true(t.virtual_host);
    assert_string_equal(t.bucket, "my-bucket");
    assert_string_equal(t.key, "dir/file.bin");
    assert_int_equal(t.kind, S3_REQ_GET_OBJECT);
    s3_target_free(&t);
}

static void virtual_host_matching_is_case_insensitive(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/k", "My.Bucket.S3.LOCAL.", &t);
    assert_string_equal(t.bucket, "my.bucket");
    assert_string_equal(t.key, "k");
    s3_target_free(&t);
}

static void virtual_host_whole_path_is_key(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/bucket/k", "bk1.s3.local", &t);
    assert_string_equal(t.bucket, "bk1");
    assert_string_equal(t.key, "bucket/k");
    s3_target_free(&t);
    parse_ok("GET", "//x/", "bk1.s3.local", &t);
    assert_string_equal(t.key, "/x/");
    s3_target_free(&t);
    parse_ok("GET", "/_s3cached/stats", "bk1.s3.local", &t);
    assert_int_equal(t.kind, S3_REQ_GET_OBJECT); /* admin is path style only */
    assert_string_equal(t.key, "_s3cached/stats");
    s3_target_free(&t);
}

static void virtual_host_root_lists_bucket(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/?list-type=2", "bk1.s3.local", &t);
    assert_string_equal(t.bucket, "bk1");
    assert_string_equal(t.key, "");
    assert_int_equal(t.kind, S3_REQ_PASS);
    s3_target_free(&t);
}

static void other_hosts_use_path_style(void **state)
{
    (void)state;
    static const char *const hosts[] = {
        "s3.local",  "s3.local:9000", "bk1.s3.localx", "bk1.xs3.local", "bk1s3.local",
        ".s3.local", "[::1]:9000",    "localhost",     "10.0.0.1:80",   "",
    };
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        struct s3_target t;
        parse_ok("GET", "/bucket/k", hosts[i], &t);
        assert_false(t.virtual_host);
        assert_string_equal(t.bucket, "bucket");
        assert_string_equal(t.key, "k");
        s3_target_free(&t);
    }
}

static void no_vhost_domain_means_path_style_only(void **state)
{
    (void)state;
    struct s3_target t;
    assert_int_equal(s3_target_parse("GET", "/bucket/k", "bk1.s3.local", NULL, &t, NULL), SC_OK);
    assert_string_equal(t.bucket, "bucket");
    s3_target_free(&t);
    assert_int_equal(s3_target_parse("GET", "/bucket/k", "bk1.s3.local", "", &t, NULL), SC_OK);
    assert_string_equal(t.bucket, "bucket");
    s3_target_free(&t);
    assert_int_equal(s3_target_parse("GET", "/k", "bk1.s3.local", ".s3.local", &t, NULL), SC_OK);
    assert_string_equal(t.bucket, "bk1");
    s3_target_free(&t);
}

static void admin_paths_are_recognised(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/_s3cached", NULL, &t);
    assert_int_equal(t.kind, S3_REQ_ADMIN);
    assert_string_equal(t.bucket, "");
    assert_string_equal(t.key, "");
    s3_target_free(&t);
    parse_ok("POST", "/_s3cached/invalidate?bucket=b&key=a%20b", NULL, &t);
    assert_int_equal(t.kind, S3_REQ_ADMIN);
    assert_string_equal(t.key, "invalidate");
    assert_string_equal(s3_target_param(&t, "key")->value, "a b");
    s3_target_free(&t);
    parse_ok("GET", "/_s3cached/", NULL, &t);
    assert_int_equal(t.kind, S3_REQ_ADMIN);
    assert_string_equal(t.key, "");
    s3_target_free(&t);
}

static void admin_lookalikes_are_not_admin(void **state)
{
    (void)state;
    assert_fault("GET", "/_s3cachedx/y", NULL, S3_TARGET_FAULT_BUCKET);
    assert_fault("GET", "/%5Fs3cached/stats", NULL, S3_TARGET_FAULT_BUCKET);
    assert_int_equal(kind_of("GET", "/bucket/_s3cached/stats"), S3_REQ_GET_OBJECT);
}

static void malformed_targets_are_invalid_uri(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "bucket/key",
        "http://host/bucket/key",
        "*",
        "/bucket/a%",
        "/bucket/a%2",
        "/bucket/a%zz",
        "/bucket/a%00b",
        "/bucket/a%%41",
        "/bucket/k?x=%",
        "/bucket/k?x=%00",
        "/bucket/k?%zz",
        "/bucket/a b",
        "/bucket/a\tb",
        "/bucket/a\x01",
        "/bucket/a\x7f",
        "/bucket/k?a=b c",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_fault("GET", bad[i], NULL, S3_TARGET_FAULT_URI);
}

static void null_arguments_are_invalid(void **state)
{
    (void)state;
    struct s3_target t;
    enum s3_target_fault f;
    assert_int_equal(s3_target_parse(NULL, "/b/k", NULL, NULL, &t, &f), SC_EINVAL);
    assert_int_equal(f, S3_TARGET_FAULT_URI);
    assert_int_equal(s3_target_parse("GET", NULL, NULL, NULL, &t, &f), SC_EINVAL);
    assert_int_equal(s3_target_parse("GET", NULL, NULL, NULL, &t, NULL), SC_EINVAL);
}

static void invalid_bucket_names_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "/ab/k",      "/-bucket/k",     "/bucket-/k",   "/.bucket/k",
        "/bucket./k", "/my..bucket/k",  "/my bucket/k", "/my%20bucket/k",
        "/bu$ket/k",  "/bucket%2F/k",   "/_bucket/k",   "/bucket_/k",
        "//k",        "/b%C3%A9cket/k",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *want_uri = strchr(bad[i], ' ');
        assert_fault("GET", bad[i], NULL,
                     want_uri != NULL ? S3_TARGET_FAULT_URI : S3_TARGET_FAULT_BUCKET);
    }
}

static void bucket_name_length_limits(void **state)
{
    (void)state;
    char target[400];
    struct s3_target t;
    /* 3 characters: the minimum */
    parse_ok("GET", "/abc/k", NULL, &t);
    s3_target_free(&t);
    /* 63 lowercase: fine everywhere */
    memset(target, 'a', sizeof(target));
    target[0] = '/';
    strcpy(target + 64, "/k");
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(strlen(t.bucket), 63);
    s3_target_free(&t);
    /* 255: legacy path-style maximum; 256 refused */
    memset(target, 'a', sizeof(target));
    target[0] = '/';
    strcpy(target + 256, "/k");
    parse_ok("GET", target, NULL, &t);
    s3_target_free(&t);
    memset(target, 'a', sizeof(target));
    target[0] = '/';
    strcpy(target + 257, "/k");
    assert_fault("GET", target, NULL, S3_TARGET_FAULT_BUCKET);
}

static void legacy_bucket_names_work_in_path_style(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("GET", "/My_Legacy_Bucket/k", NULL, &t);
    assert_string_equal(t.bucket, "My_Legacy_Bucket");
    assert_int_equal(t.kind, S3_REQ_GET_OBJECT);
    s3_target_free(&t);
    parse_ok("GET", "/192.168.5.4/k", NULL, &t);
    s3_target_free(&t);
}

static void virtual_host_bucket_must_follow_current_rules(void **state)
{
    (void)state;
    assert_fault("GET", "/k", "my_bucket.s3.local", S3_TARGET_FAULT_BUCKET);
    assert_fault("GET", "/k", "ab.s3.local", S3_TARGET_FAULT_BUCKET);
    assert_fault("GET", "/k", "a..b.s3.local", S3_TARGET_FAULT_BUCKET);
    assert_fault("GET", "/k", "-ab.s3.local", S3_TARGET_FAULT_BUCKET);
    char host[128];
    memset(host, 'a', 64);
    strcpy(host + 64, ".s3.local");
    assert_fault("GET", "/k", host, S3_TARGET_FAULT_BUCKET);
}

static void key_length_limit_is_1024_decoded_bytes(void **state)
{
    (void)state;
    char target[8192];
    struct s3_target t;
    strcpy(target, "/bucket/");
    memset(target + 8, 'k', 1024);
    target[8 + 1024] = '\0';
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(t.key_len, 1024);
    s3_target_free(&t);
    target[8 + 1024] = 'k';
    target[8 + 1025] = '\0';
    assert_fault("GET", target, NULL, S3_TARGET_FAULT_KEY_TOO_LONG);
    /* 1024 bytes written as %XX escapes (3072 characters) are still 1024 bytes */
    for (int i = 0; i < 1024; i++)
        memcpy(target + 8 + 3 * i, "%41", 3);
    target[8 + 3072] = '\0';
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(t.key_len, 1024);
    s3_target_free(&t);
}

static void target_length_limit_is_8_kib(void **state)
{
    (void)state;
    char *target = malloc(S3_TARGET_MAX + 2);
    struct s3_target t;
    assert_non_null(target);
    strcpy(target, "/bucket/k?p=");
    size_t used = strlen(target);
    memset(target + used, 'v', S3_TARGET_MAX - used);
    target[S3_TARGET_MAX] = '\0';
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(strlen(t.raw_query) + strlen(t.raw_path) + 1, S3_TARGET_MAX);
    s3_target_free(&t);
    target[S3_TARGET_MAX] = 'v';
    target[S3_TARGET_MAX + 1] = '\0';
    assert_fault("GET", target, NULL, S3_TARGET_FAULT_TOO_LONG);
    free(target);
}

static void too_many_query_params_are_refused(void **state)
{
    (void)state;
    char target[1024];
    struct s3_target t;
    size_t n = (size_t)snprintf(target, sizeof(target), "/bucket/k?");
    for (int i = 0; i < S3_TARGET_PARAMS_MAX; i++)
        n += (size_t)snprintf(target + n, sizeof(target) - n, "p%d&", i);
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(t.nparams, S3_TARGET_PARAMS_MAX);
    s3_target_free(&t);
    snprintf(target + n, sizeof(target) - n, "one-more");
    assert_fault("GET", target, NULL, S3_TARGET_FAULT_URI);
}

static void many_empty_query_segments_are_cheap(void **state)
{
    (void)state;
    char target[S3_TARGET_MAX + 1];
    struct s3_target t;
    strcpy(target, "/bucket/k?");
    memset(target + 10, '&', S3_TARGET_MAX - 10);
    target[S3_TARGET_MAX] = '\0';
    parse_ok("GET", target, NULL, &t);
    assert_int_equal(t.nparams, 0);
    assert_int_equal(t.kind, S3_REQ_GET_OBJECT);
    s3_target_free(&t);
}

static void methods_are_classified(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        enum s3_method m;
    } want[] = {
        {"GET", S3_METHOD_GET},         {"HEAD", S3_METHOD_HEAD},     {"PUT", S3_METHOD_PUT},
        {"POST", S3_METHOD_POST},       {"DELETE", S3_METHOD_DELETE}, {"PATCH", S3_METHOD_OTHER},
        {"Get", S3_METHOD_OTHER},       {"", S3_METHOD_OTHER},        {"GETX", S3_METHOD_OTHER},
        {"OPTIONS", S3_METHOD_OPTIONS}, {"TRACE", S3_METHOD_OTHER},   {"1GET", S3_METHOD_OTHER},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct s3_target t;
        parse_ok(want[i].name, "/bucket/k", NULL, &t);
        assert_int_equal(t.method, want[i].m);
        s3_target_free(&t);
    }
}

static void headers_that_change_s3s_answer_need_the_upstream(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *value;
        bool needs_upstream;
    } cases[] = {
        {"x-amz-server-side-encryption-customer-algorithm", "AES256", true},
        {"X-Amz-Server-Side-Encryption-Customer-Key", "a2V5", true},
        {"x-amz-server-side-encryption-customer-key-MD5", "bWQ1", true},
        {"x-amz-request-payer", "requester", true},
        {"x-amz-expected-bucket-owner", "111122223333", true},
        {"x-amz-some-future-header", "1", true},
        {"x-amz-checksum-mode", "enabled", true}, /* not S3's value: the upstream judges */
        {"x-amz-checksum-mode", NULL, true},
        {"x-amz-checksum-mode", "ENABLED", false}, /* honoured by the gateway */
        {"X-Amz-Date", "20260101T000000Z", false},
        {"x-amz-content-sha256", "UNSIGNED-PAYLOAD", false},
        {"x-amz-security-token", "t", false},
        {"x-amz-user-agent", "aws-sdk-js", false},
        {"x-amzn-trace-id", "Root=1", false},
        {"Range", "bytes=0-1", false},
        {"If-None-Match", "\"e\"", false},
        {"Authorization", "AWS4-HMAC-SHA256 ...", false},
        {"amz-sdk-invocation-id", "x", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (s3_target_header_needs_upstream(cases[i].name, cases[i].value) !=
            cases[i].needs_upstream)
            fail_msg("%s: %s", cases[i].name, cases[i].value ? cases[i].value : "(null)");
    }
}

static void put_and_copy_invalidate_the_key(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("PUT", "/bucket/k"), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?x-id=PutObject"), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?tagging"), S3_INVALIDATE_KEY);
}

static void delete_invalidates_the_key(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("DELETE", "/bucket/k"), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("DELETE", "/bucket/k?versionId=1"), S3_INVALIDATE_KEY);
}

static void complete_multipart_invalidates_the_key(void **state)
{
    (void)state;
    struct s3_target t;
    parse_ok("POST", "/bucket/big%20file?uploadId=xyz", NULL, &t);
    assert_int_equal(s3_target_invalidation(&t), S3_INVALIDATE_KEY);
    assert_string_equal(t.bucket, "bucket");
    assert_string_equal(t.key, "big file");
    s3_target_free(&t);
    assert_int_equal(invalidation_of("POST", "/bucket/k?restore"), S3_INVALIDATE_KEY);
}

static void multipart_steps_before_complete_invalidate_nothing(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("POST", "/bucket/k?uploads"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?partNumber=1&uploadId=x"),
                     S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("DELETE", "/bucket/k?uploadId=x"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("POST", "/bucket/k?select&select-type=2"), S3_INVALIDATE_NONE);
}

/* radosgw runs a PUT or DELETE whose uploadId has no value as PutObject or DeleteObject,
 * so such an uploadId is no multipart step: the key's cached copy must go. */
static void write_with_empty_upload_id_invalidates_the_key(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("PUT", "/bucket/k?uploadId="), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?uploadId"), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("DELETE", "/bucket/k?uploadId="), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?partNumber=1&uploadId="), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("PUT", "/bucket/k?uploadId=x&uploadId="), S3_INVALIDATE_KEY);
    assert_int_equal(invalidation_of("DELETE", "/bucket/k?uploadId=&uploadId=x"),
                     S3_INVALIDATE_KEY);
}

static void delete_objects_invalidates_the_bucket(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("POST", "/bucket?delete"), S3_INVALIDATE_BUCKET);
    assert_int_equal(invalidation_of("POST", "/bucket/?delete"), S3_INVALIDATE_BUCKET);
    assert_int_equal(invalidation_of("POST", "/bucket"), S3_INVALIDATE_BUCKET); /* form upload */
    assert_int_equal(invalidation_of("DELETE", "/bucket"), S3_INVALIDATE_BUCKET);
    struct s3_target t;
    parse_ok("POST", "/?delete", "bk1.s3.local", &t);
    assert_int_equal(s3_target_invalidation(&t), S3_INVALIDATE_BUCKET);
    assert_string_equal(t.bucket, "bk1");
    s3_target_free(&t);
}

static void reads_and_bucket_setup_invalidate_nothing(void **state)
{
    (void)state;
    assert_int_equal(invalidation_of("GET", "/bucket/k"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("HEAD", "/bucket/k"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("PUT", "/bucket"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("GET", "/bucket?list-type=2"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("POST", "/"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("DELETE", "/_s3cached/entries"), S3_INVALIDATE_NONE);
    assert_int_equal(invalidation_of("OPTIONS", "/bucket/k"), S3_INVALIDATE_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(path_style_get_is_cacheable),
        cmocka_unit_test(head_is_cacheable),
        cmocka_unit_test(sdk_v3_x_id_keeps_request_cacheable),
        cmocka_unit_test(subresources_and_unknown_params_pass),
        cmocka_unit_test(non_object_requests_pass),
        cmocka_unit_test(service_root_has_empty_bucket),
        cmocka_unit_test(bucket_without_key_has_empty_key),
        cmocka_unit_test(keys_decode_to_exact_bytes),
        cmocka_unit_test(slashes_and_dots_in_keys_are_kept),
        cmocka_unit_test(query_params_are_decoded),
        cmocka_unit_test(virtual_host_puts_bucket_in_host),
        cmocka_unit_test(virtual_host_matching_is_case_insensitive),
        cmocka_unit_test(virtual_host_whole_path_is_key),
        cmocka_unit_test(virtual_host_root_lists_bucket),
        cmocka_unit_test(other_hosts_use_path_style),
        cmocka_unit_test(no_vhost_domain_means_path_style_only),
        cmocka_unit_test(admin_paths_are_recognised),
        cmocka_unit_test(admin_lookalikes_are_not_admin),
        cmocka_unit_test(malformed_targets_are_invalid_uri),
        cmocka_unit_test(null_arguments_are_invalid),
        cmocka_unit_test(invalid_bucket_names_are_refused),
        cmocka_unit_test(bucket_name_length_limits),
        cmocka_unit_test(legacy_bucket_names_work_in_path_style),
        cmocka_unit_test(virtual_host_bucket_must_follow_current_rules),
        cmocka_unit_test(key_length_limit_is_1024_decoded_bytes),
        cmocka_unit_test(target_length_limit_is_8_kib),
        cmocka_unit_test(too_many_query_params_are_refused),
        cmocka_unit_test(many_empty_query_segments_are_cheap),
        cmocka_unit_test(methods_are_classified),
        cmocka_unit_test(headers_that_change_s3s_answer_need_the_upstream),
        cmocka_unit_test(put_and_copy_invalidate_the_key),
        cmocka_unit_test(delete_invalidates_the_key),
        cmocka_unit_test(complete_multipart_invalidates_the_key),
        cmocka_unit_test(multipart_steps_before_complete_invalidate_nothing),
        cmocka_unit_test(write_with_empty_upload_id_invalidates_the_key),
        cmocka_unit_test(delete_objects_invalidates_the_bucket),
        cmocka_unit_test(reads_and_bucket_setup_invalidate_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
