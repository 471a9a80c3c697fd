/* test_range.c - Range header resolution (proto/range.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/range.h"

static void assert_partial(const char *h, uint64_t size, uint64_t start, uint64_t len)
{
    uint64_t s = 99;
    uint64_t l = 99;
    assert_int_equal(range_resolve(h, size, &s, &l), RANGE_PARTIAL);
    assert_int_equal(s, start);
    assert_int_equal(l, len);
}

static void assert_whole(const char *h, uint64_t size)
{
    uint64_t s = 99;
    uint64_t l = 99;
    assert_int_equal(range_resolve(h, size, &s, &l), RANGE_WHOLE);
    assert_int_equal(s, 0);
    assert_int_equal(l, size);
}

static void assert_unsatisfiable(const char *h, uint64_t size)
{
    uint64_t s = 99;
    uint64_t l = 99;
    assert_int_equal(range_resolve(h, size, &s, &l), RANGE_UNSATISFIABLE);
    assert_int_equal(s, 0);
    assert_int_equal(l, 0);
}

static void range_absent_returns_whole(void **state)
{
    (void)state;
    assert_whole(NULL, 100);
    assert_whole(NULL, 0);
}

static void range_closed_returns_exact_bytes(void **state)
{
    (void)state;
    assert_partial("bytes=0-0", 100, 0, 1);
    assert_partial("bytes=0-99", 100, 0, 100);
    assert_partial("bytes=10-19", 100, 10, 10);
    assert_partial("bytes=99-99", 100, 99, 1);
}

static void range_end_past_object_is_clamped(void **state)
{
    (void)state;
    assert_partial("bytes=5-15", 10, 5, 5);
    assert_partial("bytes=0-1000000", 10, 0, 10);
}

static void range_open_ended_runs_to_the_end(void **state)
{
    (void)state;
    assert_partial("bytes=0-", 100, 0, 100);
    assert_partial("bytes=40-", 100, 40, 60);
    assert_partial("bytes=99-", 100, 99, 1);
}

static void range_suffix_returns_last_bytes(void **state)
{
    (void)state;
    assert_partial("bytes=-1", 100, 99, 1);
    assert_partial("bytes=-20", 100, 80, 20);
    assert_partial("bytes=-100", 100, 0, 100);
}

static void range_suffix_longer_than_object_returns_whole_as_partial(void **state)
{
    (void)state;
    assert_partial("bytes=-150", 100, 0, 100);
}

static void range_suffix_of_zero_is_unsatisfiable(void **state)
{
    (void)state;
    assert_unsatisfiable("bytes=-0", 100);
    assert_unsatisfiable("bytes=-000", 100);
}

static void range_start_at_or_past_end_is_unsatisfiable(void **state)
{
    (void)state;
    assert_unsatisfiable("bytes=100-", 100);
    assert_unsatisfiable("bytes=100-200", 100);
    assert_unsatisfiable("bytes=8888-9999", 100);
}

static void range_on_empty_object_is_unsatisfiable_except_suffix(void **state)
{
    (void)state;
    assert_unsatisfiable("bytes=0-", 0);
    assert_unsatisfiable("bytes=0-0", 0);
    assert_unsatisfiable("bytes=1-2", 0);
    assert_unsatisfiable("bytes=-0", 0);
    assert_whole("bytes=-1", 0);
    assert_whole("bytes=-512", 0);
}

static void range_with_first_after_last_is_ignored(void **state)
{
    (void)state;
    assert_whole("bytes=33-10", 100);
    assert_whole("bytes=1-0", 100);
}

static void range_with_bad_syntax_is_ignored(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "bytes",
        "bytes=",
        "bytes=-",
        "bytes=--1",
        "bytes=a-b",
        "bytes=1-b",
        "bytes=+1-2",
        "bytes=1--2",
        "bytes=0x10-20",
        "bytes=1 -2",
        "bytes=1- 2",
        "bytes= 1-2",
        "bytes =1-2",
        "bytes=1-2-3",
        "bytes=1",
        "invalid-range",
        "bytes:1-2",
        "bytes=1-2;x",
        "bytes=-1-2",
        "bytes=1.5-2",
        "bytes=1-2\n",
        "=1-2",
        "bytesx=1-2",
        "bytes=\t1-2",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_whole(bad[i], 100);
}

static void range_with_other_unit_is_ignored(void **state)
{
    (void)state;
    assert_whole("items=0-5", 100);
    assert_whole("byte=0-5", 100);
    assert_whole("bytess=0-5", 100);
}

static void range_with_several_ranges_is_ignored(void **state)
{
    (void)state;
    assert_whole("bytes=0-1,5-6", 100);
    assert_whole("bytes=0-499, 500-502", 1000);
    assert_whole("bytes=0-1,", 100);
    assert_whole("bytes=,0-1", 100);
    assert_whole("bytes=200-300,0-1", 100); /* even when one part is unsatisfiable */
}

