/*
 * test_s3_auth.c - verifying client signatures (sigv4/s3_auth.h) against AWS's
 * published S3 examples, and every way a request is refused.
 *
 * Vectors (key AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,
 * us-east-1, 20130524T000000Z):
 *  - "Examples: Signature Calculations in AWS Signature Version 4" (S3 API reference,
 *    sig-v4-header-based-auth and sigv4-query-string-auth): GET Object with a range,
 *    PUT Object "test$file.text", GET ?lifecycle, GET ?max-keys=2&prefix=J, and the
 *    presigned GET of test.txt (X-Amz-Expires=86400, signature aeeed9bb...).
 *  - "Signature Calculations for the Authorization Header: Transferring Payload in
 *    Multiple Chunks": the seed signature of the aws-chunked PUT of chunkObject.txt.
 *  - one request signed by botocore 1.43 (S3SigV4Auth with UNSIGNED-PAYLOAD): an
 *    encoded key with a space and a '+', and a query with an encoded '/'.
 * The unit test binary wraps CRYPTO_memcmp (see the Makefile) to prove that the
 * signature comparison goes through it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sigv4/client_keys.h"
#include "../../sigv4/s3_auth.h"
#include "../../sigv4/sigv4_int.h"

/* ---- CRYPTO_memcmp, wrapped --------------------------------------------------- */

static int memcmp_calls;
int __real_CRYPTO_memcmp(const void *a, const void *b, size_t len);
int __wrap_CRYPTO_memcmp(const void *a, const void *b, size_t len);

int __wrap_CRYPTO_memcmp(const void *a, const void *b, size_t len)
{
    memcmp_calls++;
    return __real_CRYPTO_memcmp(a, b, len);
}

/* ---- fixtures ---------------------------------------------------------------- */

#define AK      "AKIAIOSFODNN7EXAMPLE"
#define SK      "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE    "20130524T000000Z"
#define T0      1369353600 /* 2013-05-24T00:00:00Z */
#define HOST    "examplebucket.s3.amazonaws.com"
#define EMPTY   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SCOPE   "Credential=" AK "/20130524/us-east-1/s3/aws4_request"
#define SIG_GET "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
#define AUTH_GET                                                                                   \
    "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"         \
    "Signature=" SIG_GET

static ckeys *keys_of(const char *json)
{
    ckeys *t = NULL;
    char err[256] = "";
    assert_int_equal(ckeys_parse(json, strlen(json), &t, err, sizeof(err)), SC_OK);
    return t;
}

static ckeys *example_keys(void)
{
    return keys_of("{\"keys\":[{\"access_key\":\"" AK "\",\"secret_key\":\"" SK "\"},"
                   "{\"access_key\":\"OTHER\",\"secret_key\":\"other-secret\"}]}");
}

/* One request to verify: up to 16 headers. */
struct req {
    struct sigv4_header h[16];
    size_t n;
    struct s3_auth_input in;
    struct s3_auth_result out;
};

static void req_init(struct req *r, const char *method, const char *path, const char *query,
                     const ckeys *keys, time_t now)
{
    memset(r, 0, sizeof(*r));
    r->in = (struct s3_auth_input){method, path, query, r->h, 0, keys, "us-east-1", now};
}

static void add(struct req *r, const char *name, const char *value)
{
    r->h[r->n++] = (struct sigv4_header){name, value};
    r->in.n_headers = r->n;
}

static sc_code verify(struct req *r)
{
    return s3_auth_verify(&r->in, &r->out);
}

static void assert_refused(struct req *r, enum s3_auth_fault f)
{
    assert_int_equal(verify(r), SC_EINVAL);
    assert_int_equal(r->out.fault, f);
    assert_null(r->out.key);
    assert_true(r->out.message[0] != '\0');
}

static void assert_verified(struct req *r, enum s3_auth_kind kind)
{
    sc_code rc = verify(r);
    if (rc != SC_OK)
        fail_msg("refused (%d): %s", r->out.fault, r->out.message);
    assert_int_equal(r->out.kind, kind);
    assert_non_null(r->out.key);
    assert_string_equal(r->out.key->creds.access_key, AK);
}

