/* test_revalidate.c - what an upstream's answer to a revalidation means for the cached copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gateway/revalidate.h"

/* The outcome for a copy cached with ETag cached, of an answer rc / status / ETag got. */
static enum reval_outcome outcome(const char *cached, sc_code rc, long status, const char *got)
{
    struct gw_ask answer = {.result = rc, .status = status};
    strcpy(answer.etag, got);
    return gw_reval_outcome(cached, &answer);
}

static void not_modified_is_fresh(void **state)
{
    enum reval_outcome rv = outcome("\"abc\"", SC_OK, 304, "");
    assert_int_equal(rv, REVAL_FRESH);
}

static void ok_with_same_etag_is_fresh(void **state)
{
    enum reval_outcome rv = outcome("\"abc\"", SC_OK, 200, "\"abc\"");
    assert_int_equal(rv, REVAL_FRESH);
}

static void ok_with_other_etag_is_changed(void **state)
{
    enum reval_outcome rv = outcome("\"abc\"", SC_OK, 200, "\"abd\"");
    assert_int_equal(rv, REVAL_CHANGED);
}

static void ok_when_nothing_was_cached_to_compare_is_changed(void **state)
{
    enum reval_outcome rv = outcome("", SC_OK, 200, "");
    assert_int_equal(rv, REVAL_CHANGED);
}

static void not_found_and_forbidden_are_changed(void **state)
{
    enum reval_outcome gone = outcome("\"abc\"", SC_OK, 404, "");
    enum reval_outcome denied = outcome("\"abc\"", SC_OK, 403, "");
    assert_int_equal(gone, REVAL_CHANGED);
    assert_int_equal(denied, REVAL_CHANGED);
}

static void server_errors_and_no_answer_keep_the_stale_copy(void **state)
{
    enum reval_outcome slow = outcome("\"abc\"", SC_OK, 503, "");
    enum reval_outcome down = outcome("\"abc\"", SC_EUPSTREAM, 0, "");
    enum reval_outcome timeout = outcome("\"abc\"", SC_ETIMEOUT, 200, "\"abc\"");
    assert_int_equal(slow, REVAL_UNREACHABLE);
    assert_int_equal(down, REVAL_UNREACHABLE);
    assert_int_equal(timeout, REVAL_UNREACHABLE);
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
