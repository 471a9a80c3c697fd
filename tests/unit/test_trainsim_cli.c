/*
 * test_trainsim_cli.c - the emulator's command line (tools/trainsim/cli.c) and its
 * request building (s3req.c): defaults, every option, a rank's options, refusals
 * with exit code 2, byte counts with suffixes, and the URL and headers of signed
 * and unsigned requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/trainsim/trainsim.h"

/* Parses a NULL-terminated argument list; returns the parser's code and what it wrote to err. */
static int parse(struct ts_options *o, char *err_text, size_t err_len, ...)
{
    char *argv[64] = {"s3cached-trainsim"};
    int argc = 1;
    va_list ap;
    va_start(ap, err_len);
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 63;)
        argv[argc++] = a;
    va_end(ap);
    FILE *err = fmemopen(err_text, err_len, "w");
    FILE *out = fopen("/dev/null", "w");
    assert_true(err && out);
    int code = ts_options_parse(argc, argv, o, out, err);
    fclose(err);
    fclose(out);
    return code;
}

#define BASE "--endpoint", "http://127.0.0.1:8080", "--bucket", "b", "--objects", "100"

static void train_defaults_match_the_documentation(void **state)
{
    (void)state;
    struct ts_options o;
    char err[512] = "";
    assert_int_equal(parse(&o, err, sizeof(err), "train", BASE, "--epochs", "3", NULL), 0);
    assert_int_equal(o.mode, TS_MODE_TRAIN);
    assert_string_equal(o.ds.prefix, "trainsim/");
    assert_int_equal(o.ds.size, 110 * 1024);
    assert_int_equal(o.ds.dist, TS_SIZE_FIXED);
    assert_true(o.ds.sigma == 0.5);
    assert_true(o.batch == 32 && o.workers == 16 && o.prefetch == 2 && o.compute_ms == 20);
    assert_false(o.gateway_order);
    assert_string_equal(o.stats_url, "http://127.0.0.1:8080/_s3cached/stats");
    assert_null(o.csv_path);
    assert_true(o.split.world_size == 1 && o.split.rank == 0);
    assert_null(o.step_barrier);
    ts_options_free(&o);
}

static void a_rank_of_a_job_takes_its_split_and_barrier(void **state)
{
    (void)state;
    struct ts_options o;
    char err[512] = "";
    assert_int_equal(parse(&o, err, sizeof(err), "train", BASE, "--epochs", "3", "--world-size",
                           "8", "--rank", "7", "--step-barrier", "/tmp/b", "--gateway-order", NULL),
                     0);
    assert_true(o.split.world_size == 8 && o.split.rank == 7);
    assert_string_equal(o.step_barrier, "/tmp/b");
    ts_options_free(&o);
    const char *bad[][4] = {
        {"--world-size", "8", "--rank", "8"}, /* ranks are 0..7 */
        {"--world-size", "1", "--rank", "1"},        {"--world-size", "0", "--rank", "0"},
        {"--world-size", "1000001", "--rank", "0"},  {"--world-size", "4", "--rank", "-1"},
        {"--world-size", "4", "--step-barrier", ""},
    };
    const char *why[] = {"--rank must be below --world-size (8)",
                         "--rank must be below --world-size (1)",
                         "bad value for --world-size",
                         "bad value for --world-size",
                         "bad value for --rank",
                         "bad value for --step-barrier"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++) {
        memset(err, 0, sizeof(err));
        assert_int_equal(parse(&o, err, sizeof(err), "train", BASE, "--epochs", "1", bad[k][0],
                               bad[k][1], bad[k][2], bad[k][3], NULL),
                         TS_EXIT_USAGE);
        assert_non_null(strstr(err, why[k]));
        ts_options_free(&o);
    }
    /* a rank alone, without --world-size, is rank 1 of 1 */
    assert_int_equal(
        parse(&o, err, sizeof(err), "train", BASE, "--epochs", "1", "--rank", "1", NULL),
        TS_EXIT_USAGE);
    ts_options_free(&o);
    memset(err, 0, sizeof(err));
    assert_int_equal(parse(&o, err, sizeof(err), "seed", BASE, "--rank", "0", NULL), TS_EXIT_USAGE);
    assert_non_null(strstr(err, "--rank applies to train only"));
    ts_options_free(&o);
}

