/*
 * test_store.c - the LMDB object store: round trips, removal, replacement,
 * capacity and eviction, warm restart, corruption, a full map, ranges, and
 * readers running beside the writer. Each test runs in its own mkdtemp
 * directory, removed afterwards.
 */
#include <ftw.h>
#include <lmdb.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/log.h"
#include "../../store/store.h"

#define CHUNK 4096u
#define KiB   1024u
#define MiB   (1024u * 1024u)

#include "store_fixture.h"

static int setup(void **state)
{
    return fixture_setup(state, "store",
                         (struct store_config){.capacity_bytes = 8 * MiB,
                                               .chunk_size = CHUNK,
                                               .verify_checksums = true,
                                               .max_readers = 64,
                                               .policy = policy_find("lru")});
}

static int teardown(void **state)
{
    return fixture_teardown(state);
}

/* Puts and waits for the commit; returns what done reported (asserting it came once). */
static sc_code put_sync(store *st, const char *bucket, const char *key, const void *hdrs,
                        size_t hdrs_len, const void *body, uint64_t size)
{
    struct outcome o = {0};
    sc_code rc = store_put(st, bucket, key, hdrs, hdrs_len, body, size, record_outcome, &o);
    if (rc != SC_OK)
        return rc;
    store_flush(st);
    assert_int_equal(o.calls, 1);
    return o.rc;
}

/* Copies [off, off + len) of an open view into out through store_obj_iov(). */
static sc_code read_range(store_obj *obj, uint64_t off, uint64_t len, unsigned char *out,
                          size_t *n_iov)
{
    size_t max_iov = len / CHUNK + 2;
    struct iovec *iov = calloc(max_iov, sizeof(*iov));
    size_t n = 0;
    assert_non_null(iov);
    sc_code rc = store_obj_iov(obj, off, len, iov, max_iov, &n);
    size_t at = 0;
    for (size_t i = 0; rc == SC_OK && i < n; i++) {
        memcpy(out + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    if (rc == SC_OK)
        assert_int_equal(at, len);
    if (n_iov != NULL)
        *n_iov = n;
    free(iov);
    return rc;
}

/* Asserts (bucket, key) is cached with exactly these bytes. */
static void assert_cached(store *st, const char *bucket, const char *key, const unsigned char *want,
                          size_t len)
{
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(st, bucket, key, &obj), SC_OK);
    assert_int_equal(store_obj_size(obj), len);
    unsigned char *got = malloc(len > 0 ? len : 1);
    assert_non_null(got);
    assert_int_equal(read_range(obj, 0, len, got, NULL), SC_OK);
    if (len > 0)
        assert_memory_equal(got, want, len);
    free(got);
    store_obj_close(obj);
}

static void assert_not_cached(store *st, const char *bucket, const char *key)
{
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(st, bucket, key, &obj), SC_ENOTFOUND);
    assert_null(obj);
}

static struct store_stats stats_of(store *st)
{
    struct store_stats s;
    store_get_stats(st, &s);
    return s;
}

/* Puts a body of len bytes made from seed under key, asserting success. */
static void put_ok(store *st, const char *key, size_t len, uint32_t seed)
{
    unsigned char *b = make_body(len, seed);
    assert_int_equal(put_sync(st, "bkt", key, NULL, 0, b, len), SC_OK);
    free(b);
}

static void assert_put_cached(store *st, const char *key, size_t len, uint32_t seed)
{
    unsigned char *b = make_body(len, seed);
    assert_cached(st, "bkt", key, b, len);
    free(b);
}

/* ---- round trips ---------------------------------------------------------- */

static void small_object_round_trips_byte_exact(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "small", 1000, 1);
    assert_put_cached(f->st, "small", 1000, 1);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.used_bytes, 1000);
    assert_int_equal(s.capacity_bytes, 8 * MiB);
}

static void multi_chunk_odd_size_round_trips_byte_exact(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "odd", 3 * CHUNK + 777, 2);
    put_ok(f->st, "odder", 11 * CHUNK + 1, 3);
    assert_put_cached(f->st, "odd", 3 * CHUNK + 777, 2);
    assert_put_cached(f->st, "odder", 11 * CHUNK + 1, 3);
}

