/*
 * test_clairvoyant.c - the clairvoyant policy: the offline optimum on small
 * traces (against an exhaustive search), capacity never exceeded with mixed
 * sizes, admission refusal, unplanned keys first, stale next uses corrected,
 * and plain LRU without a future.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../policy/future_set.h"
#include "../../policy/policy.h"

#define MAX_OBJS 8

static const struct policy_ops *clv(void)
{
    const struct policy_ops *ops = policy_find("clairvoyant");
    assert_non_null(ops);
    return ops;
}

static void *new_policy(const struct policy_ops *ops, uint64_t capacity)
{
    void *s = NULL;
    assert_int_equal(ops->init(capacity, &s), SC_OK);
    assert_non_null(s);
    return s;
}

static const char *name(unsigned k)
{
    static char buf[MAX_OBJS + 64][16];
    snprintf(buf[k], sizeof(buf[k]), "k%u", k);
    return buf[k];
}

static uint64_t khash(unsigned k)
{
    return sc_key_hash("b", name(k));
}

/* A sealed future of keys k0..; the caller owns the reference. */
static future *plan(const unsigned *keys, size_t n)
{
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(future_append(f, khash(keys[i])), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    return f;
}

static void give(void *s, future *f)
{
    future_set *set = NULL;
    if (f != NULL)
        assert_int_equal(future_set_new(&f, 1, &set), SC_OK);
    struct policy_hint h = {.kind = POLICY_HINT_FUTURE, .futures = set};
    assert_int_equal(clv()->hint(s, &h), SC_OK);
    future_set_unref(set);
}

static void insert(const struct policy_ops *ops, void *s, uint64_t id, unsigned k, uint64_t size)
{
    struct policy_obj o = {.id = id, .size = size, .bucket = "b", .key = name(k)};
    assert_int_equal(ops->on_insert(s, &o), SC_OK);
}

static bool admits(void *s, unsigned k, uint64_t size)
{
    struct policy_obj o = {.id = 0, .size = size, .bucket = "b", .key = name(k)};
    return clv()->admit(s, &o);
}

static uint64_t victim(const struct policy_ops *ops, void *s)
{
    uint64_t id = 0;
    assert_true(ops->pick_victim(s, &id));
    return id;
}

/* A store in miniature: ids are key + 1, sizes per key, the gateway consuming the future first. */
struct mini {
    void *s;
    future *f;
    uint64_t capacity, used, max_used;
    const uint64_t *size;
    bool cached[MAX_OBJS];
    unsigned hits;
};

static void mini_access(struct mini *m, unsigned k)
{
    if (m->f != NULL)
        future_consume(m->f, khash(k));
    if (m->cached[k]) {
        m->hits++;
        clv()->on_hit(m->s, k + 1);
        return;
    }
    if (!admits(m->s, k, m->size[k]))
        return;
    while (m->used + m->size[k] > m->capacity) {
        uint64_t id = victim(clv(), m->s);
        assert_true(id >= 1 && id <= MAX_OBJS && m->cached[id - 1]);
        clv()->on_remove(m->s, id);
        m->cached[id - 1] = false;
        m->used -= m->size[id - 1];
    }
    insert(clv(), m->s, k + 1, k, m->size[k]);
    m->cached[k] = true;
    m->used += m->size[k];
    if (m->used > m->max_used)
        m->max_used = m->used;
}

/* Replays keys with the plan given; returns the hits. */
static unsigned mini_run(const unsigned *keys, size_t n, const uint64_t *size, uint64_t capacity,
                         uint64_t *max_used)
{
    struct mini m = {.capacity = capacity, .size = size};
    m.s = new_policy(clv(), capacity);
    m.f = plan(keys, n);
    give(m.s, m.f);
    for (size_t i = 0; i < n; i++)
        mini_access(&m, keys[i]);
    clv()->free(m.s);
    future_unref(m.f);
    if (max_used != NULL)
        *max_used = m.max_used;
    return m.hits;
}

/* The most hits any eviction and bypass choices get from access i on, cache in mask. */
static int best(const unsigned *keys, size_t n, size_t i, unsigned mask, unsigned cap, int *memo)
{
    if (i == n)
        return 0;
    int *slot = &memo[i * (1u << MAX_OBJS) + mask];
    if (*slot >= 0)
        return *slot;
    unsigned bit = 1u << keys[i];
    int r;
    if (mask & bit) {
        r = 1 + best(keys, n, i + 1, mask, cap, memo);
    } else if ((unsigned)__builtin_popcount(mask) < cap) {
        r = best(keys, n, i + 1, mask | bit, cap, memo);
    } else {
        r = best(keys, n, i + 1, mask, cap, memo); /* bypass */
        for (unsigned k = 0; k < MAX_OBJS; k++)
            if (mask & (1u << k)) {
                int x = best(keys, n, i + 1, (mask & ~(1u << k)) | bit, cap, memo);
                r = x > r ? x : r;
            }
    }
    return *slot = r;
}

static int exhaustive_optimum(const unsigned *keys, size_t n, unsigned cap)
{
    size_t cells = (n + 1) * (1u << MAX_OBJS);
    int *memo = malloc(cells * sizeof(*memo));
    assert_non_null(memo);
    for (size_t i = 0; i < cells; i++)
        memo[i] = -1;
    int r = best(keys, n, 0, 0, cap, memo);
    free(memo);
    return r;
}

static void registered_with_admit_and_hint(void **state)
{
    (void)state;
    assert_string_equal(clv()->name, "clairvoyant");
    assert_non_null(clv()->admit);
    assert_non_null(clv()->hint);
    bool listed = false;
    for (size_t i = 0; i < policy_count(); i++)
        listed |= policy_at(i) == clv();
    assert_true(listed);
    assert_null(policy_at(policy_count()));
}

static void reaches_exhaustive_optimum_on_random_small_traces(void **state)
{
    (void)state;
    const uint64_t size[MAX_OBJS] = {10, 10, 10, 10, 10, 10, 10, 10};
    unsigned seed = 12345;
    for (int trial = 0; trial < 400; trial++) {
        unsigned keys[18];
        seed = seed * 1103515245u + 12345u;
        size_t n = 6 + (seed >> 8) % 13;
        unsigned objs = 2 + (seed >> 16) % (MAX_OBJS - 1);
        unsigned cap = 1 + (seed >> 4) % 4;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            keys[i] = (seed >> 10) % objs;
        }
        int want = exhaustive_optimum(keys, n, cap);
        unsigned got = mini_run(keys, n, size, cap * 10u, NULL);
        if ((int)got != want)
            fail_msg("trial %d: %u hits, the optimum is %d (n %zu, cap %u)", trial, got, want, n,
                     cap);
    }
}

