/* test_cond.c - conditional request evaluation (proto/cond.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../proto/cond.h"

#define ETAG "\"abc123\""
/* Last-Modified of the test object: Sun, 06 Nov 1994 08:49:37 GMT. */
#define LM      ((time_t)784111777)
#define AT_LM   "Sun, 06 Nov 1994 08:49:37 GMT"
#define BEFORE  "Sun, 06 Nov 1994 08:49:36 GMT"
#define AFTER   "Sun, 06 Nov 1994 08:49:38 GMT"
#define INVALID "not a date"

static enum cond_result eval(const char *im, const char *inm, const char *ims, const char *ius)
{
    struct cond_headers h = {im, inm, ims, ius};
    return cond_evaluate(&h, ETAG, LM, true);
}

static enum cond_result eval_put(const char *im, const char *inm, const char *ims, const char *ius)
{
    struct cond_headers h = {im, inm, ims, ius};
    return cond_evaluate(&h, ETAG, LM, false);
}

static void no_conditions_proceed(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, NULL, NULL), COND_PROCEED);
}

static void if_match_same_etag_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval("\"abc123\"", NULL, NULL, NULL), COND_PROCEED);
}

static void if_match_other_etag_fails_412(void **state)
{
    (void)state;
    assert_int_equal(eval("\"zzz\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
}

static void if_match_star_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval("*", NULL, NULL, NULL), COND_PROCEED);
}

static void if_match_list_matches_any_member(void **state)
{
    (void)state;
    assert_int_equal(eval("\"x\", \"abc123\", \"y\"", NULL, NULL, NULL), COND_PROCEED);
    assert_int_equal(eval("\"x\",\"y\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval(" , ,\"abc123\" ,", NULL, NULL, NULL), COND_PROCEED);
}

static void if_match_tag_may_hold_comma(void **state)
{
    (void)state;
    struct cond_headers h = {"\"a,b\"", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&h, "\"a,b\"", LM, true), COND_PROCEED);
    h.if_match = "\"a\", \"b\"";
    assert_int_equal(cond_evaluate(&h, "\"a,b\"", LM, true), COND_PRECONDITION_FAILED);
}

static void if_match_unquoted_etag_is_tolerated(void **state)
{
    (void)state;
    assert_int_equal(eval("abc123", NULL, NULL, NULL), COND_PROCEED);
    assert_int_equal(eval("x, abc123", NULL, NULL, NULL), COND_PROCEED);
    struct cond_headers h = {"\"abc123\"", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&h, "abc123", LM, true), COND_PROCEED);
}

static void if_match_weak_tag_never_matches(void **state)
{
    (void)state;
    assert_int_equal(eval("W/\"abc123\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    struct cond_headers h = {"\"abc123\"", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&h, "W/\"abc123\"", LM, true), COND_PRECONDITION_FAILED);
}

static void if_match_is_case_sensitive(void **state)
{
    (void)state;
    assert_int_equal(eval("\"ABC123\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
}

static void if_match_malformed_list_matches_nothing_from_the_fault(void **state)
{
    (void)state;
    assert_int_equal(eval("\"abc123", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval("\"x\"junk, \"abc123\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval("\"abc123\" junk", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval("\"abc123\", \"x\"junk", NULL, NULL, NULL), COND_PROCEED);
    assert_int_equal(eval("abc\"123\"", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval("W/", NULL, NULL, NULL), COND_PRECONDITION_FAILED);
}

static void empty_headers_count_as_absent(void **state)
{
    (void)state;
    assert_int_equal(eval("", "", "", ""), COND_PROCEED);
    assert_int_equal(eval("  ", "\t", NULL, NULL), COND_PROCEED);
}

static void if_unmodified_since_later_or_equal_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, NULL, AT_LM), COND_PROCEED);
    assert_int_equal(eval(NULL, NULL, NULL, AFTER), COND_PROCEED);
}

static void if_unmodified_since_earlier_fails_412(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, NULL, BEFORE), COND_PRECONDITION_FAILED);
}

static void if_unmodified_since_invalid_date_is_ignored(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, NULL, INVALID), COND_PROCEED);
}