static void empty_object_round_trips(void **state)
{
    struct fixture *f = *state;
    store_obj *obj = NULL;
    struct iovec iov[2];
    size_t n = 99;
    assert_int_equal(put_sync(f->st, "bkt", "empty", "h", 1, NULL, 0), SC_OK);
    assert_int_equal(store_obj_open(f->st, "bkt", "empty", &obj), SC_OK);
    assert_int_equal(store_obj_size(obj), 0);
    assert_int_equal(store_obj_iov(obj, 0, 0, iov, 2, &n), SC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(store_obj_iov(obj, 0, 1, iov, 2, &n), SC_EINVAL);
    store_obj_close(obj);
    assert_int_equal(stats_of(f->st).objects, 1);
}

static void object_of_exactly_chunk_size_round_trips(void **state)
{
    struct fixture *f = *state;
    size_t n_iov = 0;
    put_ok(f->st, "one", CHUNK, 4);
    put_ok(f->st, "two", 2 * CHUNK, 5);
    assert_put_cached(f->st, "one", CHUNK, 4);
    assert_put_cached(f->st, "two", 2 * CHUNK, 5);
    store_obj *obj = NULL;
    unsigned char buf[CHUNK];
    assert_int_equal(store_obj_open(f->st, "bkt", "one", &obj), SC_OK);
    assert_int_equal(read_range(obj, 0, CHUNK, buf, &n_iov), SC_OK);
    assert_int_equal(n_iov, 1);
    store_obj_close(obj);
}

static void header_blob_and_stored_at_round_trip(void **state)
{
    struct fixture *f = *state;
    unsigned char hdrs[3000];
    fill_bytes(hdrs, sizeof(hdrs), 6);
    hdrs[10] = 0; /* the blob is opaque: NULs included */
    unsigned char body[100];
    fill_bytes(body, sizeof(body), 7);
    int64_t before = (int64_t)time(NULL);
    assert_int_equal(put_sync(f->st, "bkt", "h", hdrs, sizeof(hdrs), body, sizeof(body)), SC_OK);
    assert_int_equal(put_sync(f->st, "bkt", "nohdr", NULL, 0, body, sizeof(body)), SC_OK);
    int64_t after = (int64_t)time(NULL);

    store_obj *obj = NULL;
    size_t len = 0;
    assert_int_equal(store_obj_open(f->st, "bkt", "h", &obj), SC_OK);
    const void *got = store_obj_headers(obj, &len);
    assert_int_equal(len, sizeof(hdrs));
    assert_memory_equal(got, hdrs, sizeof(hdrs));
    assert_in_range(store_obj_stored_at(obj), before, after);
    store_obj_close(obj);

    assert_int_equal(store_obj_open(f->st, "bkt", "nohdr", &obj), SC_OK);
    store_obj_headers(obj, &len);
    assert_int_equal(len, 0);
    store_obj_close(obj);
}

static void same_key_in_other_bucket_is_another_object(void **state)
{
    struct fixture *f = *state;
    unsigned char a[10] = "aaaaaaaaaa", b[10] = "bbbbbbbbbb";
    assert_int_equal(put_sync(f->st, "b1", "k", NULL, 0, a, sizeof(a)), SC_OK);
    assert_int_equal(put_sync(f->st, "b2", "k", NULL, 0, b, sizeof(b)), SC_OK);
    /* "b1" + "k" must not collide with "b" + "1k": the '\0' separates them. */
    assert_not_cached(f->st, "b", "1k");
    assert_cached(f->st, "b1", "k", a, sizeof(a));
    assert_cached(f->st, "b2", "k", b, sizeof(b));
}

static void longest_key_is_accepted_and_longer_refused(void **state)
{
    struct fixture *f = *state;
    char key[STORE_KEY_MAX + 2];
    unsigned char body[5] = "hello";
    memset(key, 'k', sizeof(key) - 1);
    key[STORE_KEY_MAX] = '\0';
    assert_int_equal(put_sync(f->st, "bkt", key, NULL, 0, body, sizeof(body)), SC_OK);
    assert_cached(f->st, "bkt", key, body, sizeof(body));
    key[STORE_KEY_MAX] = 'k';
    key[STORE_KEY_MAX + 1] = '\0';
    store_obj *obj = NULL;
    assert_int_equal(store_put(f->st, "bkt", key, NULL, 0, body, 5, NULL, NULL), SC_EINVAL);
    assert_int_equal(store_obj_open(f->st, "bkt", key, &obj), SC_EINVAL);
    assert_int_equal(store_remove(f->st, "bkt", key), SC_EINVAL);
    assert_int_equal(store_put(f->st, "bkt", "k", NULL, 5, body, 5, NULL, NULL), SC_EINVAL);
    assert_int_equal(store_put(f->st, "bkt", "k", body, STORE_HDRS_MAX + 1, body, 5, NULL, NULL),
                     SC_ETOOBIG);
}

/* ---- removal and replacement ---------------------------------------------- */

static void remove_makes_object_not_found(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "gone", 2 * CHUNK + 5, 8);
    put_ok(f->st, "stays", 100, 9);
    assert_int_equal(store_remove(f->st, "bkt", "gone"), SC_OK);
    assert_not_cached(f->st, "bkt", "gone");
    assert_put_cached(f->st, "stays", 100, 9);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.used_bytes, 100);
    assert_int_equal(s.evictions, 0);
    /* Removing what is not cached is not an error. */
    assert_int_equal(store_remove(f->st, "bkt", "gone"), SC_OK);
    assert_int_equal(store_remove(f->st, "bkt", "never"), SC_OK);
}

static void queued_removals_are_done_after_flush(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "q1", 2 * CHUNK + 5, 8);
    put_ok(f->st, "q2", 100, 9);
    put_ok(f->st, "stays", 100, 10);
    assert_int_equal(store_remove_queued(f->st, "bkt", "q1"), SC_OK);
    assert_int_equal(store_remove_queued(f->st, "bkt", "q2"), SC_OK);
    assert_int_equal(store_remove_queued(f->st, "bkt", "never"), SC_OK);
    store_flush(f->st);
    assert_not_cached(f->st, "bkt", "q1");
    assert_not_cached(f->st, "bkt", "q2");
    assert_put_cached(f->st, "stays", 100, 10);
    assert_int_equal(stats_of(f->st).objects, 1);
}

