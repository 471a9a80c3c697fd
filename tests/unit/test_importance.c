/* test_importance.c - the importance (SHADE) policy: rank order, hints, ghost scores, admission. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replay.h"

#define OBJ 100u /* bytes per object */

static void registered_under_importance_name(void **state)
{
    (void)state;
    const struct policy_ops *ops = replay_ops("importance");
    assert_string_equal(ops->name, "importance");
    assert_non_null(ops->admit);
    assert_non_null(ops->hint);
}

/* A cache of slots objects of OBJ bytes, with n_objects objects to read. */
static void new_cache(struct replay *r, uint64_t slots, size_t n_objects)
{
    replay_init(r, "importance", slots * OBJ, n_objects, OBJ);
}

static void score(struct replay *r, uint32_t obj, double s)
{
    struct policy_hint h = {.kind = POLICY_HINT_SCORE, .khash = replay_khash(obj), .score = s};
    assert_int_equal(r->ops->hint(r->state, &h), SC_OK);
}

static void read_all(struct replay *r, const uint32_t *objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        replay_read(r, objs[i]);
}

static void evict_expect(struct replay *r, const uint32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(replay_evict_one(r), want[i]);
}

static void victims_come_in_ascending_score(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    const double scores[] = {3, 1, 5, 2, 4};
    for (uint32_t obj = 0; obj < 5; obj++) {
        replay_read(&r, obj);
        score(&r, obj, scores[obj]);
    }
    evict_expect(&r, (const uint32_t[]){1, 3, 0, 4, 2}, 5);
    uint64_t id;
    assert_false(r.ops->pick_victim(r.state, &id));
    replay_free(&r);
}

static void unscored_objects_rank_below_scored_ones(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    replay_read(&r, 0);
    score(&r, 0, -1000.0);
    for (int i = 0; i < 5; i++)
        replay_read(&r, 1); /* newer and read more, but never scored */
    evict_expect(&r, (const uint32_t[]){1, 0}, 2);
    replay_free(&r);
}

/* Without scores: fewest reads first, then least recently read. */
static void equal_scores_order_by_count_then_recency(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    read_all(&r, (const uint32_t[]){0, 1, 2, 3, 0, 2}, 6);
    evict_expect(&r, (const uint32_t[]){1, 3, 0, 2}, 4);
    replay_free(&r);
}

static void hint_on_cached_object_moves_it(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    for (uint32_t obj = 0; obj < 3; obj++) {
        replay_read(&r, obj);
        score(&r, obj, obj + 1.0);
    }
    score(&r, 0, 5.0); /* the minimum rises to the top */
    score(&r, 2, 0.5); /* the maximum sinks to the bottom */
    evict_expect(&r, (const uint32_t[]){2, 1, 0}, 3);
    replay_free(&r);
}

static void score_of_uncached_object_is_taken_up_at_insert(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    score(&r, 0, 9.0);
    replay_read(&r, 0);
    replay_read(&r, 1);
    score(&r, 1, 1.0);
    evict_expect(&r, (const uint32_t[]){1, 0}, 2);
    replay_free(&r);
}

static void evicted_object_gets_its_score_back(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 10, 10);
    replay_read(&r, 0);
    score(&r, 0, 9.0);
    replay_drop(&r, 0);
    replay_read(&r, 1);
    score(&r, 1, 5.0);
    replay_read(&r, 0);
    evict_expect(&r, (const uint32_t[]){1, 0}, 2);
    replay_free(&r);
}

/* The ghost table keeps the newest 2^20 scores (with few objects cached): the oldest are dropped.
 */
static void ghost_drops_oldest_scores_beyond_bound(void **state)
{
    (void)state;
    const uint32_t bound = 1u << 20, extra = 10;
    struct replay r;
    new_cache(&r, 10, bound + extra);
    for (uint32_t obj = 0; obj < bound + extra; obj++)
        score(&r, obj, 1.0);
    replay_read(&r, extra);     /* the oldest score kept */
    replay_read(&r, extra - 1); /* the newest score dropped: unscored, so below */
    replay_read(&r, bound + extra - 1);
    evict_expect(&r, (const uint32_t[]){extra - 1, extra, bound + extra - 1}, 3);
    replay_free(&r);
}

static bool admits(struct replay *r, uint32_t obj)
{
    char key[32];
    replay_key(obj, key, sizeof(key));
    struct policy_obj o = {.id = 0, .size = OBJ, .bucket = "b", .key = key};
    return r->ops->admit(r->state, &o);
}

