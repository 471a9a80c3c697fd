/* test_s3fifo.c - the S3-FIFO policy: scan resistance, ghost re-entry, hit ratio against LRU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replay.h"

#define OBJ   1000u         /* bytes per object in the fixed-size tests */
#define SLOTS 100u          /* objects the cache holds in those tests */
#define CAP   (SLOTS * OBJ) /* so small holds 10 objects */

static void registered_under_s3fifo_name(void **state)
{
    (void)state;
    const struct policy_ops *ops = replay_ops("s3fifo");
    assert_string_equal(ops->name, "s3fifo");
    assert_null(ops->admit);
}

/* Reads objects first..first+n-1 once each, in order. */
static void read_range(struct replay *r, uint32_t first, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        replay_read(r, first + i);
}

/* Counts the hits of reading objects first..first+n-1 once each. */
static uint32_t hits_of_range(struct replay *r, uint32_t first, uint32_t n)
{
    uint32_t hits = 0;
    for (uint32_t i = 0; i < n; i++)
        hits += replay_read(r, first + i);
    return hits;
}

/* A working set read twice, then a scan ten times the cache: s3fifo keeps the set, lru not. */
static void scan_does_not_flush_objects_read_twice(void **state)
{
    (void)state;
    const char *names[] = {"s3fifo", "lru"};
    uint32_t hits[2];
    for (int p = 0; p < 2; p++) {
        struct replay r;
        replay_init(&r, names[p], CAP, 2000, OBJ);
        read_range(&r, 0, 50);
        read_range(&r, 0, 50);
        read_range(&r, 1000, 1000); /* one-time objects */
        hits[p] = hits_of_range(&r, 0, 50);
        replay_free(&r);
    }
    assert_int_equal(hits[0], 50);
    assert_int_equal(hits[1], 0);
}

/* Objects read once churn through small in arrival order and leave main untouched. */
static void objects_read_once_churn_through_small_only(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "s3fifo", CAP, 300, OBJ);
    read_range(&r, 0, 100); /* fills: 0..9 into small, then 10..99 into main */
    read_range(&r, 100, 100);
    for (uint32_t obj = 0; obj < 200; obj++)
        assert_int_equal(replay_cached(&r, obj), (obj >= 10 && obj < 100) || obj >= 190);
    replay_free(&r);
}

/*
 * An object evicted from small and read again while its key is in ghost goes
 * to main and survives the next scan; one evicted long ago has left ghost and
 * goes to small again, so the scan takes it.
 */
static void key_remembered_in_ghost_returns_to_main(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "s3fifo", CAP, 5000, OBJ);
    read_range(&r, 0, 100);
    read_range(&r, 1000, 1000);
    /* 1950..1954 left small recently; 1100..1104 some 900 evictions ago (ghost holds ~90). */
    assert_false(replay_cached(&r, 1950));
    assert_false(replay_cached(&r, 1100));
    read_range(&r, 1950, 5);
    read_range(&r, 1100, 5);
    read_range(&r, 3000, 1000);
    assert_int_equal(hits_of_range(&r, 1950, 5), 5);
    assert_int_equal(hits_of_range(&r, 1100, 5), 0);
    replay_free(&r);
}

/*
 * Objects read twice while in small move to main and push main's unread
 * objects out; a main object that keeps being read is reinserted instead.
 */
static void read_object_in_main_is_reinserted_unread_one_evicted(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "s3fifo", CAP, 2000, OBJ);
    read_range(&r, 0, 100); /* 10..99 are in main, 10 the oldest */
    for (uint32_t round = 0; round < 20; round++) {
        replay_read(&r, 10);
        for (uint32_t obj = 1000 + round * 20; obj < 1020 + round * 20; obj++) {
            replay_read(&r, obj);
            replay_read(&r, obj);
        }
    }
    assert_true(replay_cached(&r, 10));
    assert_false(replay_cached(&r, 11));
    replay_free(&r);
}

/*
 * The hit-ratio claim: a working set of 60% of the capacity read with uniform
 * reuse, interrupted by scans of unique objects twice the capacity, objects
 * of varied sizes. S3-FIFO keeps the working set through the scans; LRU loses
 * it to every scan.
 */
static double hit_ratio_on_scans_mixed_with_reuse(const char *policy)
{
    const uint32_t n_ws = 600, n_scan_objs = 200000;
    uint64_t seed = 42, cap = 0;
    struct replay r;
    replay_init(&r, policy, 1, n_ws + n_scan_objs, 0);
    for (uint32_t i = 0; i < n_ws + n_scan_objs; i++)
        r.size[i] = 1024 + replay_below(&seed, 3072);
    for (uint32_t i = 0; i < n_ws; i++)
        cap += r.size[i];
    cap = cap * 10 / 6; /* the working set is 60% of the capacity */
    r.ops->free(r.state);
    r.capacity = cap;
    assert_int_equal(r.ops->init(cap, &r.state), SC_OK);
    uint32_t next_scan = n_ws;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 1500; i++)
            replay_read(&r, replay_below(&seed, n_ws));
        for (uint64_t bytes = 0; bytes < 2 * cap; bytes += r.size[next_scan])
            replay_read(&r, next_scan++);
        assert_true(next_scan < n_ws + n_scan_objs);
    }
    double ratio = replay_hit_ratio(&r);
    replay_free(&r);
    return ratio;
}

static void beats_lru_when_scans_interrupt_a_working_set(void **state)
{
    (void)state;
    double s3 = hit_ratio_on_scans_mixed_with_reuse("s3fifo");
    double lru = hit_ratio_on_scans_mixed_with_reuse("lru");
    print_message("hit ratio: s3fifo %.3f, lru %.3f\n", s3, lru);
    assert_true(s3 > lru + 0.1);
}

/* Start-up replays every object; the oldest that was never read again leaves first. */
static void restart_rebuilds_queues_from_replayed_objects(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "s3fifo", CAP, 2000, OBJ);
    read_range(&r, 0, 100);
    read_range(&r, 1000, 60); /* 60 evictions */
    uint64_t oldest = UINT64_MAX;
    for (uint32_t obj = 0; obj < 2000; obj++)
        if (replay_cached(&r, obj) && r.cached_id[obj] < oldest)
            oldest = r.cached_id[obj];
    replay_restart(&r, "s3fifo", CAP);
    uint64_t id = 0;
    assert_true(r.ops->pick_victim(r.state, &id));
    assert_int_equal(id, oldest);
    replay_evict_one(&r);
    /* Every cached object is still known: all can be evicted, then nothing is left. */
    uint32_t n = 1;
    while (r.used > 0) {
        replay_evict_one(&r);
        n++;
    }
    assert_int_equal(n, SLOTS);
    assert_false(r.ops->pick_victim(r.state, &id));
    replay_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered_under_s3fifo_name),
        cmocka_unit_test(scan_does_not_flush_objects_read_twice),
        cmocka_unit_test(objects_read_once_churn_through_small_only),
        cmocka_unit_test(key_remembered_in_ghost_returns_to_main),
        cmocka_unit_test(read_object_in_main_is_reinserted_unread_one_evicted),
        cmocka_unit_test(beats_lru_when_scans_interrupt_a_working_set),
        cmocka_unit_test(restart_rebuilds_queues_from_replayed_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
