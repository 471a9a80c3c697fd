/* test_s3_xml.c - S3 error bodies and the error table (proto/s3_xml.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/s3_xml.h"

#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

static void assert_escapes_to(const char *in, const char *expected)
{
    char *out = NULL;
    assert_int_equal(s3_xml_escape(in, &out), SC_OK);
    assert_string_equal(out, expected);
    free(out);
}

static void error_body_has_s3_layout(void **state)
{
    (void)state;
    char *body = NULL;
    size_t len = 0;
    assert_int_equal(s3_xml_error_body("NoSuchKey", "The specified key does not exist.",
                                       "/bucket/a.txt", "4442587FB7D0A2F9", &body, &len),
                     SC_OK);
    assert_string_equal(body, DECL "<Error><Code>NoSuchKey</Code>"
                                   "<Message>The specified key does not exist.</Message>"
                                   "<Resource>/bucket/a.txt</Resource>"
                                   "<RequestId>4442587FB7D0A2F9</RequestId></Error>");
    assert_int_equal(len, strlen(body));
    free(body);
}

static void error_body_leaves_out_null_fields(void **state)
{
    (void)state;
    char *body = NULL;
    assert_int_equal(s3_xml_error_body("SlowDown", NULL, NULL, NULL, &body, NULL), SC_OK);
    assert_string_equal(body, DECL "<Error><Code>SlowDown</Code></Error>");
    free(body);
    assert_int_equal(s3_xml_error_body("X", "m", NULL, "id", &body, NULL), SC_OK);
    assert_string_equal(body, DECL "<Error><Code>X</Code><Message>m</Message>"
                                   "<RequestId>id</RequestId></Error>");
    free(body);
}

static void error_body_without_code_is_refused(void **state)
{
    (void)state;
    char *body = (char *)"sentinel";
    assert_int_equal(s3_xml_error_body(NULL, "m", "r", "i", &body, NULL), SC_EINVAL);
    assert_null(body);
}

static void error_body_escapes_every_field(void **state)
{
    (void)state;
    char *body = NULL;
    assert_int_equal(s3_xml_error_body("<C>", "a&b", "/b/<script>\"'", "id&", &body, NULL), SC_OK);
    assert_string_equal(body, DECL "<Error><Code>&lt;C&gt;</Code><Message>a&amp;b</Message>"
                                   "<Resource>/b/&lt;script&gt;&quot;&apos;</Resource>"
                                   "<RequestId>id&amp;</RequestId></Error>");
    free(body);
}

static void markup_characters_become_entities(void **state)
{
    (void)state;
    assert_escapes_to("&<>\"'", "&amp;&lt;&gt;&quot;&apos;");
    assert_escapes_to("a&amp;b", "a&amp;amp;b");
    assert_escapes_to("]]>", "]]&gt;");
    assert_escapes_to("", "");
    assert_escapes_to("plain key/with spaces+plus%25", "plain key/with spaces+plus%25");
}

static void tab_newline_and_cr_become_references(void **state)
{
    (void)state;
    assert_escapes_to("a\tb\nc\rd", "a&#9;b&#10;c&#13;d");
}

static void other_control_characters_are_dropped(void **state)
{
    (void)state;
    assert_escapes_to("a\x01\x02\x1b\x1f\x7f"
                      "b",
                      "ab");
    assert_escapes_to("\x08\x0b\x0c", "");
}

static void valid_utf8_is_kept(void **state)
{
    (void)state;
    assert_escapes_to("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBD",
                      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBD");
    assert_escapes_to("\xC2\x80\xF4\x8F\xBF\xBF", "\xC2\x80\xF4\x8F\xBF\xBF");
}

static void invalid_utf8_becomes_replacement_characters(void **state)
{
    (void)state;
#define R "\xEF\xBF\xBD"
    assert_escapes_to("a\xFF"
                      "b",
                      "a" R "b");
    assert_escapes_to("\xC0\xAF", R R);             /* overlong '/' */
    assert_escapes_to("\xE0\x80\xAF", R R R);       /* overlong, 3 bytes */
    assert_escapes_to("\xED\xA0\x80", R R R);       /* surrogate U+D800 */
    assert_escapes_to("\xF4\x90\x80\x80", R R R R); /* beyond U+10FFFF */
    assert_escapes_to("\xC3", R);                   /* truncated at the end */
    assert_escapes_to("\xE2\x82", R R);             /* truncated at the end */
    assert_escapes_to("\xC3<", R "&lt;");           /* truncated by markup */
    assert_escapes_to("\x80\xBF", R R);             /* lone continuation bytes */
    assert_escapes_to("\xF8\x88\x80\x80\x80", R R R R R);
