/*
 * test_authz_cache.c - the bounded, expiring table of authorization answers
 * (gateway/authz_cache.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "../../gateway/authz_cache.h"

#define NOW 1000

static void answers_are_remembered_per_identity_bucket_and_key(void **state)
{
    authz_cache *c = NULL;
    assert_int_equal(authz_cache_new(100, 60, &c), SC_OK);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW), AUTHZ_UNKNOWN);
    authz_cache_put(c, "A", "b", "k", true, NOW);
    authz_cache_put(c, "B", "b", "k", false, NOW);
    authz_cache_put(c, "", "b", "k", false, NOW);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW), AUTHZ_ALLOWED);
    assert_int_equal(authz_cache_get(c, "B", "b", "k", NOW), AUTHZ_DENIED);
    assert_int_equal(authz_cache_get(c, "", "b", "k", NOW), AUTHZ_DENIED);
    assert_int_equal(authz_cache_get(c, "A", "b", "k2", NOW), AUTHZ_UNKNOWN);
    assert_int_equal(authz_cache_get(c, "A", "b2", "k", NOW), AUTHZ_UNKNOWN);
    /* The separators keep ("ab", "c") apart from ("a", "bc"). */
    authz_cache_put(c, "x", "ab", "c", true, NOW);
    assert_int_equal(authz_cache_get(c, "x", "a", "bc", NOW), AUTHZ_UNKNOWN);
    assert_int_equal(authz_cache_get(c, "xa", "b", "c", NOW), AUTHZ_UNKNOWN);
    authz_cache_free(c);
}

static void answers_expire_after_the_ttl(void **state)
{
    authz_cache *c = NULL;
    assert_int_equal(authz_cache_new(10, 60, &c), SC_OK);
    authz_cache_put(c, "A", "b", "k", true, NOW);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW + 59), AUTHZ_ALLOWED);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW + 60), AUTHZ_UNKNOWN);
    /* A newer answer replaces the old one. */
    authz_cache_put(c, "A", "b", "k", false, NOW + 30);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW + 31), AUTHZ_DENIED);
    authz_cache_free(c);
}

static void zero_ttl_remembers_nothing(void **state)
{
    authz_cache *c = NULL;
    assert_int_equal(authz_cache_new(10, 0, &c), SC_OK);
    authz_cache_put(c, "A", "b", "k", true, NOW);
    assert_int_equal(authz_cache_get(c, "A", "b", "k", NOW), AUTHZ_UNKNOWN);
    assert_int_equal(authz_cache_count(c, NOW), 0);
    authz_cache_free(c);
}

static void table_never_holds_more_than_its_size(void **state)
{
    authz_cache *c = NULL;
    assert_int_equal(authz_cache_new(64, 3600, &c), SC_OK);
    char key[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        authz_cache_put(c, "A", "b", key, true, NOW);
    }
    assert_true(authz_cache_count(c, NOW) <= 64);
    assert_true(authz_cache_count(c, NOW) > 32); /* both ways of most sets are used */
    /* The latest answer is always there. */
    assert_int_equal(authz_cache_get(c, "A", "b", key, NOW), AUTHZ_ALLOWED);
    authz_cache_free(c);
    assert_int_equal(authz_cache_new(0, 60, &c), SC_EINVAL);
    authz_cache *one = NULL;
    assert_int_equal(authz_cache_new(1, 60, &one), SC_OK);
    authz_cache_free(one);
    authz_cache_free(NULL);
}

/* Each thread answers its own keys (allowed for even ones) and reads them back, while the
 * others do the same: no answer is ever another key's or another thread's. */
static void *answer_and_read_back(void *arg)
{
    authz_cache *c = ((void **)arg)[0];
    const char *who = ((void **)arg)[1];
    for (int round = 0; round < 200; round++) {
        for (int k = 0; k < 16; k++) {
            char key[32];
            snprintf(key, sizeof(key), "k%d", k);
            authz_cache_put(c, who, "b", key, k % 2 == 0, NOW);
            enum authz_answer a = authz_cache_get(c, who, "b", key, NOW);
            if (a != AUTHZ_UNKNOWN && a != (k % 2 == 0 ? AUTHZ_ALLOWED : AUTHZ_DENIED))
                return (void *)1;
        }
    }
    return NULL;
}

static void threads_never_read_each_others_answers(void **state)
{
    authz_cache *c = NULL;
    static const char *const who[4] = {"A", "B", "C", "D"};
    void *args[4][2];
    pthread_t t[4];
    assert_int_equal(authz_cache_new(1024, 60, &c), SC_OK);
    for (int i = 0; i < 4; i++) {
        args[i][0] = c;
        args[i][1] = (void *)who[i];
        assert_int_equal(pthread_create(&t[i], NULL, answer_and_read_back, args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        assert_null(bad);
    }
    assert_true(authz_cache_count(c, NOW) <= 1024);
    authz_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_are_remembered_per_identity_bucket_and_key),
        cmocka_unit_test(answers_expire_after_the_ttl),
        cmocka_unit_test(zero_ttl_remembers_nothing),
        cmocka_unit_test(table_never_holds_more_than_its_size),
        cmocka_unit_test(threads_never_read_each_others_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
