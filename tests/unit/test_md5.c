/* test_md5.c - MD5 against RFC 1321's test suite and OpenSSL, one lane and eight lanes, over
 * every length around the block and padding edges and batches of mixed lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "../../common/md5.h"
#include "pattern.h"

static void openssl_md5(const void *p, size_t n, uint8_t out[SC_MD5_LEN])
{
    unsigned int len = 0;
    assert_int_equal(EVP_Digest(p, n, out, &len, EVP_md5(), NULL), 1);
    assert_int_equal(len, SC_MD5_LEN);
}

static void hex(const uint8_t d[SC_MD5_LEN], char out[33])
{
    for (int i = 0; i < SC_MD5_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* A buffer of n bytes of the tests' pattern (pattern.h), so a block read from the wrong place
 * shows. */
static uint8_t *pattern(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    fill_bytes(p, n, seed);
    return p;
}

static void rfc1321_suite_one_lane_and_in_lanes(void **state)
{
    (void)state;
    static const char *const in[] = {
        "",
        "a",
        "abc",
        "message digest",
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890"};
    static const char *const want[] = {
        "d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
        "900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
        "c3fcd3d76192e4007dfb496cca67e13b", "d174ab98d277d9f5a5611c2c9f419d9f",
        "57edf4a22be3c955ac49da2e2107b67a"};
    struct sc_md5_msg m[7];
    char got[33];
    for (int i = 0; i < 7; i++) {
        uint8_t d[SC_MD5_LEN];
        sc_md5(in[i], strlen(in[i]), d);
        hex(d, got);
        assert_string_equal(got, want[i]);
        m[i] = (struct sc_md5_msg){.p = in[i], .len = strlen(in[i])};
    }
    sc_md5_many(m, 7);
    for (int i = 0; i < 7; i++) {
        hex(m[i].digest, got);
        assert_string_equal(got, want[i]);
    }
}

/* Every length from 0 to 300 bytes (each padding case, one to five blocks), one lane. */
static void one_lane_matches_openssl_at_every_short_length(void **state)
{
    (void)state;
    uint8_t *p = pattern(300, 1);
    for (size_t n = 0; n <= 300; n++) {
        uint8_t want[SC_MD5_LEN], got[SC_MD5_LEN];
        openssl_md5(p, n, want);
        sc_md5(p, n, got);
        assert_memory_equal(got, want, SC_MD5_LEN);
    }
    free(p);
}

/* Batches of mixed lengths (lanes finishing at different blocks and taking the next message),
 * through sc_md5_many and, where the CPU has AVX2, through the lanes forced. */
static void check_batch(size_t count, size_t max_len, uint32_t seed, int forced)
{
    struct sc_md5_msg *m = calloc(count, sizeof(*m));
    uint8_t **bufs = calloc(count, sizeof(*bufs));
    assert_true(m && bufs);
    uint32_t r = seed;
    for (size_t i = 0; i < count; i++) {
        r = r * 1103515245u + 12345u;
        size_t n = (size_t)(r >> 8) % (max_len + 1);
        bufs[i] = pattern(n, seed + (uint32_t)i);
        m[i] = (struct sc_md5_msg){.p = bufs[i], .len = n};
    }
    if (forced) {
        if (!sc_md5_many_lanes(m, count))
            skip(); /* no AVX2 here: sc_md5_many fell back to one lane, checked below */
    } else {
        sc_md5_many(m, count);
    }
    for (size_t i = 0; i < count; i++) {
        uint8_t want[SC_MD5_LEN];
        openssl_md5(bufs[i], (size_t)m[i].len, want);
        assert_memory_equal(m[i].digest, want, SC_MD5_LEN);
        free(bufs[i]);
    }
    free(bufs);
    free(m);
}

static void batches_of_short_messages_match_openssl(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 40; seed++)
        check_batch(1 + seed % 23, 200, seed, 0);
}

static void batches_of_long_messages_match_openssl(void **state)
{
    (void)state;
    check_batch(37, 300 * 1024, 7, 0);
    check_batch(9, 2 * 1024 * 1024, 8, 0);
}

/* Every length 0..300 hashed side by side, as 301 messages sharing the 8 lanes. */
static void lanes_match_openssl_at_every_short_length(void **state)
{
    (void)state;
    struct sc_md5_msg m[301];
    uint8_t *p = pattern(300, 3);
    for (size_t n = 0; n <= 300; n++)
        m[n] = (struct sc_md5_msg){.p = p, .len = n};
    if (!sc_md5_many_lanes(m, 301)) {
        free(p);
        skip();
    }
    for (size_t n = 0; n <= 300; n++) {
        uint8_t want[SC_MD5_LEN];
        openssl_md5(p, n, want);
        assert_memory_equal(m[n].digest, want, SC_MD5_LEN);
    }
    free(p);
}

static void lanes_forced_on_mixed_batches_match_openssl(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 20; seed++)
        check_batch(2 + seed % 17, 70 * 1024, seed, 1);
}

/* A message given alone, or a batch of one, is hashed by the one-lane code: same digest. */
static void a_batch_of_one_matches(void **state)
{
    (void)state;
    check_batch(1, 100 * 1024, 5, 0);
    check_batch(0, 10, 5, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc1321_suite_one_lane_and_in_lanes),
        cmocka_unit_test(one_lane_matches_openssl_at_every_short_length),
        cmocka_unit_test(batches_of_short_messages_match_openssl),
        cmocka_unit_test(batches_of_long_messages_match_openssl),
        cmocka_unit_test(lanes_match_openssl_at_every_short_length),
        cmocka_unit_test(lanes_forced_on_mixed_batches_match_openssl),
        cmocka_unit_test(a_batch_of_one_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
