/* test_fixed.c - the fixed (CoorDL/MinIO) policy: first come stay, per-epoch hit ratio, restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replay.h"

#define N_SAMPLES 10000u
#define SAMPLE    1000u

static void registered_under_fixed_name(void **state)
{
    (void)state;
    const struct policy_ops *ops = replay_ops("fixed");
    assert_string_equal(ops->name, "fixed");
    assert_non_null(ops->admit);
}

static bool admits(struct replay *r, uint64_t size)
{
    struct policy_obj o = {.id = 999999, .size = size, .bucket = "b", .key = "new"};
    return r->ops->admit(r->state, &o);
}

static void admits_only_what_fits_in_remaining_bytes(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "fixed", 100, 4, 60);
    assert_true(admits(&r, 100));
    replay_read(&r, 0);
    assert_true(admits(&r, 40));
    assert_false(admits(&r, 41));
    replay_read(&r, 1); /* 60 more bytes do not fit: refused, nothing evicted */
    assert_false(replay_cached(&r, 1));
    assert_true(replay_cached(&r, 0));
    replay_drop(&r, 0); /* invalidated: its bytes are free again */
    assert_true(admits(&r, 100));
    replay_free(&r);
}

static void first_objects_stay_whatever_is_read_later(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "fixed", 10 * SAMPLE, 1000, SAMPLE);
    for (uint32_t obj = 0; obj < 1000; obj++)
        replay_read(&r, obj);
    for (uint32_t obj = 0; obj < 1000; obj++)
        assert_int_equal(replay_cached(&r, obj), obj < 10);
    replay_free(&r);
}

/* Only needed when the capacity shrank: the newest goes first, hits change nothing. */
static void victim_is_most_recently_inserted(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "fixed", 10 * SAMPLE, 10, SAMPLE);
    for (uint32_t obj = 0; obj < 10; obj++)
        replay_read(&r, obj);
    replay_read(&r, 9);
    for (uint32_t obj = 10; obj-- > 0;)
        assert_int_equal(replay_evict_one(&r), obj);
    uint64_t id;
    assert_false(r.ops->pick_victim(r.state, &id));
    replay_free(&r);
}

/* Hit ratio of each of n_epochs shuffled passes over every sample, the first excluded. */
static double later_epoch_hit_ratio(const char *policy, double fraction, int n_epochs)
{
    static uint32_t order[N_SAMPLES];
    uint64_t seed = 7;
    struct replay r;
    replay_init(&r, policy, (uint64_t)(fraction * N_SAMPLES) * SAMPLE, N_SAMPLES, SAMPLE);
    for (uint32_t i = 0; i < N_SAMPLES; i++)
        order[i] = i;
    double worst = 1.0, best = 0.0;
    for (int epoch = 0; epoch < n_epochs; epoch++) {
        replay_shuffle(order, N_SAMPLES, &seed);
        replay_reset_counts(&r);
        for (uint32_t i = 0; i < N_SAMPLES; i++)
            replay_read(&r, order[i]);
        double ratio = replay_hit_ratio(&r);
        if (epoch > 0 && ratio < worst)
            worst = ratio;
        if (epoch > 0 && ratio > best)
            best = ratio;
    }
    replay_free(&r);
    print_message("%s: later epochs hit %.3f..%.3f\n", policy, worst, best);
    return best - worst > 0.05 ? -1.0 : worst; /* -1: epochs differ, not a steady ratio */
}

static void shuffled_epochs_hit_about_cache_fraction_and_beat_lru(void **state)
{
    (void)state;
    double fixed = later_epoch_hit_ratio("fixed", 0.30, 4);
    double lru = later_epoch_hit_ratio("lru", 0.30, 4);
    assert_true(fixed >= 0.28 && fixed <= 0.32);
    assert_true(lru < 0.20);
}

/* After a restart the replayed objects count as used: a full cache still refuses newcomers. */
static void restart_restores_used_bytes(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "fixed", 10 * SAMPLE, 100, SAMPLE);
    for (uint32_t obj = 0; obj < 100; obj++)
        replay_read(&r, obj);
    replay_restart(&r, "fixed", 10 * SAMPLE);
    assert_false(admits(&r, 1));
    replay_restart(&r, "fixed", 15 * SAMPLE);
    assert_true(admits(&r, 5 * SAMPLE));
    assert_false(admits(&r, 5 * SAMPLE + 1));
    replay_free(&r);
}

/* A capacity that shrank between restarts drops the newest objects first. */
static void restart_with_smaller_capacity_keeps_oldest(void **state)
{
    (void)state;
    struct replay r;
    replay_init(&r, "fixed", 10 * SAMPLE, 100, SAMPLE);
    for (uint32_t obj = 0; obj < 100; obj++)
        replay_read(&r, obj);
    replay_restart(&r, "fixed", 4 * SAMPLE);
    for (uint32_t obj = 0; obj < 10; obj++)
        assert_int_equal(replay_cached(&r, obj), obj < 4);
    replay_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered_under_fixed_name),
        cmocka_unit_test(admits_only_what_fits_in_remaining_bytes),
        cmocka_unit_test(first_objects_stay_whatever_is_read_later),
        cmocka_unit_test(victim_is_most_recently_inserted),
        cmocka_unit_test(shuffled_epochs_hit_about_cache_fraction_and_beat_lru),
        cmocka_unit_test(restart_restores_used_bytes),
        cmocka_unit_test(restart_with_smaller_capacity_keeps_oldest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