static void if_unmodified_since_accepts_every_date_form(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, NULL, "Sunday, 06-Nov-94 08:49:36 GMT"),
                     COND_PRECONDITION_FAILED);
    assert_int_equal(eval(NULL, NULL, NULL, "Sun Nov  6 08:49:36 1994"), COND_PRECONDITION_FAILED);
}

static void s3_if_match_true_overrides_unmodified_since_false(void **state)
{
    (void)state;
    assert_int_equal(eval("\"abc123\"", NULL, NULL, BEFORE), COND_PROCEED);
}

static void if_match_false_fails_even_when_unmodified(void **state)
{
    (void)state;
    assert_int_equal(eval("\"zzz\"", NULL, NULL, AFTER), COND_PRECONDITION_FAILED);
}

static void if_none_match_same_etag_is_304(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "\"abc123\"", NULL, NULL), COND_NOT_MODIFIED);
}

static void if_none_match_other_etag_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "\"zzz\"", NULL, NULL), COND_PROCEED);
}

static void if_none_match_star_is_304(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "*", NULL, NULL), COND_NOT_MODIFIED);
}

static void if_none_match_compares_weakly(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "W/\"abc123\"", NULL, NULL), COND_NOT_MODIFIED);
    assert_int_equal(eval(NULL, "w/\"abc123\"", NULL, NULL), COND_NOT_MODIFIED);
    struct cond_headers h = {NULL, "\"abc123\"", NULL, NULL};
    assert_int_equal(cond_evaluate(&h, "W/\"abc123\"", LM, true), COND_NOT_MODIFIED);
}

static void if_none_match_list_and_unquoted(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "\"a\", W/\"b\", \"abc123\"", NULL, NULL), COND_NOT_MODIFIED);
    assert_int_equal(eval(NULL, "abc123", NULL, NULL), COND_NOT_MODIFIED);
    assert_int_equal(eval(NULL, "\"a\", \"b\"", NULL, NULL), COND_PROCEED);
}

static void if_none_match_on_other_methods_is_412(void **state)
{
    (void)state;
    assert_int_equal(eval_put(NULL, "*", NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval_put(NULL, "\"abc123\"", NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval_put(NULL, "\"zzz\"", NULL, NULL), COND_PROCEED);
}

static void if_modified_since_earlier_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, BEFORE, NULL), COND_PROCEED);
}

static void if_modified_since_equal_or_later_is_304(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, AT_LM, NULL), COND_NOT_MODIFIED);
    assert_int_equal(eval(NULL, NULL, AFTER, NULL), COND_NOT_MODIFIED);
}

static void if_modified_since_invalid_date_is_ignored(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, NULL, INVALID, NULL), COND_PROCEED);
    assert_int_equal(eval(NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT junk", NULL), COND_PROCEED);
}

static void if_modified_since_is_ignored_for_other_methods(void **state)
{
    (void)state;
    assert_int_equal(eval_put(NULL, NULL, AFTER, NULL), COND_PROCEED);
}

static void s3_if_none_match_false_with_modified_since_true_is_304(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "\"abc123\"", BEFORE, NULL), COND_NOT_MODIFIED);
}

static void if_none_match_true_skips_modified_since(void **state)
{
    (void)state;
    assert_int_equal(eval(NULL, "\"zzz\"", AFTER, NULL), COND_PROCEED);
}

static void precondition_failure_wins_over_not_modified(void **state)
{
    (void)state;
    assert_int_equal(eval("\"zzz\"", "\"abc123\"", NULL, NULL), COND_PRECONDITION_FAILED);
    assert_int_equal(eval(NULL, "\"abc123\"", NULL, BEFORE), COND_PRECONDITION_FAILED);
    assert_int_equal(eval(NULL, NULL, AFTER, BEFORE), COND_PRECONDITION_FAILED);
}

static void all_four_true_proceeds(void **state)
{
    (void)state;
    assert_int_equal(eval("\"abc123\"", "\"zzz\"", BEFORE, AFTER), COND_PROCEED);
}

