/*
 * test_ctl_body.c - the manifest "s3cachectl warm" posts (tools/ctl/body.c)
 * and reading its input (tools/ctl/input.c): a file passes through as it is,
 * options override its fields, --prefix and --keys-from build one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../tools/ctl/ctl.h"

static char err[CTL_ERR_MAX];

static struct ctl_args args(void)
{
    struct ctl_args a;
    memset(&a, 0, sizeof(a));
    a.epochs = a.seed = a.world_size = a.rank = a.epoch = CTL_UNSET;
    a.shuffle = a.drop_last = -1;
    return a;
}

/* Builds the body for a and data; returns it parsed (the test owns it). */
static json_t *build(const struct ctl_args *a, const char *data)
{
    char *body = NULL;
    size_t len = 0;
    sc_code rc = ctl_manifest_body(a, data, data ? strlen(data) : 0, &body, &len, err, sizeof(err));
    if (rc != SC_OK)
        return NULL;
    assert_int_equal(strlen(body), len);
    json_t *o = json_loads(body, 0, NULL);
    free(body);
    assert_non_null(o);
    return o;
}

static void s3_uri_splits_into_bucket_and_prefix(void **state)
{
    char bucket[64];
    const char *prefix = NULL;
    assert_int_equal(ctl_s3_uri_parse("s3://ds/train/x/", bucket, sizeof(bucket), &prefix), SC_OK);
    assert_string_equal(bucket, "ds");
    assert_string_equal(prefix, "train/x/");
    assert_int_equal(ctl_s3_uri_parse("s3://ds", bucket, sizeof(bucket), &prefix), SC_OK);
    assert_string_equal(prefix, "");
    assert_int_equal(ctl_s3_uri_parse("s3://ds/", bucket, sizeof(bucket), &prefix), SC_OK);
    assert_string_equal(prefix, "");
    assert_int_equal(ctl_s3_uri_parse("s3:///x", bucket, sizeof(bucket), &prefix), SC_EINVAL);
    assert_int_equal(ctl_s3_uri_parse("ds/x", bucket, sizeof(bucket), &prefix), SC_EINVAL);
    assert_int_equal(ctl_s3_uri_parse("s3://a-bucket-name-too-long/x", bucket, 8, &prefix),
                     SC_EINVAL);
}

static void manifest_file_without_overrides_is_sent_byte_for_byte(void **state)
{
    struct ctl_args a = args();
    const char *file = "{ \"bucket\": \"b\",  \"keys\": [\"k\"], \"shufle\": 1 }\n";
    char *body = NULL;
    size_t len = 0;
    a.input = "m.json";
    assert_int_equal(ctl_manifest_body(&a, file, strlen(file), &body, &len, err, sizeof(err)),
                     SC_OK);
    assert_int_equal(len, strlen(file));
    assert_memory_equal(body, file, len); /* the gateway judges it and explains */
    free(body);
    const char *bad = "not json at all";
    assert_int_equal(ctl_manifest_body(&a, bad, strlen(bad), &body, &len, err, sizeof(err)), SC_OK);
    free(body);
}

static void options_override_the_fields_of_a_manifest_file(void **state)
{
    struct ctl_args a = args();
    a.input = "m.json";
    a.epochs = 3;
    a.shuffle = 1;
    a.seed = 42;
    a.world_size = 8;
    a.rank = 2;
    a.drop_last = 0;
    a.name = "run 7";
    json_t *o = build(&a, "{\"bucket\":\"b\",\"keys\":[\"k1\",\"k2\"],\"num_epochs\":1}");
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "num_epochs")), 3);
    assert_true(json_is_true(json_object_get(o, "shuffle")));
    assert_int_equal(json_integer_value(json_object_get(o, "seed")), 42);
    assert_int_equal(json_integer_value(json_object_get(o, "world_size")), 8);
    assert_int_equal(json_integer_value(json_object_get(o, "rank")), 2);
    assert_true(json_is_false(json_object_get(o, "drop_last")));
    assert_string_equal(json_string_value(json_object_get(o, "name")), "run 7");
    assert_int_equal(json_array_size(json_object_get(o, "keys")), 2);
    json_decref(o);
}

static void a_file_to_override_must_be_a_json_object(void **state)
{
    struct ctl_args a = args();
    a.input = "-";
    a.epochs = 2;
    assert_null(build(&a, "{\"bucket\":"));
    assert_non_null(strstr(err, "stdin is not valid JSON"));
    assert_non_null(strstr(err, "line 1"));
    assert_null(build(&a, "[1]"));
    assert_non_null(strstr(err, "a manifest is a JSON object"));
    assert_null(build(&a, "{\"bucket\":\"a\",\"bucket\":\"b\"}")); /* as the gateway refuses */
}