static void range_unit_is_case_insensitive(void **state)
{
    (void)state;
    assert_partial("Bytes=1-2", 100, 1, 2);
    assert_partial("BYTES=-3", 100, 97, 3);
}

static void range_outer_whitespace_is_ignored(void **state)
{
    (void)state;
    assert_partial("  bytes=1-2\t ", 100, 1, 2);
}

static void range_leading_zeros_are_decimal(void **state)
{
    (void)state;
    assert_partial("bytes=0010-0019", 100, 10, 10);
}

static void range_huge_numbers_saturate(void **state)
{
    (void)state;
    /* first-pos beyond 64 bits: past any object */
    assert_unsatisfiable("bytes=99999999999999999999999999-", 100);
    /* last-pos beyond 64 bits: clamped */
    assert_partial("bytes=5-99999999999999999999999999", 100, 5, 95);
    /* suffix beyond 64 bits: the whole object */
    assert_partial("bytes=-99999999999999999999999999", 100, 0, 100);
    /* exactly UINT64_MAX and one past it */
    assert_partial("bytes=0-18446744073709551615", 100, 0, 100);
    assert_partial("bytes=0-18446744073709551616", 100, 0, 100);
    assert_partial("bytes=0-9223372036854775807", 100, 0, 100);
}

static void range_huge_object_sizes_work(void **state)
{
    (void)state;
    uint64_t big = UINT64_MAX - 1;
    assert_partial("bytes=-1", big, big - 1, 1);
    assert_partial("bytes=0-", big, 0, big);
    assert_partial("bytes=18446744073709551613-", big, big - 1, 1);
    assert_unsatisfiable("bytes=18446744073709551614-", big);
}

static void content_range_formats_partial(void **state)
{
    (void)state;
    char buf[RANGE_CONTENT_RANGE_LEN];
    assert_int_equal(range_content_range(0, 1, 100, buf), SC_OK);
    assert_string_equal(buf, "bytes 0-0/100");
    assert_int_equal(range_content_range(80, 20, 100, buf), SC_OK);
    assert_string_equal(buf, "bytes 80-99/100");
}

static void content_range_formats_unsatisfied(void **state)
{
    (void)state;
    char buf[RANGE_CONTENT_RANGE_LEN];
    assert_int_equal(range_content_range(0, 0, 100, buf), SC_OK);
    assert_string_equal(buf, "bytes */100");
    assert_int_equal(range_content_range(0, 0, 0, buf), SC_OK);
    assert_string_equal(buf, "bytes */0");
}