static void remove_prefix_drops_only_that_bucket_and_prefix(void **state)
{
    struct fixture *f = *state;
    unsigned char body[50];
    fill_bytes(body, sizeof(body), 3);
    const char *in[] = {"train/a", "train/b/c", "train/"};
    const char *out[] = {"trai", "val/train/a", "xtrain/a"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(put_sync(f->st, "bkt", in[i], NULL, 0, body, sizeof(body)), SC_OK);
        assert_int_equal(put_sync(f->st, "bkt", out[i], NULL, 0, body, sizeof(body)), SC_OK);
    }
    assert_int_equal(put_sync(f->st, "other", "train/a", NULL, 0, body, sizeof(body)), SC_OK);
    uint64_t removed = 0;
    assert_int_equal(store_remove_prefix(f->st, "bkt", "train/", &removed), SC_OK);
    assert_int_equal(removed, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_not_cached(f->st, "bkt", in[i]);
        assert_cached(f->st, "bkt", out[i], body, sizeof(body));
    }
    assert_cached(f->st, "other", "train/a", body, sizeof(body));
    assert_int_equal(stats_of(f->st).objects, 4);
    assert_int_equal(store_remove_prefix(f->st, "bkt", "", &removed), SC_OK);
    assert_int_equal(removed, 3);
    assert_int_equal(stats_of(f->st).objects, 1);
    assert_int_equal(store_remove_prefix(f->st, "", "x", &removed), SC_EINVAL);
}

static void touch_renews_stored_at_and_keeps_bytes(void **state)
{
    struct fixture *f = *state;
    unsigned char hdrs[40], body[3 * CHUNK + 1];
    fill_bytes(hdrs, sizeof(hdrs), 4);
    fill_bytes(body, sizeof(body), 5);
    assert_int_equal(put_sync(f->st, "bkt", "t", hdrs, sizeof(hdrs), body, sizeof(body)), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "t", &obj), SC_OK);
    int64_t first = store_obj_stored_at(obj);
    store_obj_close(obj);
    sleep(1); /* stored_at has a resolution of one second */
    assert_int_equal(store_touch(f->st, "bkt", "t"), SC_OK);
    assert_int_equal(store_touch(f->st, "bkt", "not-cached"), SC_OK);
    store_flush(f->st);
    assert_int_equal(store_obj_open(f->st, "bkt", "t", &obj), SC_OK);
    assert_true(store_obj_stored_at(obj) > first);
    size_t len = 0;
    const void *got = store_obj_headers(obj, &len);
    assert_int_equal(len, sizeof(hdrs));
    assert_memory_equal(got, hdrs, sizeof(hdrs));
    store_obj_close(obj);
    assert_cached(f->st, "bkt", "t", body, sizeof(body));
    assert_int_equal(stats_of(f->st).objects, 1);
    assert_int_equal(stats_of(f->st).used_bytes, sizeof(body));
}

static void put_replaces_existing_copy(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "k", 5 * CHUNK, 10);
    put_ok(f->st, "k", 1234, 11);
    assert_put_cached(f->st, "k", 1234, 11);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.used_bytes, 1234);
    assert_int_equal(s.evictions, 0);
}

/* Two puts of one key queued together end in one transaction; the later wins. */
static void replace_within_one_batch_keeps_the_later(void **state)
{
    struct fixture *f = *state;
    unsigned char *a = make_body(3 * CHUNK, 12), *b = make_body(700, 13);
    struct outcome oa = {0}, ob = {0};
    assert_int_equal(store_put(f->st, "bkt", "k", NULL, 0, a, 3 * CHUNK, record_outcome, &oa),
                     SC_OK);
    assert_int_equal(store_put(f->st, "bkt", "k", NULL, 0, b, 700, record_outcome, &ob), SC_OK);
    store_flush(f->st);
    assert_int_equal(oa.calls, 1);
    assert_int_equal(ob.calls, 1);
    assert_int_equal(ob.rc, SC_OK);
    assert_cached(f->st, "bkt", "k", b, 700);
    assert_int_equal(stats_of(f->st).used_bytes, 700);
    assert_int_equal(stats_of(f->st).objects, 1);
    free(a);
    free(b);
}

/* ---- capacity and eviction ------------------------------------------------ */

static void capacity_never_exceeded_and_evictions_counted(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 64 * KiB;
    reopen_store(f);
    unsigned char *body = make_body(5000, 14);
    char key[32];
    /* One at a time, checking the bound after each commit... */
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(put_sync(f->st, "bkt", key, NULL, 0, body, 5000), SC_OK);
        assert_true(stats_of(f->st).used_bytes <= 64 * KiB);
    }
    /* ...then many queued at once, so they share transactions. */
    struct outcome o[70] = {{0}};
    for (int i = 30; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(
            store_put(f->st, "bkt", key, NULL, 0, body, 5000, record_outcome, &o[i - 30]), SC_OK);
    }
    store_flush(f->st);
    for (int i = 0; i < 70; i++) {
        assert_int_equal(o[i].calls, 1);
        assert_int_equal(o[i].rc, SC_OK);
    }
    struct store_stats s = stats_of(f->st);
    assert_true(s.used_bytes <= 64 * KiB);
    assert_int_equal(s.objects, (64 * KiB) / 5000);
    assert_int_equal(s.used_bytes, s.objects * 5000);
    assert_int_equal(s.evictions, 100 - s.objects);
    /* The newest survive, the oldest went first. */
    assert_put_cached(f->st, "k99", 5000, 14);
    assert_not_cached(f->st, "bkt", "k0");
    assert_not_cached(f->st, "bkt", "k86");
    free(body);
}