static void full_cache_admits_only_newcomers_that_outrank_its_minimum(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 2, 10);
    assert_true(admits(&r, 0));
    replay_read(&r, 0);
    replay_read(&r, 1);
    score(&r, 0, 2.0);
    score(&r, 1, 3.0);
    assert_false(admits(&r, 2)); /* never scored */
    score(&r, 2, 2.5);
    assert_true(admits(&r, 2));
    score(&r, 2, 1.0);
    assert_false(admits(&r, 2));
    replay_read(&r, 2);
    assert_false(replay_cached(&r, 2));
    replay_free(&r);
}

/* With no scores at all a newcomer replaces the least-read, least-recent object. */
static void without_scores_admits_like_lru_with_counts(void **state)
{
    (void)state;
    struct replay r;
    new_cache(&r, 2, 10);
    read_all(&r, (const uint32_t[]){0, 1, 2}, 3);
    assert_false(replay_cached(&r, 0));
    assert_true(replay_cached(&r, 1) && replay_cached(&r, 2));
    read_all(&r, (const uint32_t[]){1, 2}, 2); /* both read twice now */
    assert_false(admits(&r, 3));
    replay_free(&r);
}

/* Random scores, reads and removals; evicting everything then comes out in rank order. */
static void heap_order_survives_random_updates(void **state)
{
    (void)state;
    enum { N = 3000 };
    static double want_score[N];
    static uint32_t want_count[N];
    uint64_t seed = 11;
    struct replay r;
    new_cache(&r, N, N);
    for (uint32_t obj = 0; obj < N; obj++) {
        replay_read(&r, obj);
        want_count[obj] = 1;
        want_score[obj] = -INFINITY;
    }
    for (int op = 0; op < 30000; op++) {
        uint32_t obj = replay_below(&seed, N);
        switch (replay_below(&seed, 4)) {
        case 0:
            want_score[obj] = (double)replay_below(&seed, 50);
            score(&r, obj, want_score[obj]);
            break;
        case 1:
            if (replay_cached(&r, obj)) {
                replay_drop(&r, obj);
                want_count[obj] = 0;
            }
            break;
        default:
            replay_read(&r, obj); /* a hit, or a reinsertion with the ghost score */
            want_count[obj] = want_count[obj] ? want_count[obj] + 1 : 1;
        }
    }
    double last_score = -INFINITY;
    uint32_t last_count = 0;
    while (r.used > 0) {
        uint32_t obj = replay_evict_one(&r);
        assert_true(want_score[obj] >= last_score);
        if (want_score[obj] == last_score)
            assert_true(want_count[obj] >= last_count);
        last_score = want_score[obj];
        last_count = want_count[obj];
    }
    replay_free(&r);
}

/*
 * The hit-ratio claim: a fifth of the samples are hard (ten times as likely
 * to be drawn, and with high losses); minibatches are drawn in proportion to
 * importance and each minibatch's losses come back as rank scores, as the
 * gateway posts them. The cache holds a fifth of the data set.
 */
