/*
 * test_trainsim_report.c - the emulator's numbers and outputs (tools/trainsim/report.c
 * and the stats parser of admin.c): nearest-rank percentiles, the hit ratio and
 * when it is n/a, the CSV rows and the JSON document.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/trainsim/trainsim.h"

static void percentiles_are_nearest_rank(void **state)
{
    (void)state;
    uint32_t v[100];
    for (uint32_t i = 0; i < 100; i++)
        v[i] = i + 1;
    assert_int_equal(ts_percentile(v, 100, 50), 50);
    assert_int_equal(ts_percentile(v, 100, 99), 99);
    assert_int_equal(ts_percentile(v, 100, 100), 100);
    assert_int_equal(ts_percentile(v, 10, 99), 10); /* of 10 values, p99 is the largest */
    assert_int_equal(ts_percentile(v, 10, 50), 5);
    assert_int_equal(ts_percentile(v, 1, 50), 1);
    assert_int_equal(ts_percentile(v, 0, 50), 0);
}

static void latency_summary_sorts_and_reports_milliseconds(void **state)
{
    (void)state;
    uint32_t lat[5] = {9000, 1000, 5000, 3000, 7000};
    struct ts_epoch e = {0};
    ts_latency_summary(lat, 5, &e);
    assert_int_equal(lat[0], 1000);
    assert_true(e.lat_p50_ms == 5.0 && e.lat_p99_ms == 9.0 && e.lat_max_ms == 9.0);
    assert_true(e.lat_mean_ms == 5.0);
    struct ts_epoch none = {0};
    ts_latency_summary(lat, 0, &none);
    assert_true(none.lat_p50_ms == 0 && none.lat_max_ms == 0);
}

static void hit_ratio_is_na_without_stats_or_without_counted_gets(void **state)
{
    (void)state;
    struct ts_epoch e = {.have_hits = true, .hits = 3, .misses = 1};
    assert_true(ts_hit_ratio(&e) == 0.75);
    e.have_hits = false;
    assert_true(ts_hit_ratio(&e) < 0);
    struct ts_epoch zero = {.have_hits = true};
    assert_true(ts_hit_ratio(&zero) < 0);
}

static void stats_counters_are_read_and_other_bodies_refused(void **state)
{
    (void)state;
    struct ts_counters c;
    assert_int_equal(ts_stats_parse("{\"hits\": 10, \"misses\": 4, \"bypasses\": 1, \"policy\": "
                                    "\"lru\", \"objects\": 3}",
                                    &c),
                     SC_OK);
    assert_true(c.hits == 10 && c.misses == 4 && c.bypasses == 1);
    assert_int_equal(ts_stats_parse("{\"hits\": 1, \"misses\": 2}", &c), SC_OK);
    assert_int_equal(c.bypasses, 0);
    const char *bad[] = {"<Error><Code>NoSuchBucket</Code></Error>", "{\"hits\": 1}",
                         "{\"hits\": \"1\", \"misses\": 2}", "{\"hits\": -1, \"misses\": 2}", ""};
    for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++)
        assert_int_equal(ts_stats_parse(bad[k], &c), SC_EINVAL);
}

static struct ts_epoch two_epochs[2] = {
    {.epoch = 1,
     .objects = 200,
     .bytes = 2000000,
     .wall_s = 2,
     .stall_s = 0.5,
     .compute_s = 1,
     .have_hits = true,
     .hits = 0,
     .misses = 200,
     .order_sha256 = "aa"},
    {.epoch = 2,
     .objects = 200,
     .bytes = 2000000,
     .wall_s = 1,
     .stall_s = 0,
     .compute_s = 1,
     .have_hits = false,
     .retries = 2,
     .order_sha256 = "bb"},
};

static void csv_has_a_header_and_a_row_per_epoch(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(ts_report_csv(f, two_epochs, 2), SC_OK);
    fclose(f);
    char *row1 = strchr(text, '\n') + 1;
    char *row2 = strchr(row1, '\n') + 1;
    assert_true(strncmp(text, "epoch,objects,bytes,wall_s,stall_s,stall_share,", 47) == 0);
    assert_true(
        strncmp(row1, "1,200,2000000,2.000000,0.500000,0.250000,1.000,100.000,1.000,", 61) == 0);
    assert_non_null(strstr(row1, ",0,200,0.000000,0,0,0\n"));
    assert_non_null(strstr(row2, ",,,n/a,2,0,0\n"));
    assert_int_equal(strlen(strchr(row2, '\n')), 1);
    free(text);
}

static void json_holds_the_config_and_every_epoch(void **state)
{
    (void)state;
    struct ts_options o = {.endpoint = "http://127.0.0.1:8080",
                           .bucket = "b",
                           .ds = {.prefix = "p/", .objects = 200, .size = 10000},
                           .epochs = 2,
                           .batch = 32,
                           .workers = 16,
                           .prefetch = 2,
                           .compute_ms = 20,
                           .shuffle_seed = 5,
                           .gateway_order = true,
                           .stats_url = NULL};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(ts_report_json(f, &o, "m3", "ok", two_epochs, 2), SC_OK);
    fclose(f);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "status")), "ok");
    json_t *cfg = json_object_get(root, "config");
    assert_int_equal(json_integer_value(json_object_get(cfg, "dataset_bytes")), 2000000);
    assert_string_equal(json_string_value(json_object_get(cfg, "manifest_id")), "m3");
    assert_string_equal(json_string_value(json_object_get(cfg, "order")), "gateway");
    assert_true(json_is_null(json_object_get(cfg, "stats_url")));
    json_t *eps = json_object_get(root, "epochs");
    assert_int_equal(json_array_size(eps), 2);
    json_t *e1 = json_array_get(eps, 0), *e2 = json_array_get(eps, 1);
    assert_true(json_real_value(json_object_get(e1, "hit_ratio")) == 0.0);
    assert_true(json_real_value(json_object_get(e1, "mb_per_s")) == 1.0);
    assert_true(json_is_null(json_object_get(e2, "hit_ratio")));
    assert_true(json_is_null(json_object_get(e2, "hits")));
    assert_string_equal(json_string_value(json_object_get(e2, "order_sha256")), "bb");
    json_decref(root);
    free(text);
}

static void table_prints_na_for_an_unknown_hit_ratio(void **state)
{
    (void)state;
    struct ts_options o = {.ds = {.objects = 200, .size = 10000}, .batch = 32};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    ts_report_table(f, &o, two_epochs, 2);
    fclose(f);
    assert_non_null(strstr(text, "hit_ratio"));
    assert_non_null(strstr(text, "0.000"));
    assert_non_null(strstr(text, "n/a"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percentiles_are_nearest_rank),
        cmocka_unit_test(latency_summary_sorts_and_reports_milliseconds),
        cmocka_unit_test(hit_ratio_is_na_without_stats_or_without_counted_gets),
        cmocka_unit_test(stats_counters_are_read_and_other_bodies_refused),
        cmocka_unit_test(csv_has_a_header_and_a_row_per_epoch),
        cmocka_unit_test(json_holds_the_config_and_every_epoch),
        cmocka_unit_test(table_prints_na_for_an_unknown_hit_ratio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