static void hit_object_survives_eviction(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 4 * 5000;
    reopen_store(f);
    put_ok(f->st, "a", 5000, 20);
    put_ok(f->st, "b", 5000, 21);
    put_ok(f->st, "c", 5000, 22);
    put_ok(f->st, "d", 5000, 23);
    assert_put_cached(f->st, "a", 5000, 20); /* a hit: a is now the most recent */
    put_ok(f->st, "e", 5000, 24);
    assert_not_cached(f->st, "bkt", "b");
    assert_put_cached(f->st, "a", 5000, 20);
    put_ok(f->st, "f", 5000, 25);
    assert_not_cached(f->st, "bkt", "c");
    assert_put_cached(f->st, "a", 5000, 20);
    assert_put_cached(f->st, "d", 5000, 23);
    assert_int_equal(stats_of(f->st).evictions, 2);
}

static void object_larger_than_capacity_is_too_big(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 10000;
    reopen_store(f);
    unsigned char *body = make_body(10001, 26);
    struct outcome o = {0};
    assert_int_equal(store_put(f->st, "bkt", "big", NULL, 0, body, 10001, record_outcome, &o),
                     SC_ETOOBIG);
    store_flush(f->st);
    assert_int_equal(o.calls, 0);
    /* Exactly the capacity fits, evicting everything else. */
    put_ok(f->st, "small", 10, 27);
    assert_int_equal(put_sync(f->st, "bkt", "fits", NULL, 0, body, 10000), SC_OK);
    assert_cached(f->st, "bkt", "fits", body, 10000);
    assert_not_cached(f->st, "bkt", "small");
    assert_int_equal(stats_of(f->st).used_bytes, 10000);
    free(body);
}

static bool refuse_all(void *state, const struct policy_obj *obj)
{
    (void)state;
    (void)obj;
    return false;
}

static void refused_by_policy_reports_efull_and_drops_old_copy(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "k", 100, 28);
    struct policy_ops refusing = *policy_find("lru");
    refusing.admit = refuse_all;
    f->cfg.policy = &refusing;
    reopen_store(f);
    assert_put_cached(f->st, "k", 100, 28);
    unsigned char body[50] = {0};
    assert_int_equal(put_sync(f->st, "bkt", "k", NULL, 0, body, sizeof(body)), SC_EFULL);
    assert_not_cached(f->st, "bkt", "k");
    assert_int_equal(stats_of(f->st).objects, 0);
    assert_int_equal(stats_of(f->st).used_bytes, 0);
    close_store(f);
    f->cfg.policy = policy_find("lru");
    open_store(f);
}

/* ---- restart -------------------------------------------------------------- */

static void warm_restart_keeps_objects_bytes_and_policy_order(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 3 * 5000;
    reopen_store(f);
    put_ok(f->st, "a", 5000, 30);
    put_ok(f->st, "b", 5000, 31);
    put_ok(f->st, "c", 4000, 32);
    struct store_stats before = stats_of(f->st);
    reopen_store(f);
    struct store_stats after = stats_of(f->st);
    assert_int_equal(after.objects, 3);
    assert_int_equal(after.used_bytes, 14000);
    assert_int_equal(after.used_bytes, before.used_bytes);
    /*
     * The policy was rebuilt oldest first (a, b, c). A hit on a makes b the
     * least recent, so d's room comes from b.
     */
    assert_put_cached(f->st, "a", 5000, 30);
    put_ok(f->st, "d", 5000, 33);
    assert_not_cached(f->st, "bkt", "b");
    assert_put_cached(f->st, "a", 5000, 30);
    assert_put_cached(f->st, "c", 4000, 32);
    assert_put_cached(f->st, "d", 5000, 33);
    assert_int_equal(stats_of(f->st).evictions, 1);
}

static void restart_with_smaller_capacity_evicts_oldest(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        put_ok(f->st, key, 5000, 40 + i);
    }
    f->cfg.capacity_bytes = 2 * 5000;
    reopen_store(f);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 2);
    assert_int_equal(s.used_bytes, 10000);
    assert_not_cached(f->st, "bkt", "k0");
    assert_not_cached(f->st, "bkt", "k1");
    assert_put_cached(f->st, "k2", 5000, 42);
    assert_put_cached(f->st, "k3", 5000, 43);
}

static void open_creates_missing_parent_directories(void **state)
{
    struct fixture *f = *state;
    char nested[128];
    snprintf(nested, sizeof(nested), "%s/a/b", f->dir);
    struct store_config cfg = f->cfg;
    cfg.dir = nested;
    store *st = NULL;
    assert_int_equal(store_open(&cfg, &st), SC_OK);
    put_ok(st, "x", 10, 44);
    assert_put_cached(st, "x", 10, 44);
    store_close(st);
}

/* A second store on an open directory would hand out the ids the first hands out. */
static void second_open_of_one_directory_is_ebusy_until_closed(void **state)
{
    struct fixture *f = *state;
    store *second = (store *)&second;
    assert_int_equal(store_open(&f->cfg, &second), SC_EBUSY);
    assert_null(second);
    put_ok(f->st, "kept", 100, 45); /* the first store is unharmed */
    assert_put_cached(f->st, "kept", 100, 45);
    close_store(f);
    assert_int_equal(store_open(&f->cfg, &second), SC_OK);
    assert_put_cached(second, "kept", 100, 45);
    f->st = second;
}

static void bad_config_is_refused(void **state)
{
    struct fixture *f = *state;
    store *st = (store *)&st;
    struct store_config cfg = f->cfg;
    cfg.capacity_bytes = 0;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    assert_null(st);
    cfg = f->cfg;
    cfg.policy = NULL;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    cfg = f->cfg;
    cfg.chunk_size = 100;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    cfg = f->cfg;
    cfg.dir = NULL;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    assert_int_equal(store_open(NULL, &st), SC_EINVAL);
    store_close(NULL);
}