static void never_exceeds_capacity_with_mixed_sizes(void **state)
{
    (void)state;
    const uint64_t size[MAX_OBJS] = {1, 7, 30, 64, 100, 3, 250, 40};
    unsigned seed = 99;
    for (int trial = 0; trial < 200; trial++) {
        unsigned keys[64];
        for (size_t i = 0; i < 64; i++) {
            seed = seed * 1103515245u + 12345u;
            keys[i] = (seed >> 10) % MAX_OBJS;
        }
        uint64_t capacity = 100 + trial, max_used = 0;
        (void)mini_run(keys, 64, size, capacity, &max_used);
        assert_true(max_used <= capacity);
    }
}

static void evicts_object_needed_furthest_ahead(void **state)
{
    (void)state;
    const unsigned keys[] = {0, 1, 2, 3, 2, 1, 0};
    future *f = plan(keys, 7);
    void *s = new_policy(clv(), 30);
    give(s, f);
    for (unsigned k = 0; k < 3; k++) {
        future_consume(f, khash(k));
        insert(clv(), s, k + 1, k, 10);
    }
    future_consume(f, khash(3));
    assert_int_equal(victim(clv(), s), 1); /* key 0: due at 6, after 2 (4) and 1 (5) */
    clv()->on_remove(s, 1);
    assert_int_equal(victim(clv(), s), 2); /* then key 1 */
    clv()->free(s);
    future_unref(f);
}

