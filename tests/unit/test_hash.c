/*
 * test_hash.c - the (bucket, key) hash and its pieces. sc_key_hash values cross components
 * (policy hints, manifests' futures, tools/sim), so they are pinned here: these are the values
 * policy_key_hash gave before it moved to common/hash.c, and must never change.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/hash.h"

static void fnv1a_matches_published_vectors(void **state)
{
    (void)state;
    assert_true(sc_fnv1a(SC_FNV1A_BASIS, "", 0) == 0xcbf29ce484222325ull);
    assert_true(sc_fnv1a(SC_FNV1A_BASIS, "a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(sc_fnv1a(SC_FNV1A_BASIS, "foobar", 6) == 0x85944171f73967e8ull);
    /* continuing is the same as hashing the whole */
    assert_true(sc_fnv1a(sc_fnv1a(SC_FNV1A_BASIS, "foo", 3), "bar", 3) ==
                sc_fnv1a(SC_FNV1A_BASIS, "foobar", 6));
}

static void mix_is_splitmix64s_finalizer(void **state)
{
    (void)state;
    assert_true(sc_hash_mix(0) == 0);
    /* splitmix64's first output from seed 0 is mix(0x9e3779b97f4a7c15) */
    assert_true(sc_hash_mix(0x9e3779b97f4a7c15ull) == 0xe220a8397b1dcdafull);
    assert_true(sc_hash_mix(1) != sc_hash_mix(2));
}

static void key_hash_gives_the_values_policies_and_manifests_share(void **state)
{
    (void)state;
    static const struct {
        const char *bucket, *key;
        uint64_t h;
    } pinned[] = {
        {"", "", 0x25fc6dd36ce04b20ull},
        {"b", "x", 0xed28acc354dc30f4ull},
        {"data", "a", 0xeee7462f8f4ed08full},
        {"ab", "c", 0x9291f5e7171dc35aull},
        {"a", "bc", 0x82a144826e72d59eull},
        {"b00", "x/1", 0x50b61117a5a4dcddull},
        {"bucket", "dir/\xc3\xa9t\xc3\xa9.bin", 0x969f054695463daaull},
    };
    for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
        assert_true(sc_key_hash(pinned[i].bucket, pinned[i].key) == pinned[i].h);
}

static void key_hash_is_fnv1a_of_bucket_nul_key_then_mixed(void **state)
{
    (void)state;
    uint64_t h = sc_fnv1a(SC_FNV1A_BASIS, "bkt\0k/1", 7);
    assert_true(sc_key_hash("bkt", "k/1") == sc_hash_mix(h));
    assert_true(sc_key_hash("ab", "c") != sc_key_hash("a", "bc")); /* the NUL separates */
    assert_true(sc_bytes_hash("k/1", 3) == sc_hash_mix(sc_fnv1a(SC_FNV1A_BASIS, "k/1", 3)));
}

static void block_key_hash_gives_the_pinned_values(void **state)
{
    (void)state;
    /* Computed from the formula in hash.h in Python: mix(khash ^ (0x9E37...15 * (idx + 1))). */
    assert_true(sc_block_key_hash(0x50b61117a5a4dcddull, 0) == 0x0b25314150b2b7bbull);
    assert_true(sc_block_key_hash(0x50b61117a5a4dcddull, 1) == 0x995778a8f8a49aa9ull);
    assert_true(sc_block_key_hash(0x50b61117a5a4dcddull, 7) == 0x89837bd47a879dbaull);
    assert_true(sc_block_key_hash(0xed28acc354dc30f4ull, 0) == 0x50ec6510884c4e0full);
    assert_true(sc_block_key_hash(0, UINT32_MAX) == 0xbeeb67eaf1fc5e61ull);
    assert_true(sc_block_key_hash(sc_key_hash("b00", "x/1"), 0) == 0x0b25314150b2b7bbull);
}

static void block_key_hashes_of_one_object_are_distinct_and_not_its_key_hash(void **state)
{
    (void)state;
    uint64_t k = sc_key_hash("b00", "shard-0001.tar");
    for (uint32_t i = 0; i < 4096; i++) {
        assert_true(sc_block_key_hash(k, i) != k);
        assert_true(sc_block_key_hash(k, i) != sc_block_key_hash(k, i + 1));
        assert_true(sc_block_key_hash(k, i) != sc_block_key_hash(sc_key_hash("b00", "x"), i));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fnv1a_matches_published_vectors),
        cmocka_unit_test(mix_is_splitmix64s_finalizer),
        cmocka_unit_test(key_hash_gives_the_values_policies_and_manifests_share),
        cmocka_unit_test(key_hash_is_fnv1a_of_bucket_nul_key_then_mixed),
        cmocka_unit_test(block_key_hash_gives_the_pinned_values),
        cmocka_unit_test(block_key_hashes_of_one_object_are_distinct_and_not_its_key_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
