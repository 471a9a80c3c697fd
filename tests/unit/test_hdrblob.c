/* test_hdrblob.c - the headers kept and replayed with a cached object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../proto/hdrblob.h"

static void object_headers_round_trip_and_per_response_ones_are_dropped(void **state)
{
    struct http_header h[] = {
        {"ETag", "\"d41d8cd98f00b204e9800998ecf8427e\""},
        {"Date", "Sun, 22 Nov 2026 09:00:00 GMT"},
        {"Content-Type", "image/jpeg"},
        {"Content-Length", "5"},
        {"x-amz-meta-label", "cat"},
        {"x-amz-request-id", "ABC"},
        {"Connection", "keep-alive"},
        {"Cache-Control", "max-age=60"},
    };
    char *blob;
    size_t len;
    assert_int_equal(hdrblob_encode(h, 8, &blob, &len), SC_OK);
    assert_string_equal(hdrblob_get(blob, len, "etag"), "\"d41d8cd98f00b204e9800998ecf8427e\"");
    assert_string_equal(hdrblob_get(blob, len, "X-Amz-Meta-Label"), "cat");
    assert_string_equal(hdrblob_get(blob, len, "Cache-Control"), "max-age=60");
    assert_null(hdrblob_get(blob, len, "Date"));
    assert_null(hdrblob_get(blob, len, "Content-Length"));
    assert_null(hdrblob_get(blob, len, "x-amz-request-id"));
    assert_null(hdrblob_get(blob, len, "Connection"));
    size_t pos = 0, n = 0;
    const char *name, *value;
    while (hdrblob_next(blob, len, &pos, &name, &value))
        n++;
    assert_int_equal(n, 4);
    free(blob);
}

static void truncated_blob_stops_iteration(void **state)
{
    const char blob[] = {'E', 'T', 'a', 'g', '\0', 'x'}; /* value without its NUL */
    size_t pos = 0;
    const char *name, *value;
    assert_false(hdrblob_next(blob, sizeof(blob), &pos, &name, &value));
    assert_null(hdrblob_get(blob, sizeof(blob), "ETag"));
}

static void empty_header_set_encodes_to_empty_blob(void **state)
{
    char *blob;
    size_t len = 99;
    assert_int_equal(hdrblob_encode(NULL, 0, &blob, &len), SC_OK);
    assert_int_equal(len, 0);
    assert_null(hdrblob_get(blob, len, "ETag"));
    free(blob);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(object_headers_round_trip_and_per_response_ones_are_dropped),
        cmocka_unit_test(truncated_blob_stops_iteration),
        cmocka_unit_test(empty_header_set_encodes_to_empty_blob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
