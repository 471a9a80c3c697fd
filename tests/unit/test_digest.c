/* test_digest.c - checking a body against its ETag or full-object checksum, or against the
 * checksum an aws-chunked trailer names (proto/digest.h). Expected values are the published
 * check values of each algorithm over "123456789", and the digests of "abc". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "../../proto/digest.h"

#define CHECK "123456789"

/* The verdict over CHECK, fed in two pieces, for a head of n headers. */
static bool verdict(const struct http_header *h, size_t n, const char **name)
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
    static const struct http_header good[] = {
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
    static const struct http_header bad[] = {
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

/* What each head is checked against, as the fill metric counts it. */
static void each_check_has_its_kind_and_label(void **state)
{
    (void)state;
    assert_int_equal(digest_check_of(NULL), DIGEST_LENGTH);
    assert_string_equal(digest_check_label(DIGEST_LENGTH), "length");
    static const struct {
        struct http_header h;
        enum digest_check check;
        const char *label;
    } heads[] = {
        {{"ETag", "\"25f9e794323b453885f5181f1b624d0b\""}, DIGEST_MD5, "md5"},
        {{"x-amz-checksum-crc64nvme", "rosUhgp5mIg="}, DIGEST_CRC64NVME, "crc64nvme"},
        {{"x-amz-checksum-crc32c", "4waSgw=="}, DIGEST_CRC32C, "crc32c"},
        {{"x-amz-checksum-crc32", "y/Q5Jg=="}, DIGEST_CRC32, "crc32"},
        {{"x-amz-checksum-sha1", "98O8HYCOBHMq32eZZczDTKeuNEE="}, DIGEST_SHA1, "sha1"},
    };
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        digest *d = NULL;
        assert_int_equal(digest_for(&heads[i].h, 1, &d), SC_OK);
        assert_non_null(d);
        assert_int_equal(digest_check_of(d), heads[i].check);
        assert_string_equal(digest_check_label(digest_check_of(d)), heads[i].label);
        digest_free(d);
    }
    assert_string_equal(digest_check_label(DIGEST_SHA256), "sha256");
}

/* The cheapest check on offer is the one made: a CRC before the MD5, the MD5 before a SHA. */
static void a_crc_is_preferred_to_the_md5_and_the_md5_to_a_sha(void **state)
{
    const char *name = NULL;
    struct http_header crc_right[] = {{"ETag", "\"25f9e794323b453885f5181f1b624d0c\""},
                                      {"x-amz-checksum-crc32", "y/Q5Jg=="}};
    assert_true(verdict(crc_right, 2, &name));
    assert_string_equal(name, "x-amz-checksum-crc32");
    struct http_header crc_wrong[] = {{"ETag", "\"25f9e794323b453885f5181f1b624d0b\""},
                                      {"x-amz-checksum-crc32", "y/Q5Jw=="}};
    assert_false(verdict(crc_wrong, 2, &name));
    assert_string_equal(name, "x-amz-checksum-crc32");
    struct http_header sha_wrong[] = {
        {"x-amz-checksum-sha256", "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiV="},
        {"ETag", "\"25f9e794323b453885f5181f1b624d0b\""}};
    assert_true(verdict(sha_wrong, 2, &name));
    assert_string_equal(name, "ETag");
    struct http_header two[] = {{"ETag", "\"abc-2\""},
                                {"x-amz-checksum-sha1", "98O8HYCOBHMq32eZZczDTKeuNEE="},
                                {"x-amz-checksum-crc64nvme", "rosUhgp5mIg="}};
    assert_true(verdict(two, 3, &name));
    assert_string_equal(name, "x-amz-checksum-crc64nvme");
    struct http_header sha_only[] = {{"ETag", "\"abc-2\""},
                                     {"x-amz-checksum-sha1", "98O8HYCOBHMq32eZZczDTKeuNEE="}};
    assert_true(verdict(sha_only, 2, &name));
    assert_string_equal(name, "x-amz-checksum-sha1");
}

static void multipart_etags_and_composite_checksums_give_nothing_to_check(void **state)
{
    static const struct http_header none[][2] = {
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
    static const struct http_header kms[][2] = {
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
    struct http_header sse_s3[] = {{"ETag", "\"25f9e794323b453885f5181f1b624d0b\""},
                                   {"x-amz-server-side-encryption", "AES256"}};
    assert_true(verdict(sse_s3, 2, &name));
    struct http_header kms_sum[] = {{"ETag", "\"0123456789abcdef0123456789abcdef\""},
                                    {"x-amz-server-side-encryption", "aws:kms"},
                                    {"x-amz-checksum-crc32", "y/Q5Jg=="}};
    assert_true(verdict(kms_sum, 3, &name));
    assert_string_equal(name, "x-amz-checksum-crc32");
}

static void a_full_object_type_is_checked(void **state)
{
    const char *name = NULL;
    struct http_header full[] = {{"x-amz-checksum-crc32c", "4waSgw=="},
                                 {"x-amz-checksum-type", "FULL_OBJECT"}};
    assert_true(verdict(full, 2, &name));
}

/* The trailer checksum called name of text, added in slices of step bytes, against value. */
static bool sum_matches(const char *name, const char *text, size_t step, const char *value)
{
    digest *d = NULL;
    assert_int_equal(digest_for_checksum(name, &d), SC_OK);
    assert_non_null(d);
    for (size_t i = 0, len = strlen(text); i < len; i += step)
        assert_int_equal(digest_update(d, text + i, len - i < step ? len - i : step), SC_OK);
    bool ok = digest_matches_value(d, value);
    digest_free(d);
    return ok;
}

static void trailer_known_values_match_in_any_slicing(void **state)
{
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

static void trailer_a_wrong_or_missing_value_does_not_match(void **state)
{
    assert_false(sum_matches("x-amz-checksum-crc32", "123456780", 4, "y/Q5Jg=="));
    assert_false(sum_matches("x-amz-checksum-crc32", "123456789", 4, "y/Q5Jg="));
    assert_false(sum_matches("x-amz-checksum-crc32", "123456789", 4, NULL));
    assert_false(sum_matches("x-amz-checksum-crc32c", "123456789", 4, "y/Q5Jg=="));
    assert_false(sum_matches("x-amz-checksum-sha256", "abd", 1,
                             "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="));
}

/* CRC-64/NVME "123456789" = ae8b14860a799888 (the published check value), "abc" =
 * 05e5cabb3fc1faeb (the table code before trailers could name it). Not checked until digest.c
 * served trailers too: a wrong value was taken. */
static void trailer_a_crc64nvme_is_checked(void **state)
{
    for (size_t step = 1; step <= 9; step++) {
        assert_true(sum_matches("x-amz-checksum-crc64nvme", "123456789", step, "rosUhgp5mIg="));
        assert_true(sum_matches("X-Amz-Checksum-CRC64NVME", "abc", step, "BeXKuz/B+us="));
    }
    assert_false(sum_matches("x-amz-checksum-crc64nvme", "123456789", 4, "rosUhgp5mIk="));
    assert_false(sum_matches("x-amz-checksum-crc64nvme", "123456780", 4, "rosUhgp5mIg="));
    assert_false(sum_matches("x-amz-checksum-crc64nvme", "123456789", 4, NULL));
}

static void trailer_an_unknown_or_absent_name_is_not_checked(void **state)
{
    static const char *const unchecked[] = {NULL, "x-amz-checksum-md5", "x-amz-checksum-crc32 ",
                                            "content-md5", ""};
    for (size_t i = 0; i < sizeof(unchecked) / sizeof(unchecked[0]); i++) {
        digest *d = (digest *)&unchecked; /* must be overwritten */
        assert_int_equal(digest_for_checksum(unchecked[i], &d), SC_OK);
        assert_null(d);
    }
}

/* CRC-32 is zlib's crc32(), whose length is an unsigned int: a slice over 4 GiB must not be
 * cut short. The bytes are the same page mapped over and over, so nothing is allocated. */
static void crc32_of_a_slice_over_4_gib_is_whole(void **state)
{
    size_t len = ((size_t)1 << 32) + 9; /* CRC-32 of that many zeros: e38a6876 (Python's zlib) */
    void *zeros = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(zeros != MAP_FAILED);
    digest *d = NULL;
    assert_int_equal(digest_for_checksum("x-amz-checksum-crc32", &d), SC_OK);
    assert_int_equal(digest_update(d, zeros, len), SC_OK);
    assert_true(digest_matches_value(d, "44podg=="));
    digest_free(d);
    munmap(zeros, len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_checksum_matches_its_check_value),
        cmocka_unit_test(a_wrong_or_malformed_value_never_matches),
        cmocka_unit_test(a_crc_is_preferred_to_the_md5_and_the_md5_to_a_sha),
        cmocka_unit_test(each_check_has_its_kind_and_label),
        cmocka_unit_test(multipart_etags_and_composite_checksums_give_nothing_to_check),
        cmocka_unit_test(sse_kms_and_sse_c_etags_are_not_taken_for_an_md5),
        cmocka_unit_test(a_full_object_type_is_checked),
        cmocka_unit_test(trailer_known_values_match_in_any_slicing),
        cmocka_unit_test(trailer_a_wrong_or_missing_value_does_not_match),
        cmocka_unit_test(trailer_a_crc64nvme_is_checked),
        cmocka_unit_test(trailer_an_unknown_or_absent_name_is_not_checked),
        cmocka_unit_test(crc32_of_a_slice_over_4_gib_is_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
