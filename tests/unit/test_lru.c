/* test_lru.c - the LRU policy: victim order, hits, removal, growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../policy/policy.h"

/* The LRU policy, as the store finds it: through the table. */
static const struct policy_ops *lru(void)
{
    const struct policy_ops *ops = policy_find("lru");
    assert_non_null(ops);
    return ops;
}

static void *new_lru(void)
{
    void *s = NULL;
    assert_int_equal(lru()->init(1u << 30, &s), SC_OK);
    assert_non_null(s);
    return s;
}

static void insert(void *s, uint64_t id)
{
    struct policy_obj obj = {.id = id, .size = 100, .bucket = "b", .key = "k"};
    assert_int_equal(lru()->on_insert(s, &obj), SC_OK);
}

/* Picks the victim, asserts it is want, and removes it as the store would. */
static void evict_expect(void *s, uint64_t want)
{
    uint64_t id = 0;
    assert_true(lru()->pick_victim(s, &id));
    assert_int_equal(id, want);
    lru()->on_remove(s, id);
}

static void registered_under_lru_name(void **state)
{
    (void)state;
    assert_string_equal(lru()->name, "lru");
    assert_null(lru()->admit);
    assert_null(policy_find("no-such-policy"));
}

static void victim_on_empty_returns_false(void **state)
{
    (void)state;
    void *s = new_lru();
    uint64_t id = 42;
    assert_false(lru()->pick_victim(s, &id));
    insert(s, 1);
    lru()->on_remove(s, 1);
    assert_false(lru()->pick_victim(s, &id));
    lru()->free(s);
}

static void victims_come_in_insertion_order(void **state)
{
    (void)state;
    void *s = new_lru();
    for (uint64_t id = 1; id <= 5; id++)
        insert(s, id);
    for (uint64_t id = 1; id <= 5; id++)
        evict_expect(s, id);
    uint64_t id;
    assert_false(lru()->pick_victim(s, &id));
    lru()->free(s);
}

static void pick_victim_does_not_remove(void **state)
{
    (void)state;
    void *s = new_lru();
    insert(s, 7);
    insert(s, 8);
    uint64_t a = 0, b = 0;
    assert_true(lru()->pick_victim(s, &a));
    assert_true(lru()->pick_victim(s, &b));
    assert_int_equal(a, 7);
    assert_int_equal(b, 7);
    lru()->free(s);
}

static void hit_moves_object_to_most_recent(void **state)
{
    (void)state;
    void *s = new_lru();
    for (uint64_t id = 1; id <= 4; id++)
        insert(s, id);
    lru()->on_hit(s, 1); /* tail */
    lru()->on_hit(s, 3); /* middle */
    lru()->on_hit(s, 3); /* already the head */
    evict_expect(s, 2);
    evict_expect(s, 4);
    evict_expect(s, 1);
    evict_expect(s, 3);
    lru()->free(s);
}

static void reinsert_of_tracked_id_counts_as_hit(void **state)
{
    (void)state;
    void *s = new_lru();
    insert(s, 1);
    insert(s, 2);
    insert(s, 1);
    evict_expect(s, 2);
    evict_expect(s, 1);
    uint64_t id;
    assert_false(lru()->pick_victim(s, &id));
    lru()->free(s);
}

static void remove_from_head_middle_and_tail_keeps_order(void **state)
{
    (void)state;
    void *s = new_lru();
    for (uint64_t id = 1; id <= 6; id++)
        insert(s, id);
    lru()->on_remove(s, 6); /* head */
    lru()->on_remove(s, 3); /* middle */
    lru()->on_remove(s, 1); /* tail */
    evict_expect(s, 2);
    evict_expect(s, 4);
    evict_expect(s, 5);
    uint64_t id;
    assert_false(lru()->pick_victim(s, &id));
    lru()->free(s);
}

static void unknown_ids_are_ignored(void **state)
{
    (void)state;
    void *s = new_lru();
    insert(s, 10);
    insert(s, 11);
    lru()->on_hit(s, 99);
    lru()->on_remove(s, 99);
    lru()->on_remove(s, 10);
    lru()->on_remove(s, 10);
    evict_expect(s, 11);
    lru()->free(s);
}

/* 100k objects force several table and node-pool resizes; order must survive them. */
static void many_objects_keep_order_across_resizes(void **state)
{
    (void)state;
    void *s = new_lru();
    const uint64_t n = 100000;
    for (uint64_t id = 1; id <= n; id++)
        insert(s, id * 7919); /* spread ids, not just 1..n */
    /* Hit every even one: they become most recent, in increasing order. */
    for (uint64_t id = 2; id <= n; id += 2)
        lru()->on_hit(s, id * 7919);
    /* Remove every tenth odd one, so removal shifts happen in a full table. */
    for (uint64_t id = 1; id <= n; id += 20)
        lru()->on_remove(s, id * 7919);
    for (uint64_t id = 1; id <= n; id += 2)
        if ((id - 1) % 20 != 0)
            evict_expect(s, id * 7919);
    for (uint64_t id = 2; id <= n; id += 2)
        evict_expect(s, id * 7919);
    uint64_t id;
    assert_false(lru()->pick_victim(s, &id));
    lru()->free(s);
}

/* Freed nodes are reused; the policy keeps working after churn. */
static void churn_reuses_nodes(void **state)
{
    (void)state;
    void *s = new_lru();
    for (uint64_t round = 0; round < 50; round++) {
        for (uint64_t i = 1; i <= 1000; i++)
            insert(s, round * 1000 + i);
        for (uint64_t i = 1; i <= 1000; i++)
            evict_expect(s, round * 1000 + i);
    }
    lru()->free(s);
}

static void free_null_is_noop(void **state)
{
    (void)state;
    lru()->free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered_under_lru_name),
        cmocka_unit_test(victim_on_empty_returns_false),
        cmocka_unit_test(victims_come_in_insertion_order),
        cmocka_unit_test(pick_victim_does_not_remove),
        cmocka_unit_test(hit_moves_object_to_most_recent),
        cmocka_unit_test(reinsert_of_tracked_id_counts_as_hit),
        cmocka_unit_test(remove_from_head_middle_and_tail_keeps_order),
        cmocka_unit_test(unknown_ids_are_ignored),
        cmocka_unit_test(many_objects_keep_order_across_resizes),
        cmocka_unit_test(churn_reuses_nodes),
        cmocka_unit_test(free_null_is_noop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