#undef R
}

static void noncharacters_fffe_and_ffff_are_replaced(void **state)
{
    (void)state;
    assert_escapes_to("\xEF\xBF\xBE\xEF\xBF\xBF", "\xEF\xBF\xBD\xEF\xBF\xBD");
}

static void worst_case_expansion_fits(void **state)
{
    (void)state;
    size_t n = S3_XML_FIELD_MAX;
    char *in = malloc(n + 1);
    assert_non_null(in);
    memset(in, '"', n);
    in[n] = '\0';
    char *body = NULL;
    size_t len;
    assert_int_equal(s3_xml_error_body(in, in, in, in, &body, &len), SC_OK);
    assert_int_equal(len, strlen(body));
    assert_true(len > 4 * 6 * n);
    free(body);
    char *out = NULL;
    assert_int_equal(s3_xml_escape(in, &out), SC_OK);
    assert_int_equal(strlen(out), 6 * n);
    free(out);
    free(in);
}

static void oversized_field_is_refused(void **state)
{
    (void)state;
    size_t n = S3_XML_FIELD_MAX + 1;
    char *in = malloc(n + 1);
    assert_non_null(in);
    memset(in, 'a', n);
    in[n] = '\0';
    char *out = (char *)"sentinel";
    assert_int_equal(s3_xml_escape(in, &out), SC_ETOOBIG);
    assert_null(out);
    out = (char *)"sentinel";
    assert_int_equal(s3_xml_error_body("InternalError", NULL, in, NULL, &out, NULL), SC_ETOOBIG);
    assert_null(out);
    free(in);
}

static void table_gives_status_and_code(void **state)
{
    (void)state;
    static const struct {
        enum s3_xml_error e;
        int status;
        const char *code;
    } want[] = {
        {S3_XML_INVALID_RANGE, 416, "InvalidRange"},
        {S3_XML_NO_SUCH_KEY, 404, "NoSuchKey"},
        {S3_XML_NO_SUCH_BUCKET, 404, "NoSuchBucket"},
        {S3_XML_PRECONDITION_FAILED, 412, "PreconditionFailed"},
        {S3_XML_INVALID_REQUEST, 400, "InvalidRequest"},
        {S3_XML_INVALID_URI, 400, "InvalidURI"},
        {S3_XML_INVALID_BUCKET_NAME, 400, "InvalidBucketName"},
        {S3_XML_KEY_TOO_LONG, 400, "KeyTooLongError"},
        {S3_XML_HEADERS_TOO_LARGE, 400, "RequestHeaderSectionTooLarge"},
        {S3_XML_BAD_GATEWAY, 502, "BadGateway"},
        {S3_XML_SERVICE_UNAVAILABLE, 503, "ServiceUnavailable"},
        {S3_XML_INTERNAL_ERROR, 500, "InternalError"},
        {S3_XML_SLOW_DOWN, 503, "SlowDown"},
        {S3_XML_METHOD_NOT_ALLOWED, 405, "MethodNotAllowed"},
        {S3_XML_NOT_IMPLEMENTED, 501, "NotImplemented"},
        {S3_XML_ENTITY_TOO_LARGE, 400, "EntityTooLarge"},
        {S3_XML_INCOMPLETE_BODY, 400, "IncompleteBody"},
        {S3_XML_MISSING_CONTENT_LENGTH, 411, "MissingContentLength"},
        {S3_XML_REQUEST_TIMEOUT, 400, "RequestTimeout"},
        {S3_XML_ACCESS_DENIED, 403, "AccessDenied"},
        {S3_XML_SIGNATURE_DOES_NOT_MATCH, 403, "SignatureDoesNotMatch"},
        {S3_XML_BAD_DIGEST, 400, "BadDigest"},
        {S3_XML_INVALID_ARGUMENT, 400, "InvalidArgument"},
        {S3_XML_AUTH_HEADER_MALFORMED, 400, "AuthorizationHeaderMalformed"},
        {S3_XML_AUTH_QUERY_MALFORMED, 400, "AuthorizationQueryParametersError"},
        {S3_XML_INVALID_ACCESS_KEY_ID, 403, "InvalidAccessKeyId"},
        {S3_XML_REQUEST_TIME_TOO_SKEWED, 403, "RequestTimeTooSkewed"},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), S3_XML_ERROR_MAX);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct s3_xml_error_info *info = s3_xml_error_info(want[i].e);
        assert_int_equal(info->status, want[i].status);
        assert_string_equal(info->code, want[i].code);
        assert_non_null(info->message);
        assert_true(strlen(info->message) > 0);
    }
}

