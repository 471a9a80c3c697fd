/*
 * test_fill_meta.c - a large object's metadata learned from a HEAD is recorded only if no
 * write to the object began since the HEAD was sent (upstream/fill.c: fill_write_epoch,
 * fill_put_meta), against a real store in a mkdtemp directory; and a recorded large object
 * counts as stored for the miss step's recheck (fill_join_running's unless_stored).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../upstream/fill.h"

#define MiB   (1024u * 1024u)
#define ETAG1 "\"11111111111111111111111111111111\""
#define ETAG2 "\"22222222222222222222222222222222\""

struct fixture {
    char dir[64];
    store *st;
    struct sc_stats stats;
    struct origin origin; /* never asked: nothing here fetches */
    struct fill_ctx ctx;
    fill_table *t;
};

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/s3c-fillmeta-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    struct store_config cfg = {.dir = f->dir,
                               .capacity_bytes = 64ull * MiB,
                               .block_size = MiB,
                               .verify_checksums = true,
                               .policy = policy_find("lru")};
    assert_int_equal(store_open(&cfg, &f->st), SC_OK);
    f->ctx = (struct fill_ctx){.origin = &f->origin,
                               .st = f->st,
                               .stats = &f->stats,
                               .max_object_size = UINT64_MAX,
                               .window = MiB,
                               .block_size = MiB};
    assert_int_equal(fill_table_new(&f->ctx, &f->t), SC_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fill_table_free(f->t);
    store_close(f->st);
    nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* True when what is cached for key is a block object of ETag want (want NULL: nothing). */
static bool cached_etag(struct fixture *f, const char *key, const char *want)
{
    store_flush(f->st);
    store_obj *obj = NULL;
    if (store_obj_open(f->st, "b", key, &obj) != SC_OK)
        return want == NULL;
    size_t len = 0;
    const char *hdrs = store_obj_headers(obj, &len);
    bool same = want != NULL && len > 0 && memmem(hdrs, len, want, strlen(want)) != NULL &&
                store_obj_is_blocks(obj);
    store_obj_close(obj);
    return same;
}

static const char blob1[] = "ETag\0" ETAG1;

/* fill_put_meta of a 4 MiB object of ETAG1 at (b, key), its HEAD sent at `epoch`. */
static sc_code put_etag1(struct fixture *f, const char *key, uint64_t epoch)
{
    return fill_put_meta(f->t, "b", key, ETAG1, blob1, sizeof(blob1), 4 * MiB, epoch);
}

static void recorded_when_no_write_began(void **state)
{
    struct fixture *f = *state;
    uint64_t epoch = fill_write_epoch(f->t, "b", "k");
    assert_int_equal(put_etag1(f, "k", epoch), SC_OK);
    assert_true(cached_etag(f, "k", ETAG1));
}

/* The HEAD was answered with ETAG1, then a PUT of the key was forwarded and answered, then the
 * answer of the HEAD is handled: ETAG1 describes what the PUT replaced. */
static void refused_when_a_write_began_and_ended_since_the_head(void **state)
{
    struct fixture *f = *state;
    uint64_t epoch = fill_write_epoch(f->t, "b", "k");
    assert_int_equal(fill_write_begin(f->t, "b", "k"), SC_OK);
    fill_write_end(f->t, "b", "k", false);
    assert_int_equal(put_etag1(f, "k", epoch), SC_ECANCELED);
    assert_true(cached_etag(f, "k", NULL));
    /* A HEAD sent after the write is recorded. */
    epoch = fill_write_epoch(f->t, "b", "k");
    assert_int_equal(put_etag1(f, "k", epoch), SC_OK);
    assert_true(cached_etag(f, "k", ETAG1));
}

static void refused_while_a_write_is_in_flight(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fill_write_begin(f->t, "b", "k"), SC_OK);
    uint64_t epoch = fill_write_epoch(f->t, "b", "k");
    assert_int_equal(put_etag1(f, "k", epoch), SC_ECANCELED);
    fill_write_end(f->t, "b", "k", false);
    assert_true(cached_etag(f, "k", NULL));
}

/* The HEAD (or an opening) was sent while a write was in flight and is answered after it
 * ended: the answer may describe what the write replaced. */
static void refused_when_asked_during_a_write_that_ended_since(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fill_write_begin(f->t, "b", "k"), SC_OK);
    uint64_t epoch = fill_write_epoch(f->t, "b", "k");
    fill_write_end(f->t, "b", "k", false);
    assert_int_not_equal(fill_write_epoch(f->t, "b", "k"), epoch);
    assert_int_equal(put_etag1(f, "k", epoch), SC_ECANCELED);
    assert_true(cached_etag(f, "k", NULL));
}

/* The object was found changed at the upstream (fill_invalidate) after the HEAD was sent. */
static void refused_when_the_key_was_invalidated_since(void **state)
{
    struct fixture *f = *state;
    uint64_t epoch = fill_write_epoch(f->t, "b", "k");
    fill_invalidate(f->t, "b", "k");
    assert_int_equal(put_etag1(f, "k", epoch), SC_ECANCELED);
    epoch = fill_write_epoch(f->t, "b", "other");
    fill_invalidate_bucket(f->t, "b");
    assert_int_equal(put_etag1(f, "other", epoch), SC_ECANCELED);
    assert_true(cached_etag(f, "k", NULL));
}

/* A multi-object delete names its keys in its body: it moves every key's epoch. */
/* The miss step's recheck (unless_stored) with no fill listed: a large object recorded since
 * the lookup, none of its blocks cached yet, is found by a second lookup (which reads it by
 * blocks), so the answer is SC_EEXIST, not a whole-object fill. (Before: SC_ENOTFOUND, and
 * fill_join started a whole GET, because the check was store_peek, which counts a block
 * object only when all its blocks are cached.) */
static void a_recorded_large_object_counts_as_stored_for_the_recheck(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(put_etag1(f, "k", fill_write_epoch(f->t, "b", "k")), SC_OK);
    store_flush(f->st);
    fill *fl = NULL;
    assert_int_equal(fill_join_running(f->t, "b", "k", true, &fl), SC_EEXIST);
    assert_int_equal(fill_join_running(f->t, "b", "k", false, &fl), SC_ENOTFOUND);
    assert_int_equal(fill_join_running(f->t, "b", "other", true, &fl), SC_ENOTFOUND);
}

static void a_bucket_wide_write_moves_every_key(void **state)
{
    struct fixture *f = *state;
    uint64_t epoch = fill_write_epoch(f->t, "b", "other");
    assert_int_equal(fill_write_begin(f->t, "b", NULL), SC_OK);
    fill_write_end(f->t, "b", NULL, false);
    static const char blob2[] = "ETag\0" ETAG2;
    assert_int_equal(fill_put_meta(f->t, "b", "other", ETAG2, blob2, sizeof(blob2), 4 * MiB, epoch),
                     SC_ECANCELED);
    assert_true(cached_etag(f, "other", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(recorded_when_no_write_began, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_when_a_write_began_and_ended_since_the_head, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(refused_while_a_write_is_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bucket_wide_write_moves_every_key, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_when_asked_during_a_write_that_ended_since, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(refused_when_the_key_was_invalidated_since, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_recorded_large_object_counts_as_stored_for_the_recheck,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