static void content_range_fits_largest_numbers(void **state)
{
    (void)state;
    char buf[RANGE_CONTENT_RANGE_LEN];
    assert_int_equal(range_content_range(UINT64_MAX - 1, 1, UINT64_MAX, buf), SC_OK);
    assert_string_equal(buf,
                        "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
}

static void content_range_refuses_range_outside_object(void **state)
{
    (void)state;
    char buf[RANGE_CONTENT_RANGE_LEN];
    assert_int_equal(range_content_range(90, 20, 100, buf), SC_EINVAL);
    assert_string_equal(buf, "bytes */100");
    assert_int_equal(range_content_range(100, 1, 100, buf), SC_EINVAL);
    assert_int_equal(range_content_range(1, UINT64_MAX, 100, buf), SC_EINVAL);
}

static void resolve_then_format_agree(void **state)
{
    (void)state;
    char buf[RANGE_CONTENT_RANGE_LEN];
    uint64_t s;
    uint64_t l;
    assert_int_equal(range_resolve("bytes=-150", 100, &s, &l), RANGE_PARTIAL);
    assert_int_equal(range_content_range(s, l, 100, buf), SC_OK);
    assert_string_equal(buf, "bytes 0-99/100");
    assert_int_equal(range_resolve("bytes=200-", 100, &s, &l), RANGE_UNSATISFIABLE);
    assert_int_equal(range_content_range(s, l, 100, buf), SC_OK);
    assert_string_equal(buf, "bytes */100");
}

static void span_reads_first_pos_ranges_without_the_size(void **state)
{
    uint64_t first = 7, last = 7;
    assert_true(range_span("bytes=100-199", &first, &last));
    assert_int_equal(first, 100);
    assert_int_equal(last, 199);
    assert_true(range_span(" Bytes=0-0\t", &first, &last));
    assert_int_equal(first, 0);
    assert_int_equal(last, 0);
    assert_true(range_span("bytes=8388608-", &first, &last));
    assert_int_equal(first, 8388608);
    assert_true(last == UINT64_MAX);
    assert_true(range_span("bytes=5-99999999999999999999999", &first, &last)); /* saturates */
    assert_int_equal(first, 5);
    assert_true(last == UINT64_MAX);
    first = last = 7;
    assert_false(range_span(NULL, &first, &last));
    assert_false(range_span("bytes=-500", &first, &last)); /* a suffix needs the size */
    assert_false(range_span("bytes=0-1,5-6", &first, &last));
    assert_false(range_span("bytes=9-3", &first, &last));
    assert_false(range_span("items=0-9", &first, &last));
    assert_false(range_span("bytes=", &first, &last));
    assert_int_equal(first, 7);
    assert_int_equal(last, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(range_absent_returns_whole),
        cmocka_unit_test(range_closed_returns_exact_bytes),
        cmocka_unit_test(range_end_past_object_is_clamped),
        cmocka_unit_test(range_open_ended_runs_to_the_end),
        cmocka_unit_test(range_suffix_returns_last_bytes),
        cmocka_unit_test(range_suffix_longer_than_object_returns_whole_as_partial),
        cmocka_unit_test(range_suffix_of_zero_is_unsatisfiable),
        cmocka_unit_test(range_start_at_or_past_end_is_unsatisfiable),
        cmocka_unit_test(range_on_empty_object_is_unsatisfiable_except_suffix),
        cmocka_unit_test(range_with_first_after_last_is_ignored),
        cmocka_unit_test(range_with_bad_syntax_is_ignored),
        cmocka_unit_test(range_with_other_unit_is_ignored),
        cmocka_unit_test(range_with_several_ranges_is_ignored),
        cmocka_unit_test(range_unit_is_case_insensitive),
        cmocka_unit_test(range_outer_whitespace_is_ignored),
        cmocka_unit_test(range_leading_zeros_are_decimal),
        cmocka_unit_test(range_huge_numbers_saturate),
        cmocka_unit_test(range_huge_object_sizes_work),
        cmocka_unit_test(content_range_formats_partial),
        cmocka_unit_test(content_range_formats_unsatisfied),
        cmocka_unit_test(content_range_fits_largest_numbers),
        cmocka_unit_test(content_range_refuses_range_outside_object),
        cmocka_unit_test(resolve_then_format_agree),
        cmocka_unit_test(span_reads_first_pos_ranges_without_the_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
