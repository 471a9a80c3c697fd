/* test_future_set.c - the futures of several jobs merged by their read rates (future_set.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../policy/future_set.h"

/* A sealed future of keys 1..n in order. */
static future *keys_in_order(uint64_t first, uint64_t n)
{
    future *f = NULL;
    assert_int_equal(future_new(&f), SC_OK);
    for (uint64_t k = first; k < first + n; k++)
        assert_int_equal(future_append(f, k), SC_OK);
    assert_int_equal(future_seal(f), SC_OK);
    return f;
}

static void one_future_is_that_future(void **state)
{
    (void)state;
    future *f = keys_in_order(1, 10);
    future_set *s = NULL;
    assert_int_equal(future_set_new(&f, 1, &s), SC_OK);
    future_set_rate(s, 0, 123.0);
    assert_true(future_consume(f, 3));
    assert_int_equal(future_set_position(s), 3);
    assert_int_equal(future_set_next_use_block(s, 7, 0), 6);
    assert_true(future_set_next_use_block(s, 99, 0) == FUTURE_NEVER);
    assert_int_equal(future_set_count(s), 1);
    assert_ptr_equal(future_set_at(s, 0), f);
    future_unref(f);
    future_set_unref(s); /* the set kept its own reference */
}

static void a_faster_job_needs_its_keys_sooner(void **state)
{
    (void)state;
    future *f[2] = {keys_in_order(100, 100), keys_in_order(200, 100)};
    future_set *s = NULL;
    assert_int_equal(future_set_new(f, 2, &s), SC_OK);
    /* rates unknown: alike, so position 10 of either is equally far */
    assert_int_equal(future_set_next_use_block(s, 110, 0), future_set_next_use_block(s, 210, 0));
    future_set_rate(s, 0, 100.0); /* job 0 reads 100/s, job 1 10/s */
    future_set_rate(s, 1, 10.0);
    /* job 0's 20th read comes in 0.2 s, job 1's 5th in 0.5 s: merged at 110/s */
    assert_int_equal(future_set_next_use_block(s, 120, 0), 22);
    assert_int_equal(future_set_next_use_block(s, 205, 0), 55);
    assert_true(future_consume(f[1], 200)); /* merged position 1 */
    assert_int_equal(future_set_position(s), 1);
    assert_int_equal(future_set_next_use_block(s, 205, 0), 1 + 44);
    future_set_rate(s, 1, 0); /* unknown again: the mean of the known, 100/s */
    assert_int_equal(future_set_next_use_block(s, 205, 0), 1 + 8);
    assert_true(future_set_next_use_block(s, 999, 0) == FUTURE_NEVER);
    future_unref(f[0]);
    future_unref(f[1]);
    future_set_unref(s);
}

static void a_key_of_both_jobs_is_due_at_the_sooner(void **state)
{
    (void)state;
    future *f[2] = {keys_in_order(1, 50), keys_in_order(41, 50)}; /* key 45: 44th or 4th */
    future_set *s = NULL;
    assert_int_equal(future_set_new(f, 2, &s), SC_OK);
    assert_int_equal(future_set_next_use_block(s, 45, 0), 8); /* 4 reads of job 1, at 2 x rate */
    future_unref(f[0]);
    future_unref(f[1]);
    future_set_unref(s);
    assert_int_equal(future_set_new(f, 0, &s), SC_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_future_is_that_future),
        cmocka_unit_test(a_faster_job_needs_its_keys_sooner),
        cmocka_unit_test(a_key_of_both_jobs_is_due_at_the_sooner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