/* ---- raw LMDB access, as the disk could leave it -------------------------- */

struct raw {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
};

/* Opens the closed store's environment directly, in a write transaction on database name. */
static void raw_open(struct raw *r, const char *dir, const char *name)
{
    assert_int_equal(mdb_env_create(&r->env), 0);
    assert_int_equal(mdb_env_set_maxdbs(r->env, 4), 0);
    assert_int_equal(mdb_env_open(r->env, dir, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(r->env, NULL, 0, &r->txn), 0);
    assert_int_equal(mdb_dbi_open(r->txn, name, 0, &r->dbi), 0);
}

static void raw_close(struct raw *r)
{
    assert_int_equal(mdb_txn_commit(r->txn), 0);
    mdb_env_close(r->env);
}

static size_t raw_count(struct raw *r)
{
    MDB_stat s;
    assert_int_equal(mdb_stat(r->txn, r->dbi, &s), 0);
    return s.ms_entries;
}

/* Rewrites the nth entry of the open database, flipping one byte of its value. */
static void raw_flip_nth_value(struct raw *r, int nth, size_t at)
{
    MDB_cursor *cur;
    MDB_val k, v;
    assert_int_equal(mdb_cursor_open(r->txn, r->dbi, &cur), 0);
    assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_FIRST), 0);
    for (int i = 0; i < nth; i++)
        assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_NEXT), 0);
    unsigned char key[64];
    assert_true(k.mv_size <= sizeof(key) && at < v.mv_size);
    memcpy(key, k.mv_data, k.mv_size);
    unsigned char *copy = malloc(v.mv_size);
    assert_non_null(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    copy[at] ^= 0x01;
    MDB_val nk = {.mv_size = k.mv_size, .mv_data = key};
    MDB_val nv = {.mv_size = v.mv_size, .mv_data = copy};
    mdb_cursor_close(cur);
    assert_int_equal(mdb_put(r->txn, r->dbi, &nk, &nv, 0), 0);
    free(copy);
}

static void corrupt_chunk_is_ecorrupt_then_removed(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "victim", 3 * CHUNK, 50);
    close_store(f);
    struct raw r;
    raw_open(&r, f->dir, "chunks");
    raw_flip_nth_value(&r, 1, 100); /* the middle chunk */
    raw_close(&r);
    open_store(f);

    store_obj *obj = NULL;
    unsigned char *buf = malloc(3 * CHUNK);
    assert_non_null(buf);
    assert_int_equal(store_obj_open(f->st, "bkt", "victim", &obj), SC_OK);
    assert_int_equal(read_range(obj, 0, CHUNK, buf, NULL), SC_OK); /* chunk 0 is intact */
    assert_int_equal(read_range(obj, 0, 3 * CHUNK, buf, NULL), SC_ECORRUPT);
    assert_int_equal(read_range(obj, CHUNK + 5, 1, buf, NULL), SC_ECORRUPT);
    store_obj_close(obj);
    assert_int_equal(stats_of(f->st).corrupt, 1);

    store_flush(f->st); /* the removal queued by the failure */
    assert_not_cached(f->st, "bkt", "victim");
    assert_int_equal(stats_of(f->st).objects, 0);
    assert_int_equal(stats_of(f->st).used_bytes, 0);
    free(buf);
}

static void unverified_store_serves_without_checking(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "k", 2 * CHUNK, 51);
    close_store(f);
    struct raw r;
    raw_open(&r, f->dir, "chunks");
    raw_flip_nth_value(&r, 0, 7);
    raw_close(&r);
    f->cfg.verify_checksums = false;
    open_store(f);
    unsigned char *want = make_body(2 * CHUNK, 51);
    want[7] ^= 0x01;
    assert_cached(f->st, "bkt", "k", want, 2 * CHUNK);
    assert_int_equal(stats_of(f->st).corrupt, 0);
    free(want);
}

static void reopen_with_larger_capacity_grows_the_map(void **state)
{
    struct fixture *f = *state;
    const uint64_t big = 512ull * MiB;
    f->cfg.capacity_bytes = big;
    reopen_store(f);
    put_ok(f->st, "k", 10, 56); /* a commit persists the new size */
    close_store(f);
    struct raw r;
    MDB_envinfo info;
    raw_open(&r, f->dir, "meta");
    assert_int_equal(mdb_env_info(r.env, &info), 0);
    assert_true(info.me_mapsize >= big + big / 4 + 64 * MiB);
    raw_close(&r);
    open_store(f);
    assert_put_cached(f->st, "k", 10, 56);
}