static void every_train_option_is_applied(void **state)
{
    (void)state;
    struct ts_options o;
    char err[512] = "";
    assert_int_equal(parse(&o, err, sizeof(err), "train", "--endpoint", "http://h:1/", "--bucket",
                           "bk", "--prefix", "x/", "--objects", "7", "--size", "1.5M",
                           "--size-dist", "lognormal", "--sigma", "0.25", "--data-seed", "9",
                           "--epochs", "4", "--batch-size", "8", "--workers", "3",
                           "--prefetch-batches", "5", "--compute-ms", "0", "--shuffle-seed", "77",
                           "--manifest-id", "m12", "--stats-url", "none", "--csv", "a.csv",
                           "--json", "a.json", "--quiet", NULL),
                     0);
    assert_string_equal(o.ds.prefix, "x/");
    assert_int_equal(o.ds.objects, 7);
    assert_int_equal(o.ds.size, 1536 * 1024);
    assert_int_equal(o.ds.dist, TS_SIZE_LOGNORMAL);
    assert_true(o.ds.sigma == 0.25);
    assert_int_equal(o.ds.data_seed, 9);
    assert_true(o.epochs == 4 && o.batch == 8 && o.workers == 3 && o.prefetch == 5);
    assert_int_equal(o.compute_ms, 0);
    assert_int_equal(o.shuffle_seed, 77);
    assert_true(o.gateway_order); /* --manifest-id reads a gateway order */
    assert_string_equal(o.manifest_id, "m12");
    assert_null(o.stats_url);
    assert_string_equal(o.csv_path, "a.csv");
    assert_string_equal(o.json_path, "a.json");
    assert_true(o.quiet);
    ts_options_free(&o);

    assert_int_equal(
        parse(&o, err, sizeof(err), "train", BASE, "--epochs", "2", "--cache-aware", NULL), SC_OK);
    assert_true(o.gateway_order && o.split.cache_aware);
    ts_options_free(&o);
}

