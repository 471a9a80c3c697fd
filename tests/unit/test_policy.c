/*
 * test_policy.c - what every registered policy must do: be complete in the
 * table, keep the cache within capacity, stay consistent when the store takes
 * calls back, and rebuild from the objects replayed at start-up, also when
 * the policy changed between runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "replay.h"

#define N_OBJECTS 3000u
#define CAPACITY  (200u * 1024u)

static const char *const names[] = {"lru", "s3fifo", "fixed", "importance", "clairvoyant"};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static void every_policy_is_registered_and_complete(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        const struct policy_ops *ops = replay_ops(names[i]);
        assert_string_equal(ops->name, names[i]);
        assert_true(ops->init && ops->on_insert && ops->on_hit && ops->on_remove &&
                    ops->pick_victim && ops->free);
        assert_non_null(strstr(policy_names(), names[i]));
    }
}

/* Sizes from 0 to 8 KiB, a few larger than the whole cache. */
static void random_sizes(struct replay *r, uint64_t *seed)
{
    for (uint32_t i = 0; i < r->n_objects; i++)
        r->size[i] = i % 97 == 0 ? CAPACITY + 1 : replay_below(seed, 8193);
}

/* Skewed reads: half from a hot tenth of the objects. */
static uint32_t skewed_object(uint64_t *seed)
{
    if (replay_below(seed, 2) == 0)
        return replay_below(seed, N_OBJECTS / 10);
    return replay_below(seed, N_OBJECTS);
}

/* Reads with some invalidations and scores; the replay asserts the capacity bound on every insert.
 */
static void run_trace(struct replay *r, uint64_t *seed, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t obj = skewed_object(seed);
        uint32_t what = replay_below(seed, 20);
        if (what == 0 && replay_cached(r, obj))
            replay_drop(r, obj);
        else if (what == 1)
            replay_post_losses(r, &obj, &(double){(double)replay_below(seed, 100)}, 1);
        else
            replay_read(r, obj);
        assert_true(r->used <= r->capacity);
    }
}

/* Evicts everything: each cached object is named once, then nothing. */
static void evict_all_names_each_cached_object_once(struct replay *r)
{
    size_t cached = 0;
    for (uint32_t obj = 0; obj < r->n_objects; obj++)
        cached += replay_cached(r, obj);
    for (size_t i = 0; i < cached; i++)
        replay_evict_one(r); /* asserts the victim is cached, then uncaches it */
    assert_int_equal(r->used, 0);
    uint64_t id;
    assert_false(r->ops->pick_victim(r->state, &id));
}

static void replay_never_exceeds_capacity(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        uint64_t seed = 100 + i;
        struct replay r;
        replay_init(&r, names[i], CAPACITY, N_OBJECTS, 0);
        random_sizes(&r, &seed);
        run_trace(&r, &seed, 30000);
        evict_all_names_each_cached_object_once(&r);
        replay_free(&r);
    }
}

/* A transaction that evicted a victim aborts: the store inserts it back under the same id. */
static void undo_eviction(struct replay *r)
{
    uint64_t id = 0;
    if (!r->ops->pick_victim(r->state, &id))
        return;
    uint32_t obj = replay_obj_of(r, id);
    replay_drop(r, obj);
    replay_insert_id(r, obj, id);
}

/* A transaction that inserted obj aborts: the store removes it again. */
static void undo_insert(struct replay *r, uint32_t obj)
{
    if (replay_cached(r, obj))
        return;
    replay_read(r, obj);
    if (replay_cached(r, obj))
        replay_drop(r, obj);
}

static void consistent_when_store_takes_calls_back(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        uint64_t seed = 200 + i;
        struct replay r;
        replay_init(&r, names[i], CAPACITY, N_OBJECTS, 0);
        random_sizes(&r, &seed);
        for (int round = 0; round < 300; round++) {
            run_trace(&r, &seed, 50);
            undo_eviction(&r);
            undo_insert(&r, skewed_object(&seed));
        }
        evict_all_names_each_cached_object_once(&r);
        replay_free(&r);
    }
}

/* A cache filled under one policy, restarted under each (the same one included). */
static void restart_under_any_policy_rebuilds_every_object(void **state)
{
    (void)state;
    for (size_t from = 0; from < N_NAMES; from++) {
        for (size_t to = 0; to < N_NAMES; to++) {
            uint64_t seed = 300 + from * N_NAMES + to;
            struct replay r;
            replay_init(&r, names[from], CAPACITY, N_OBJECTS, 0);
            random_sizes(&r, &seed);
            run_trace(&r, &seed, 5000);
            replay_restart(&r, names[to], CAPACITY);
            run_trace(&r, &seed, 5000);
            evict_all_names_each_cached_object_once(&r);
            replay_free(&r);
        }
    }
}

/* A restart with a smaller capacity evicts down to it before anything else. */
static void restart_with_smaller_capacity_fits_it(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        uint64_t seed = 400 + i;
        struct replay r;
        replay_init(&r, names[i], CAPACITY, N_OBJECTS, 0);
        random_sizes(&r, &seed);
        run_trace(&r, &seed, 5000);
        uint64_t before = r.used;
        replay_restart(&r, names[i], CAPACITY / 3);
        assert_true(r.used <= CAPACITY / 3);
        assert_true(before > CAPACITY / 3); /* the test did evict */
        run_trace(&r, &seed, 2000);
        evict_all_names_each_cached_object_once(&r);
        replay_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_policy_is_registered_and_complete),
        cmocka_unit_test(replay_never_exceeds_capacity),
        cmocka_unit_test(consistent_when_store_takes_calls_back),
        cmocka_unit_test(restart_under_any_policy_rebuilds_every_object),
        cmocka_unit_test(restart_with_smaller_capacity_fits_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
