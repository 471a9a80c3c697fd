/*
 * test_trainsim_dataset.c - the emulator's synthetic dataset (tools/trainsim/dataset.c):
 * keys, sizes and bytes are pure functions of the options and the index, any
 * range of an object can be produced alone, and a wrong byte is found at its offset.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/trainsim/trainsim.h"

static struct ts_dataset fixed(uint32_t objects, uint64_t size)
{
    return (struct ts_dataset){.prefix = "p/",
                               .objects = objects,
                               .size = size,
                               .dist = TS_SIZE_FIXED,
                               .sigma = 0.5,
                               .data_seed = 1};
}

static struct ts_dataset lognormal(uint32_t objects, uint64_t mean, double sigma, uint64_t seed)
{
    return (struct ts_dataset){.prefix = "p/",
                               .objects = objects,
                               .size = mean,
                               .dist = TS_SIZE_LOGNORMAL,
                               .sigma = sigma,
                               .data_seed = seed};
}

static void fixed_sizes_are_the_option_and_sum_to_the_dataset(void **state)
{
    (void)state;
    struct ts_dataset d = fixed(1000, 110 * 1024);
    for (uint32_t i = 0; i < 1000; i += 37)
        assert_int_equal(ts_object_size(&d, i), 110 * 1024);
    assert_int_equal(ts_dataset_bytes(&d), 1000ull * 110 * 1024);
}

static void lognormal_sizes_average_the_mean_with_the_given_log_spread(void **state)
{
    (void)state;
    const uint32_t n = 50000;
    const uint64_t mean = 110 * 1024;
    struct ts_dataset d = lognormal(n, mean, 0.5, 7);
    double sum = 0, sum_log = 0, sum_log2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = ts_object_size(&d, i);
        assert_true(s >= 1 && s <= 32 * mean);
        assert_int_equal(ts_object_size(&d, i), s); /* a pure function */
        sum += (double)s;
        sum_log += log((double)s);
        sum_log2 += log((double)s) * log((double)s);
    }
    double avg = sum / n;
    double sd_log = sqrt(sum_log2 / n - (sum_log / n) * (sum_log / n));
    assert_true(fabs(avg / (double)mean - 1.0) < 0.02);
    assert_true(fabs(sd_log - 0.5) < 0.02);
    assert_int_equal(ts_dataset_bytes(&d), (uint64_t)sum);
}

static void lognormal_sizes_repeat_for_a_seed_and_differ_across_seeds(void **state)
{
    (void)state;
    struct ts_dataset a = lognormal(100, 4096, 0.8, 1);
    struct ts_dataset b = lognormal(100, 4096, 0.8, 1);
    struct ts_dataset c = lognormal(100, 4096, 0.8, 2);
    int same = 0;
    for (uint32_t i = 0; i < 100; i++) {
        assert_int_equal(ts_object_size(&a, i), ts_object_size(&b, i));
        same += ts_object_size(&a, i) == ts_object_size(&c, i);
    }
    assert_true(same < 10);
}

static void lognormal_with_sigma_zero_is_the_mean_and_draws_are_clamped(void **state)
{
    (void)state;
    struct ts_dataset d = lognormal(50, 5000, 0, 3);
    for (uint32_t i = 0; i < 50; i++)
        assert_int_equal(ts_object_size(&d, i), 5000);
    struct ts_dataset wide = lognormal(20000, 2, 4, 3);
    for (uint32_t i = 0; i < 20000; i++) {
        uint64_t s = ts_object_size(&wide, i);
        assert_true(s >= 1 && s <= 64);
    }
}

static void keys_are_the_prefix_and_eight_digits_and_parse_back(void **state)
{
    (void)state;
    char key[TS_MAX_KEY];
    uint32_t i = 0;
    struct ts_dataset d = fixed(200, 10);
    d.prefix = "trainsim/";
    assert_int_equal(ts_object_key(&d, 42, key, sizeof(key)), SC_OK);
    assert_string_equal(key, "trainsim/00000042.bin");
    assert_int_equal(ts_key_index(&d, key, &i), SC_OK);
    assert_int_equal(i, 42);
    assert_int_equal(ts_key_index(&d, "trainsim/00000199.bin", &i), SC_OK);
    assert_int_equal(i, 199);
    const char *foreign[] = {"trainsim/00000200.bin",
                             "other/00000001.bin",
                             "trainsim/0000001.bin",
                             "trainsim/00000001.bin.x",
                             "trainsim/0000000a.bin",
                             "trainsim/00000001",
                             ""};
    for (size_t k = 0; k < sizeof(foreign) / sizeof(*foreign); k++)
        assert_int_equal(ts_key_index(&d, foreign[k], &i), SC_EINVAL);
    char small[12];
    assert_int_equal(ts_object_key(&d, 1, small, sizeof(small)), SC_ETOOBIG);
    assert_string_equal(small, "");
}

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | b[k];
    return v;
}

static void the_header_holds_the_index_and_the_size(void **state)
{
    (void)state;
    struct ts_dataset d = lognormal(1000, 3000, 0.5, 9);
    uint8_t head[TS_HEADER_LEN];
    uint64_t size = ts_object_size(&d, 777);
    ts_object_fill(&d, 777, size, 0, head, sizeof(head));
    assert_int_equal(le64(head), 777);
    assert_int_equal(le64(head + 8), size);
}

