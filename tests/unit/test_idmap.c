/* test_idmap.c - the policies' id hash table: lookup, replace, delete, growth,
 * reservation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../policy/idmap.h"

#define N_KEYS 20000u

/* The keys live outside the map, as in a policy's nodes: keys[v] is value v's key. */
static uint64_t keys[N_KEYS];

static uint64_t key_of(const void *ctx, uint32_t v)
{
    return ((const uint64_t *)ctx)[v];
}

static void new_map(struct idmap *m)
{
    assert_int_equal(idmap_init(m, key_of, keys), SC_OK);
}

static void absent_key_returns_none(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    assert_int_equal(idmap_get(&m, 5), IDMAP_NONE);
    assert_int_equal(idmap_del(&m, 5), IDMAP_NONE);
    idmap_free(&m);
}

static void put_then_get_finds_index_for_any_key(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    keys[0] = 0;
    keys[1] = UINT64_MAX;
    keys[2] = 42;
    for (uint32_t v = 0; v < 3; v++)
        assert_int_equal(idmap_put(&m, v), SC_OK);
    assert_int_equal(m.count, 3);
    assert_int_equal(idmap_get(&m, 0), 0);
    assert_int_equal(idmap_get(&m, UINT64_MAX), 1);
    assert_int_equal(idmap_get(&m, 42), 2);
    assert_int_equal(idmap_get(&m, 43), IDMAP_NONE);
    idmap_free(&m);
}

static void put_of_same_key_replaces_index(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    keys[3] = 77;
    keys[4] = 77;
    assert_int_equal(idmap_put(&m, 3), SC_OK);
    assert_int_equal(idmap_put(&m, 4), SC_OK);
    assert_int_equal(m.count, 1);
    assert_int_equal(idmap_get(&m, 77), 4);
    assert_int_equal(idmap_del(&m, 77), 4);
    assert_int_equal(idmap_get(&m, 77), IDMAP_NONE);
    assert_int_equal(m.count, 0);
    idmap_free(&m);
}

/* Sequential keys, then deleting every third one: growth and backward shifts keep all reachable. */
static void growth_and_deletes_keep_every_key_reachable(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    for (uint32_t v = 0; v < N_KEYS; v++) {
        keys[v] = (uint64_t)v * 64; /* multiples of the table size: a weak hash would collide */
        assert_int_equal(idmap_put(&m, v), SC_OK);
    }
    assert_true(m.n_slots >= 2 * N_KEYS);
    for (uint32_t v = 0; v < N_KEYS; v += 3)
        assert_int_equal(idmap_del(&m, keys[v]), v);
    for (uint32_t v = 0; v < N_KEYS; v++)
        assert_int_equal(idmap_get(&m, keys[v]), v % 3 == 0 ? IDMAP_NONE : v);
    assert_int_equal(m.count, N_KEYS - (N_KEYS + 2) / 3);
    idmap_free(&m);
}

/* Random puts and deletes against a plain array as the reference. */
static void random_churn_matches_reference(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    static uint8_t present[N_KEYS];
    srand(7);
    for (uint32_t v = 0; v < N_KEYS; v++) {
        keys[v] = ((uint64_t)rand() << 32) ^ (uint64_t)rand() ^ v;
        present[v] = 0;
    }
    for (int op = 0; op < 200000; op++) {
        uint32_t v = (uint32_t)rand() % 2000; /* a small range: dense probe runs */
        if (present[v]) {
            assert_int_equal(idmap_del(&m, keys[v]), v);
            present[v] = 0;
        } else {
            assert_int_equal(idmap_put(&m, v), SC_OK);
            present[v] = 1;
        }
    }
    size_t n = 0;
    for (uint32_t v = 0; v < 2000; v++) {
        assert_int_equal(idmap_get(&m, keys[v]), present[v] ? v : IDMAP_NONE);
        n += present[v];
    }
    assert_int_equal(m.count, n);
    idmap_free(&m);
}

/* Reserved room: the entries already in move once, and puts up to the count never grow it. */
static void reserve_makes_room_once(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    for (uint32_t v = 0; v < 10; v++) {
        keys[v] = (uint64_t)v * 1000003;
        assert_int_equal(idmap_put(&m, v), SC_OK);
    }
    assert_int_equal(idmap_reserve(&m, N_KEYS), SC_OK);
    size_t slots = m.n_slots;
    assert_true(slots >= 2 * N_KEYS && slots < 4 * N_KEYS);
    for (uint32_t v = 0; v < 10; v++)
        assert_int_equal(idmap_get(&m, keys[v]), v);
    for (uint32_t v = 10; v < N_KEYS; v++) {
        keys[v] = (uint64_t)v * 1000003;
        assert_int_equal(idmap_put(&m, v), SC_OK);
    }
    assert_int_equal(m.n_slots, slots);
    assert_int_equal(idmap_reserve(&m, 5), SC_OK); /* never shrinks */
    assert_int_equal(m.n_slots, slots);
    for (uint32_t v = 0; v < N_KEYS; v++)
        assert_int_equal(idmap_get(&m, keys[v]), v);
    idmap_free(&m);
}

static void free_twice_is_safe(void **state)
{
    (void)state;
    struct idmap m;
    new_map(&m);
    idmap_free(&m);
    idmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(absent_key_returns_none),
        cmocka_unit_test(put_then_get_finds_index_for_any_key),
        cmocka_unit_test(put_of_same_key_replaces_index),
        cmocka_unit_test(growth_and_deletes_keep_every_key_reachable),
        cmocka_unit_test(random_churn_matches_reference),
        cmocka_unit_test(reserve_makes_room_once),
        cmocka_unit_test(free_twice_is_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
