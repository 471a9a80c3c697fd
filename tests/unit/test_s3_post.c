/* test_s3_post.c - reading the key of a browser-form POST upload (PostObject). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/s3_post.h"

#define CT "multipart/form-data; boundary=XyZ"

static sc_code read_key(const char *ct, const char *body, char **key, char **expanded)
{
    return s3_post_form_key(ct, body, strlen(body), key, expanded);
}

static void key_field_before_the_file_is_the_key(void **state)
{
    const char *body = "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"policy\"\r\n\r\n"
                       "eyJ9\r\n"
                       "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"key\"\r\n\r\n"
                       "dir/a b.jpg\r\n"
                       "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; filename=\"x.jpg\"\r\n"
                       "Content-Type: image/jpeg\r\n\r\n"
                       "the bytes, which may be cut off here";
    char *key, *expanded;
    assert_int_equal(read_key(CT, body, &key, &expanded), SC_OK);
    assert_string_equal(key, "dir/a b.jpg");
    assert_null(expanded);
    free(key);
}

static void filename_variable_gives_both_spellings(void **state)
{
    const char *body = "preamble\r\n--XyZ\r\n"
                       "content-disposition: form-data; name=Key\r\n\r\n"
                       "up/${filename}\r\n"
                       "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; filename=\"p.png\"\r\n\r\n";
    char *key, *expanded;
    assert_int_equal(read_key("Multipart/Form-Data; boundary=\"XyZ\"", body, &key, &expanded),
                     SC_OK);
    assert_string_equal(key, "up/${filename}");
    assert_string_equal(expanded, "up/p.png");
    free(key);
    free(expanded);
}

static void unreadable_forms_are_refused(void **state)
{
    static const struct {
        const char *ct, *body;
    } bad[] = {
        {"application/x-www-form-urlencoded", "key=a"},
        {"multipart/form-data", "--XyZ\r\n"},
        /* no key field before the file */
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n"
             "x\r\n--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--XyZ--"},
        /* two key fields */
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\na\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"KEY\"\r\n\r\nb\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n"},
        /* cut before the file part's headers */
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\na\r\n"
             "--XyZ\r\nContent-Disposition: form-data; na"},
        /* ${filename} with a path, with an escape, with no filename */
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n${filename}\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a/b\"\r\n\r\n"},
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n${filename}\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\\\"b\"\r\n\r\n"},
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n${filename}\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n"},
        /* an RFC 5987 filename* */
        {CT, "--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n${filename}\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''a\r\n\r\n"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *key = (char *)1, *expanded = (char *)1;
        assert_int_equal(read_key(bad[i].ct, bad[i].body, &key, &expanded), SC_EINVAL);
        assert_null(key);
        assert_null(expanded);
    }
}

static void key_over_1024_bytes_is_refused(void **state)
{
    char body[2000];
    int n =
        snprintf(body, sizeof(body), "--XyZ\r\nContent-Disposition: form-data; name=key\r\n\r\n");
    memset(body + n, 'k', 1025);
    snprintf(body + n + 1025, sizeof(body) - (size_t)n - 1025,
             "\r\n--XyZ\r\nContent-Disposition: form-data; name=file\r\n\r\n");
    char *key, *expanded;
    assert_int_equal(read_key(CT, body, &key, &expanded), SC_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_field_before_the_file_is_the_key),
        cmocka_unit_test(filename_variable_gives_both_spellings),
        cmocka_unit_test(unreadable_forms_are_refused),
        cmocka_unit_test(key_over_1024_bytes_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