static void prefix_uri_builds_a_prefix_manifest(void **state)
{
    struct ctl_args a = args();
    a.prefix = "s3://ds/train/";
    a.epochs = 2;
    json_t *o = build(&a, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "bucket")), "ds");
    assert_string_equal(json_string_value(json_object_get(o, "prefix")), "train/");
    assert_int_equal(json_integer_value(json_object_get(o, "num_epochs")), 2);
    assert_null(json_object_get(o, "shuffle")); /* unset options are left to the gateway */
    assert_null(json_object_get(o, "keys"));
    json_decref(o);
}

static void bare_prefix_takes_the_bucket_option(void **state)
{
    struct ctl_args a = args();
    a.prefix = "";
    a.bucket = "ds";
    json_t *o = build(&a, NULL);
    assert_string_equal(json_string_value(json_object_get(o, "bucket")), "ds");
    assert_string_equal(json_string_value(json_object_get(o, "prefix")), "");
    json_decref(o);
}

static void keys_file_builds_a_keys_manifest_in_file_order(void **state)
{
    struct ctl_args a = args();
    a.keys_from = "keys.txt";
    a.bucket = "ds";
    json_t *o = build(&a, "b/2.jpg\r\na/1.jpg\n\n  spaced key  \nlast");
    assert_non_null(o);
    json_t *keys = json_object_get(o, "keys");
    assert_int_equal(json_array_size(keys), 4);
    assert_string_equal(json_string_value(json_array_get(keys, 0)), "b/2.jpg");
    assert_string_equal(json_string_value(json_array_get(keys, 1)), "a/1.jpg");
    assert_string_equal(json_string_value(json_array_get(keys, 2)), "  spaced key  ");
    assert_string_equal(json_string_value(json_array_get(keys, 3)), "last");
    assert_string_equal(json_string_value(json_object_get(o, "bucket")), "ds");
    json_decref(o);
}

static void keys_file_of_s3_uris_needs_no_bucket_option(void **state)
{
    struct ctl_args a = args();
    a.keys_from = "keys.txt";
    json_t *o = build(&a, "s3://ds/a.jpg\ns3://ds/dir/b.jpg\n");
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "bucket")), "ds");
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "keys"), 1)),
                        "dir/b.jpg");
    json_decref(o);
}

static void keys_file_problems_name_the_line(void **state)
{
    struct ctl_args a = args();
    a.keys_from = "keys.txt";
    assert_null(build(&a, "s3://ds/a\nplain"));
    assert_string_equal(err,
                        "keys.txt line 2: a bare key needs --bucket (or write s3://BUCKET/KEY)");
    assert_null(build(&a, "s3://ds/a\ns3://other/b"));
    assert_non_null(strstr(err, "line 2: bucket other differs from ds"));
    assert_null(build(&a, "s3://ds/"));
    assert_non_null(strstr(err, "line 1: not s3://BUCKET/KEY"));
    a.bucket = "ds";
    assert_null(build(&a, "ok\nbad \xff key"));
    assert_non_null(strstr(err, "line 2: the key is not valid UTF-8"));
    assert_null(build(&a, "s3://elsewhere/k"));
    assert_non_null(strstr(err, "differs from ds"));
    assert_null(build(&a, "\n\r\n"));
    assert_string_equal(err, "keys.txt has no keys");
    char *body = NULL;
    size_t len;
    assert_int_equal(ctl_manifest_body(&a, "a\0b", 3, &body, &len, err, sizeof(err)), SC_EINVAL);
    assert_non_null(strstr(err, "NUL"));
}

static void input_file_is_read_whole_and_bounded(void **state)
{
    char path[] = "/tmp/test_ctl_body_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char big[200000];
    memset(big, 'k', sizeof(big));
    assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
    close(fd);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(ctl_read_input(path, sizeof(big), &data, &len, err, sizeof(err)), SC_OK);
    assert_int_equal(len, sizeof(big));
    assert_int_equal(data[len], '\0');
    free(data);
    assert_int_equal(ctl_read_input(path, sizeof(big) - 1, &data, &len, err, sizeof(err)),
                     SC_ETOOBIG);
    assert_null(data);
    assert_non_null(strstr(err, "the gateway's limit"));
    unlink(path);
    assert_int_equal(ctl_read_input(path, 10, &data, &len, err, sizeof(err)), SC_EIO);
    assert_non_null(strstr(err, "cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(s3_uri_splits_into_bucket_and_prefix),
        cmocka_unit_test(manifest_file_without_overrides_is_sent_byte_for_byte),
        cmocka_unit_test(options_override_the_fields_of_a_manifest_file),
        cmocka_unit_test(a_file_to_override_must_be_a_json_object),
        cmocka_unit_test(prefix_uri_builds_a_prefix_manifest),
        cmocka_unit_test(bare_prefix_takes_the_bucket_option),
        cmocka_unit_test(keys_file_builds_a_keys_manifest_in_file_order),
        cmocka_unit_test(keys_file_of_s3_uris_needs_no_bucket_option),
        cmocka_unit_test(keys_file_problems_name_the_line),
        cmocka_unit_test(input_file_is_read_whole_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
