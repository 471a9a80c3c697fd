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

static void ranges_where_the_last_ended_count_up(void **state)
{
    struct gw_readahead *ra = *state;
    assert_int_equal(gw_readahead_note(ra, "b", "shard", 0, 8 << 20), 0);
    assert_int_equal(gw_readahead_note(ra, "b", "shard", 8 << 20, 16 << 20), 1);
    assert_int_equal(gw_readahead_note(ra, "b", "shard", 16 << 20, 17 << 20), 2);
    assert_int_equal(gw_readahead_note(ra, "b", "shard", 17 << 20, 20 << 20), 3);
}

/* A random reader's range that happens to start where the last one ended counts 1, below
 * GW_READAHEAD_RUN: no read-ahead for one coincidence. */
static void one_coincidence_is_not_a_sequential_reader(void **state)
{
    struct gw_readahead *ra = *state;
    assert_int_equal(gw_readahead_note(ra, "b", "k", 40 << 20, 48 << 20), 0);
    assert_int_equal(gw_readahead_note(ra, "b", "k", 48 << 20, 56 << 20), 1);
    assert_true(1 < GW_READAHEAD_RUN);
    assert_int_equal(gw_readahead_note(ra, "b", "k", 8 << 20, 16 << 20), 0);
}

static void a_jump_or_a_repeat_starts_over(void **state)
{
    struct gw_readahead *ra = *state;
    assert_int_equal(gw_readahead_note(ra, "b", "k", 0, 100), 0);
    assert_int_equal(gw_readahead_note(ra, "b", "k", 100, 200), 1);
    assert_int_equal(gw_readahead_note(ra, "b", "k", 300, 400), 0); /* a jump ahead */
    assert_int_equal(gw_readahead_note(ra, "b", "k", 300, 400), 0); /* the same range again */
    assert_int_equal(gw_readahead_note(ra, "b", "k", 400, 500), 1);
    assert_int_equal(gw_readahead_note(ra, "b", "k", 0, 100), 0); /* back to the start */
}

static void the_count_stops_at_its_max(void **state)
{
    struct gw_readahead *ra = *state;
    unsigned last = 0;
    for (uint64_t i = 0; i < GW_READAHEAD_RUN_MAX + 10; i++)
        last = gw_readahead_note(ra, "b", "long", i * 10, i * 10 + 10);
    assert_int_equal(last, GW_READAHEAD_RUN_MAX);
}

static void objects_are_told_apart(void **state)
{
    struct gw_readahead *ra = *state;
    assert_int_equal(gw_readahead_note(ra, "b", "one", 0, 100), 0);
    assert_int_equal(gw_readahead_note(ra, "b", "two", 100, 200), 0); /* where "one" ended */
    assert_int_equal(gw_readahead_note(ra, "c", "one", 100, 200), 0); /* another bucket */
    assert_int_equal(gw_readahead_note(ra, "b", "one", 100, 200), 1);
}

/* A range from 0 follows nothing, even where an empty range "ended" at 0. */
static void the_start_of_an_object_is_never_sequential(void **state)
{
    struct gw_readahead *ra = *state;
    assert_int_equal(gw_readahead_note(ra, "b", "z", 0, 0), 0);
    assert_int_equal(gw_readahead_note(ra, "b", "z", 0, 10), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ranges_where_the_last_ended_count_up, setup, teardown),
        cmocka_unit_test_setup_teardown(one_coincidence_is_not_a_sequential_reader, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_jump_or_a_repeat_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(the_count_stops_at_its_max, setup, teardown),
        cmocka_unit_test_setup_teardown(objects_are_told_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(the_start_of_an_object_is_never_sequential, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
