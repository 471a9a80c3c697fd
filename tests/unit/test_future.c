/*
 * test_future.c - the planned access order: next uses, out-of-order and
 * skipped consumption, keys over several epochs, keys outside the plan, and
 * threads consuming one future together.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../common/hash.h"
#include "../../policy/future.h"

/* Builds and seals a future from n keys. */
static future *plan(const uint64_t *keys, size_t n)
{
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(future_append(f, keys[i]), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    return f;
}

static void empty_plan_knows_nothing(void **state)
{
    (void)state;
    future *f = plan(NULL, 0);
    assert_int_equal(future_length(f), 0);
    assert_int_equal(future_position(f), 0);
    assert_false(future_contains(f, 1));
    assert_false(future_consume(f, 1));
    assert_true(future_next_use(f, 1) == FUTURE_NEVER);
    future_unref(f);
}

static void next_use_walks_a_keys_occurrences(void **state)
{
    (void)state;
    const uint64_t keys[] = {10, 20, 10, 30, 10};
    future *f = plan(keys, 5);
    assert_int_equal(future_length(f), 5);
    assert_int_equal(future_key_at(f, 3), 30);
    assert_int_equal(future_next_use(f, 10), 0);
    assert_true(future_consume(f, 10));
    assert_int_equal(future_position(f), 1);
    assert_int_equal(future_next_use(f, 10), 2);
    assert_true(future_consume(f, 20));
    assert_true(future_consume(f, 10));
    assert_int_equal(future_next_use(f, 10), 4);
    assert_true(future_consume(f, 30));
    assert_true(future_consume(f, 10));
    assert_int_equal(future_position(f), 5);
    assert_true(future_next_use(f, 10) == FUTURE_NEVER);
    assert_false(future_consume(f, 10));
    assert_int_equal(future_position(f), 5);
    future_unref(f);
}

static void out_of_order_access_consumes_earlier_occurrence(void **state)
{
    (void)state;
    const uint64_t keys[] = {1, 2, 3, 4, 1};
    future *f = plan(keys, 5);
    assert_true(future_consume(f, 3)); /* a loader worker ran ahead */
    assert_int_equal(future_position(f), 3);
    assert_int_equal(future_next_use(f, 1), 0); /* still within the slack */
    assert_true(future_consume(f, 1));          /* takes position 0, not 4 */
    assert_int_equal(future_position(f), 3);
    assert_int_equal(future_next_use(f, 1), 4);
    assert_true(future_consume(f, 2));
    assert_int_equal(future_position(f), 3);
    assert_true(future_next_use(f, 3) == FUTURE_NEVER);
    assert_false(future_consume(f, 3));
    future_unref(f);
}

/* Key 7 at 0 and at n - 1; distinct keys 1000 + i between. */
static future *plan_with_gap(size_t n)
{
    uint64_t *keys = malloc(n * sizeof(*keys));
    assert_non_null(keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = 1000 + i;
    keys[0] = 7;
    keys[n - 1] = 7;
    future *f = plan(keys, n);
    free(keys);
    return f;
}

static void occurrence_beyond_slack_counts_as_skipped(void **state)
{
    (void)state;
    size_t n = FUTURE_SLACK + 100;
    future *f = plan_with_gap(n);
    /* Position FUTURE_SLACK: occurrence 0 is exactly FUTURE_SLACK behind, still live. */
    assert_true(future_consume(f, 1000 + FUTURE_SLACK - 1));
    assert_int_equal(future_position(f), FUTURE_SLACK);
    assert_int_equal(future_next_use(f, 7), 0);
    /* One further and it is skipped; the next use is the later occurrence. */
    assert_true(future_consume(f, 1000 + FUTURE_SLACK));
    assert_int_equal(future_next_use(f, 7), n - 1);
    /* A late read of 7 now consumes the planned one at the end and moves the position. */
    assert_true(future_consume(f, 7));
    assert_int_equal(future_position(f), n);
    assert_true(future_next_use(f, 7) == FUTURE_NEVER);
    future_unref(f);
}

static void skipped_only_occurrence_is_never_used(void **state)
{
    (void)state;
    size_t n = FUTURE_SLACK + 10;
    uint64_t *keys = malloc(n * sizeof(*keys));
    assert_non_null(keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = 1000 + i;
    future *f = plan(keys, n);
    free(keys);
    assert_true(future_consume(f, 1000 + n - 1));
    assert_true(future_next_use(f, 1000) == FUTURE_NEVER);
    assert_false(future_consume(f, 1000));
    assert_true(future_contains(f, 1000));
    assert_int_equal(future_next_use(f, 1000 + n - 5), n - 5);
    future_unref(f);
}

/* The next position of key after pos in keys[0..n), or FUTURE_NEVER. */
static uint64_t brute_next(const uint64_t *keys, size_t n, size_t pos, uint64_t key)
{
    for (size_t i = pos; i < n; i++)
        if (keys[i] == key)
            return i;
    return FUTURE_NEVER;
}

static void repeated_keys_over_epochs_follow_the_plan(void **state)
{
    (void)state;
    enum { N = 50, E = 4 };
    uint64_t keys[N * E];
    unsigned seed = 7;
    for (size_t e = 0; e < E; e++) {
        for (size_t i = 0; i < N; i++)
            keys[e * N + i] = 500 + i;
        for (size_t i = N - 1; i > 0; i--) {
            seed = seed * 1103515245u + 12345u;
            size_t j = (seed >> 8) % (i + 1);
            uint64_t t = keys[e * N + i];
            keys[e * N + i] = keys[e * N + j];
            keys[e * N + j] = t;
        }
    }
    future *f = plan(keys, N * E);
    for (size_t pos = 0; pos < N * E; pos++) {
        for (uint64_t k = 500; k < 500 + N; k++)
            assert_true(future_next_use(f, k) == brute_next(keys, N * E, pos, k));
        assert_true(future_consume(f, keys[pos]));
        assert_int_equal(future_position(f), pos + 1);
    }
    future_unref(f);
}

static void key_outside_plan_changes_nothing(void **state)
{
    (void)state;
    const uint64_t keys[] = {1, 2, 3};
    future *f = plan(keys, 3);
    assert_false(future_contains(f, 99));
    assert_true(future_contains(f, 2));
    assert_false(future_consume(f, 99));
    assert_int_equal(future_position(f), 0);
    assert_true(future_next_use(f, 99) == FUTURE_NEVER);
    assert_int_equal(future_next_use(f, 2), 1);
    future_unref(f);
}

static void append_after_seal_is_refused(void **state)
{
    (void)state;
    const uint64_t keys[] = {1};
    future *f = plan(keys, 1);
    assert_int_equal(future_append(f, 2), SC_EINVAL);
    assert_int_equal(future_length(f), 1);
    assert_int_equal(future_seal(f), SC_OK);
    future_unref(f);
}

static void unsealed_future_consumes_nothing(void **state)
{
    (void)state;
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    assert_int_equal(future_append(f, 1), SC_OK);
    assert_false(future_consume(f, 1));
    assert_true(future_next_use(f, 1) == FUTURE_NEVER);
    assert_false(future_contains(f, 1));
    future_unref(f);
}

static void last_unref_frees(void **state)
{
    (void)state;
    const uint64_t keys[] = {1, 2};
    future *f = plan(keys, 2);
    future_ref(f);
    future_unref(f);
    assert_true(future_consume(f, 1)); /* still alive: one reference left */
    future_unref(f);                   /* ASan reports a leak if this did not free */
    future_unref(NULL);
}

enum { T_THREADS = 4, T_KEYS = 4000, T_EPOCHS = 3 };

struct worker {
    future *f;
    pthread_barrier_t *epoch_end;
    unsigned id;
    unsigned consumed;
};

/* Reads the keys congruent to id, epoch after epoch, as one loader worker of a trainer. */
static void *consume_share(void *arg)
{
    struct worker *w = arg;
    future_ref(w->f);
    for (unsigned e = 0; e < T_EPOCHS; e++) {
        for (unsigned k = w->id; k < T_KEYS; k += T_THREADS) {
            (void)future_next_use(w->f, k);
            w->consumed += future_consume(w->f, k);
        }
        pthread_barrier_wait(w->epoch_end);
    }
    future_unref(w->f);
    return NULL;
}

static void threads_consume_every_occurrence_once(void **state)
{
    (void)state;
    uint64_t *keys = malloc(T_KEYS * T_EPOCHS * sizeof(*keys));
    assert_non_null(keys);
    for (size_t i = 0; i < T_KEYS * T_EPOCHS; i++)
        keys[i] = i % T_KEYS;
    future *f = plan(keys, T_KEYS * T_EPOCHS);
    free(keys);
    pthread_t th[T_THREADS];
    struct worker w[T_THREADS];
    pthread_barrier_t epoch_end;
    assert_int_equal(pthread_barrier_init(&epoch_end, NULL, T_THREADS), 0);
    for (unsigned t = 0; t < T_THREADS; t++) {
        w[t] = (struct worker){.f = f, .epoch_end = &epoch_end, .id = t};
        assert_int_equal(pthread_create(&th[t], NULL, consume_share, &w[t]), 0);
    }
    unsigned total = 0;
    for (unsigned t = 0; t < T_THREADS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        total += w[t].consumed;
    }
    pthread_barrier_destroy(&epoch_end);
    /* Workers meet at each epoch's end, so none lags more than an epoch (< the slack). */
    assert_int_equal(total, T_KEYS * T_EPOCHS);
    assert_int_equal(future_position(f), T_KEYS * T_EPOCHS);
    for (uint64_t k = 0; k < T_KEYS; k++)
        assert_true(future_next_use(f, k) == FUTURE_NEVER);
    future_unref(f);
}

static void a_blocks_next_use_is_its_own_or_its_objects(void **state)
{
    (void)state;
    uint64_t k = sc_key_hash("b00", "tokens.bin"), other = sc_key_hash("b00", "x");
    const uint64_t keys[] = {sc_block_key_hash(k, 3), other, k, sc_block_key_hash(k, 0),
                             sc_block_key_hash(k, 3)};
    future *f = plan(keys, 5);
    assert_int_equal(future_next_use_block(f, k, 3), 0); /* its block, before the object */
    assert_int_equal(future_next_use_block(f, k, 1), 2); /* no own entry: the object's */
    assert_int_equal(future_next_use_block(f, k, 0), 2); /* the object, before block 0 */
    assert_true(future_next_use_block(f, other, 0) == 1);
    assert_true(future_next_use_block(f, sc_key_hash("b00", "y"), 0) == FUTURE_NEVER);
    assert_true(future_consume(f, sc_block_key_hash(k, 3)));
    assert_true(future_consume(f, other));
    assert_true(future_consume(f, k));
    assert_int_equal(future_next_use_block(f, k, 3), 4);
    assert_int_equal(future_next_use_block(f, k, 0), 3);
    assert_true(future_next_use_block(f, k, 1) == FUTURE_NEVER);
    future_unref(f);
}

/* A plan of n ranks lets each lag its own FUTURE_SLACK: n times the slack in positions. */
static void slack_is_set_per_future(void **state)
{
    (void)state;
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    future_slack_to(f, 2);
    for (uint64_t k = 1; k <= 8; k++)
        assert_int_equal(future_append(f, k), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    future_slack_to(f, 100);                            /* sealed: no effect */
    assert_true(future_consume(f, 6));                  /* position 6 */
    assert_int_equal(future_next_use(f, 5), 4);         /* at 4: 4 + 2 >= 6, may still be read */
    assert_true(future_next_use(f, 4) == FUTURE_NEVER); /* at 3: 3 + 2 < 6, skipped */
    future_unref(f);
}

static void start_at_resumes_with_the_slack_behind(void **state)
{
    (void)state;
    uint64_t keys[FUTURE_SLACK + 20];
    for (uint64_t i = 0; i < FUTURE_SLACK + 20; i++)
        keys[i] = i % (FUTURE_SLACK + 10); /* keys 0..9 come again at the end */
    future *f = plan(keys, FUTURE_SLACK + 20);
    future_start_at(f, FUTURE_SLACK + 5);
    assert_int_equal(future_position(f), FUTURE_SLACK + 5);
    assert_int_equal(future_next_use(f, 5), 5);                 /* within the slack behind */
    assert_int_equal(future_next_use(f, 4), FUTURE_SLACK + 14); /* skipped: its next one */
    assert_int_equal(future_next_use(f, 3), FUTURE_SLACK + 13);
    future_start_at(f, UINT64_MAX);
    assert_int_equal(future_position(f), FUTURE_SLACK + 20);
    future_unref(f);
}

/* A plan built again: what the old one had read stays read, so a read of an item read before
 * the rebuild is not taken for its next occurrence. */
static void start_like_keeps_what_was_read(void **state)
{
    (void)state;
    const uint64_t old_keys[] = {1, 2, 3, 4, 1, 2, 3, 4}, new_keys[] = {1, 2, 3, 4, 3, 4, 1, 2};
    future *old = plan(old_keys, 8), *f = plan(new_keys, 8);
    for (uint64_t k = 1; k <= 4; k++)
        assert_true(future_consume(old, k)); /* epoch 1 read: position 4 */
    future_start_like(f, old, 4);
    assert_int_equal(future_position(f), 4);
    assert_int_equal(future_next_use(f, 1), 6); /* its epoch-2 read, not the one done */
    assert_int_equal(future_next_use(f, 3), 4);
    assert_true(future_consume(f, 3));
    assert_int_equal(future_position(f), 5);
    future_unref(old);
    future_unref(f);

    /* with start_at alone the read of epoch 1 would still be open within the slack */
    f = plan(new_keys, 8);
    future_start_at(f, 4);
    assert_int_equal(future_next_use(f, 1), 0);
    future_unref(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_plan_knows_nothing),
        cmocka_unit_test(next_use_walks_a_keys_occurrences),
        cmocka_unit_test(out_of_order_access_consumes_earlier_occurrence),
        cmocka_unit_test(occurrence_beyond_slack_counts_as_skipped),
        cmocka_unit_test(skipped_only_occurrence_is_never_used),
        cmocka_unit_test(repeated_keys_over_epochs_follow_the_plan),
        cmocka_unit_test(key_outside_plan_changes_nothing),
        cmocka_unit_test(append_after_seal_is_refused),
        cmocka_unit_test(unsealed_future_consumes_nothing),
        cmocka_unit_test(last_unref_frees),
        cmocka_unit_test(threads_consume_every_occurrence_once),
        cmocka_unit_test(a_blocks_next_use_is_its_own_or_its_objects),
        cmocka_unit_test(slack_is_set_per_future),
        cmocka_unit_test(start_at_resumes_with_the_slack_behind),
        cmocka_unit_test(start_like_keeps_what_was_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