/* The published GET Object example, with its Authorization header as given. */
static void get_example(struct req *r, const ckeys *keys, time_t now, const char *auth)
{
    req_init(r, "GET", "/test.txt", NULL, keys, now);
    add(r, "Host", HOST);
    add(r, "Range", "bytes=0-9");
    add(r, "x-amz-content-sha256", EMPTY);
    add(r, "x-amz-date", DATE);
    add(r, "Authorization", auth);
}

/* ---- published examples verify ------------------------------------------------ */

static void published_get_object_with_range_verifies(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0 + 60, AUTH_GET);
    assert_verified(&r, S3_AUTH_HEADER);
    /* ", " between the parts, as the SDKs write it, is the same signature. */
    get_example(&r, k, T0 + 60,
                "AWS4-HMAC-SHA256 " SCOPE ", SignedHeaders=host;range;x-amz-content-sha256;"
                "x-amz-date, Signature=" SIG_GET);
    assert_verified(&r, S3_AUTH_HEADER);
    ckeys_free(k);
}

#define PUT_SHA "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"

static void published_put_object_verifies_with_encoded_or_raw_dollar(void **state)
{
    ckeys *k = example_keys();
    const char *paths[] = {"/test%24file.text", "/test$file.text"};
    for (size_t i = 0; i < 2; i++) {
        struct req r;
        req_init(&r, "PUT", paths[i], NULL, k, T0);
        add(&r, "Host", HOST);
        add(&r, "Date", "Fri, 24 May 2013 00:00:00 GMT");
        add(&r, "x-amz-date", DATE);
        add(&r, "x-amz-storage-class", "REDUCED_REDUNDANCY");
        add(&r, "x-amz-content-sha256", PUT_SHA);
        add(&r, "Authorization",
            "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
            "x-amz-storage-class,Signature="
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
        assert_verified(&r, S3_AUTH_HEADER);
    }
    ckeys_free(k);
}

static void bucket_example(struct req *r, const ckeys *keys, const char *query, const char *sig)
{
    static char auth[512];
    snprintf(auth, sizeof(auth),
             "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
             "Signature=%s",
             sig);
    req_init(r, "GET", "/", query, keys, T0);
    add(r, "Host", HOST);
    add(r, "x-amz-date", DATE);
    add(r, "x-amz-content-sha256", EMPTY);
    add(r, "Authorization", auth);
}

static void published_bucket_requests_with_queries_verify(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    bucket_example(&r, k, "lifecycle",
                   "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    assert_verified(&r, S3_AUTH_HEADER);
    bucket_example(&r, k, "max-keys=2&prefix=J",
                   "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    assert_verified(&r, S3_AUTH_HEADER);
    /* The canonical query is sorted: the client's order does not matter. */
    bucket_example(&r, k, "prefix=J&max-keys=2",
                   "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    assert_verified(&r, S3_AUTH_HEADER);
    ckeys_free(k);
}

static void published_streaming_upload_seed_signature_verifies(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    req_init(&r, "PUT", "/examplebucket/chunkObject.txt", NULL, k, T0);
    add(&r, "Host", "s3.amazonaws.com");
    add(&r, "x-amz-date", DATE);
    add(&r, "x-amz-storage-class", "REDUCED_REDUNDANCY");
    add(&r, "Authorization",
        "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=content-encoding;content-length;host;"
        "x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"
        "Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    add(&r, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
    add(&r, "Content-Encoding", "aws-chunked");
    add(&r, "x-amz-decoded-content-length", "66560");
    add(&r, "Content-Length", "66824");
    assert_verified(&r, S3_AUTH_HEADER);
    ckeys_free(k);
}

static void botocore_unsigned_payload_with_encoded_key_and_query_verifies(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    req_init(&r, "GET", "/my%20dir/a%2Bb.txt", "versionId=3%2F2&x-id=GetObject", k, T0);
    add(&r, "host", HOST);
    add(&r, "X-Amz-Date", DATE);
    add(&r, "X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD");
    add(&r, "Authorization",
        "AWS4-HMAC-SHA256 " SCOPE ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=cf993f45d53a0dc9c4526d3213cc8d06061b7fb2a3fb230b7a27f1aaf7a62f1c");
    assert_verified(&r, S3_AUTH_HEADER);
    ckeys_free(k);
}

#define PRESIGNED_QUERY                                                                            \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"      \
    "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&"       \
    "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void presigned(struct req *r, const ckeys *keys, const char *query, time_t now)
{
    req_init(r, "GET", "/test.txt", query, keys, now);
    add(r, "Host", HOST);
}

static void published_presigned_get_verifies_until_it_expires(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    presigned(&r, k, PRESIGNED_QUERY, T0 + 3600);
    assert_verified(&r, S3_AUTH_PRESIGNED);
    presigned(&r, k, PRESIGNED_QUERY, T0 + 86400);
    assert_verified(&r, S3_AUTH_PRESIGNED);
    presigned(&r, k, PRESIGNED_QUERY, T0 + 86401);
    assert_refused(&r, S3_AUTH_FAULT_EXPIRED);
    presigned(&r, k, PRESIGNED_QUERY, T0 - 14 * 60);
    assert_verified(&r, S3_AUTH_PRESIGNED);
    presigned(&r, k, PRESIGNED_QUERY, T0 - 16 * 60);
    assert_refused(&r, S3_AUTH_FAULT_NOT_YET_VALID);
    ckeys_free(k);
}

static void presigned_parameter_order_and_extra_parameters_are_signed(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    /* The signature first: still the same canonical query. */
    presigned(&r, k,
              "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404&"
              "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
              "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&"
              "X-Amz-Expires=86400&X-Amz-SignedHeaders=host",
              T0);
    assert_verified(&r, S3_AUTH_PRESIGNED);
    /* A parameter added after signing changes the canonical query. */
    presigned(&r, k, PRESIGNED_QUERY "&response-content-type=text%2Fhtml", T0);
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    ckeys_free(k);
}

/* ---- time -------------------------------------------------------------------------- */

static void header_time_skew_of_15_minutes_is_accepted_and_more_refused(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    time_t ok[] = {T0 - 15 * 60, T0 + 15 * 60};
    time_t skewed[] = {T0 - 15 * 60 - 1, T0 + 15 * 60 + 1, T0 + 20 * 60, T0 - 20 * 60};
    for (size_t i = 0; i < 2; i++) {
        get_example(&r, k, ok[i], AUTH_GET);
        assert_verified(&r, S3_AUTH_HEADER);
    }
    for (size_t i = 0; i < 4; i++) {
        get_example(&r, k, skewed[i], AUTH_GET);
        assert_refused(&r, S3_AUTH_FAULT_SKEWED);
    }
    assert_int_equal(s3_auth_fault_info(S3_AUTH_FAULT_SKEWED)->status, 403);
    assert_string_equal(s3_auth_fault_info(S3_AUTH_FAULT_SKEWED)->code, "RequestTimeTooSkewed");
    ckeys_free(k);
}

/* Signs a request made of h with the example key (Date-header variant), for self-checks. */
static void sign_into(struct req *r, const char *amz_date, const char *signed_list,
                      struct sigv4_header *signed_h, size_t n_signed, char *auth, size_t cap)
{
    struct sigv4_request sr = {r->in.method, r->in.raw_path, r->in.raw_query,
                               signed_h,     n_signed,       EMPTY};
    struct sigv4_key key = {AK, SK, "us-east-1", "s3"};
    char sig[65];
    assert_int_equal(sigv4_signature(&sr, &key, amz_date, sig), SC_OK);
    snprintf(auth, cap, "AWS4-HMAC-SHA256 " SCOPE ", SignedHeaders=%s, Signature=%s", signed_list,
             sig);
}

static void date_header_is_the_time_without_x_amz_date(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    char auth[512];
    struct sigv4_header sh[] = {
        {"date", "Fri, 24 May 2013 00:00:00 GMT"}, {"host", HOST}, {"x-amz-content-sha256", EMPTY}};
    req_init(&r, "GET", "/test.txt", NULL, k, T0 + 30);
    sign_into(&r, DATE, "date;host;x-amz-content-sha256", sh, 3, auth, sizeof(auth));
    add(&r, "Host", HOST);
    add(&r, "Date", "Fri, 24 May 2013 00:00:00 GMT");
    add(&r, "x-amz-content-sha256", EMPTY);
    add(&r, "Authorization", auth);
    assert_verified(&r, S3_AUTH_HEADER);
    r.in.now = T0 + 3600;
    assert_refused(&r, S3_AUTH_FAULT_SKEWED);
    /* No date at all, or a broken one. */
    r.h[1].value = "yesterday";
    r.in.now = T0;
    assert_refused(&r, S3_AUTH_FAULT_NO_DATE);
    ckeys_free(k);
}

/* ---- wrong keys and tampering ---------------------------------------------------- */

static void wrong_secret_is_signature_does_not_match(void **state)
{
    ckeys *k =
        keys_of("{\"keys\":[{\"access_key\":\"" AK "\",\"secret_key\":\"not-the-secret\"}]}");
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    assert_int_equal(s3_auth_fault_info(r.out.fault)->status, 403);
    assert_string_equal(s3_auth_fault_info(r.out.fault)->code, "SignatureDoesNotMatch");
    ckeys_free(k);
}

static void unknown_access_key_is_invalid_access_key_id(void **state)
{
    ckeys *k = keys_of("{\"keys\":[{\"access_key\":\"SOMEONE\",\"secret_key\":\"" SK "\"}]}");
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    assert_refused(&r, S3_AUTH_FAULT_UNKNOWN_KEY);
    assert_string_equal(s3_auth_fault_info(r.out.fault)->code, "InvalidAccessKeyId");
    presigned(&r, k, PRESIGNED_QUERY, T0);
    assert_refused(&r, S3_AUTH_FAULT_UNKNOWN_KEY);
    ckeys_free(k);
}

static void tampered_header_path_method_or_query_fails(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    r.h[1].value = "bytes=0-99";
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    get_example(&r, k, T0, AUTH_GET);
    r.in.raw_path = "/test.txt2";
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    get_example(&r, k, T0, AUTH_GET);
    r.in.method = "DELETE";
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    get_example(&r, k, T0, AUTH_GET);
    r.in.raw_query = "versionId=1";
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    get_example(&r, k, T0, AUTH_GET);
    r.n = 1; /* the signed Range header is gone: signed as empty, so it fails */
    add(&r, "x-amz-content-sha256", EMPTY);
    add(&r, "x-amz-date", DATE);
    add(&r, "Authorization", AUTH_GET);
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    bucket_example(&r, k, "max-keys=2&prefix=K",
                   "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    presigned(&r, k, PRESIGNED_QUERY, T0);
    r.in.raw_path = "/other.txt";
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    ckeys_free(k);
}

static void signature_is_compared_in_constant_time_and_every_digit_counts(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    char auth[sizeof(AUTH_GET)];
    size_t sig_at = strlen(AUTH_GET) - 64;
    size_t positions[] = {0, 31, 63};
    for (size_t i = 0; i < 3; i++) {
        memcpy(auth, AUTH_GET, sizeof(auth));
        auth[sig_at + positions[i]] = auth[sig_at + positions[i]] == '0' ? '1' : '0';
        get_example(&r, k, T0, auth);
        memcmp_calls = 0;
        assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
        assert_int_equal(memcmp_calls, 1);
    }
    /* Upper-case hex, or a short signature, is not the signature. */
    memcpy(auth, AUTH_GET, sizeof(auth));
    for (size_t i = sig_at; auth[i]; i++)
        auth[i] = auth[i] >= 'a' && auth[i] <= 'f' ? (char)(auth[i] - 32) : auth[i];
    get_example(&r, k, T0, auth);
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    memcpy(auth, AUTH_GET, sizeof(auth));
    auth[strlen(auth) - 1] = '\0';
    get_example(&r, k, T0, auth);
    assert_refused(&r, S3_AUTH_FAULT_SIGNATURE);
    memcmp_calls = 0;
    get_example(&r, k, T0, AUTH_GET);
    assert_verified(&r, S3_AUTH_HEADER);
    assert_int_equal(memcmp_calls, 1);
    ckeys_free(k);
}

static void unsigned_x_amz_header_is_refused_after_a_good_signature(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    add(&r, "X-Amz-Copy-Source", "/other/secret");
    assert_refused(&r, S3_AUTH_FAULT_UNSIGNED_HEADERS);
    assert_non_null(strstr(r.out.message, "X-Amz-Copy-Source"));
    /* Other unsigned headers are fine, as in S3. */
    get_example(&r, k, T0, AUTH_GET);
    add(&r, "User-Agent", "test");
    add(&r, "x-amzn-trace-id", "Root=1");
    assert_verified(&r, S3_AUTH_HEADER);
    ckeys_free(k);
}

/* ---- malformed and unsupported ---------------------------------------------------- */

static void wrong_region_service_or_date_in_scope_is_malformed(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    r.in.region = "eu-west-1";
    assert_refused(&r, S3_AUTH_FAULT_HEADER_MALFORMED);
    assert_non_null(
        strstr(r.out.message, "the region 'us-east-1' is wrong; expecting 'eu-west-1'"));
    assert_int_equal(s3_auth_fault_info(r.out.fault)->status, 400);
    assert_string_equal(s3_auth_fault_info(r.out.fault)->code, "AuthorizationHeaderMalformed");
    const char *bad[] = {
        "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/sqs/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 Credential=" AK "/20130525/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws5_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=range;x-amz-content-sha256;x-amz-date,"
        "Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=Host;range,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=host;host,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 " SCOPE ",Signature=" SIG_GET,
        "AWS4-HMAC-SHA256 " SCOPE ",SignedHeaders=host,Signature=" SIG_GET ",Extra=1",
        "AWS4-HMAC-SHA256 " SCOPE "," SCOPE ",SignedHeaders=host,Signature=" SIG_GET,
        "AWS4-HMAC-SHA256",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        get_example(&r, k, T0, bad[i]);
        assert_refused(&r, S3_AUTH_FAULT_HEADER_MALFORMED);
    }
    presigned(&r, k, PRESIGNED_QUERY, T0);
    r.in.region = "eu-west-1";
    assert_refused(&r, S3_AUTH_FAULT_QUERY_MALFORMED);
    assert_string_equal(s3_auth_fault_info(r.out.fault)->code, "AuthorizationQueryParametersError");
    ckeys_free(k);
}

static void payload_hash_header_is_required_and_checked(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0, AUTH_GET);
    r.h[2].name = "x-amz-meta-other";
    assert_refused(&r, S3_AUTH_FAULT_MISSING_SHA256);
    const char *bad[] = {"e3b0", "STREAMING-", "streaming-unsigned",
                         "E3B0C44298FC1C149AFBF4C8996F"
                         "B92427AE41E4649B934CA495991B7"
                         "852B855"};
    for (size_t i = 0; i < 4; i++) {
        get_example(&r, k, T0, AUTH_GET);
        r.h[2].value = bad[i];
        assert_refused(&r, S3_AUTH_FAULT_BAD_SHA256);
    }
    ckeys_free(k);
}

static void sigv2_sigv4a_and_two_mechanisms_are_refused(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    get_example(&r, k, T0, "AWS " AK ":frJIUN8DYpKDtOLCwo//yllqDzg=");
    assert_refused(&r, S3_AUTH_FAULT_UNSUPPORTED);
    assert_string_equal(s3_auth_fault_info(r.out.fault)->code, "InvalidRequest");
    get_example(&r, k, T0,
                "AWS4-ECDSA-P256-SHA256 Credential=" AK "/20130524/s3/aws4_request, "
                "SignedHeaders=host, Signature=3045");
    assert_refused(&r, S3_AUTH_FAULT_UNSUPPORTED);
    presigned(&r, k, "AWSAccessKeyId=" AK "&Expires=1141889120&Signature=vjbyPxybd", T0);
    assert_refused(&r, S3_AUTH_FAULT_UNSUPPORTED);
    get_example(&r, k, T0, AUTH_GET);
    r.in.raw_query = PRESIGNED_QUERY;
    assert_refused(&r, S3_AUTH_FAULT_TWO_MECHANISMS);
    get_example(&r, k, T0, AUTH_GET);
    add(&r, "Authorization", AUTH_GET);
    assert_refused(&r, S3_AUTH_FAULT_HEADER_MALFORMED);
    ckeys_free(k);
}

static void malformed_presigned_parameters_are_refused(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    const char *bad[] = {
        /* missing X-Amz-Expires */
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"
        "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=aa",
        /* over a week */
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"
        "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&"
        "X-Amz-Signature=aa",
        /* a bad date */
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"
        "aws4_request&X-Amz-Date=20130524&X-Amz-Expires=60&X-Amz-SignedHeaders=host&"
        "X-Amz-Signature=aa",
        /* another algorithm */
        "X-Amz-Algorithm=HMAC-MD5&X-Amz-Credential=" AK "%2F20130524%2Fus-east-1%2Fs3%2F"
        "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&"
        "X-Amz-Signature=aa",
        /* twice the signature */
        PRESIGNED_QUERY "&X-Amz-Signature=aa",
        /* a bad escape */
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%zz",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        presigned(&r, k, bad[i], T0);
        assert_refused(&r, S3_AUTH_FAULT_QUERY_MALFORMED);
    }
    ckeys_free(k);
}

static void unsigned_request_is_anonymous(void **state)
{
    ckeys *k = example_keys();
    struct req r;
    req_init(&r, "GET", "/test.txt", "x-id=GetObject", k, T0);
    add(&r, "Host", HOST);
    assert_int_equal(verify(&r), SC_OK);
    assert_int_equal(r.out.kind, S3_AUTH_ANONYMOUS);
    assert_null(r.out.key);
    ckeys_free(k);
}

static void presigned_parameters_are_stripped_for_the_upstream(void **state)
{
    char *out = NULL;
    assert_int_equal(s3_auth_strip_query(PRESIGNED_QUERY, &out), SC_OK);
    assert_null(out);
    assert_int_equal(s3_auth_strip_query("versionId=2&" PRESIGNED_QUERY
                                         "&x-amz-security-token=t&response-content-type=a%2Fb",
                                         &out),
                     SC_OK);
    assert_string_equal(out, "versionId=2&response-content-type=a%2Fb");
    free(out);
    assert_int_equal(s3_auth_strip_query(NULL, &out), SC_OK);
    assert_null(out);
    assert_true(s3_auth_is_query_param("x-amz-signature"));
    assert_false(s3_auth_is_query_param("x-id"));
}

static void sigv2_presigned_parameters_are_stripped_for_the_upstream(void **state)
{
    char *out = NULL;
    assert_int_equal(s3_auth_strip_query("AWSAccessKeyId=AKID&Expires=1790000000&"
                                         "Signature=rFFo%2FuV2Efd%2FLys%3D&versionId=2&"
                                         "x-amz-security-token=t",
                                         &out),
                     SC_OK);
    assert_string_equal(out, "versionId=2");
    free(out);
    assert_int_equal(s3_auth_strip_query("Signature=x&Expires=1", &out), SC_OK);
    assert_null(out);
    assert_true(s3_auth_is_query_param("AWSAccessKeyId"));
    assert_true(s3_auth_is_query_param("signature"));
    assert_false(s3_auth_is_query_param("SignatureVersion"));
}

/* ---- the key file ------------------------------------------------------------------ */

static void key_file_lists_keys_and_their_buckets(void **state)
{
    ckeys *k = keys_of("{\"keys\":[{\"access_key\":\"b\",\"secret_key\":\"s1\","
                       "\"buckets\":[\"zeta\",\"alpha\"],\"comment\":\"trainer\"},"
                       "{\"access_key\":\"a\",\"secret_key\":\"s2\",\"buckets\":[\"x\",\"*\"]},"
                       "{\"access_key\":\"c\",\"secret_key\":\"s3\"}]}");
    assert_int_equal(ckeys_count(k), 3);
    const struct ckey *b = ckeys_find(k, "b");
    assert_non_null(b);
    assert_string_equal(b->creds.secret_key, "s1");
    assert_true(ckey_allows_bucket(b, "alpha"));
    assert_true(ckey_allows_bucket(b, "zeta"));
    assert_false(ckey_allows_bucket(b, "beta"));
    assert_false(ckey_allows_bucket(b, ""));
    assert_true(ckey_allows_bucket(ckeys_find(k, "a"), "anything"));
    assert_true(ckey_allows_bucket(ckeys_find(k, "c"), ""));
    assert_null(ckeys_find(k, "d"));
    assert_null(ckeys_find(k, "B"));
    ckeys_free(k);
}

static void key_file_mistakes_are_refused_without_echoing_secrets(void **state)
{
    const char *bad[] = {
        "",
        "[]",
        "{\"keys\":[]}",
        "{\"keys\":[{\"access_key\":\"a\"}]}",
        "{\"keys\":[{\"access_key\":\"a b\",\"secret_key\":\"hunter2\"}]}",
        "{\"keys\":[{\"access_key\":\"a/b\",\"secret_key\":\"hunter2\"}]}",
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\",\"bucket\":[\"x\"]}]}",
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\",\"buckets\":[]}]}",
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\",\"buckets\":\"x\"}]}",
        ("{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\"},"
         "{\"access_key\":\"a\",\"secret_key\":\"hunter3\"}]}"),
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\"}],\"extra\":1}",
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\",\"secret_key\":\"x\"}]}",
        "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"hunter2\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ckeys *t = (ckeys *)1;
        char err[256] = "";
        assert_int_equal(ckeys_parse(bad[i], strlen(bad[i]), &t, err, sizeof(err)), SC_EINVAL);
        assert_null(t);
        assert_true(err[0] != '\0');
        assert_null(strstr(err, "hunter"));
    }
}

static void key_file_writable_by_others_is_refused(void **state)
{
    char path[] = "/tmp/s3cached-ckeys-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"keys\":[{\"access_key\":\"a\",\"secret_key\":\"s\"}]}";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ckeys *t = NULL;
    char err[256] = "";
    chmod(path, 0600);
    assert_int_equal(ckeys_load(path, &t, err, sizeof(err)), SC_OK);
    assert_int_equal(ckeys_count(t), 1);
    ckeys_free(t);
    chmod(path, 0644); /* loaded, with a warning */
    assert_int_equal(ckeys_load(path, &t, err, sizeof(err)), SC_OK);
    ckeys_free(t);
    chmod(path, 0622);
    assert_int_equal(ckeys_load(path, &t, err, sizeof(err)), SC_EIO);
    assert_non_null(strstr(err, "writable"));
    assert_null(t);
    unlink(path);
    assert_int_equal(ckeys_load(path, &t, err, sizeof(err)), SC_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(published_get_object_with_range_verifies),
        cmocka_unit_test(published_put_object_verifies_with_encoded_or_raw_dollar),
        cmocka_unit_test(published_bucket_requests_with_queries_verify),
        cmocka_unit_test(published_streaming_upload_seed_signature_verifies),
        cmocka_unit_test(botocore_unsigned_payload_with_encoded_key_and_query_verifies),
        cmocka_unit_test(published_presigned_get_verifies_until_it_expires),
        cmocka_unit_test(presigned_parameter_order_and_extra_parameters_are_signed),
        cmocka_unit_test(header_time_skew_of_15_minutes_is_accepted_and_more_refused),
        cmocka_unit_test(date_header_is_the_time_without_x_amz_date),
        cmocka_unit_test(wrong_secret_is_signature_does_not_match),
        cmocka_unit_test(unknown_access_key_is_invalid_access_key_id),
        cmocka_unit_test(tampered_header_path_method_or_query_fails),
        cmocka_unit_test(signature_is_compared_in_constant_time_and_every_digit_counts),
        cmocka_unit_test(unsigned_x_amz_header_is_refused_after_a_good_signature),
        cmocka_unit_test(wrong_region_service_or_date_in_scope_is_malformed),
        cmocka_unit_test(payload_hash_header_is_required_and_checked),
        cmocka_unit_test(sigv2_sigv4a_and_two_mechanisms_are_refused),
        cmocka_unit_test(malformed_presigned_parameters_are_refused),
        cmocka_unit_test(unsigned_request_is_anonymous),
        cmocka_unit_test(presigned_parameters_are_stripped_for_the_upstream),
        cmocka_unit_test(sigv2_presigned_parameters_are_stripped_for_the_upstream),
        cmocka_unit_test(key_file_lists_keys_and_their_buckets),
        cmocka_unit_test(key_file_mistakes_are_refused_without_echoing_secrets),
        cmocka_unit_test(key_file_writable_by_others_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