static void any_range_is_the_same_bytes_as_the_whole_object(void **state)
{
    (void)state;
    struct ts_dataset d = fixed(10, 1003);
    uint8_t whole[1003], part[300];
    ts_object_fill(&d, 3, 1003, 0, whole, sizeof(whole));
    uint64_t st = 5;
    for (int t = 0; t < 500; t++) {
        uint64_t off = ts_splitmix64(&st) % 1003;
        size_t len = (size_t)(ts_splitmix64(&st) % 300);
        if (off + len > 1003)
            len = (size_t)(1003 - off);
        ts_object_fill(&d, 3, 1003, off, part, len);
        assert_memory_equal(part, whole + off, len);
        uint64_t bad = 0;
        assert_true(ts_object_check(&d, 3, 1003, off, part, len, &bad));
    }
}

/* FNV-1a, 64 bits: a fingerprint of a byte string. */
static uint64_t fnv1a(const uint8_t *b, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < n; k++)
        h = (h ^ b[k]) * 0x100000001b3ull;
    return h;
}

/*
 * The bytes of an object never change between versions: datasets seeded into a cloud (and kept
 * in build/bench-data/) were written with them, and a trainer checks what it reads against
 * them. The fingerprints were taken with the byte-at-a-time fill this replaced, over every
 * start and length a word can be cut at.
 */
static void the_bytes_are_those_every_seeded_dataset_holds(void **state)
{
    (void)state;
    struct ts_dataset d = fixed(10, 1003);
    uint8_t whole[1003], part[40];
    ts_object_fill(&d, 3, 1003, 0, whole, sizeof(whole));
    assert_true(fnv1a(whole, sizeof(whole)) == 0x6ecd41b15be22943ull);
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t off = 990; off < 1003; off++)
        for (size_t len = 0; len <= 1003 - off && len <= sizeof(part); len++) {
            ts_object_fill(&d, 3, 1003, off, part, len);
            h = (h ^ fnv1a(part, len)) * 0x100000001b3ull;
        }
    for (uint64_t off = 0; off < 17; off++)
        for (size_t len = 0; len <= sizeof(part); len++) {
            ts_object_fill(&d, 3, 1003, off, part, len);
            h = (h ^ fnv1a(part, len)) * 0x100000001b3ull;
        }
    assert_true(h == 0xb6fe68d5a7feb84dull);
}

static void objects_and_seeds_give_different_bytes(void **state)
{
    (void)state;
    struct ts_dataset d = fixed(10, 4096);
    struct ts_dataset other_seed = d;
    other_seed.data_seed = 2;
    uint8_t a[4096], b[4096], c[4096];
    ts_object_fill(&d, 1, 4096, 0, a, sizeof(a));
    ts_object_fill(&d, 2, 4096, 0, b, sizeof(b));
    ts_object_fill(&other_seed, 1, 4096, 0, c, sizeof(c));
    assert_memory_not_equal(a + 16, b + 16, 4096 - 16);
    assert_memory_not_equal(a + 16, c + 16, 4096 - 16);
    assert_memory_equal(a, c, 16); /* same index and size */
}

static void check_names_the_first_wrong_byte(void **state)
{
    (void)state;
    struct ts_dataset d = fixed(10, 20000);
    uint8_t *body = malloc(20000);
    assert_non_null(body);
    ts_object_fill(&d, 4, 20000, 0, body, 20000);
    uint64_t bad = 0;
    assert_true(ts_object_check(&d, 4, 20000, 0, body, 20000, &bad));
    body[12345] ^= 0x01;
    body[15000] ^= 0x80;
    assert_false(ts_object_check(&d, 4, 20000, 0, body, 20000, &bad));
    assert_int_equal(bad, 12345);
    /* a chunk that starts mid-object reports the absolute offset */
    assert_false(ts_object_check(&d, 4, 20000, 12000, body + 12000, 8000, &bad));
    assert_int_equal(bad, 12345);
    assert_true(ts_object_check(&d, 4, 20000, 0, body, 12345, &bad));
    /* another object's bytes differ from the first byte (the index) */
    assert_false(ts_object_check(&d, 5, 20000, 0, body, 100, &bad));
    assert_int_equal(bad, 0);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_sizes_are_the_option_and_sum_to_the_dataset),
        cmocka_unit_test(lognormal_sizes_average_the_mean_with_the_given_log_spread),
        cmocka_unit_test(lognormal_sizes_repeat_for_a_seed_and_differ_across_seeds),
        cmocka_unit_test(lognormal_with_sigma_zero_is_the_mean_and_draws_are_clamped),
        cmocka_unit_test(keys_are_the_prefix_and_eight_digits_and_parse_back),
        cmocka_unit_test(the_header_holds_the_index_and_the_size),
        cmocka_unit_test(any_range_is_the_same_bytes_as_the_whole_object),
        cmocka_unit_test(the_bytes_are_those_every_seeded_dataset_holds),
        cmocka_unit_test(objects_and_seeds_give_different_bytes),
        cmocka_unit_test(check_names_the_first_wrong_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
