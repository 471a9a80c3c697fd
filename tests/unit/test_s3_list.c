/* test_s3_list.c - parsing ListObjectsV2 pages: keys, sizes, truncation, bad bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/s3_list.h"

static sc_code parse(const char *body, struct s3_list_page *p)
{
    return s3_list_parse(body, strlen(body), p);
}

static void last_page_gives_keys_sizes_and_no_token(void **state)
{
    struct s3_list_page p;
    const char *body = "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name>"
                       "<IsTruncated>false</IsTruncated>"
                       "<Contents><Key>train/a.jpg</Key><Size>110592</Size></Contents>"
                       "<Contents><Key>train/b&amp;c &#x4e2d;.jpg</Key><Size>0</Size>"
                       "</Contents></ListBucketResult>";
    assert_int_equal(parse(body, &p), SC_OK);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.entries[0].key, "train/a.jpg");
    assert_int_equal(p.entries[0].size, 110592);
    assert_string_equal(p.entries[1].key, "train/b&c \xe4\xb8\xad.jpg");
    assert_int_equal(p.entries[1].size, 0);
    assert_false(p.truncated);
    assert_null(p.next_token);
    s3_list_page_free(&p);
}

static void truncated_page_carries_the_continuation_token(void **state)
{
    struct s3_list_page p;
    const char *body = "<ListBucketResult><IsTruncated>true</IsTruncated>"
                       "<Contents><Key>k</Key><Size>5</Size></Contents>"
                       "<NextContinuationToken>1/abc+=&amp;</NextContinuationToken>"
                       "</ListBucketResult>";
    assert_int_equal(parse(body, &p), SC_OK);
    assert_true(p.truncated);
    assert_string_equal(p.next_token, "1/abc+=&");
    assert_int_equal(p.n, 1);
    s3_list_page_free(&p);
}

static void empty_listing_is_no_entries(void **state)
{
    struct s3_list_page p;
    assert_int_equal(parse("<ListBucketResult><KeyCount>0</KeyCount></ListBucketResult>", &p),
                     SC_OK);
    assert_int_equal(p.n, 0);
    assert_false(p.truncated);
    s3_list_page_free(&p);
}

static void malformed_pages_are_refused(void **state)
{
    struct s3_list_page p;
    /* truncated without a token, unterminated element, bad size, bad entity */
    assert_int_equal(parse("<IsTruncated>true</IsTruncated>", &p), SC_EINVAL);
    assert_int_equal(parse("<Contents><Key>k</Key><Size>5</Size>", &p), SC_EINVAL);
    assert_int_equal(parse("<Contents><Key>k</Key><Size>5x</Size></Contents>", &p), SC_EINVAL);
    assert_int_equal(parse("<Contents><Key>a&bogus;</Key></Contents>", &p), SC_EINVAL);
    assert_int_equal(parse("<Contents><Size>5</Size></Contents>", &p), SC_EINVAL);
    assert_int_equal(p.n, 0); /* a refused page holds nothing */
}

/*
 * Found by fuzz_s3_list: <Size> went through strtoull on its first 23 bytes,
 * so a sign, spaces, a NUL and whatever followed it, or digits past 64 bits
 * (saturated) were taken as a size.
 */
static void size_must_be_plain_decimal_within_64_bits(void **state)
{
    static const char *const bad[] = {
        "-1", "+5", " 12", "12 ", "", "18446744073709551616", "000000000000000000000000000001x"};
    char xml[256];
    struct s3_list_page p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n =
            snprintf(xml, sizeof(xml), "<Contents><Key>k</Key><Size>%s</Size></Contents>", bad[i]);
        assert_int_equal(s3_list_parse(xml, (size_t)n, &p), SC_EINVAL);
    }
    static const char nul[] = "<Contents><Key>k</Key><Size>102\0junk</Size></Contents>";
    assert_int_equal(s3_list_parse(nul, sizeof(nul) - 1, &p), SC_EINVAL);
    static const char ok[] = "<Contents><Key>k</Key><Size>0018446744073709551615</Size></Contents>";
    assert_int_equal(s3_list_parse(ok, sizeof(ok) - 1, &p), SC_OK);
    assert_int_equal(p.n, 1);
    assert_true(p.entries[0].size == UINT64_MAX);
    s3_list_page_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(last_page_gives_keys_sizes_and_no_token),
        cmocka_unit_test(truncated_page_carries_the_continuation_token),
        cmocka_unit_test(empty_listing_is_no_entries),
        cmocka_unit_test(malformed_pages_are_refused),
        cmocka_unit_test(size_must_be_plain_decimal_within_64_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
