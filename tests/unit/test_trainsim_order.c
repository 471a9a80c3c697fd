/*
 * test_trainsim_order.c - the emulator's epoch orders (tools/trainsim/order.c): its
 * own shuffle is the manifest API's documented one, a rank's share of it is
 * DistributedSampler's, a gateway order is read back into dataset indices, the
 * manifest of a run lists every key with the plan (and the rank, in a job of
 * several), and the order fingerprint is the SHA-256 of the keys.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sigv4/sigv4.h"
#include "../../tools/trainsim/trainsim.h"

static struct ts_dataset dataset(uint32_t objects)
{
    return (struct ts_dataset){.prefix = "d/",
                               .objects = objects,
                               .size = 100,
                               .dist = TS_SIZE_FIXED,
                               .sigma = 0.5,
                               .data_seed = 0};
}

static void shuffle_matches_the_documented_example(void **state)
{
    (void)state;
    /* docs/manifests.md: n = 10, seed = 42, epochs 0 and 1 */
    const uint32_t e0[10] = {0, 9, 5, 8, 6, 4, 7, 2, 1, 3};
    const uint32_t e1[10] = {4, 2, 5, 6, 1, 3, 9, 8, 7, 0};
    uint32_t perm[10];
    ts_order_shuffle(10, 42, 0, perm);
    assert_memory_equal(perm, e0, sizeof(e0));
    ts_order_shuffle(10, 42, 1, perm);
    assert_memory_equal(perm, e1, sizeof(e1));
}

static void shuffle_is_a_permutation_that_changes_with_the_epoch(void **state)
{
    (void)state;
    enum { N = 5000 };
    uint32_t *a = malloc(N * sizeof(*a)), *b = malloc(N * sizeof(*b));
    uint8_t *seen = calloc(N, 1);
    assert_true(a && b && seen);
    ts_order_shuffle(N, 3, 0, a);
    ts_order_shuffle(N, 3, 1, b);
    uint32_t fixed_points = 0;
    for (uint32_t i = 0; i < N; i++) {
        assert_true(a[i] < N && !seen[a[i]]);
        seen[a[i]] = 1;
        fixed_points += a[i] == b[i];
    }
    assert_true(fixed_points < 20);
    ts_order_shuffle(1, 3, 0, a);
    assert_int_equal(a[0], 0);
    free(a);
    free(b);
    free(seen);
}

static void gateway_order_keys_become_dataset_indices(void **state)
{
    (void)state;
    struct ts_dataset d = dataset(10);
    char why[256];
    uint32_t *order = NULL, len = 0;
    const char *reply = "{\"id\": \"m1\", \"epoch\": 0, \"indices\": [3, 1, 1],"
                        " \"keys\": [\"d/00000003.bin\", \"d/00000001.bin\", \"d/00000001.bin\"]}";
    assert_int_equal(ts_order_parse(&d, reply, &order, &len, why, sizeof(why)), SC_OK);
    assert_int_equal(len, 3);
    assert_int_equal(order[0], 3);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 1); /* padding of a distributed split repeats keys */
    free(order);
}

static void gateway_order_with_foreign_keys_or_no_keys_is_refused(void **state)
{
    (void)state;
    struct ts_dataset d = dataset(10);
    char why[256];
    uint32_t *order = NULL, len = 0;
    const char *bad[] = {"not json",
                         "{\"indices\": [1]}",
                         "{\"keys\": []}",
                         "{\"keys\": [\"d/00000001.bin\", \"d/00000010.bin\"]}",
                         "{\"keys\": [\"x/00000001.bin\"]}",
                         "{\"keys\": [7]}"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++) {
        assert_int_equal(ts_order_parse(&d, bad[k], &order, &len, why, sizeof(why)), SC_EINVAL);
        assert_null(order);
        assert_true(why[0] != '\0');
    }
    assert_int_equal(ts_order_parse(&d, bad[3], &order, &len, why, sizeof(why)), SC_EINVAL);
    assert_non_null(strstr(why, "keys[1] (d/00000010.bin)"));
}

static void manifest_body_lists_every_key_with_the_plan(void **state)
{
    (void)state;
    struct ts_dataset d = dataset(3);
    char *body = NULL;
    const struct ts_split one = {.world_size = 1, .rank = 0};
    assert_int_equal(ts_manifest_body(&d, "bkt", 4, 99, &one, &body), SC_OK);
    json_error_t jerr;
    json_t *m = json_loads(body, 0, &jerr);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "bucket")), "bkt");
    assert_int_equal(json_integer_value(json_object_get(m, "num_epochs")), 4);
    assert_int_equal(json_integer_value(json_object_get(m, "seed")), 99);
    assert_true(json_is_true(json_object_get(m, "shuffle")));
    json_t *keys = json_object_get(m, "keys");
    assert_int_equal(json_array_size(keys), 3);
    assert_string_equal(json_string_value(json_array_get(keys, 2)), "d/00000002.bin");
    assert_int_equal(json_object_size(m), 5);
    json_decref(m);
    free(body);
    assert_int_equal(ts_manifest_body(&d, "bkt", 1, (uint64_t)INT64_MAX + 1, &one, &body),
                     SC_EINVAL);
    assert_null(body);
}

