/*
 * test_store_readers.c - what reading threads share (store/store_readers.c): hits buffered
 * per thread for the policy, and read transactions parked per thread.
 */
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../../policy/policy.h"
#include "../../store/store.h"

#define THREADS 4
#define READS   1000 /* per thread: more than a buffer holds, fewer than a multiple of it */

/* ---- a policy that counts what it is told ------------------------------------------- */

struct counting {
    pthread_mutex_t mu; /* the test thread reads while others may call in */
    uint64_t hits;
    uint64_t hits_at_hint; /* hits when the last hint came */
    bool in_hint;          /* a hint is running (the store's policy lock is held) */
    pthread_cond_t cv;
    store *st;          /* for block_in_hint */
    bool block_in_hint; /* the hint waits until another thread has read an object */
    bool read_during_hint;
    pthread_t reader; /* that thread, joined by the test once the hint is over */
    bool started;
};

static struct counting counting;

static sc_code c_init(uint64_t capacity, void **state)
{
    *state = &counting;
    return SC_OK;
}

static sc_code c_insert(void *state, const struct policy_obj *obj)
{
    return SC_OK;
}

static void c_hit(void *state, uint64_t id)
{
    pthread_mutex_lock(&counting.mu);
    counting.hits++;
    pthread_mutex_unlock(&counting.mu);
}

static void c_remove(void *state, uint64_t id)
{
}

static bool c_victim(void *state, uint64_t *id)
{
    return false;
}

static void *read_one(void *arg)
{
    store_obj *o = NULL;
    if (store_obj_open(counting.st, "bkt", "k0", &o) == SC_OK) {
        store_obj_close(o);
        pthread_mutex_lock(&counting.mu);
        counting.read_during_hint = counting.in_hint;
        pthread_cond_broadcast(&counting.cv);
        pthread_mutex_unlock(&counting.mu);
    }
    return NULL;
}

/* With block_in_hint, waits (a bounded time: a failing test must not hang) for a read made on
 * another thread while the store holds its policy lock for this call. */
static sc_code c_hint(void *state, const struct policy_hint *h)
{
    pthread_mutex_lock(&counting.mu);
    counting.hits_at_hint = counting.hits;
    counting.in_hint = true;
    if (counting.block_in_hint) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        counting.started = pthread_create(&counting.reader, NULL, read_one, NULL) == 0;
        while (counting.started && !counting.read_during_hint &&
               pthread_cond_timedwait(&counting.cv, &counting.mu, &until) == 0)
            ;
    }
    counting.in_hint = false;
    pthread_mutex_unlock(&counting.mu);
    return SC_OK;
}

static void c_free(void *state)
{
}

static const struct policy_ops counting_policy = {
    .name = "counting",
    .init = c_init,
    .on_insert = c_insert,
    .on_hit = c_hit,
    .on_remove = c_remove,
    .pick_victim = c_victim,
    .hint = c_hint,
    .free = c_free,
};

/* ---- fixture -------------------------------------------------------------------------- */

#include "store_fixture.h"

static int setup(void **state)
{
    memset(&counting, 0, sizeof(counting));
    pthread_mutex_init(&counting.mu, NULL);
    pthread_cond_init(&counting.cv, NULL);
    fixture_setup(state, "readers",
                  (struct store_config){.capacity_bytes = 1 << 20,
                                        .verify_checksums = true,
                                        .max_readers = 256, /* 64 parked transactions at most */
                                        .policy = &counting_policy});
    counting.st = ((struct fixture *)*state)->st;
    return 0;
}

static int teardown(void **state)
{
    fixture_teardown(state);
    pthread_mutex_destroy(&counting.mu);
    pthread_cond_destroy(&counting.cv);
    return 0;
}

static void put(store *st, const char *key)
{
    static const char body[] = "0123456789";
    assert_int_equal(store_put(st, "bkt", key, NULL, 0, body, 10, NULL, NULL), SC_OK);
    store_flush(st);
}

static bool is_cached(store *st, const char *key)
{
    store_obj *o = NULL;
    sc_code rc = store_obj_open(st, "bkt", key, &o);
    store_obj_close(o);
    return rc == SC_OK;
}

/* ---- hits ----------------------------------------------------------------------------- */

static void *read_many(void *arg)
{
    store *st = arg;
    for (int i = 0; i < READS; i++) {
        store_obj *o = NULL;
        if (store_obj_open(st, "bkt", "k0", &o) == SC_OK)
            store_obj_close(o);
    }
    return NULL;
}

/* No hit is lost in the buffers: the policy has them all before a later hint. */
static void hits_on_many_threads_all_reach_the_policy_before_a_hint(void **state)
{
    struct fixture *f = *state;
    pthread_t t[THREADS];
    put(f->st, "k0");
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, read_many, f->st), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    struct policy_hint h = {.kind = POLICY_HINT_SCORE, .khash = 1, .score = 1};
    assert_int_equal(store_hint(f->st, &h), SC_OK);
    assert_int_equal(counting.hits_at_hint, (uint64_t)THREADS * READS);
}

/* A read does not wait for the policy: it completes while another thread holds the store's
 * policy lock (here, in a hint that waits for it). Before, each hit took that lock. */
static void a_read_does_not_wait_for_the_policy_lock(void **state)
{
    struct fixture *f = *state;
    put(f->st, "k0");
    counting.block_in_hint = true;
    struct policy_hint h = {.kind = POLICY_HINT_SCORE, .khash = 1, .score = 1};
    assert_int_equal(store_hint(f->st, &h), SC_OK);
    assert_true(counting.started);
    pthread_join(counting.reader, NULL); /* it may have waited for the hint to end */
    assert_true(counting.read_during_hint);
}

/* ---- parked read transactions --------------------------------------------------------- */

/* A view opened after a write sees it, though its transaction was parked before the write. */
static void a_renewed_transaction_sees_later_writes(void **state)
{
    struct fixture *f = *state;
    put(f->st, "k0");
    assert_true(is_cached(f->st, "k0")); /* its transaction is parked on close */
    assert_false(is_cached(f->st, "k1"));
    put(f->st, "k1");
    assert_true(is_cached(f->st, "k1"));
    assert_int_equal(store_remove(f->st, "bkt", "k0"), SC_OK);
    assert_false(is_cached(f->st, "k0"));
}

static void *open_close_once(void *arg)
{
    (void)is_cached(arg, "k0");
    return NULL;
}

/* Opens views until the reader table is full; returns how many opened, and closes them. */
static size_t views_that_fit(store *st)
{
    enum { MAX_VIEWS = 1000 };
    store_obj **views = calloc(MAX_VIEWS, sizeof(*views));
    assert_non_null(views);
    size_t n = 0;
    while (n < MAX_VIEWS && store_obj_open(st, "bkt", "k0", &views[n]) == SC_OK)
        n++;
    for (size_t i = 0; i < n; i++)
        store_obj_close(views[i]);
    free(views);
    return n;
}

/* Transactions parked by threads hold reader slots; a full table frees them for new views. */
static void parked_transactions_never_cost_a_view(void **state)
{
    struct fixture *f = *state;
    put(f->st, "k0");
    size_t before = views_that_fit(f->st);
    for (int i = 0; i < 64; i++) { /* each thread parks its transaction in its own slot */
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, open_close_once, f->st), 0);
        pthread_join(t, NULL);
    }
    assert_int_equal(views_that_fit(f->st), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(hits_on_many_threads_all_reach_the_policy_before_a_hint,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_read_does_not_wait_for_the_policy_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(a_renewed_transaction_sees_later_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(parked_transactions_never_cost_a_view, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