static void refuses_object_that_would_go_first(void **state)
{
    (void)state;
    const unsigned keys[] = {0, 1, 2, 0, 1, 2};
    future *f = plan(keys, 6);
    void *s = new_policy(clv(), 20);
    give(s, f);
    future_consume(f, khash(0));
    assert_true(admits(s, 0, 10)); /* fits in free capacity */
    insert(clv(), s, 1, 0, 10);
    future_consume(f, khash(1));
    insert(clv(), s, 2, 1, 10);
    future_consume(f, khash(2));
    assert_false(admits(s, 2, 10)); /* due at 5, after both cached (3, 4) */
    assert_false(admits(s, 7, 10)); /* not in the plan at all */
    assert_false(admits(s, 0, 21)); /* larger than the cache */
    future_consume(f, khash(0));
    future_consume(f, khash(1));
    clv()->on_hit(s, 1); /* key 0 is not needed again */
    clv()->on_hit(s, 2);
    assert_true(admits(s, 2, 10)); /* an unneeded object goes before it */
    clv()->free(s);
    future_unref(f);
}

static void unplanned_keys_go_first_in_lru_order(void **state)
{
    (void)state;
    const unsigned keys[] = {0, 1, 0, 1};
    future *f = plan(keys, 4);
    void *s = new_policy(clv(), 1000);
    give(s, f);
    insert(clv(), s, 1, 0, 10);
    insert(clv(), s, 10, 10, 10); /* k10..k12 are not in the plan */
    insert(clv(), s, 11, 11, 10);
    insert(clv(), s, 2, 1, 10);
    insert(clv(), s, 12, 12, 10);
    clv()->on_hit(s, 10);
    unsigned want[] = {11, 12, 10, 2, 1};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(victim(clv(), s), want[i]);
        clv()->on_remove(s, want[i]);
    }
    uint64_t id;
    assert_false(clv()->pick_victim(s, &id));
    clv()->free(s);
    future_unref(f);
}

static void stale_next_use_is_corrected_before_choosing(void **state)
{
    (void)state;
    const unsigned keys[] = {0, 1, 2, 0, 1, 0};
    future *f = plan(keys, 6);
    void *s = new_policy(clv(), 20);
    give(s, f);
    future_consume(f, khash(0));
    insert(clv(), s, 1, 0, 10); /* due at 3 */
    future_consume(f, khash(1));
    insert(clv(), s, 2, 1, 10); /* due at 4 */
    future_consume(f, khash(2));
    future_consume(f, khash(0)); /* read without a hit report: key 0 is now due at 5 */
    assert_int_equal(victim(clv(), s), 1);
    clv()->free(s);
    future_unref(f);
}

static void without_future_matches_lru_step_by_step(void **state)
{
    (void)state;
    const struct policy_ops *lru = policy_find("lru");
    assert_non_null(lru);
    void *a = new_policy(lru, 100), *b = new_policy(clv(), 100);
    bool live[64] = {false};
    unsigned seed = 4242;
    for (int step = 0; step < 5000; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 10) % 64, op = (seed >> 20) % 4;
        if (!live[k]) {
            assert_true(admits(b, k, 10));
            insert(lru, a, k + 1, k, 10);
            insert(clv(), b, k + 1, k, 10);
            live[k] = true;
        } else if (op == 0) {
            uint64_t va = victim(lru, a), vb = victim(clv(), b);
            assert_int_equal(va, vb);
            lru->on_remove(a, va);
            clv()->on_remove(b, vb);
            live[va - 1] = false;
        } else {
            lru->on_hit(a, k + 1);
            clv()->on_hit(b, k + 1);
        }
    }
    lru->free(a);
    clv()->free(b);
}

static void dropping_the_future_returns_to_lru(void **state)
{
    (void)state;
    const unsigned keys[] = {0, 1, 2, 2, 1, 0};
    future *f = plan(keys, 6);
    void *s = new_policy(clv(), 100);
    give(s, f);
    for (unsigned k = 0; k < 3; k++) {
        future_consume(f, khash(k));
        insert(clv(), s, k + 1, k, 10);
    }
    assert_int_equal(victim(clv(), s), 1); /* key 0, due last */
    give(s, NULL);
    future_unref(f); /* the policy dropped its reference too */
    clv()->on_hit(s, 1);
    assert_int_equal(victim(clv(), s), 2); /* least recently used */
    clv()->free(s);
}

/* ---- blocks of large objects ---- */