static void manifest_body_of_a_rank_names_its_split(void **state)
{
    (void)state;
    struct ts_dataset d = dataset(3);
    char *body = NULL;
    const struct ts_split r3 = {.world_size = 8, .rank = 3};
    assert_int_equal(ts_manifest_body(&d, "bkt", 2, 5, &r3, &body), SC_OK);
    json_error_t jerr;
    json_t *m = json_loads(body, 0, &jerr);
    assert_non_null(m);
    assert_int_equal(json_integer_value(json_object_get(m, "world_size")), 8);
    assert_int_equal(json_integer_value(json_object_get(m, "rank")), 3);
    assert_null(json_object_get(m, "cache_aware"));
    assert_int_equal(json_array_size(json_object_get(m, "keys")), 3); /* the whole dataset */
    assert_int_equal(json_object_size(m), 7);
    json_decref(m);
    free(body);
    const struct ts_split aware = {.world_size = 1, .rank = 0, .cache_aware = true};
    assert_int_equal(ts_manifest_body(&d, "bkt", 2, 5, &aware, &body), SC_OK);
    m = json_loads(body, 0, &jerr);
    assert_true(json_is_true(json_object_get(m, "cache_aware")));
    assert_int_equal(json_object_size(m), 6);
    json_decref(m);
    free(body);
}

static void split_matches_the_documented_example(void **state)
{
    (void)state;
    /* docs/manifests.md: n = 10, seed = 42, world_size = 3, epoch 0; padding repeats 0, 9 */
    const uint32_t want[3][4] = {{0, 8, 7, 3}, {9, 6, 2, 0}, {5, 4, 1, 9}};
    uint32_t perm[10], share[4];
    ts_order_shuffle(10, 42, 0, perm);
    for (uint32_t r = 0; r < 3; r++) {
        const struct ts_split s = {.world_size = 3, .rank = r};
        assert_int_equal(ts_split_len(10, &s), 4);
        ts_split_take(perm, 10, &s, share);
        assert_memory_equal(share, want[r], sizeof(want[r]));
    }
    const struct ts_split one = {.world_size = 1, .rank = 0};
    uint32_t all[10];
    assert_int_equal(ts_split_len(10, &one), 10);
    ts_split_take(perm, 10, &one, all); /* one rank reads the whole permutation */
    assert_memory_equal(all, perm, sizeof(all));
}

static void split_of_eight_ranks_reads_every_sample_once(void **state)
{
    (void)state;
    enum { N = 1000, W = 8 };
    uint32_t perm[N], share[N / W];
    uint8_t seen[N] = {0};
    ts_order_shuffle(N, 7, 2, perm);
    for (uint32_t r = 0; r < W; r++) {
        const struct ts_split s = {.world_size = W, .rank = r};
        assert_int_equal(ts_split_len(N, &s), N / W);
        ts_split_take(perm, N, &s, share);
        for (uint32_t i = 0; i < N / W; i++) {
            assert_int_equal(share[i], perm[i * W + r]); /* rank r's i-th beside the others' */
            assert_false(seen[share[i]]);
            seen[share[i]] = 1;
        }
    }
    /* more ranks than samples: each reads one, the padding wraps around */
    const struct ts_split last = {.world_size = 5, .rank = 4};
    uint32_t one;
    assert_int_equal(ts_split_len(2, &last), 1);
    ts_split_take(perm, 2, &last, &one);
    assert_int_equal(one, perm[0]);
}

static void order_digest_is_the_sha256_of_the_keys_with_newlines(void **state)
{
    (void)state;
    struct ts_dataset d = dataset(10);
    const uint32_t order[3] = {7, 0, 7};
    const char text[] = "d/00000007.bin\nd/00000000.bin\nd/00000007.bin\n";
    char want[65], got[65];
    sigv4_sha256_hex(text, strlen(text), want);
    ts_order_digest(&d, order, 3, got);
    assert_string_equal(got, want);
    const uint32_t swapped[3] = {0, 7, 7};
    ts_order_digest(&d, swapped, 3, got);
    assert_string_not_equal(got, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shuffle_matches_the_documented_example),
        cmocka_unit_test(shuffle_is_a_permutation_that_changes_with_the_epoch),
        cmocka_unit_test(gateway_order_keys_become_dataset_indices),
        cmocka_unit_test(gateway_order_with_foreign_keys_or_no_keys_is_refused),
        cmocka_unit_test(manifest_body_lists_every_key_with_the_plan),
        cmocka_unit_test(manifest_body_of_a_rank_names_its_split),
        cmocka_unit_test(split_matches_the_documented_example),
        cmocka_unit_test(split_of_eight_ranks_reads_every_sample_once),
        cmocka_unit_test(order_digest_is_the_sha256_of_the_keys_with_newlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
