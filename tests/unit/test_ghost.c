/* test_ghost.c - the fixed-size set of names seen lately (--fleet-copy hot). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../common/hash.h"
#include "../../upstream/ghost.h"

static void a_name_is_seen_the_second_time_within_the_window(void **state)
{
    ghost_set *g = NULL;
    assert_int_equal(ghost_set_new(64, 10.0, &g), SC_OK);
    uint64_t name = sc_key_hash("bucket", "key");
    assert_false(ghost_seen(g, name, 100.0));
    assert_true(ghost_seen(g, name, 105.0));
    assert_true(ghost_seen(g, name, 115.0)); /* 10 s after the last sighting */
    assert_false(ghost_seen(g, sc_key_hash("bucket", "other"), 115.0));
    ghost_set_free(g);
}

static void a_name_seen_too_long_ago_starts_over(void **state)
{
    ghost_set *g = NULL;
    assert_int_equal(ghost_set_new(64, 10.0, &g), SC_OK);
    assert_false(ghost_seen(g, 42, 0.0));
    assert_false(ghost_seen(g, 42, 10.5)); /* past the window: a first sighting again */
    assert_true(ghost_seen(g, 42, 11.0));
    ghost_set_free(g);
}

static void the_set_forgets_the_oldest_and_stays_its_size(void **state)
{
    ghost_set *g = NULL;
    assert_int_equal(ghost_set_new(GHOST_WAYS, 1e9, &g), SC_OK); /* one set of GHOST_WAYS */
    for (uint64_t n = 1; n <= GHOST_WAYS; n++)
        assert_false(ghost_seen(g, n, (double)n));
    for (uint64_t n = 1; n <= GHOST_WAYS; n++)
        assert_true(ghost_seen(g, n, 10.0 + (double)n)); /* all remembered, refreshed */
    assert_false(ghost_seen(g, 1000, 100.0));            /* evicts the oldest: name 1 */
    assert_false(ghost_seen(g, 1, 101.0));               /* forgotten (evicts name 2) */
    assert_true(ghost_seen(g, GHOST_WAYS, 102.0));       /* the youngest stayed */
    ghost_set_free(g);
}

static void many_names_are_remembered_up_to_about_the_capacity(void **state)
{
    ghost_set *g = NULL;
    enum { CAP = 4096 };
    assert_int_equal(ghost_set_new(CAP, 1e9, &g), SC_OK);
    for (uint32_t i = 0; i < CAP / 4; i++)
        assert_false(ghost_seen(g, sc_block_key_hash(7, i), (double)i));
    unsigned remembered = 0;
    for (uint32_t i = 0; i < CAP / 4; i++)
        remembered += ghost_seen(g, sc_block_key_hash(7, i), (double)(CAP + i));
    ghost_set_free(g);
    assert_true(remembered >= CAP / 4 * 95 / 100); /* a few sets overflow (1003 of 1024) */
}

static void a_set_needs_room_and_a_window(void **state)
{
    ghost_set *g = NULL;
    assert_int_equal(ghost_set_new(0, 10.0, &g), SC_EINVAL);
    assert_int_equal(ghost_set_new(16, 0.0, &g), SC_EINVAL);
    assert_int_equal(ghost_set_new(16, -1.0, &g), SC_EINVAL);
    ghost_set_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_name_is_seen_the_second_time_within_the_window),
        cmocka_unit_test(a_name_seen_too_long_ago_starts_over),
        cmocka_unit_test(the_set_forgets_the_oldest_and_stays_its_size),
        cmocka_unit_test(many_names_are_remembered_up_to_about_the_capacity),
        cmocka_unit_test(a_set_needs_room_and_a_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
