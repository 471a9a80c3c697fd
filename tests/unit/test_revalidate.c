/* test_revalidate.c - what an upstream's answer to a revalidation means for the cached copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gateway/revalidate.h"

static struct reval answer(const char *cached, sc_code rc, long status, const char *got)
{
    struct reval rv = {.result = rc, .status = status};
    strcpy(rv.etag, cached);
    strcpy(rv.got_etag, got);
    return rv;
}

static void not_modified_is_fresh(void **state)
{
    struct reval rv = answer("\"abc\"", SC_OK, 304, "");
    assert_int_equal(gw_reval_outcome(&rv), REVAL_FRESH);
}

static void ok_with_same_etag_is_fresh(void **state)
{
    struct reval rv = answer("\"abc\"", SC_OK, 200, "\"abc\"");
    assert_int_equal(gw_reval_outcome(&rv), REVAL_FRESH);
}

static void ok_with_other_etag_is_changed(void **state)
{
    struct reval rv = answer("\"abc\"", SC_OK, 200, "\"abd\"");
    assert_int_equal(gw_reval_outcome(&rv), REVAL_CHANGED);
}

static void ok_when_nothing_was_cached_to_compare_is_changed(void **state)
{
    struct reval rv = answer("", SC_OK, 200, "");
    assert_int_equal(gw_reval_outcome(&rv), REVAL_CHANGED);
}

static void not_found_and_forbidden_are_changed(void **state)
{
    struct reval gone = answer("\"abc\"", SC_OK, 404, "");
    struct reval denied = answer("\"abc\"", SC_OK, 403, "");
    assert_int_equal(gw_reval_outcome(&gone), REVAL_CHANGED);
    assert_int_equal(gw_reval_outcome(&denied), REVAL_CHANGED);
}

static void server_errors_and_no_answer_keep_the_stale_copy(void **state)
{
    struct reval slow = answer("\"abc\"", SC_OK, 503, "");
    struct reval down = answer("\"abc\"", SC_EUPSTREAM, 0, "");
    struct reval timeout = answer("\"abc\"", SC_ETIMEOUT, 200, "\"abc\"");
    assert_int_equal(gw_reval_outcome(&slow), REVAL_UNREACHABLE);
    assert_int_equal(gw_reval_outcome(&down), REVAL_UNREACHABLE);
    assert_int_equal(gw_reval_outcome(&timeout), REVAL_UNREACHABLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(not_modified_is_fresh),
        cmocka_unit_test(ok_with_same_etag_is_fresh),
        cmocka_unit_test(ok_with_other_etag_is_changed),
        cmocka_unit_test(ok_when_nothing_was_cached_to_compare_is_changed),
        cmocka_unit_test(not_found_and_forbidden_are_changed),
        cmocka_unit_test(server_errors_and_no_answer_keep_the_stale_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