/* Chunks of no object, stray ids and incomplete objects are dropped at start-up. */
static void leftovers_are_dropped_at_open(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "whole", 2 * CHUNK + 1, 52);
    put_ok(f->st, "broken", 3 * CHUNK, 53);
    close_store(f);

    struct raw r;
    raw_open(&r, f->dir, "chunks");
    assert_int_equal(raw_count(&r), 3 + 3);
    unsigned char orphan[12] = {0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0}; /* id 1000 */
    MDB_val k = {.mv_size = sizeof(orphan), .mv_data = orphan};
    MDB_val v = {.mv_size = 5, .mv_data = "stray"};
    assert_int_equal(mdb_put(r.txn, r.dbi, &k, &v, 0), 0);
    /* Drop the last chunk of "broken" (id 2, index 2). */
    unsigned char last[12] = {0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2};
    k = (MDB_val){.mv_size = sizeof(last), .mv_data = last};
    assert_int_equal(mdb_del(r.txn, r.dbi, &k, NULL), 0);
    raw_close(&r);

    open_store(f);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.used_bytes, 2 * CHUNK + 1);
    assert_put_cached(f->st, "whole", 2 * CHUNK + 1, 52);
    assert_not_cached(f->st, "bkt", "broken");
    put_ok(f->st, "after", 10, 54); /* gets an id above the orphan's */
    close_store(f);

    raw_open(&r, f->dir, "chunks");
    assert_int_equal(raw_count(&r), 3 + 1);
    k = (MDB_val){.mv_size = sizeof(orphan), .mv_data = orphan};
    assert_int_equal(mdb_get(r.txn, r.dbi, &k, &v), MDB_NOTFOUND);
    MDB_cursor *cur;
    assert_int_equal(mdb_cursor_open(r.txn, r.dbi, &cur), 0);
    assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_LAST), 0);
    assert_true(((unsigned char *)k.mv_data)[6] == 0x03 && ((unsigned char *)k.mv_data)[7] > 0xe8);
    mdb_cursor_close(cur);
    raw_close(&r);
    open_store(f);
    assert_put_cached(f->st, "after", 10, 54);
}

/* ---- reader slots, a full map --------------------------------------------- */

/* LMDB rounds the reader table up to a whole page, so count how many fit. */
static void readers_beyond_max_get_ebusy(void **state)
{
    struct fixture *f = *state;
    enum { MAX_VIEWS = 1000 };
    f->cfg.max_readers = 2;
    reopen_store(f);
    put_ok(f->st, "k", 10, 55);
    store_obj **views = calloc(MAX_VIEWS, sizeof(*views));
    assert_non_null(views);
    size_t n = 0;
    sc_code rc = SC_OK;
    while (n < MAX_VIEWS) {
        rc = store_obj_open(f->st, "bkt", "k", &views[n]);
        if (rc != SC_OK)
            break;
        n++;
    }
    assert_int_equal(rc, SC_EBUSY);
    assert_in_range(n, 2, 255);
    assert_null(views[n]);
    store_obj_close(views[0]);
    assert_int_equal(store_obj_open(f->st, "bkt", "k", &views[0]), SC_OK);
    for (size_t i = 0; i < n; i++)
        store_obj_close(views[i]);
    free(views);
}

/*
 * An open read view pins every page freed after it, so repeated replacement
 * fills the map (capacity 1 MiB: a map of about 65 MiB). Puts must then fail
 * with SC_EFULL, never crash or leave a partial object, and succeed again
 * once the view is closed. The pinned view keeps reading its snapshot.
 */
static void full_map_fails_puts_cleanly_and_recovers(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 1 * MiB;
    f->cfg.chunk_size = 256 * KiB;
    reopen_store(f);
    sc_log_set_level(SC_LOG_ERROR); /* the map-full warnings are expected */
    unsigned char *body = make_body(1 * MiB, 60);
    assert_int_equal(put_sync(f->st, "bkt", "pinned", NULL, 0, body, 1 * MiB), SC_OK);
    store_obj *pin = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "pinned", &pin), SC_OK);

    enum { PUTS = 90 };
    int ok = 0, full = 0;
    char key[16];
    for (int i = 0; i < PUTS; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        body[0] = (unsigned char)i;
        sc_code rc = put_sync(f->st, "bkt", key, NULL, 0, body, 1 * MiB);
        if (rc == SC_OK) {
            ok++;
        } else {
            assert_int_equal(rc, SC_EFULL);
            full++;
        }
    }
    assert_true(ok > 0);
    assert_true(full > 0);
    assert_true(stats_of(f->st).used_bytes <= 1 * MiB);
    /* Whatever is cached is whole, and the counters agree with what is there. */
    uint64_t cached = 0;
    for (int i = 0; i < PUTS; i++) {
        store_obj *obj = NULL;
        snprintf(key, sizeof(key), "k%d", i);
        sc_code rc = store_obj_open(f->st, "bkt", key, &obj);
        store_obj_close(obj);
        if (rc == SC_OK) {
            body[0] = (unsigned char)i;
            assert_cached(f->st, "bkt", key, body, 1 * MiB);
            cached++;
        } else {
            assert_int_equal(rc, SC_ENOTFOUND);
        }
    }
    assert_int_equal(stats_of(f->st).objects, cached);
    assert_int_equal(stats_of(f->st).used_bytes, cached * MiB);
    /* The pinned view still reads its snapshot, long since evicted. */
    unsigned char *first = make_body(1 * MiB, 60);
    unsigned char *got = malloc(1 * MiB);
    assert_non_null(got);
    assert_int_equal(read_range(pin, 0, 1 * MiB, got, NULL), SC_OK);
    assert_memory_equal(got, first, 1 * MiB);
    store_obj_close(pin);
    /* With the pages free again, puts succeed. */
    assert_int_equal(put_sync(f->st, "bkt", "after", NULL, 0, first, 1 * MiB), SC_OK);
    assert_cached(f->st, "bkt", "after", first, 1 * MiB);
    sc_log_set_level(SC_LOG_WARN);
    free(first);
    free(got);
    free(body);
}

/* ---- ranges --------------------------------------------------------------- */

