/* test_resume.c - resuming a peer's body from the bucket: spans, the Range asked, the proof. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../upstream/resume.h"

#define ETAG "\"0123456789abcdef0123456789abcdef\""

static void a_200_spans_the_whole_object(void **state)
{
    struct up_span s;
    assert_true(up_span_of_head(200, NULL, 1000, &s));
    assert_int_equal(s.first, 0);
    assert_int_equal(s.last, 999);
    assert_int_equal(s.size, 1000);
}

static void a_206_spans_its_content_range(void **state)
{
    struct up_span s;
    assert_true(up_span_of_head(206, "bytes 100-199/1000", 100, &s));
    assert_int_equal(s.first, 100);
    assert_int_equal(s.last, 199);
    assert_int_equal(s.size, 1000);
}

static void heads_that_name_no_span_are_not_resumable(void **state)
{
    struct up_span s;
    assert_false(up_span_of_head(200, NULL, 0, &s));                   /* empty */
    assert_false(up_span_of_head(200, NULL, -1, &s));                  /* unannounced */
    assert_false(up_span_of_head(404, NULL, 100, &s));                 /* not a body */
    assert_false(up_span_of_head(206, NULL, 100, &s));                 /* no Content-Range */
    assert_false(up_span_of_head(206, "bytes 100-199/1000", 99, &s));  /* disagrees */
    assert_false(up_span_of_head(206, "bytes 100-199/*", 100, &s));    /* '*' form */
    assert_false(up_span_of_head(206, "bytes 200-100/1000", 101, &s)); /* backwards */
    assert_false(up_span_of_head(206, "bytes 0-1000/1000", 1001, &s)); /* past the end */
    assert_false(up_span_of_head(206, "bytes  0-9/10", 10, &s));       /* two spaces */
    assert_false(up_span_of_head(206, "bytes 0-9/99999999999999999999", 10, &s)); /* > 2^64 */
}

static void the_range_asks_from_the_next_byte_to_the_last(void **state)
{
    char range[UP_RESUME_RANGE_LEN];
    struct up_span whole = {0, 999, 1000};
    assert_true(up_resume_range(&whole, 0, range, sizeof(range)));
    assert_string_equal(range, "bytes=0-999");
    assert_true(up_resume_range(&whole, 400, range, sizeof(range)));
    assert_string_equal(range, "bytes=400-999");
    assert_true(up_resume_range(&whole, 999, range, sizeof(range)));
    assert_string_equal(range, "bytes=999-999");
    struct up_span part = {8388608, 16777215, 100000000};
    assert_true(up_resume_range(&part, 5, range, sizeof(range)));
    assert_string_equal(range, "bytes=8388613-16777215");
    struct up_span huge = {0, UINT64_MAX - 1, UINT64_MAX};
    assert_true(up_resume_range(&huge, UINT64_MAX - 2, range, sizeof(range)));
    assert_string_equal(range, "bytes=18446744073709551613-18446744073709551614");
}

static void nothing_left_asks_nothing(void **state)
{
    char range[UP_RESUME_RANGE_LEN];
    struct up_span s = {100, 199, 1000};
    assert_false(up_resume_range(&s, 100, range, sizeof(range)));
    assert_false(up_resume_range(&s, 101, range, sizeof(range)));
    assert_false(up_resume_range(&s, UINT64_MAX, range, sizeof(range)));
    assert_false(up_resume_range(&s, 10, range, 8)); /* does not fit */
}

static void only_the_exact_rest_of_that_version_proves_the_resume(void **state)
{
    struct up_span s = {0, 999, 1000};
    assert_true(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-999/1000", 600, ETAG));
    assert_false(up_resume_proves(&s, 400, ETAG, 200, NULL, 1000, ETAG)); /* whole */
    assert_false(up_resume_proves(&s, 400, ETAG, 412, NULL, 0, NULL));    /* changed */
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-999/1000", 600, "\"x\""));
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-999/1000", 600, NULL));
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 401-999/1000", 599, ETAG));
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-998/1000", 599, ETAG));
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-999/1001", 600, ETAG));
    assert_false(up_resume_proves(&s, 400, ETAG, 206, "bytes 400-999/1000", 601, ETAG));
    assert_false(up_resume_proves(&s, 1000, ETAG, 206, "bytes 999-999/1000", 1, ETAG));
    struct up_span part = {100, 199, 1000};
    assert_true(up_resume_proves(&part, 50, ETAG, 206, "bytes 150-199/1000", 50, ETAG));
    assert_false(up_resume_proves(&part, 50, ETAG, 206, "bytes 150-999/1000", 850, ETAG));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_200_spans_the_whole_object),
        cmocka_unit_test(a_206_spans_its_content_range),
        cmocka_unit_test(heads_that_name_no_span_are_not_resumable),
        cmocka_unit_test(the_range_asks_from_the_next_byte_to_the_last),
        cmocka_unit_test(nothing_left_asks_nothing),
        cmocka_unit_test(only_the_exact_rest_of_that_version_proves_the_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
