/* test_trailer_sum.c - the checksums of aws-chunked trailers (gateway/trailer_sum.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gateway/trailer_sum.h"

/* The checksum of text, added in slices of step bytes, against a trailer value. */
static bool sum_matches(const char *name, const char *text, size_t step, const char *b64)
{
    struct trailer_sum s;
    assert_int_equal(trailer_sum_init(&s, name), SC_OK);
    for (size_t i = 0, len = strlen(text); i < len; i += step)
        trailer_sum_update(&s, text + i, len - i < step ? len - i : step);
    bool ok = trailer_sum_matches(&s, b64);
    trailer_sum_free(&s);
    return ok;
}

static void test_known_values_match_in_any_slicing(void **state)
{
    (void)state;
    for (size_t step = 1; step <= 9; step++) {
        /* CRC-32 "123456789" = cbf43926, CRC-32C = e3069283 (big-endian, base64) */
        assert_true(sum_matches("x-amz-checksum-crc32", "123456789", step, "y/Q5Jg=="));
        assert_true(sum_matches("X-Amz-Checksum-CRC32C", "123456789", step, "4waSgw=="));
        assert_true(
            sum_matches("x-amz-checksum-sha1", "abc", step, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="));
        assert_true(sum_matches("x-amz-checksum-sha256", "abc", step,
                                "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="));
    }
}

static void test_a_wrong_or_missing_value_does_not_match(void **state)
{
    (void)state;
    assert_false(sum_matches("x-amz-checksum-crc32", "123456780", 4, "y/Q5Jg=="));
    assert_false(sum_matches("x-amz-checksum-crc32", "123456789", 4, "y/Q5Jg="));
    assert_false(sum_matches("x-amz-checksum-crc32", "123456789", 4, NULL));
    assert_false(sum_matches("x-amz-checksum-crc32c", "123456789", 4, "y/Q5Jg=="));
    assert_false(sum_matches("x-amz-checksum-sha256", "abd", 1,
                             "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="));
}

static void test_an_unknown_or_absent_trailer_is_not_checked(void **state)
{
    (void)state;
    struct trailer_sum s;
    assert_int_equal(trailer_sum_init(&s, "x-amz-checksum-crc64nvme"), SC_OK);
    assert_false(trailer_sum_active(&s));
    trailer_sum_free(&s);
    assert_int_equal(trailer_sum_init(&s, NULL), SC_OK);
    assert_false(trailer_sum_active(&s));
    trailer_sum_free(&s);
    assert_true(sum_matches("x-amz-checksum-crc64nvme", "abc", 1, "anything"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values_match_in_any_slicing),
        cmocka_unit_test(test_a_wrong_or_missing_value_does_not_match),
        cmocka_unit_test(test_an_unknown_or_absent_trailer_is_not_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