static void range_iov_crosses_chunk_boundaries(void **state)
{
    struct fixture *f = *state;
    const size_t size = 5 * CHUNK + 100;
    unsigned char *want = make_body(size, 70);
    unsigned char *got = malloc(size);
    assert_non_null(got);
    assert_int_equal(put_sync(f->st, "bkt", "r", NULL, 0, want, size), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "r", &obj), SC_OK);
    struct {
        uint64_t off, len;
        size_t n_iov;
    } cases[] = {
        {0, 1, 1},           {CHUNK - 1, 2, 2},   {CHUNK, CHUNK, 1}, {CHUNK - 1, CHUNK + 2, 3},
        {100, 3 * CHUNK, 4}, {5 * CHUNK, 100, 1}, {size - 1, 1, 1},  {0, size, 6},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = 0;
        assert_int_equal(read_range(obj, cases[i].off, cases[i].len, got, &n), SC_OK);
        assert_int_equal(n, cases[i].n_iov);
        assert_true(n <= cases[i].len / CHUNK + 2);
        assert_memory_equal(got, want + cases[i].off, cases[i].len);
    }
    struct iovec iov[8];
    size_t n = 42;
    assert_int_equal(store_obj_iov(obj, size, 0, iov, 8, &n), SC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(store_obj_iov(obj, size, 1, iov, 8, &n), SC_EINVAL);
    assert_int_equal(store_obj_iov(obj, size + 1, 0, iov, 8, &n), SC_EINVAL);
    assert_int_equal(store_obj_iov(obj, 1, UINT64_MAX, iov, 8, &n), SC_EINVAL);
    assert_int_equal(store_obj_iov(obj, CHUNK - 1, 2, iov, 1, &n), SC_EINVAL);
    assert_int_equal(n, 0);
    store_obj_close(obj);
    free(want);
    free(got);
}

/* A hit is one iovec per chunk, and one response takes at most STORE_MAX_CHUNKS of them. */
static void object_of_many_chunks_is_stored_in_at_most_max_chunks(void **state)
{
    struct fixture *f = *state;
    const size_t size = 1500 * (size_t)CHUNK + 7; /* 1501 chunks of the configured size */
    unsigned char *want = make_body(size, 71);
    assert_int_equal(put_sync(f->st, "bkt", "many", NULL, 0, want, size), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "many", &obj), SC_OK);
    struct iovec *iov = calloc(STORE_MAX_CHUNKS, sizeof(*iov));
    assert_non_null(iov);
    size_t n = 0;
    assert_int_equal(store_obj_iov(obj, 0, size, iov, STORE_MAX_CHUNKS, &n), SC_OK);
    assert_true(n > 0 && n <= STORE_MAX_CHUNKS);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(at + iov[i].iov_len <= size);
        assert_memory_equal(iov[i].iov_base, want + at, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    assert_int_equal(at, size);
    assert_int_equal(store_obj_iov(obj, 12345, size - 12345, iov, STORE_MAX_CHUNKS, &n), SC_OK);
    store_obj_close(obj);
    free(iov);
    free(want);
}

/* ---- readers beside the writer -------------------------------------------- */

#define CONC_KEYS 40

static size_t conc_size(int i)
{
    return (size_t)(i * 1537 % (6 * CHUNK)) + 1;
}

struct conc {
    store *st;
    atomic_bool stop;
    atomic_int reads;
    atomic_int failures;
};

static void *conc_reader(void *arg)
{
    struct conc *c = arg;
    unsigned char *want = malloc(6 * CHUNK + 1), *got = malloc(6 * CHUNK + 1);
    unsigned seed = (unsigned)(uintptr_t)&seed;
    char key[16];
    while (!atomic_load(&c->stop) && want != NULL && got != NULL) {
        int i = (int)(rand_r(&seed) % CONC_KEYS);
        snprintf(key, sizeof(key), "c%d", i);
        store_obj *obj = NULL;
        sc_code rc = store_obj_open(c->st, "bkt", key, &obj);
        if (rc == SC_ENOTFOUND)
            continue;
        size_t size = conc_size(i);
        fill_bytes(want, size, 100 + (uint32_t)i);
        if (rc != SC_OK || store_obj_size(obj) != size ||
            read_range(obj, 0, size, got, NULL) != SC_OK || memcmp(got, want, size) != 0)
            atomic_fetch_add(&c->failures, 1);
        else
            atomic_fetch_add(&c->reads, 1);
        store_obj_close(obj);
    }
    free(want);
    free(got);
    return NULL;
}

static void concurrent_readers_see_exact_bytes_while_writer_inserts(void **state)
{
    struct fixture *f = *state;
    f->cfg.capacity_bytes = 20 * 3 * CHUNK; /* about half the keys fit: evictions too */
    reopen_store(f);
    struct conc c = {.st = f->st};
    pthread_t readers[4];
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&readers[t], NULL, conc_reader, &c), 0);
    unsigned char *bodies[CONC_KEYS];
    for (int i = 0; i < CONC_KEYS; i++)
        bodies[i] = make_body(conc_size(i), 100 + (uint32_t)i);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char key[16];
    for (int round = 0;; round++) {
        for (int i = 0; i < CONC_KEYS; i++) {
            snprintf(key, sizeof(key), "c%d", (i * 7 + round) % CONC_KEYS);
            int k = (i * 7 + round) % CONC_KEYS;
            assert_int_equal(
                store_put(f->st, "bkt", key, NULL, 0, bodies[k], conc_size(k), NULL, NULL), SC_OK);
        }
        store_flush(f->st);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 1 && round > 2)
            break;
    }
    atomic_store(&c.stop, true);
    for (int t = 0; t < 4; t++)
        pthread_join(readers[t], NULL);
    assert_int_equal(atomic_load(&c.failures), 0);
    assert_true(atomic_load(&c.reads) > 0);
    assert_true(stats_of(f->st).used_bytes <= f->cfg.capacity_bytes);
    assert_true(stats_of(f->st).evictions > 0);
    for (int i = 0; i < CONC_KEYS; i++)
        free(bodies[i]);
}

