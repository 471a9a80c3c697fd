/* test_readahead.c - which large objects are read range after range (gateway/readahead.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../gateway/readahead.h"

static int setup(void **state)
{
    static struct gw_readahead ra;
    gw_readahead_init(&ra);
    *state = &ra;
    return 0;
}

static int teardown(void **state)
{
    gw_readahead_destroy(*state);
    return 0;
}

static void a_range_where_the_last_ended_is_sequential(void **state)
{
    struct gw_readahead *ra = *state;
    assert_false(gw_readahead_note(ra, "b", "shard", 0, 8 << 20));
    assert_true(gw_readahead_note(ra, "b", "shard", 8 << 20, 16 << 20));
    assert_true(gw_readahead_note(ra, "b", "shard", 16 << 20, 17 << 20));
}

static void a_jump_or_a_repeat_is_not(void **state)
{
    struct gw_readahead *ra = *state;
    assert_false(gw_readahead_note(ra, "b", "k", 0, 100));
    assert_false(gw_readahead_note(ra, "b", "k", 200, 300)); /* a jump ahead */
    assert_false(gw_readahead_note(ra, "b", "k", 200, 300)); /* the same range again */
    assert_true(gw_readahead_note(ra, "b", "k", 300, 400));
    assert_false(gw_readahead_note(ra, "b", "k", 0, 100)); /* back to the start */
}

static void objects_are_told_apart(void **state)
{
    struct gw_readahead *ra = *state;
    assert_false(gw_readahead_note(ra, "b", "one", 0, 100));
    assert_false(gw_readahead_note(ra, "b", "two", 100, 200)); /* where "one" ended */
    assert_false(gw_readahead_note(ra, "c", "one", 100, 200)); /* another bucket */
}

/* A range from 0 follows nothing, even where an empty range "ended" at 0. */
static void the_start_of_an_object_is_never_sequential(void **state)
{
    struct gw_readahead *ra = *state;
    assert_false(gw_readahead_note(ra, "b", "z", 0, 0));
    assert_false(gw_readahead_note(ra, "b", "z", 0, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_range_where_the_last_ended_is_sequential, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_jump_or_a_repeat_is_not, setup, teardown),
        cmocka_unit_test_setup_teardown(objects_are_told_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(the_start_of_an_object_is_never_sequential, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
