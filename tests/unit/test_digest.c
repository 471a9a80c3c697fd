/* test_digest.c - checking a body against its ETag or full-object checksum (gateway/digest.h).
 * Expected values are the published check values of each algorithm over "123456789". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gateway/digest.h"

#define CHECK "123456789"

/* The verdict over CHECK, fed in two pieces, for a head of n headers. */
static bool verdict(const struct up_header *h, size_t n, const char **name)
{
    digest *d = NULL;
    assert_int_equal(digest_for(h, n, &d), SC_OK);
    assert_non_null(d);
    static const char check[] = CHECK;
    assert_int_equal(digest_update(d, check, 4), SC_OK);
    assert_int_equal(digest_update(d, &check[4], 5), SC_OK);
    *name = digest_name(d);
    bool ok = digest_matches(d);
    digest_free(d);
    return ok;
}

static void each_checksum_matches_its_check_value(void **state)
{
    static const struct up_header good[] = {
        {"x-amz-checksum-crc32", "y/Q5Jg=="},
        {"x-amz-checksum-crc32c", "4waSgw=="},
        {"x-amz-checksum-crc64nvme", "rosUhgp5mIg="},
        {"x-amz-checksum-sha1", "98O8HYCOBHMq32eZZczDTKeuNEE="},
        {"x-amz-checksum-sha256", "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="},
        {"ETag", "\"25F9E794323B453885F5181F1B624D0B\""},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *name = NULL;
        assert_true(verdict(&good[i], 1, &name));
        assert_string_equal(name, strcmp(good[i].name, "ETag") == 0 ? "ETag" : good[i].name);
    }
}

static void a_wrong_or_malformed_value_never_matches(void **state)
{
    static const struct up_header bad[] = {
        {"x-amz-checksum-crc32", "y/Q5Jw=="},
        {"x-amz-checksum-crc32c", "4waSgw"},
        {"x-amz-checksum-crc64nvme", ""},
        {"x-amz-checksum-sha256",
         "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=FeKw08M4keuw8e9gnsQ"},
        {"ETag", "\"25f9e794323b453885f5181f1b624d0c\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *name = NULL;
        assert_false(verdict(&bad[i], 1, &name));
    }
}

static void the_md5_etag_is_preferred_then_the_first_checksum(void **state)
{
    const char *name = NULL;
    struct up_header both[] = {{"x-amz-checksum-crc32", "y/Q5Jw=="}, /* wrong, not used */
                               {"ETag", "\"25f9e794323b453885f5181f1b624d0b\""}};
    assert_true(verdict(both, 2, &name));
    assert_string_equal(name, "ETag");
    struct up_header two[] = {{"ETag", "\"abc-2\""},
                              {"x-amz-checksum-sha1", "98O8HYCOBHMq32eZZczDTKeuNEE="},
                              {"x-amz-checksum-crc64nvme", "rosUhgp5mIg="}};
    assert_true(verdict(two, 3, &name));
    assert_string_equal(name, "x-amz-checksum-crc64nvme");
}

static void multipart_etags_and_composite_checksums_give_nothing_to_check(void **state)
{
    static const struct up_header none[][2] = {
        {{"ETag", "\"25f9e794323b453885f5181f1b624d0b-2\""}, {"Content-Type", "x"}},
        {{"x-amz-checksum-crc32c", "4waSgw==-3"}, {"Content-Type", "x"}},
        {{"x-amz-checksum-crc32c", "4waSgw=="}, {"x-amz-checksum-type", "COMPOSITE"}},
        {{"ETag", "\"not hex at all, but 32 chars..\""}, {"Content-Type", "x"}},
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        digest *d = (digest *)&none; /* must be overwritten */
        assert_int_equal(digest_for(none[i], 2, &d), SC_OK);
        assert_null(d);
    }
    digest *d = (digest *)&none;
    assert_int_equal(digest_for(NULL, 0, &d), SC_OK);
    assert_null(d);
}

/* Their ETags look like an MD5 but are not the body's: only a checksum counts. */
static void sse_kms_and_sse_c_etags_are_not_taken_for_an_md5(void **state)
{
    static const struct up_header kms[][2] = {
        {{"ETag", "\"0123456789abcdef0123456789abcdef\""},
         {"x-amz-server-side-encryption", "aws:kms"}},
        {{"ETag", "\"0123456789abcdef0123456789abcdef\""},
         {"x-amz-server-side-encryption", "aws:kms:dsse"}},
        {{"ETag", "\"0123456789abcdef0123456789abcdef\""},
         {"x-amz-server-side-encryption-customer-algorithm", "AES256"}},
    };
    for (size_t i = 0; i < sizeof(kms) / sizeof(kms[0]); i++) {
        digest *d = (digest *)&kms; /* must be overwritten */
        assert_int_equal(digest_for(kms[i], 2, &d), SC_OK);
        assert_null(d);
    }
    const char *name = NULL;
    struct up_header sse_s3[] = {{"ETag", "\"25f9e794323b453885f5181f1b624d0b\""},
                                 {"x-amz-server-side-encryption", "AES256"}};
    assert_true(verdict(sse_s3, 2, &name));
    struct up_header kms_sum[] = {{"ETag", "\"0123456789abcdef0123456789abcdef\""},
                                  {"x-amz-server-side-encryption", "aws:kms"},
                                  {"x-amz-checksum-crc32", "y/Q5Jg=="}};
    assert_true(verdict(kms_sum, 3, &name));
    assert_string_equal(name, "x-amz-checksum-crc32");
}

static void a_full_object_type_is_checked(void **state)
{
    const char *name = NULL;
    struct up_header full[] = {{"x-amz-checksum-crc32c", "4waSgw=="},
                               {"x-amz-checksum-type", "FULL_OBJECT"}};
    assert_true(verdict(full, 2, &name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_checksum_matches_its_check_value),
        cmocka_unit_test(a_wrong_or_malformed_value_never_matches),
        cmocka_unit_test(the_md5_etag_is_preferred_then_the_first_checksum),
        cmocka_unit_test(multipart_etags_and_composite_checksums_give_nothing_to_check),
        cmocka_unit_test(sse_kms_and_sse_c_etags_are_not_taken_for_an_md5),
        cmocka_unit_test(a_full_object_type_is_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