/* One entry per S3 code, so that a code always carries the same status and usual message. */
static void table_has_one_entry_per_code(void **state)
{
    (void)state;
    for (int i = 0; i < S3_XML_ERROR_MAX; i++)
        for (int j = i + 1; j < S3_XML_ERROR_MAX; j++)
            assert_string_not_equal(s3_xml_error_info((enum s3_xml_error)i)->code,
                                    s3_xml_error_info((enum s3_xml_error)j)->code);
}

static void table_falls_back_to_internal_error(void **state)
{
    (void)state;
    const struct s3_xml_error_info *info = s3_xml_error_info(S3_XML_ERROR_MAX);
    assert_int_equal(info->status, 500);
    assert_string_equal(info->code, "InternalError");
    info = s3_xml_error_info((enum s3_xml_error) - 1);
    assert_string_equal(info->code, "InternalError");
}

static void body_for_table_entry_uses_its_code_and_message(void **state)
{
    (void)state;
    char *body = NULL;
    size_t len;
    assert_int_equal(s3_xml_error_body_for(S3_XML_INVALID_RANGE, "/b/k", "r1", &body, &len), SC_OK);
    assert_string_equal(body, DECL "<Error><Code>InvalidRange</Code>"
                                   "<Message>The requested range is not satisfiable</Message>"
                                   "<Resource>/b/k</Resource><RequestId>r1</RequestId></Error>");
    assert_int_equal(len, strlen(body));
    free(body);
}

/* Found by fuzz_s3_xml: a raw NUL was copied, so the key came back cut short at it. */
static void unescape_refuses_raw_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "dir/a\0b.txt";
    char *out = NULL;
    assert_int_equal(s3_xml_unescape(text, sizeof(text) - 1, 1024, &out), SC_EINVAL);
    assert_null(out);
}

/*
 * Found by fuzz_s3_xml: text was refused up front when longer than 6 bytes per
 * byte of max, yet a reference with leading zeros ("&#x00000041;", 12 bytes)
 * is one byte of text.
 */
static void unescape_accepts_long_references_within_max(void **state)
{
    (void)state;
    static const char *const refs[] = {"&#x059;", "&#0000089;", "&#x00000059;"};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
        char *out = NULL;
        assert_int_equal(s3_xml_unescape(refs[i], strlen(refs[i]), 1, &out), SC_OK);
        assert_string_equal(out, "Y");
        free(out);
    }
    char *out = NULL;
    assert_int_equal(s3_xml_unescape("&#x59;&#x59;", 12, 1, &out), SC_EINVAL);
    assert_null(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(error_body_has_s3_layout),
        cmocka_unit_test(table_has_one_entry_per_code),
        cmocka_unit_test(error_body_leaves_out_null_fields),
        cmocka_unit_test(error_body_without_code_is_refused),
        cmocka_unit_test(error_body_escapes_every_field),
        cmocka_unit_test(markup_characters_become_entities),
        cmocka_unit_test(tab_newline_and_cr_become_references),
        cmocka_unit_test(other_control_characters_are_dropped),
        cmocka_unit_test(valid_utf8_is_kept),
        cmocka_unit_test(invalid_utf8_becomes_replacement_characters),
        cmocka_unit_test(noncharacters_fffe_and_ffff_are_replaced),
        cmocka_unit_test(worst_case_expansion_fits),
        cmocka_unit_test(oversized_field_is_refused),
        cmocka_unit_test(table_gives_status_and_code),
        cmocka_unit_test(table_falls_back_to_internal_error),
        cmocka_unit_test(body_for_table_entry_uses_its_code_and_message),
        cmocka_unit_test(unescape_refuses_raw_nul_byte),
        cmocka_unit_test(unescape_accepts_long_references_within_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