/* Reads len bytes at offset of fd into a new buffer (the caller frees it). */
static unsigned char *pread_all(int fd, uint64_t offset, size_t len)
{
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, len, (off_t)offset), (ssize_t)len);
    return buf;
}

static void file_span_of_each_chunk_reads_its_bytes_from_the_data_file(void **state)
{
    struct fixture *f = *state;
    const size_t size = 3 * CHUNK + 123;
    unsigned char *body = make_body(size, 21);
    assert_int_equal(put_sync(f->st, "bkt", "span", NULL, 0, body, size), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "span", &obj), SC_OK);
    struct iovec iov[8];
    size_t n = 0;
    assert_int_equal(store_obj_iov(obj, 5, size - 5, iov, 8, &n), SC_OK);
    assert_int_equal(n, 4);
    uint64_t at = 5;
    int first_fd = -1;
    for (size_t i = 0; i < n; i++) {
        int fd = -1;
        uint64_t off = 0;
        assert_int_equal(store_obj_file_span(obj, iov[i].iov_base, iov[i].iov_len, &fd, &off),
                         SC_OK);
        assert_true(fd >= 0);
        first_fd = first_fd < 0 ? fd : first_fd;
        assert_int_equal(fd, first_fd); /* one data file */
        unsigned char *got = pread_all(fd, off, iov[i].iov_len);
        assert_memory_equal(got, body + at, iov[i].iov_len);
        free(got);
        at += iov[i].iov_len;
    }
    /* a span inside a range handed out: one byte, the chunk's last */
    int fd = -1;
    uint64_t off = 0;
    const unsigned char *last = (const unsigned char *)iov[0].iov_base + iov[0].iov_len - 1;
    assert_int_equal(store_obj_file_span(obj, last, 1, &fd, &off), SC_OK);
    unsigned char *got = pread_all(fd, off, 1);
    assert_int_equal(got[0], body[CHUNK - 1]);
    free(got);
    store_obj_close(obj);
    free(body);
}

static void file_span_refuses_bytes_outside_the_map(void **state)
{
    struct fixture *f = *state;
    unsigned char *body = make_body(CHUNK, 22);
    assert_int_equal(put_sync(f->st, "bkt", "out", NULL, 0, body, CHUNK), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "out", &obj), SC_OK);
    struct iovec iov[2];
    size_t n = 0;
    assert_int_equal(store_obj_iov(obj, 0, CHUNK, iov, 2, &n), SC_OK);
    int fd = -7;
    uint64_t off = 7;
    /* the caller's own memory, NULL, nothing, and a span that runs past the map's end */
    assert_int_equal(store_obj_file_span(obj, body, CHUNK, &fd, &off), SC_EINVAL);
    assert_int_equal(store_obj_file_span(obj, NULL, 1, &fd, &off), SC_EINVAL);
    assert_int_equal(store_obj_file_span(obj, iov[0].iov_base, 0, &fd, &off), SC_EINVAL);
    assert_int_equal(store_obj_file_span(obj, iov[0].iov_base, UINT64_MAX, &fd, &off), SC_EINVAL);
    assert_int_equal(
        store_obj_file_span(obj, (const char *)iov[0].iov_base - (1ull << 40), 1, &fd, &off),
        SC_EINVAL);
    assert_int_equal(fd, -7); /* untouched on refusal */
    assert_int_equal(off, 7);
    store_obj_close(obj);
    free(body);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(small_object_round_trips_byte_exact),
        T(multi_chunk_odd_size_round_trips_byte_exact),
        T(empty_object_round_trips),
        T(object_of_exactly_chunk_size_round_trips),
        T(header_blob_and_stored_at_round_trip),
        T(remove_prefix_drops_only_that_bucket_and_prefix),
        T(touch_renews_stored_at_and_keeps_bytes),
        T(same_key_in_other_bucket_is_another_object),
        T(longest_key_is_accepted_and_longer_refused),
        T(remove_makes_object_not_found),
        T(queued_removals_are_done_after_flush),
        T(put_replaces_existing_copy),
        T(replace_within_one_batch_keeps_the_later),
        T(capacity_never_exceeded_and_evictions_counted),
        T(hit_object_survives_eviction),
        T(object_larger_than_capacity_is_too_big),
        T(refused_by_policy_reports_efull_and_drops_old_copy),
        T(warm_restart_keeps_objects_bytes_and_policy_order),
        T(restart_with_smaller_capacity_evicts_oldest),
        T(open_creates_missing_parent_directories),
        T(second_open_of_one_directory_is_ebusy_until_closed),
        T(bad_config_is_refused),
        T(corrupt_chunk_is_ecorrupt_then_removed),
        T(unverified_store_serves_without_checking),
        T(reopen_with_larger_capacity_grows_the_map),
        T(leftovers_are_dropped_at_open),
        T(readers_beyond_max_get_ebusy),
        T(full_map_fails_puts_cleanly_and_recovers),
        T(range_iov_crosses_chunk_boundaries),
        T(object_of_many_chunks_is_stored_in_at_most_max_chunks),
        T(concurrent_readers_see_exact_bytes_while_writer_inserts),
        T(file_span_of_each_chunk_reads_its_bytes_from_the_data_file),
        T(file_span_refuses_bytes_outside_the_map),
    };
#undef T
    sc_log_set_level(SC_LOG_WARN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
