/*
 * test_trainsim_barrier.c - the step barrier of the emulator's ranks
 * (tools/trainsim/barrier.c): two ranks of one job, opened in one process on one
 * file, pass only together; a rank that ends stops holding the others; a file of
 * another job or of an earlier run is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../tools/trainsim/trainsim.h"

/* A path in a fresh directory; the caller removes both. */
static void fresh_path(char dir[64], char path[96])
{
    snprintf(dir, 64, "/tmp/ts-barrier-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, 96, "%s/steps", dir);
}

static ts_barrier *open_rank(const char *path, uint32_t world, uint32_t rank)
{
    const struct ts_split s = {.world_size = world, .rank = rank};
    ts_barrier *b = NULL;
    assert_int_equal(ts_barrier_open(path, &s, &b), SC_OK);
    assert_non_null(b);
    return b;
}

static void ranks_pass_each_step_only_together(void **state)
{
    (void)state;
    char dir[64], path[96];
    fresh_path(dir, path);
    ts_barrier *r0 = open_rank(path, 2, 0), *r1 = open_rank(path, 2, 1);
    assert_true(ts_barrier_passed(r0)); /* nobody has arrived yet */
    ts_barrier_arrive(r0);
    assert_false(ts_barrier_passed(r0));                   /* rank 1 is still computing step 1 */
    assert_true(ts_barrier_passed(r1));                    /* rank 1 is behind: nothing holds it */
    assert_int_equal(ts_barrier_sync(r0, 5), SC_ETIMEOUT); /* step 2: rank 1 not there yet */
    ts_barrier_arrive(r1);
    assert_false(ts_barrier_passed(r0)); /* rank 0 is at step 2, rank 1 at 1 */
    assert_int_equal(ts_barrier_sync(r1, 1000), SC_OK);
    assert_true(ts_barrier_passed(r0) && ts_barrier_passed(r1));
    /* rank 1 ends: rank 0 waits for it no more */
    ts_barrier_close(r1);
    for (int k = 0; k < 3; k++)
        assert_int_equal(ts_barrier_sync(r0, 1000), SC_OK);
    ts_barrier_close(r0);
    unlink(path);
    rmdir(dir);
}

static void a_file_of_another_job_or_run_is_refused(void **state)
{
    (void)state;
    char dir[64], path[96];
    fresh_path(dir, path);
    ts_barrier *r0 = open_rank(path, 4, 0);
    ts_barrier *b = r0; /* an open that fails sets it to NULL */
    const struct ts_split eight = {.world_size = 8, .rank = 0};
    assert_int_equal(ts_barrier_open(path, &eight, &b), SC_EINVAL); /* another job's size */
    assert_null(b);
    ts_barrier_arrive(r0);
    const struct ts_split again = {.world_size = 4, .rank = 0};
    assert_int_equal(ts_barrier_open(path, &again, &b), SC_EINVAL); /* rank 0 already ran */
    assert_null(b);
    ts_barrier_close(r0);
    const struct ts_split other = {.world_size = 4, .rank = 2};
    assert_int_equal(ts_barrier_open(path, &other, &b), SC_OK); /* rank 2 has not */
    ts_barrier_close(b);
    unlink(path);
    assert_int_equal(ts_barrier_open("/nonexistent/dir/steps", &other, &b), SC_EIO);
    assert_null(b);
    ts_barrier_close(NULL);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranks_pass_each_step_only_together),
        cmocka_unit_test(a_file_of_another_job_or_run_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