static void insert_block(void *s, uint64_t id, unsigned k, uint32_t block, uint64_t size)
{
    struct policy_obj o = {
        .id = id, .size = size, .bucket = "b", .key = name(k), .is_block = true, .block = block};
    assert_int_equal(clv()->on_insert(s, &o), SC_OK);
}

static bool admits_block(void *s, unsigned k, uint32_t block, uint64_t size)
{
    struct policy_obj o = {
        .id = 0, .size = size, .bucket = "b", .key = name(k), .is_block = true, .block = block};
    return clv()->admit(s, &o);
}

/* A future of ranged reads: (key, block) pairs by their block hashes. */
static future *plan_blocks(const unsigned (*kb)[2], size_t n)
{
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(future_append(f, sc_block_key_hash(khash(kb[i][0]), kb[i][1])), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    return f;
}

static void keeps_the_block_needed_soon_over_a_sibling_not_needed_again(void **state)
{
    (void)state;
    /* Object k0 read by ranges: block 5, then k1's block 0, then k0's blocks 2 and 3. */
    const unsigned reads[][2] = {{0, 5}, {1, 0}, {0, 2}, {0, 3}};
    void *s = new_policy(clv(), 30);
    future *f = plan_blocks(reads, 4);
    give(s, f);
    insert_block(s, 105, 0, 5, 10); /* ids: 100 + block; least recently used first */
    insert_block(s, 102, 0, 2, 10);
    insert_block(s, 100, 0, 0, 10); /* full; block 0 is not read again */
    assert_int_equal(victim(clv(), s), 100);
    clv()->on_remove(s, 100);
    insert_block(s, 201, 1, 0, 10);          /* full of blocks the plan reads */
    assert_false(admits_block(s, 0, 7, 10)); /* never read: it would go first */
    assert_false(admits_block(s, 0, 3, 10)); /* read after everything cached */
    assert_int_equal(victim(clv(), s), 102); /* read last of the cached ones */
    clv()->on_remove(s, 102);
    insert_block(s, 103, 0, 3, 10);
    assert_true(admits_block(s, 0, 2, 10)); /* read before block 3 */
    /* the trainer reads block 5: it is not needed again and goes first */
    assert_true(future_consume(f, sc_block_key_hash(khash(0), 5)));
    clv()->on_hit(s, 105);
    assert_int_equal(victim(clv(), s), 105);
    clv()->free(s);
    future_unref(f);
}

static void a_whole_object_is_planned_by_its_key_and_block_0(void **state)
{
    (void)state;
    /* k0 (small, stored whole) is read by range, which the plan names as its block 0; k1 whole. */
    const unsigned reads[][2] = {{0, 0}};
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    assert_int_equal(future_append(f, khash(2)), SC_OK);
    assert_int_equal(future_append(f, sc_block_key_hash(khash(reads[0][0]), reads[0][1])), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    void *s = new_policy(clv(), 30);
    give(s, f);
    insert(clv(), s, 1, 0, 10); /* whole k0: needed at 1 through its block 0 */
    insert(clv(), s, 2, 1, 10); /* whole k1: not planned */
    insert(clv(), s, 3, 2, 10); /* whole k2: needed at 0 */
    assert_int_equal(victim(clv(), s), 2);
    clv()->on_remove(s, 2);
    assert_int_equal(victim(clv(), s), 1); /* needed later than k2 */
    /* a block of k0 other than 0 is not what the plan reads */
    insert_block(s, 500, 0, 1, 10);
    assert_int_equal(victim(clv(), s), 500);
    clv()->free(s);
    future_unref(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered_with_admit_and_hint),
        cmocka_unit_test(reaches_exhaustive_optimum_on_random_small_traces),
        cmocka_unit_test(never_exceeds_capacity_with_mixed_sizes),
        cmocka_unit_test(evicts_object_needed_furthest_ahead),
        cmocka_unit_test(refuses_object_that_would_go_first),
        cmocka_unit_test(unplanned_keys_go_first_in_lru_order),
        cmocka_unit_test(stale_next_use_is_corrected_before_choosing),
        cmocka_unit_test(without_future_matches_lru_step_by_step),
        cmocka_unit_test(dropping_the_future_returns_to_lru),
        cmocka_unit_test(keeps_the_block_needed_soon_over_a_sibling_not_needed_again),
        cmocka_unit_test(a_whole_object_is_planned_by_its_key_and_block_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
