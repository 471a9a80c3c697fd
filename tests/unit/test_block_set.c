/*
 * test_block_set.c - the set of blocks a prefetch walk charged (manifest/block_set.h): entries
 * are found as put, marked fetching, kept when it grows, and gone after a clear.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../manifest/block_set.h"

static void an_empty_set_holds_nothing(void **state)
{
    (void)state;
    block_set s = {0};
    assert_int_equal(block_set_get(&s, 1, 0), BLOCK_SET_ABSENT);
    block_set_clear(&s);
    assert_int_equal(block_set_get(&s, 1, 0), BLOCK_SET_ABSENT);
    block_set_free(&s);
}

static void entries_are_found_as_put_and_fetching_sticks(void **state)
{
    (void)state;
    block_set s = {0};
    assert_int_equal(block_set_put(&s, 7, 3, false), SC_OK);
    assert_int_equal(block_set_put(&s, 7, BLOCK_SET_WHOLE, true), SC_OK);
    assert_int_equal(block_set_get(&s, 7, 3), BLOCK_SET_CHARGED);
    assert_int_equal(block_set_get(&s, 7, BLOCK_SET_WHOLE), BLOCK_SET_FETCHING);
    assert_int_equal(block_set_get(&s, 7, 4), BLOCK_SET_ABSENT);
    assert_int_equal(block_set_get(&s, 8, 3), BLOCK_SET_ABSENT);
    assert_int_equal(block_set_put(&s, 7, 3, true), SC_OK);
    assert_int_equal(block_set_put(&s, 7, 3, false), SC_OK); /* stays fetching */
    assert_int_equal(block_set_get(&s, 7, 3), BLOCK_SET_FETCHING);
    assert_int_equal(s.n, 2);
    block_set_free(&s);
}

static void growing_keeps_entries_and_a_clear_drops_them(void **state)
{
    (void)state;
    block_set s = {0};
    for (int round = 0; round < 3; round++) {
        for (uint32_t b = 0; b < 5000; b++)
            assert_int_equal(block_set_put(&s, 42 + round, b, b % 2 == 0), SC_OK);
        assert_int_equal(s.n, 5000);
        for (uint32_t b = 0; b < 5000; b++)
            assert_int_equal(block_set_get(&s, 42 + round, b),
                             b % 2 == 0 ? BLOCK_SET_FETCHING : BLOCK_SET_CHARGED);
        assert_int_equal(block_set_get(&s, 42 + round, 5000), BLOCK_SET_ABSENT);
        block_set_clear(&s);
        for (uint32_t b = 0; b < 5000; b++)
            assert_int_equal(block_set_get(&s, 42 + round, b), BLOCK_SET_ABSENT);
    }
    block_set_free(&s);
}

static void a_wrapped_generation_forgets_old_entries(void **state)
{
    (void)state;
    block_set s = {0};
    assert_int_equal(block_set_put(&s, 1, 1, false), SC_OK); /* generation 1 */
    s.gen = UINT32_MAX;                                      /* as after 2^32 - 2 clears */
    block_set_clear(&s);                                     /* wraps to 1 */
    assert_int_equal(s.gen, 1);
    assert_int_equal(block_set_get(&s, 1, 1), BLOCK_SET_ABSENT);
    block_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_set_holds_nothing),
        cmocka_unit_test(entries_are_found_as_put_and_fetching_sticks),
        cmocka_unit_test(growing_keeps_entries_and_a_clear_drops_them),
        cmocka_unit_test(a_wrapped_generation_forgets_old_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