static void bad_command_lines_are_refused_with_2(void **state)
{
    (void)state;
    struct ts_options o;
    char err[512];
    struct {
        const char *a, *b;
        const char *msg;
    } cases[] = {
        {"--size-dist", "uniform", "--size-dist"},
        {"--size", "0", "--size"},
        {"--size", "2G", "--size"},
        {"--workers", "0", "--workers"},
        {"--batch-size", "-1", "--batch-size"},
        {"--sigma", "nan", "--sigma"},
        {"--shuffle-seed", "9223372036854775808", "--shuffle-seed"},
        {"--compute-ms", "1.5", "--compute-ms"},
        {"--bogus", "1", "unknown option"},
        {"--manifest-id", "m1/../x", "--manifest-id"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
        memset(err, 0, sizeof(err));
        assert_int_equal(parse(&o, err, sizeof(err), "train", BASE, "--epochs", "1", cases[k].a,
                               cases[k].b, NULL),
                         TS_EXIT_USAGE);
        assert_non_null(strstr(err, cases[k].msg));
        ts_options_free(&o);
    }
    memset(err, 0, sizeof(err));
    assert_int_equal(parse(&o, err, sizeof(err), "train", BASE, NULL), TS_EXIT_USAGE);
    assert_non_null(strstr(err, "--epochs is required"));
    ts_options_free(&o);
    memset(err, 0, sizeof(err));
    assert_int_equal(parse(&o, err, sizeof(err), "seed", BASE, "--compute-ms", "3", NULL),
                     TS_EXIT_USAGE);
    assert_non_null(strstr(err, "--compute-ms applies to train only"));
    ts_options_free(&o);
    memset(err, 0, sizeof(err));
    assert_int_equal(parse(&o, err, sizeof(err), "seed", "--endpoint", "ftp://x", "--bucket", "b",
                           "--objects", "1", NULL),
                     TS_EXIT_USAGE);
    ts_options_free(&o);
    assert_int_equal(
        parse(&o, err, sizeof(err), "train", BASE, "--epochs", "1001", "--gateway-order", NULL),
        TS_EXIT_USAGE);
    ts_options_free(&o);
    assert_int_equal(parse(&o, err, sizeof(err), "fly", BASE, NULL), TS_EXIT_USAGE);
    ts_options_free(&o);
    assert_int_equal(parse(&o, err, sizeof(err), "seed", BASE, "stray", NULL), TS_EXIT_USAGE);
    ts_options_free(&o);
    assert_int_equal(parse(&o, err, sizeof(err), "seed", "--help", NULL), 1);
    ts_options_free(&o);
}

static void byte_counts_take_binary_suffixes(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(ts_parse_bytes("4096", &v), SC_OK);
    assert_int_equal(v, 4096);
    assert_int_equal(ts_parse_bytes("110K", &v), SC_OK);
    assert_int_equal(v, 110 * 1024);
    assert_int_equal(ts_parse_bytes("110k", &v), SC_OK);
    assert_int_equal(v, 110 * 1024);
    assert_int_equal(ts_parse_bytes("2MiB", &v), SC_OK);
    assert_int_equal(v, 2 << 20);
    assert_int_equal(ts_parse_bytes("1GB", &v), SC_OK);
    assert_int_equal(v, 1 << 30);
    assert_int_equal(ts_parse_bytes("0.5K", &v), SC_OK);
    assert_int_equal(v, 512);
    const char *bad[] = {"", "K", "-1", "1.5", "12Q", "1Kx", "1 K", "1e400"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++)
        assert_int_equal(ts_parse_bytes(bad[k], &v), SC_EINVAL);
}

static void unsigned_requests_are_path_style_with_the_key_encoded(void **state)
{
    (void)state;
    struct ts_s3 s;
    char *url = NULL;
    struct curl_slist *h = NULL;
    unsetenv("AWS_ACCESS_KEY_ID");
    assert_int_equal(ts_s3_init(&s, "http://127.0.0.1:9000/", "bkt"), SC_OK);
    assert_int_equal(ts_s3_request(&s, "GET", "a b/+x.bin", &url, &h), SC_OK);
    assert_string_equal(url, "http://127.0.0.1:9000/bkt/a%20b/%2Bx.bin");
    assert_string_equal(h->data, "Host: 127.0.0.1:9000");
    for (struct curl_slist *l = h; l; l = l->next)
        assert_null(strstr(l->data, "Authorization"));
    free(url);
    curl_slist_free_all(h);
    ts_s3_free(&s);
    assert_int_equal(ts_s3_init(&s, "http://host.example", "bkt"), SC_OK);
    assert_string_equal(s.host, "host.example");
    ts_s3_free(&s);
    assert_int_equal(ts_s3_init(&s, "http://h:1/base", "bkt"), SC_EINVAL);
    ts_s3_free(&s);
    assert_int_equal(ts_s3_init(&s, "http://h:1/?x=1", "bkt"), SC_EINVAL);
    ts_s3_free(&s);
}

static void signed_requests_carry_date_hash_token_and_authorization(void **state)
{
    (void)state;
    struct ts_s3 s;
    char *url = NULL;
    struct curl_slist *h = NULL;
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_SESSION_TOKEN", "tok", 1);
    setenv("AWS_REGION", "eu-north-1", 1);
    assert_int_equal(ts_s3_init(&s, "http://127.0.0.1:9000", "bkt"), SC_OK);
    assert_int_equal(ts_s3_request(&s, "PUT", "k", &url, &h), SC_OK);
    bool date = false, hash = false, token = false, auth = false;
    for (struct curl_slist *l = h; l; l = l->next) {
        date |= strncmp(l->data, "x-amz-date: ", 12) == 0;
        hash |= strcmp(l->data, "x-amz-content-sha256: UNSIGNED-PAYLOAD") == 0;
        token |= strcmp(l->data, "x-amz-security-token: tok") == 0;
        auth |= strncmp(l->data, "Authorization: AWS4-HMAC-SHA256 Credential=AKID/", 48) == 0 &&
                strstr(l->data, "/eu-north-1/s3/aws4_request, SignedHeaders=host;"
                                "x-amz-content-sha256;x-amz-date;x-amz-security-token, ") != NULL;
    }
    assert_true(date && hash && token && auth);
    free(url);
    curl_slist_free_all(h);
    ts_s3_free(&s);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_REGION");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(train_defaults_match_the_documentation),
        cmocka_unit_test(every_train_option_is_applied),
        cmocka_unit_test(a_rank_of_a_job_takes_its_split_and_barrier),
        cmocka_unit_test(bad_command_lines_are_refused_with_2),
        cmocka_unit_test(byte_counts_take_binary_suffixes),
        cmocka_unit_test(unsigned_requests_are_path_style_with_the_key_encoded),
        cmocka_unit_test(signed_requests_carry_date_hash_token_and_authorization),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