static void status_codes_match_outcomes(void **state)
{
    (void)state;
    assert_int_equal(cond_http_status(COND_PROCEED), 0);
    assert_int_equal(cond_http_status(COND_NOT_MODIFIED), 304);
    assert_int_equal(cond_http_status(COND_PRECONDITION_FAILED), 412);
}

/* An object without an ETag (an upstream 200 that sent none): only "*" matches it. */
static void object_without_etag_matches_only_star(void **state)
{
    (void)state;
    struct cond_headers im = {"\"abc123\"", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&im, NULL, LM, true), COND_PRECONDITION_FAILED);
    struct cond_headers im_star = {"*", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&im_star, NULL, LM, true), COND_PROCEED);
    struct cond_headers inm = {NULL, "\"abc123\", W/\"\"", NULL, NULL};
    assert_int_equal(cond_evaluate(&inm, NULL, LM, true), COND_PROCEED);
    struct cond_headers inm_star = {NULL, "*", NULL, NULL};
    assert_int_equal(cond_evaluate(&inm_star, NULL, LM, true), COND_NOT_MODIFIED);
    struct cond_headers empty_tag = {"\"\"", NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&empty_tag, NULL, LM, true), COND_PRECONDITION_FAILED);
    struct cond_headers none = {NULL, NULL, NULL, NULL};
    assert_int_equal(cond_evaluate(&none, NULL, LM, true), COND_PROCEED);
}

static void conditional_failures_override_range(void **state)
{
    (void)state;
    assert_false(cond_overrides_range(COND_PROCEED));
    assert_true(cond_overrides_range(COND_NOT_MODIFIED));
    assert_true(cond_overrides_range(COND_PRECONDITION_FAILED));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_conditions_proceed),
        cmocka_unit_test(if_match_same_etag_proceeds),
        cmocka_unit_test(if_match_other_etag_fails_412),
        cmocka_unit_test(if_match_star_proceeds),
        cmocka_unit_test(if_match_list_matches_any_member),
        cmocka_unit_test(if_match_tag_may_hold_comma),
        cmocka_unit_test(if_match_unquoted_etag_is_tolerated),
        cmocka_unit_test(if_match_weak_tag_never_matches),
        cmocka_unit_test(if_match_is_case_sensitive),
        cmocka_unit_test(if_match_malformed_list_matches_nothing_from_the_fault),
        cmocka_unit_test(empty_headers_count_as_absent),
        cmocka_unit_test(if_unmodified_since_later_or_equal_proceeds),
        cmocka_unit_test(if_unmodified_since_earlier_fails_412),
        cmocka_unit_test(if_unmodified_since_invalid_date_is_ignored),
        cmocka_unit_test(if_unmodified_since_accepts_every_date_form),
        cmocka_unit_test(s3_if_match_true_overrides_unmodified_since_false),
        cmocka_unit_test(if_match_false_fails_even_when_unmodified),
        cmocka_unit_test(if_none_match_same_etag_is_304),
        cmocka_unit_test(if_none_match_other_etag_proceeds),
        cmocka_unit_test(if_none_match_star_is_304),
        cmocka_unit_test(if_none_match_compares_weakly),
        cmocka_unit_test(if_none_match_list_and_unquoted),
        cmocka_unit_test(if_none_match_on_other_methods_is_412),
        cmocka_unit_test(if_modified_since_earlier_proceeds),
        cmocka_unit_test(if_modified_since_equal_or_later_is_304),
        cmocka_unit_test(if_modified_since_invalid_date_is_ignored),
        cmocka_unit_test(if_modified_since_is_ignored_for_other_methods),
        cmocka_unit_test(s3_if_none_match_false_with_modified_since_true_is_304),
        cmocka_unit_test(if_none_match_true_skips_modified_since),
        cmocka_unit_test(precondition_failure_wins_over_not_modified),
        cmocka_unit_test(all_four_true_proceeds),
        cmocka_unit_test(status_codes_match_outcomes),
        cmocka_unit_test(object_without_etag_matches_only_star),
        cmocka_unit_test(conditional_failures_override_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
