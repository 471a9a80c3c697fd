/*
 * test_fleet_auth.c - fleet signatures of peer requests (fleet/peer_auth.c): a vector computed
 * with the openssl command line matches, every field counts, the date must be within
 * FLEET_MAX_SKEW, a malformed signature is refused, and the comparison is CRYPTO_memcmp
 * (wrapped here, as test_s3_auth does, to see it called).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../fleet/fleet.h"

#define SECRET "fleet-secret-0123456789"
#define NOW    1700000000

static int memcmp_calls;
int __real_CRYPTO_memcmp(const void *a, const void *b, size_t len);
int __wrap_CRYPTO_memcmp(const void *a, const void *b, size_t len);
int __wrap_CRYPTO_memcmp(const void *a, const void *b, size_t len)
{
    memcmp_calls++;
    return __real_CRYPTO_memcmp(a, b, len);
}

static fleet *start(const char *secret)
{
    struct fleet_config cfg = {
        .peers = "http://127.0.0.1:9001,http://127.0.0.2:9001",
        .self = "http://127.0.0.1:9001",
        .secret = (const unsigned char *)secret,
        .secret_len = strlen(secret),
    };
    fleet *f = NULL;
    assert_int_equal(fleet_start(&cfg, &f), SC_OK);
    return f;
}

static struct fleet_signed a_request(void)
{
    return (struct fleet_signed){
        .method = "GET",
        .path = "/bucket/some%20key",
        .query = "partNumber=1",
        .identity = "key:AKIDEXAMPLE",
        .range = "bytes=0-1023",
        .if_match = "\"9b2cf535f27731c974343645a3985328\"",
        .date = NOW,
    };
}

/*
 * printf 'GET\n/bucket/some%%20key\npartNumber=1\nkey:AKIDEXAMPLE\nbytes=0-1023\n'\
 * '"9b2cf535f27731c974343645a3985328"\n1700000000' | openssl dgst -sha256 -hmac
 * 'fleet-secret-0123456789' printf 'HEAD\n/b/k\n\ngateway\n\n\n1700000000' | openssl dgst -sha256
 * -hmac 'fleet-secret-0123456789'
 */
static void signatures_match_vectors_computed_with_openssl(void **state)
{
    (void)state;
    fleet *f = start(SECRET);
    struct fleet_signed w = a_request();
    char sig[65];
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_string_equal(sig, "153a56830fae6744ed60ccb82148c732de06f762ea132f488e2ae8c30d5d232b");
    struct fleet_signed head = {
        .method = "HEAD", .path = "/b/k", .identity = "gateway", .date = NOW};
    assert_int_equal(fleet_sign(f, &head, sig), SC_OK);
    assert_string_equal(sig, "79dc40cecc21be4a3f8d39bfc94a05fd6379b7072f5b47b1e4665f4674b3e88d");
    memcmp_calls = 0;
    assert_int_equal(fleet_verify(f, &head, sig, NOW), SC_OK);
    assert_int_equal(memcmp_calls, 1);
    fleet_free(f);
}

static void every_field_counts(void **state)
{
    (void)state;
    fleet *f = start(SECRET);
    struct fleet_signed w = a_request();
    char sig[65];
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW), SC_OK);
    for (int field = 0; field < 7; field++) {
        struct fleet_signed c = a_request();
        const char **s[] = {&c.method, &c.path, &c.query, &c.identity, &c.range, &c.if_match};
        if (field < 6)
            *s[field] = field == 3 ? "key:AKIDOTHER" : "changed";
        else
            c.date = NOW + 1;
        assert_int_equal(fleet_verify(f, &c, sig, NOW), SC_EACCES);
        /* NULL is "", not a wildcard */
        if (field < 6 && field != 0) {
            *s[field] = NULL;
            assert_int_equal(fleet_verify(f, &c, sig, NOW), SC_EACCES);
        }
    }
    /* a field moved across the '\n' that joins it to the next: refused, never signed */
    struct fleet_signed moved = a_request();
    moved.path = "/bucket/some%20key\npartNumber=1";
    moved.query = NULL;
    char other[65];
    assert_int_equal(fleet_sign(f, &moved, other), SC_EINVAL);
    assert_string_equal(other, "");
    assert_int_equal(fleet_verify(f, &moved, sig, NOW), SC_EACCES);
    fleet_free(f);
}

static void another_secret_fails(void **state)
{
    (void)state;
    fleet *f = start(SECRET);
    fleet *g = start("another-secret-0123456789");
    struct fleet_signed w = a_request();
    char sig[65];
    assert_int_equal(fleet_sign(g, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW), SC_EACCES);
    assert_int_equal(fleet_verify(g, &w, sig, NOW), SC_OK);
    fleet_free(f);
    fleet_free(g);
}

static void a_date_outside_the_skew_fails(void **state)
{
    (void)state;
    fleet *f = start(SECRET);
    struct fleet_signed w = a_request();
    char sig[65];
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW + FLEET_MAX_SKEW), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW - FLEET_MAX_SKEW), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW + FLEET_MAX_SKEW + 1), SC_EACCES);
    assert_int_equal(fleet_verify(f, &w, sig, NOW - FLEET_MAX_SKEW - 1), SC_EACCES);
    /* extreme dates neither overflow nor pass */
    w.date = INT64_MIN;
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW), SC_EACCES);
    w.date = INT64_MAX;
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, sig, NOW), SC_EACCES);
    fleet_free(f);
}

static void malformed_signatures_fail(void **state)
{
    (void)state;
    fleet *f = start(SECRET);
    struct fleet_signed w = a_request();
    char sig[65], bad[80];
    assert_int_equal(fleet_sign(f, &w, sig), SC_OK);
    assert_int_equal(fleet_verify(f, &w, NULL, NOW), SC_EACCES);
    assert_int_equal(fleet_verify(f, &w, "", NOW), SC_EACCES);
    snprintf(bad, sizeof(bad), "%.63s", sig); /* one digit short */
    assert_int_equal(fleet_verify(f, &w, bad, NOW), SC_EACCES);
    snprintf(bad, sizeof(bad), "%s0", sig); /* one too many */
    assert_int_equal(fleet_verify(f, &w, bad, NOW), SC_EACCES);
    snprintf(bad, sizeof(bad), "%s", sig); /* upper case is not the form signed */
    for (char *p = bad; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'f' ? *p - 'a' + 'A' : *p);
    if (strcmp(bad, sig) != 0)
        assert_int_equal(fleet_verify(f, &w, bad, NOW), SC_EACCES);
    snprintf(bad, sizeof(bad), "%s", sig);
    bad[10] = 'g';
    assert_int_equal(fleet_verify(f, &w, bad, NOW), SC_EACCES);
    snprintf(bad, sizeof(bad), "%s", sig);
    bad[63] = bad[63] == '0' ? '1' : '0'; /* well formed, wrong */
    assert_int_equal(fleet_verify(f, &w, bad, NOW), SC_EACCES);
    fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(signatures_match_vectors_computed_with_openssl),
        cmocka_unit_test(every_field_counts),
        cmocka_unit_test(another_secret_fails),
        cmocka_unit_test(a_date_outside_the_skew_fails),
        cmocka_unit_test(malformed_signatures_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