static double hit_ratio_on_importance_sampled_training(const char *policy)
{
    enum { N = 5000, BATCH = 64, STEPS = 600 };
    static double cumulative[N];
    uint64_t seed = 3;
    struct replay r;
    replay_init(&r, policy, N / 5 * OBJ, N, OBJ);
    double total = 0;
    for (uint32_t i = 0; i < N; i++) {
        total += i % 5 == 0 ? 10.0 : 1.0;
        cumulative[i] = total;
    }
    for (int step = 0; step < STEPS; step++) {
        uint32_t batch[BATCH];
        double losses[BATCH];
        for (int i = 0; i < BATCH; i++) {
            double u = (double)(replay_rand(&seed) >> 11) / 9007199254740992.0 * total;
            uint32_t lo = 0, hi = N - 1;
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (cumulative[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            batch[i] = lo;
            double noise = (double)replay_below(&seed, 1000) / 1000.0;
            losses[i] = (lo % 5 == 0 ? 5.0 : 0.0) + noise;
            replay_read(&r, lo);
        }
        replay_post_losses(&r, batch, losses, BATCH);
    }
    double ratio = replay_hit_ratio(&r);
    replay_free(&r);
    return ratio;
}

static void beats_lru_on_importance_sampled_training(void **state)
{
    (void)state;
    double imp = hit_ratio_on_importance_sampled_training("importance");
    double lru = hit_ratio_on_importance_sampled_training("lru");
    print_message("hit ratio: importance %.3f, lru %.3f\n", imp, lru);
    assert_true(imp > lru + 0.1);
}

/* ---- several entries of one key (the blocks of a block object) ---------------------- */

/* Tells the policy that entry id of (bucket "b", key) entered, as the store does for a block. */
static void insert_entry(void *st, uint64_t id, const char *key)
{
    struct policy_obj obj = {.id = id, .size = OBJ, .bucket = "b", .key = key};
    assert_int_equal(policy_find("importance")->on_insert(st, &obj), SC_OK);
}

static void score_key(void *st, const char *key, double s)
{
    struct policy_hint h = {.kind = POLICY_HINT_SCORE, .khash = sc_key_hash("b", key), .score = s};
    assert_int_equal(policy_find("importance")->hint(st, &h), SC_OK);
}

/* Asserts the next victims are exactly the set want (in any order), removing each. */
static void victims_are(void *st, const uint64_t *want, size_t n)
{
    const struct policy_ops *ops = policy_find("importance");
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        assert_true(ops->pick_victim(st, &id));
        size_t j = 0;
        while (j < n && want[j] != id)
            j++;
        assert_true(j < n);
        assert_false(seen & (1ull << j));
        seen |= 1ull << j;
        ops->on_remove(st, id);
    }
}

/* A score reaches every cached block of the object, not only one of them. */
static void score_reaches_every_block_of_an_object(void **state)
{
    (void)state;
    const struct policy_ops *ops = policy_find("importance");
    void *st;
    assert_int_equal(ops->init(100 * OBJ, &st), SC_OK);
    insert_entry(st, 10, "x"); /* three blocks of "x" */
    insert_entry(st, 11, "x");
    insert_entry(st, 12, "x");
    insert_entry(st, 20, "y");
    score_key(st, "y", 1);
    score_key(st, "x", 5);
    victims_are(st, (const uint64_t[]){20}, 1);
    victims_are(st, (const uint64_t[]){10, 11, 12}, 3);
    uint64_t id;
    assert_false(ops->pick_victim(st, &id));
    ops->free(st);
}

/* A block cached beside scored blocks of its object takes their score. */
static void new_block_takes_its_objects_score(void **state)
{
    (void)state;
    const struct policy_ops *ops = policy_find("importance");
    void *st;
    assert_int_equal(ops->init(100 * OBJ, &st), SC_OK);
    insert_entry(st, 10, "x");
    score_key(st, "x", 5);
    insert_entry(st, 11, "x");
    insert_entry(st, 20, "y"); /* unscored: -inf, and newer than 11 */
    score_key(st, "z", 9);     /* an uncached key: a ghost score, nobody's rank moves */
    victims_are(st, (const uint64_t[]){20}, 1);
    victims_are(st, (const uint64_t[]){10, 11}, 2);
    ops->free(st);
}

/*
 * Removing the chain's head (the first block cached) leaves the others findable by key,
 * and the score goes to the ghost table only with the last block: a block cached after
 * all of the object's blocks left gets it back.
 */
static void ghost_score_waits_for_the_last_block(void **state)
{
    (void)state;
    const struct policy_ops *ops = policy_find("importance");
    void *st;
    assert_int_equal(ops->init(100 * OBJ, &st), SC_OK);
    insert_entry(st, 10, "x");
    insert_entry(st, 11, "x");
    insert_entry(st, 12, "x");
    score_key(st, "x", 5);
    ops->on_remove(st, 10); /* the head */
    ops->on_remove(st, 12); /* the tail */
    insert_entry(st, 20, "y");
    score_key(st, "y", 6);
    score_key(st, "x", 7); /* must reach block 11 */
    victims_are(st, (const uint64_t[]){20}, 1);
    insert_entry(st, 30, "w");
    score_key(st, "w", 8);
    victims_are(st, (const uint64_t[]){11}, 1); /* "x" had 7: its ghost score is now 7 */
    insert_entry(st, 13, "x");
    insert_entry(st, 40, "v");
    score_key(st, "v", 6);
    victims_are(st, (const uint64_t[]){40}, 1); /* 6 < the 7 block 13 took up */
    victims_are(st, (const uint64_t[]){13}, 1);
    victims_are(st, (const uint64_t[]){30}, 1);
    ops->free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registered_under_importance_name),
        cmocka_unit_test(victims_come_in_ascending_score),
        cmocka_unit_test(unscored_objects_rank_below_scored_ones),
        cmocka_unit_test(equal_scores_order_by_count_then_recency),
        cmocka_unit_test(hint_on_cached_object_moves_it),
        cmocka_unit_test(score_of_uncached_object_is_taken_up_at_insert),
        cmocka_unit_test(evicted_object_gets_its_score_back),
        cmocka_unit_test(ghost_drops_oldest_scores_beyond_bound),
        cmocka_unit_test(full_cache_admits_only_newcomers_that_outrank_its_minimum),
        cmocka_unit_test(without_scores_admits_like_lru_with_counts),
        cmocka_unit_test(heap_order_survives_random_updates),
        cmocka_unit_test(beats_lru_on_importance_sampled_training),
        cmocka_unit_test(score_reaches_every_block_of_an_object),
        cmocka_unit_test(new_block_takes_its_objects_score),
        cmocka_unit_test(ghost_score_waits_for_the_last_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
