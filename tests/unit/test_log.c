/* test_log.c - redaction of signatures and credentials in log lines (common/log.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/log.h"

static void assert_redacts(const char *in, const char *want)
{
    char out[512];
    size_t n = sc_log_redact(in, out, sizeof(out));
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void presigned_v4_query_loses_signature_and_credential(void **state)
{
    assert_redacts("GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20261124%2F"
                   "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T080000Z&X-Amz-Expires=600&"
                   "X-Amz-SignedHeaders=host&X-Amz-Signature=0123abcd -> 403 AccessDenied",
                   "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&"
                   "X-Amz-Date=20261124T080000Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host&"
                   "X-Amz-Signature=REDACTED -> 403 AccessDenied");
}

static void presigned_v2_query_loses_signature_and_key_id(void **state)
{
    assert_redacts("GET /b/k?AWSAccessKeyId=AKID&Expires=1790000000&Signature=abc%2Bdef%3D",
                   "GET /b/k?AWSAccessKeyId=REDACTED&Expires=1790000000&Signature=REDACTED");
}

static void names_match_in_any_case_and_percent_encoded(void **state)
{
    assert_redacts("/b/k?x-amz-signature=1&X%2DAmz%2DSignature=2&SIGNATURE=3&"
                   "x-amz-security-token=4",
                   "/b/k?x-amz-signature=REDACTED&X%2DAmz%2DSignature=REDACTED&"
                   "SIGNATURE=REDACTED&x-amz-security-token=REDACTED");
}

static void authorization_header_parts_are_redacted(void **state)
{
    assert_redacts("auth: AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4_request, "
                   "SignedHeaders=host;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027",
                   "auth: AWS4-HMAC-SHA256 Credential=REDACTED, SignedHeaders=host;x-amz-date, "
                   "Signature=REDACTED");
}

static void other_parameters_and_lookalikes_stay(void **state)
{
    const char *same[] = {
        "GET /b/k?versionId=3&prefix=Signature -> 200",
        "GET /b/k?MySignature=1&Signatures=2&X-Amz-Signature-Version=3",
        "key X-Amz-Signature without a value",
        "",
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        assert_redacts(same[i], same[i]);
}

static void empty_values_and_values_at_the_end_are_redacted(void **state)
{
    assert_redacts("Signature=", "Signature=REDACTED");
    assert_redacts("?Signature=&x=1", "?Signature=REDACTED&x=1");
    assert_redacts("\"X-Amz-Signature=ab\"", "\"X-Amz-Signature=REDACTED\"");
}

static void output_is_bounded_and_terminated(void **state)
{
    char out[12];
    size_t n = sc_log_redact("?Signature=0123456789abcdef", out, sizeof(out));
    assert_int_equal(n, sizeof(out) - 1);
    assert_string_equal(out, "?Signature=");
    n = sc_log_redact("abcdefghijklmnopqrstuvwxyz", out, sizeof(out));
    assert_int_equal(n, sizeof(out) - 1);
    assert_string_equal(out, "abcdefghijk");
    n = sc_log_redact("?Signature=0123456789abcdef", out, 1);
    assert_int_equal(n, 0);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presigned_v4_query_loses_signature_and_credential),
        cmocka_unit_test(presigned_v2_query_loses_signature_and_key_id),
        cmocka_unit_test(names_match_in_any_case_and_percent_encoded),
        cmocka_unit_test(authorization_header_parts_are_redacted),
        cmocka_unit_test(other_parameters_and_lookalikes_stay),
        cmocka_unit_test(empty_values_and_values_at_the_end_are_redacted),
        cmocka_unit_test(output_is_bounded_and_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
