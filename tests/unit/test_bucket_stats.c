/* test_bucket_stats.c - per-bucket read counters: rows, the "other" row, threads, JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>

#include "../../gateway/bucket_stats.h"

static struct gw_buckets *fresh(void)
{
    struct gw_buckets *b = malloc(sizeof(*b));
    assert_non_null(b);
    gw_buckets_init(b);
    return b;
}

static void release(struct gw_buckets *b)
{
    gw_buckets_destroy(b);
    free(b);
}

/* The table as parsed JSON; the caller decrefs. */
static json_t *as_json(struct gw_buckets *b)
{
    char *text = gw_buckets_json(b);
    assert_non_null(text);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    free(text);
    assert_non_null(o);
    return o;
}

/* The row of name in o's "buckets", or NULL. */
static json_t *row(json_t *o, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(o, "buckets"), i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "bucket")), name) == 0)
            return r;
    }
    return NULL;
}

static json_int_t field(json_t *r, const char *name)
{
    assert_non_null(r);
    assert_true(json_is_integer(json_object_get(r, name)));
    return json_integer_value(json_object_get(r, name));
}

static void reads_are_counted_in_their_bucket_row(void **state)
{
    struct gw_buckets *b = fresh();
    gw_buckets_count(b, "datasets", GW_READ_MISS, 1000);
    gw_buckets_count(b, "datasets", GW_READ_HIT, 1000);
    gw_buckets_count(b, "datasets", GW_READ_HIT, 0);
    gw_buckets_count(b, "logs", GW_READ_BYPASS, 5);
    json_t *o = as_json(b);
    json_t *d = row(o, "datasets"), *l = row(o, "logs");
    assert_int_equal(field(d, "hits"), 2);
    assert_int_equal(field(d, "misses"), 1);
    assert_int_equal(field(d, "bypasses"), 0);
    assert_int_equal(field(d, "bytes"), 2000);
    assert_int_equal(field(l, "bypasses"), 1);
    assert_int_equal(field(l, "bytes"), 5);
    assert_int_equal(json_array_size(json_object_get(o, "buckets")), 2);
    assert_int_equal(field(json_object_get(o, "other"), "hits"), 0);
    assert_int_equal(field(o, "max_buckets"), GW_BUCKETS_MAX);
    json_decref(o);
    release(b);
}

static void empty_table_renders_no_rows_and_a_zero_other(void **state)
{
    struct gw_buckets *b = fresh();
    json_t *o = as_json(b);
    assert_int_equal(json_array_size(json_object_get(o, "buckets")), 0);
    json_t *other = json_object_get(o, "other");
    assert_int_equal(field(other, "hits") + field(other, "misses") + field(other, "bytes"), 0);
    assert_null(json_object_get(other, "bucket"));
    json_decref(o);
    release(b);
}

static void rows_are_ordered_by_reads_then_name(void **state)
{
    struct gw_buckets *b = fresh();
    gw_buckets_count(b, "few", GW_READ_HIT, 1u << 30); /* most bytes, fewest reads */
    for (int i = 0; i < 3; i++)
        gw_buckets_count(b, "many", GW_READ_MISS, 1);
    gw_buckets_count(b, "beta", GW_READ_HIT, 1);
    gw_buckets_count(b, "beta", GW_READ_HIT, 1);
    gw_buckets_count(b, "alpha", GW_READ_BYPASS, 1);
    gw_buckets_count(b, "alpha", GW_READ_HIT, 1);
    json_t *o = as_json(b);
    json_t *rows = json_object_get(o, "buckets");
    const char *want[] = {"many", "alpha", "beta", "few"};
    assert_int_equal(json_array_size(rows), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(rows, i), "bucket")),
                            want[i]);
    json_decref(o);
    release(b);
}

static void buckets_beyond_the_limit_count_in_other(void **state)
{
    struct gw_buckets *b = fresh();
    char name[32];
    for (int i = 0; i < GW_BUCKETS_MAX + 10; i++) {
        snprintf(name, sizeof(name), "bucket-%03d", i);
        gw_buckets_count(b, name, GW_READ_HIT, 10);
    }
    gw_buckets_count(b, "bucket-000", GW_READ_MISS, 1); /* a known bucket keeps its row */
    gw_buckets_count(b, "bucket-999", GW_READ_MISS, 1); /* a new one does not get a row */
    json_t *o = as_json(b);
    assert_int_equal(json_array_size(json_object_get(o, "buckets")), GW_BUCKETS_MAX);
    assert_int_equal(field(row(o, "bucket-000"), "misses"), 1);
    assert_non_null(row(o, "bucket-063"));
    assert_null(row(o, "bucket-064"));
    json_t *other = json_object_get(o, "other");
    assert_int_equal(field(other, "hits"), 10);
    assert_int_equal(field(other, "misses"), 1);
    assert_int_equal(field(other, "bytes"), 101);
    json_decref(o);
    release(b);
}

static void names_too_long_for_a_row_and_null_count_in_other(void **state)
{
    struct gw_buckets *b = fresh();
    char longname[GW_BUCKET_NAME_MAX + 2];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    gw_buckets_count(b, longname, GW_READ_HIT, 1);
    gw_buckets_count(b, NULL, GW_READ_MISS, 1);
    longname[GW_BUCKET_NAME_MAX] = '\0'; /* 63 characters: fits */
    gw_buckets_count(b, longname, GW_READ_HIT, 1);
    json_t *o = as_json(b);
    assert_int_equal(json_array_size(json_object_get(o, "buckets")), 1);
    assert_int_equal(field(row(o, longname), "hits"), 1);
    assert_int_equal(field(json_object_get(o, "other"), "hits"), 1);
    assert_int_equal(field(json_object_get(o, "other"), "misses"), 1);
    json_decref(o);
    release(b);
}

/* Threads race to add the same new buckets and count them: one row each, no read lost. */
#define THREADS 4
#define ROUNDS  20000
#define NAMES   (GW_BUCKETS_MAX + 8)

static void *count_many(void *arg)
{
    struct gw_buckets *b = arg;
    char name[32];
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(name, sizeof(name), "b%d", i % NAMES);
        gw_buckets_count(b, name, i % 3 ? GW_READ_HIT : GW_READ_MISS, 2);
    }
    return NULL;
}

static void concurrent_counting_loses_nothing_and_adds_each_row_once(void **state)
{
    struct gw_buckets *b = fresh();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, count_many, b), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    json_t *o = as_json(b);
    json_t *rows = json_object_get(o, "buckets");
    assert_int_equal(json_array_size(rows), GW_BUCKETS_MAX);
    json_int_t reads = 0, bytes = 0;
    size_t i, j;
    json_t *r, *r2;
    json_array_foreach(rows, i, r)
    {
        reads += field(r, "hits") + field(r, "misses");
        bytes += field(r, "bytes");
        json_array_foreach(rows, j, r2) /* no name twice */
        {
            if (i != j)
                assert_string_not_equal(json_string_value(json_object_get(r, "bucket")),
                                        json_string_value(json_object_get(r2, "bucket")));
        }
    }
    json_t *other = json_object_get(o, "other");
    reads += field(other, "hits") + field(other, "misses");
    bytes += field(other, "bytes");
    assert_int_equal(reads, (json_int_t)THREADS * ROUNDS);
    assert_int_equal(bytes, (json_int_t)THREADS * ROUNDS * 2);
    json_decref(o);
    release(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_are_counted_in_their_bucket_row),
        cmocka_unit_test(empty_table_renders_no_rows_and_a_zero_other),
        cmocka_unit_test(rows_are_ordered_by_reads_then_name),
        cmocka_unit_test(buckets_beyond_the_limit_count_in_other),
        cmocka_unit_test(names_too_long_for_a_row_and_null_count_in_other),
        cmocka_unit_test(concurrent_counting_loses_nothing_and_adds_each_row_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
