/*
 * test_store_blocks.c - block objects in the LMDB store (store.h, "Block objects"):
 * metadata then blocks in any order, partly cached objects read back byte-exact,
 * refused blocks, replaced versions, a corrupt block dropped alone, eviction per block
 * under lru and s3fifo with the record going with its last block, removal, touch, whole
 * objects replacing block objects and back, warm restart, and the start-up scan dropping
 * leftover blocks. Each test runs in its own mkdtemp directory, removed afterwards.
 */
#include <ftw.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/log.h"
#include "../../store/store.h"

#define KiB   1024u
#define MiB   (1024u * 1024u)
#define BS    STORE_BLOCK_MIN /* the tests' block size: 1 MiB */
#define CHUNK (4u * KiB)
#define ETAG  "\"etag-1\""
#define ETAG2 "\"etag-2\""

#include "store_fixture.h"

static int setup_with(void **state, const char *policy, uint64_t capacity)
{
    return fixture_setup(state, "blocks",
                         (struct store_config){.capacity_bytes = capacity,
                                               .chunk_size = CHUNK,
                                               .verify_checksums = true,
                                               .max_readers = 16,
                                               .block_size = BS,
                                               .policy = policy_find(policy)});
}

static int setup(void **state)
{
    return setup_with(state, "lru", 64ull * MiB);
}

/* A cache of three blocks, to evict by. */
static int setup_small_lru(void **state)
{
    return setup_with(state, "lru", 3ull * MiB);
}

static int setup_small_s3fifo(void **state)
{
    return setup_with(state, "s3fifo", 3ull * MiB);
}

/* A cache of two blocks. */
static int setup_two_lru(void **state)
{
    return setup_with(state, "lru", 2 * BS);
}

/* A cache of one block. */
static int setup_one_lru(void **state)
{
    return setup_with(state, "lru", BS);
}

static int setup_one_s3fifo(void **state)
{
    return setup_with(state, "s3fifo", BS);
}

static int teardown(void **state)
{
    return fixture_teardown(state);
}

static struct store_stats stats_of(store *st)
{
    struct store_stats s;
    store_flush(st);
    store_get_stats(st, &s);
    return s;
}

/* Length of block idx of an object of size bytes. */
static uint32_t block_len(uint64_t size, uint32_t idx)
{
    uint64_t start = (uint64_t)idx * BS;
    return size - start < BS ? (uint32_t)(size - start) : BS;
}

static sc_code meta_sync(store *st, const char *key, const char *etag, uint64_t size)
{
    struct outcome o = {0};
    const char hdrs[] = "ETag: x\r\nContent-Type: application/x-tar\r\n";
    sc_code rc =
        store_put_meta(st, "bkt", key, etag, hdrs, sizeof(hdrs) - 1, size, record_outcome, &o);
    if (rc != SC_OK)
        return rc;
    store_flush(st);
    assert_int_equal(o.calls, 1);
    return o.rc;
}

/* Puts block idx of body (an object of size bytes) and waits for the commit. */
static sc_code block_sync(store *st, const char *key, const char *etag, uint32_t idx,
                          const unsigned char *body, uint64_t size)
{
    struct outcome o = {0};
    sc_code rc = store_put_block(st, "bkt", key, etag, BS, idx, body + (uint64_t)idx * BS,
                                 block_len(size, idx), record_outcome, &o);
    if (rc != SC_OK)
        return rc;
    store_flush(st);
    assert_int_equal(o.calls, 1);
    return o.rc;
}

/* Asserts that exactly the blocks in want (n_blocks flags) are cached, byte-exact. */
static void assert_blocks(store *st, const char *key, const unsigned char *body, uint64_t size,
                          const bool *want)
{
    store_obj *obj = NULL;
    uint32_t n = (uint32_t)((size + BS - 1) / BS);
    uint64_t expected = 0;
    assert_int_equal(store_obj_open(st, "bkt", key, &obj), SC_OK);
    assert_true(store_obj_is_blocks(obj));
    assert_int_equal(store_obj_block_size(obj), BS);
    assert_int_equal(store_obj_size(obj), size);
    for (uint32_t i = 0; i < n; i++) {
        const void *data = NULL;
        uint32_t len = 0;
        sc_code rc = store_obj_block(obj, i, &data, &len);
        if (!want[i]) {
            assert_int_equal(rc, SC_ENOTFOUND);
            assert_int_equal(store_obj_blocks_cached(obj, i, i), 0);
            continue;
        }
        expected++;
        assert_int_equal(rc, SC_OK);
        assert_int_equal(len, block_len(size, i));
        assert_memory_equal(data, body + (uint64_t)i * BS, len);
        assert_int_equal(store_obj_blocks_cached(obj, i, i), 1);
    }
    assert_int_equal(store_obj_blocks_cached(obj, 0, n - 1), expected);
    assert_int_equal(store_obj_blocks_cached(obj, 0, UINT32_MAX), expected); /* clamped */
    store_obj_close(obj);
}

static void assert_not_cached(store *st, const char *key)
{
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(st, "bkt", key, &obj), SC_ENOTFOUND);
    assert_null(obj);
}

/* ---- writing and reading ------------------------------------------------------------ */

static void blocks_out_of_order_read_back_byte_exact(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS + BS / 2 + 17; /* 4 blocks, the last short */
    unsigned char *body = make_body(size, 1);
    assert_int_equal(meta_sync(f->st, "shard", ETAG, size), SC_OK);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.used_bytes, 0); /* the record is not charged */

    assert_int_equal(block_sync(f->st, "shard", ETAG, 3, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "shard", ETAG, 0, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "shard", ETAG, 2, body, size), SC_OK);
    bool want[4] = {true, false, true, true};
    assert_blocks(f->st, "shard", body, size, want);
    s = stats_of(f->st);
    assert_int_equal(s.blocks, 3);
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.used_bytes, 2 * BS + block_len(size, 3));

    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "shard", &obj), SC_OK);
    size_t hlen = 0;
    const char *hdrs = store_obj_headers(obj, &hlen);
    assert_true(hlen > 0 && memcmp(hdrs, "ETag: x\r\n", 9) == 0);
    struct iovec iov[4];
    size_t n_iov = 0;
    assert_int_equal(store_obj_iov(obj, 0, 10, iov, 4, &n_iov), SC_EINVAL);
    const void *data;
    uint32_t len;
    assert_int_equal(store_obj_block(obj, 4, &data, &len), SC_EINVAL); /* past the end */
    assert_int_equal(store_obj_blocks_cached(obj, 2, 1), 0);
    assert_int_equal(store_obj_blocks_cached(obj, 1, 2), 1);
    store_obj_close(obj);

    uint64_t peeked = 0;
    assert_int_equal(store_peek(f->st, "bkt", "shard", &peeked), SC_ENOTFOUND); /* partial */
    assert_int_equal(block_sync(f->st, "shard", ETAG, 1, body, size), SC_OK);
    assert_int_equal(store_peek(f->st, "bkt", "shard", &peeked), SC_OK);
    assert_int_equal(peeked, size);
    bool all[4] = {true, true, true, true};
    assert_blocks(f->st, "shard", body, size, all);
    assert_int_equal(stats_of(f->st).used_bytes, size);
    free(body);
}

static void wrong_etag_or_length_is_refused(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 2 * BS + 100;
    unsigned char *body = make_body(size, 2);
    /* No record yet. */
    assert_int_equal(block_sync(f->st, "k", ETAG, 0, body, size), SC_ECANCELED);
    assert_int_equal(meta_sync(f->st, "k", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "k", ETAG2, 0, body, size), SC_ECANCELED);
    struct outcome o = {0};
    assert_int_equal(
        store_put_block(f->st, "bkt", "k", ETAG, BS, 0, body, BS - 1, record_outcome, &o), SC_OK);
    assert_int_equal(store_put_block(f->st, "bkt", "k", ETAG, BS, 3, body, 100, record_outcome, &o),
                     SC_OK); /* past the last block */
    store_flush(f->st);
    assert_int_equal(o.calls, 2);
    assert_int_equal(o.rc, SC_EMISMATCH);
    assert_int_equal(stats_of(f->st).blocks, 0);
    /* A block cut with another block size (a fetch that began before --block-size changed):
     * in an object of 3 BS, block 1 of 2 BS blocks is bytes [2 BS, 3 BS), as long as this
     * record's block 1, bytes [BS, 2 BS), but other bytes: refused. */
    unsigned char *three = make_body(3 * BS, 5);
    assert_int_equal(meta_sync(f->st, "k3", ETAG, 3 * BS), SC_OK);
    struct outcome other = {0};
    assert_int_equal(store_put_block(f->st, "bkt", "k3", ETAG, 2 * BS, 1, three + 2 * BS, BS,
                                     record_outcome, &other),
                     SC_OK);
    store_flush(f->st);
    assert_int_equal(other.calls, 1);
    assert_int_equal(other.rc, SC_ECANCELED);
    assert_int_equal(stats_of(f->st).blocks, 0);
    free(three);
    /* The same block twice: the second is a no-op. */
    assert_int_equal(block_sync(f->st, "k", ETAG, 2, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "k", ETAG, 2, body, size), SC_OK);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.used_bytes, 100);

    /* Refused before queuing. */
    assert_int_equal(store_put_meta(f->st, "bkt", "k", ETAG, NULL, 0, BS, NULL, NULL), SC_EINVAL);
    assert_int_equal(store_put_meta(f->st, "bkt", "k", NULL, NULL, 0, size, NULL, NULL), SC_EINVAL);
    assert_int_equal(store_put_meta(f->st, "bkt", "k", "", NULL, 0, size, NULL, NULL), SC_EINVAL);
    assert_int_equal(store_put_meta(f->st, "bkt", "k", ETAG, NULL, 0,
                                    (uint64_t)STORE_BLOCKS_MAX * BS + 1, NULL, NULL),
                     SC_EINVAL);
    assert_int_equal(
        store_put_meta(f->st, "bkt", "k", ETAG, "x", STORE_HDRS_MAX + 1, size, NULL, NULL),
        SC_ETOOBIG);
    assert_int_equal(store_put_block(f->st, "bkt", "k", ETAG, BS, 0, body, 0, NULL, NULL),
                     SC_EINVAL);
    assert_int_equal(store_put_block(f->st, "bkt", "k", ETAG, BS, 0, NULL, 10, NULL, NULL),
                     SC_EINVAL);
    assert_int_equal(store_put_block(f->st, "bkt", NULL, ETAG, BS, 0, body, 10, NULL, NULL),
                     SC_EINVAL);
    free(body);
}

static void meta_of_another_version_drops_old_blocks(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS;
    unsigned char *body = make_body(size, 3);
    assert_int_equal(meta_sync(f->st, "v", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "v", ETAG, 0, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "v", ETAG, 1, body, size), SC_OK);
    /* The same version again keeps its blocks. */
    assert_int_equal(meta_sync(f->st, "v", ETAG, size), SC_OK);
    bool two[3] = {true, true, false};
    assert_blocks(f->st, "v", body, size, two);
    /* Another size of the same ETag is another object. */
    assert_int_equal(meta_sync(f->st, "v", ETAG, size + 1), SC_OK);
    assert_int_equal(stats_of(f->st).blocks, 0);
    assert_int_equal(block_sync(f->st, "v", ETAG, 0, body, size), SC_OK);
    /* Another ETag: the old blocks go, and blocks of the old version are refused. */
    assert_int_equal(meta_sync(f->st, "v", ETAG2, size), SC_OK);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.used_bytes, 0);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(block_sync(f->st, "v", ETAG, 2, body, size), SC_ECANCELED);
    bool none[3] = {false, false, false};
    assert_blocks(f->st, "v", body, size, none);
    /* Blocks of another size (--block-size changed across a restart) are replaced too. */
    assert_int_equal(block_sync(f->st, "v", ETAG2, 0, body, size), SC_OK);
    close_store(f);
    f->cfg.block_size = 2 * BS;
    open_store(f);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "v", &obj), SC_OK);
    assert_int_equal(store_obj_block_size(obj), BS); /* the record keeps its own */
    assert_int_equal(store_obj_blocks_cached(obj, 0, 2), 1);
    store_obj_close(obj);
    assert_int_equal(meta_sync(f->st, "v", ETAG2, size), SC_OK);
    assert_int_equal(stats_of(f->st).blocks, 0);
    assert_int_equal(store_obj_open(f->st, "bkt", "v", &obj), SC_OK);
    assert_int_equal(store_obj_block_size(obj), 2 * BS);
    store_obj_close(obj);
    free(body);
}

/* ---- raw LMDB access, as the disk could leave it ------------------------------------ */

struct raw {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
};

static void raw_open(struct raw *r, const char *dir, const char *name)
{
    assert_int_equal(mdb_env_create(&r->env), 0);
    assert_int_equal(mdb_env_set_maxdbs(r->env, 8), 0);
    assert_int_equal(mdb_env_set_mapsize(r->env, 256ull * MiB), 0);
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

/* Reads the nth key of the open database (12 bytes: id, index) into key. */
static void raw_nth_key(struct raw *r, int nth, unsigned char key[12], size_t *value_len)
{
    MDB_cursor *cur;
    MDB_val k, v;
    assert_int_equal(mdb_cursor_open(r->txn, r->dbi, &cur), 0);
    assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_FIRST), 0);
    for (int i = 0; i < nth; i++)
        assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_NEXT), 0);
    assert_int_equal(k.mv_size, 12);
    memcpy(key, k.mv_data, 12);
    *value_len = v.mv_size;
    mdb_cursor_close(cur);
}

/* Rewrites the value under key with one byte flipped at at. */
static void raw_flip(struct raw *r, const unsigned char key[12], size_t at)
{
    MDB_val k = {.mv_size = 12, .mv_data = (void *)key};
    MDB_val v;
    assert_int_equal(mdb_get(r->txn, r->dbi, &k, &v), 0);
    assert_true(at < v.mv_size);
    unsigned char *copy = malloc(v.mv_size);
    assert_non_null(copy);
    memcpy(copy, v.mv_data, v.mv_size);
    copy[at] ^= 0x01;
    MDB_val nv = {.mv_size = v.mv_size, .mv_data = copy};
    assert_int_equal(mdb_put(r->txn, r->dbi, &k, &nv, 0), 0);
    free(copy);
}

static void raw_put(struct raw *r, const unsigned char key[12], size_t len)
{
    unsigned char *val = calloc(1, len);
    assert_non_null(val);
    MDB_val k = {.mv_size = 12, .mv_data = (void *)key};
    MDB_val v = {.mv_size = len, .mv_data = val};
    assert_int_equal(mdb_put(r->txn, r->dbi, &k, &v, 0), 0);
    free(val);
}

static void raw_key(unsigned char key[12], uint64_t id, uint32_t idx)
{
    for (int i = 7; i >= 0; i--, id >>= 8)
        key[i] = (unsigned char)id;
    for (int i = 11; i >= 8; i--, idx >>= 8)
        key[i] = (unsigned char)idx;
}

static bool raw_has(struct raw *r, uint64_t id, uint32_t idx)
{
    unsigned char key[12];
    raw_key(key, id, idx);
    MDB_val k = {.mv_size = 12, .mv_data = key};
    MDB_val v;
    return mdb_get(r->txn, r->dbi, &k, &v) == 0;
}

static void corrupt_block_is_detected_and_dropped_alone(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS;
    unsigned char *body = make_body(size, 4);
    assert_int_equal(meta_sync(f->st, "c", ETAG, size), SC_OK);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(block_sync(f->st, "c", ETAG, i, body, size), SC_OK);
    close_store(f);
    struct raw r;
    unsigned char key[12];
    size_t vlen = 0;
    raw_open(&r, f->dir, "blocks");
    raw_nth_key(&r, 1, key, &vlen);
    assert_int_equal(vlen, BS + 4); /* the bytes and their CRC, one value */
    raw_flip(&r, key, 12345);
    raw_nth_key(&r, 2, key, &vlen);
    raw_flip(&r, key, BS + 1); /* the CRC itself */
    raw_close(&r);
    open_store(f);
    assert_int_equal(stats_of(f->st).blocks, 3); /* the scan reads no bodies */

    store_obj *obj = NULL;
    const void *data;
    uint32_t len;
    assert_int_equal(store_obj_open(f->st, "bkt", "c", &obj), SC_OK);
    assert_int_equal(store_obj_block(obj, 0, &data, &len), SC_OK);
    assert_int_equal(store_obj_block(obj, 1, &data, &len), SC_ECORRUPT);
    assert_int_equal(store_obj_block(obj, 1, &data, &len), SC_ECORRUPT); /* counted once */
    assert_int_equal(store_obj_block(obj, 2, &data, &len), SC_ECORRUPT);
    store_obj_close(obj);
    struct store_stats s = stats_of(f->st); /* the removals queued by the failures */
    assert_int_equal(s.corrupt, 2);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.used_bytes, BS);
    assert_int_equal(s.objects, 1);
    bool first[3] = {true, false, false};
    assert_blocks(f->st, "c", body, size, first);
    free(body);
}

static void unverified_store_serves_a_flipped_block(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 2 * BS;
    unsigned char *body = make_body(size, 5);
    assert_int_equal(meta_sync(f->st, "u", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "u", ETAG, 0, body, size), SC_OK);
    close_store(f);
    struct raw r;
    unsigned char key[12];
    size_t vlen = 0;
    raw_open(&r, f->dir, "blocks");
    raw_nth_key(&r, 0, key, &vlen);
    raw_flip(&r, key, 7);
    raw_close(&r);
    f->cfg.verify_checksums = false;
    open_store(f);
    body[7] ^= 0x01;
    bool first[2] = {true, false};
    assert_blocks(f->st, "u", body, size, first);
    assert_int_equal(stats_of(f->st).corrupt, 0);
    free(body);
}

/* ---- eviction ----------------------------------------------------------------------- */

/* Counts the cached blocks of key (0 if it has no record). */
static uint64_t cached_blocks(store *st, const char *key)
{
    store_obj *obj = NULL;
    if (store_obj_open(st, "bkt", key, &obj) != SC_OK)
        return 0;
    uint64_t n = store_obj_blocks_cached(obj, 0, UINT32_MAX);
    store_obj_close(obj);
    return n;
}

/* The counters agree with what can be read, and used bytes stay within the capacity. */
static void assert_consistent(struct fixture *f, const char **keys, size_t n_keys)
{
    struct store_stats s = stats_of(f->st);
    uint64_t blocks = 0, objects = 0;
    for (size_t i = 0; i < n_keys; i++) {
        store_obj *obj = NULL;
        if (store_obj_open(f->st, "bkt", keys[i], &obj) != SC_OK)
            continue;
        objects++;
        uint64_t n = store_obj_blocks_cached(obj, 0, UINT32_MAX);
        assert_true(n > 0); /* the record went with its last block */
        blocks += n;
        store_obj_close(obj);
    }
    assert_true(s.used_bytes <= f->cfg.capacity_bytes);
    assert_int_equal(s.blocks, blocks);
    assert_int_equal(s.objects, objects);
    assert_int_equal(s.block_objects, objects);
    assert_int_equal(s.used_bytes, blocks * BS);
}

/* Objects of 4 blocks each through a cache of 3 blocks: any policy must evict per block. */
static void eviction_per_block_keeps_used_within_capacity(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 4 * BS;
    const char *keys[] = {"a", "b", "c"};
    unsigned char *body = make_body(size, 6);
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(meta_sync(f->st, keys[k], ETAG, size), SC_OK);
        for (uint32_t i = 0; i < 4; i++) {
            assert_int_equal(block_sync(f->st, keys[k], ETAG, i, body, size), SC_OK);
            assert_consistent(f, keys, 3);
        }
        /* Reads of a's blocks count as hits, whatever the policy makes of them. */
        if (k == 0) {
            store_obj *obj = NULL;
            const void *data;
            uint32_t len;
            assert_int_equal(store_obj_open(f->st, "bkt", "a", &obj), SC_OK);
            assert_int_equal(store_obj_block(obj, 3, &data, &len), SC_OK);
            store_obj_close(obj);
        }
    }
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.blocks, 3);
    assert_int_equal(s.used_bytes, 3 * BS);
    assert_true(s.evictions >= 9);
    if (strcmp(f->cfg.policy->name, "lru") == 0) {
        assert_int_equal(s.evictions, 9);
        assert_int_equal(cached_blocks(f->st, "c"), 3); /* the newest stay */
        assert_not_cached(f->st, "a");                  /* records went with their last block */
        assert_not_cached(f->st, "b");
        assert_int_equal(s.objects, 1);
    }
    free(body);
}

/* lru: the least recently read block goes first, and a read block stays. */
static void lru_evicts_the_least_recently_read_block(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS;
    unsigned char *a = make_body(size, 7), *b = make_body(size, 8);
    assert_int_equal(meta_sync(f->st, "a", ETAG, size), SC_OK);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(block_sync(f->st, "a", ETAG, i, a, size), SC_OK);
    store_obj *obj = NULL;
    const void *data;
    uint32_t len;
    assert_int_equal(store_obj_open(f->st, "bkt", "a", &obj), SC_OK); /* no hit by itself */
    assert_int_equal(store_obj_block(obj, 0, &data, &len), SC_OK);
    store_obj_close(obj);
    assert_int_equal(meta_sync(f->st, "b", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "b", ETAG, 2, b, size), SC_OK);
    bool kept[3] = {true, false, true}; /* block 1 was the least recently used */
    assert_blocks(f->st, "a", a, size, kept);
    assert_int_equal(stats_of(f->st).evictions, 1);
    free(a);
    free(b);
}

/*
 * In a cache of one block, writing block 1 evicts block 0, the object's only block: the
 * record must stay for block 1 (no block without its record, even after a restart).
 */
static void block_keeps_its_record_when_its_siblings_are_evicted(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS;
    unsigned char *body = make_body(size, 9);
    assert_int_equal(meta_sync(f->st, "self", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "self", ETAG, 0, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "self", ETAG, 1, body, size), SC_OK);
    bool second[3] = {false, true, false};
    assert_blocks(f->st, "self", body, size, second);
    assert_int_equal(block_sync(f->st, "self", ETAG, 2, body, size), SC_OK);
    bool third[3] = {false, false, true};
    assert_blocks(f->st, "self", body, size, third);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.evictions, 2);
    close_store(f);
    open_store(f);
    assert_blocks(f->st, "self", body, size, third);
    s = stats_of(f->st);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.used_bytes, BS);
    free(body);
}

/*
 * A read view held open keeps LMDB from reusing pages, so blocks written meanwhile fill the
 * map: the writer evicts and retries, and what fails is SC_EFULL with nothing half done (the
 * policy's calls undone, the counters those of what is there).
 */
static void full_map_fails_blocks_cleanly_and_recovers(void **state)
{
    struct fixture *f = *state;
    enum { OBJECTS = 45 };
    const uint64_t size = 2 * BS;
    const char *keys[OBJECTS];
    char names[OBJECTS][16];
    unsigned char *body = make_body(size, 14);
    assert_int_equal(meta_sync(f->st, "pinned", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "pinned", ETAG, 0, body, size), SC_OK);
    store_obj *pin = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "pinned", &pin), SC_OK);
    int ok = 0, full = 0;
    for (int k = 0; k < OBJECTS; k++) {
        snprintf(names[k], sizeof(names[k]), "k%d", k);
        keys[k] = names[k];
        sc_code rc = meta_sync(f->st, keys[k], ETAG, size);
        assert_true(rc == SC_OK || rc == SC_EFULL);
        for (uint32_t i = 0; rc == SC_OK && i < 2; i++) {
            sc_code brc = block_sync(f->st, keys[k], ETAG, i, body, size);
            /* SC_ECANCELED: evicting for room in the map took block 0, and the record with it. */
            assert_true(brc == SC_OK || brc == SC_EFULL || (i == 1 && brc == SC_ECANCELED));
            ok += brc == SC_OK;
            full += brc == SC_EFULL;
        }
    }
    assert_true(ok > 0);
    assert_true(full > 0);
    store_obj_close(pin);
    struct store_stats s = stats_of(f->st);
    uint64_t blocks = cached_blocks(f->st, "pinned");
    for (int k = 0; k < OBJECTS; k++)
        blocks += cached_blocks(f->st, keys[k]);
    assert_int_equal(s.blocks, blocks);
    assert_int_equal(s.used_bytes, blocks * BS);
    assert_true(s.used_bytes <= f->cfg.capacity_bytes);
    /* Recovered: blocks fit again, and a restart finds the same. */
    assert_int_equal(meta_sync(f->st, "after", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "after", ETAG, 1, body, size), SC_OK);
    s = stats_of(f->st);
    close_store(f);
    open_store(f);
    struct store_stats again = stats_of(f->st);
    assert_int_equal(again.blocks, s.blocks);
    assert_int_equal(again.used_bytes, s.used_bytes);
    bool second[2] = {false, true};
    assert_blocks(f->st, "after", body, size, second);
    free(body);
}

/* ---- removal, touch, replacement ---------------------------------------------------- */

static void remove_prefix_and_touch_work_on_block_objects(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 2 * BS + 1;
    unsigned char *body = make_body(size, 10);
    const char *keys[] = {"dir/one", "dir/two", "other"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(meta_sync(f->st, keys[k], ETAG, size), SC_OK);
        assert_int_equal(block_sync(f->st, keys[k], ETAG, 0, body, size), SC_OK);
        assert_int_equal(block_sync(f->st, keys[k], ETAG, 2, body, size), SC_OK);
    }
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "other", &obj), SC_OK);
    int64_t first = store_obj_stored_at(obj);
    store_obj_close(obj);
    sleep(1); /* stored_at has a resolution of one second */
    assert_int_equal(store_touch(f->st, "bkt", "other"), SC_OK);
    store_flush(f->st);
    assert_int_equal(store_obj_open(f->st, "bkt", "other", &obj), SC_OK);
    assert_true(store_obj_stored_at(obj) > first);
    store_obj_close(obj);
    bool ends[3] = {true, false, true};
    assert_blocks(f->st, "other", body, size, ends);

    uint64_t removed = 0;
    assert_int_equal(store_remove_prefix(f->st, "bkt", "dir/", &removed), SC_OK);
    assert_int_equal(removed, 2);
    assert_not_cached(f->st, "dir/one");
    assert_not_cached(f->st, "dir/two");
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(s.blocks, 2);
    assert_int_equal(s.used_bytes, BS + 1);

    assert_int_equal(store_remove(f->st, "bkt", "other"), SC_OK);
    assert_not_cached(f->st, "other");
    s = stats_of(f->st);
    assert_int_equal(s.objects, 0);
    assert_int_equal(s.block_objects, 0);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.used_bytes, 0);

    assert_int_equal(meta_sync(f->st, "q", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "q", ETAG, 1, body, size), SC_OK);
    assert_int_equal(store_remove_queued(f->st, "bkt", "q"), SC_OK);
    assert_int_equal(block_sync(f->st, "q", ETAG, 0, body, size), SC_ECANCELED);
    assert_not_cached(f->st, "q");
    assert_int_equal(stats_of(f->st).blocks, 0);
    free(body);
}

static void whole_put_replaces_block_object_and_back(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 2 * BS;
    unsigned char *body = make_body(size, 11);
    assert_int_equal(meta_sync(f->st, "x", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "x", ETAG, 1, body, size), SC_OK);
    struct outcome o = {0};
    assert_int_equal(store_put(f->st, "bkt", "x", NULL, 0, body, 5000, record_outcome, &o), SC_OK);
    store_flush(f->st);
    assert_int_equal(o.rc, SC_OK);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.block_objects, 0);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.used_bytes, 5000);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "x", &obj), SC_OK);
    assert_false(store_obj_is_blocks(obj));
    assert_int_equal(store_obj_block_size(obj), 0);
    assert_int_equal(store_obj_blocks_cached(obj, 0, 10), 0);
    const void *data;
    uint32_t len;
    assert_int_equal(store_obj_block(obj, 0, &data, &len), SC_EINVAL);
    struct iovec iov[4];
    size_t n_iov = 0;
    assert_int_equal(store_obj_iov(obj, 0, 5000, iov, 4, &n_iov), SC_OK);
    store_obj_close(obj);
    assert_int_equal(block_sync(f->st, "x", ETAG, 0, body, size), SC_ECANCELED);

    assert_int_equal(meta_sync(f->st, "x", ETAG, size), SC_OK);
    s = stats_of(f->st);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(s.used_bytes, 0);
    bool none[2] = {false, false};
    assert_blocks(f->st, "x", body, size, none);
    free(body);
}

/* ---- restart ------------------------------------------------------------------------ */

static void warm_restart_keeps_a_partly_cached_object(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 5 * BS + 3;
    unsigned char *body = make_body(size, 12);
    assert_int_equal(meta_sync(f->st, "p", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "p", ETAG, 5, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "p", ETAG, 1, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "p", ETAG, 3, body, size), SC_OK);
    struct outcome o = {0};
    assert_int_equal(store_put(f->st, "bkt", "whole", NULL, 0, body, 3000, record_outcome, &o),
                     SC_OK);
    assert_int_equal(meta_sync(f->st, "empty", ETAG, size), SC_OK); /* never gets a block */
    struct store_stats before = stats_of(f->st);
    assert_int_equal(before.objects, 3);
    assert_int_equal(before.block_objects, 2);
    close_store(f);
    open_store(f);
    struct store_stats after = stats_of(f->st);
    assert_int_equal(after.objects, before.objects - 1); /* "empty" is dropped */
    assert_int_equal(after.block_objects, before.block_objects - 1);
    assert_int_equal(after.blocks, before.blocks);
    assert_int_equal(after.blocks, 3);
    assert_int_equal(after.used_bytes, before.used_bytes);
    assert_not_cached(f->st, "empty");
    bool want[6] = {false, true, false, true, false, true};
    assert_blocks(f->st, "p", body, size, want);
    /* The restarted policy knows the blocks: they can be evicted, oldest first. */
    close_store(f);
    f->cfg.capacity_bytes = 2 * BS;
    open_store(f);
    struct store_stats small = stats_of(f->st);
    assert_true(small.used_bytes <= 2 * BS);
    assert_true(small.evictions > 0);
    assert_int_equal(small.blocks, cached_blocks(f->st, "p"));
    free(body);
}

static void scan_drops_orphan_and_wrong_length_blocks(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 3 * BS;
    unsigned char *body = make_body(size, 13);
    assert_int_equal(meta_sync(f->st, "s", ETAG, size), SC_OK); /* id 1 */
    assert_int_equal(block_sync(f->st, "s", ETAG, 0, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "s", ETAG, 1, body, size), SC_OK);
    assert_int_equal(meta_sync(f->st, "t", ETAG, size), SC_OK); /* id 2 */
    assert_int_equal(block_sync(f->st, "t", ETAG, 2, body, size), SC_OK);
    struct outcome o = {0};
    assert_int_equal(store_put(f->st, "bkt", "w", NULL, 0, body, 100, record_outcome, &o), SC_OK);
    store_flush(f->st); /* "w" is id 3 */
    close_store(f);

    struct raw r;
    unsigned char key[12];
    raw_open(&r, f->dir, "blocks");
    assert_int_equal(raw_count(&r), 3);
    raw_key(key, 1000, 0); /* no such object */
    raw_put(&r, key, 100);
    raw_key(key, 1, 7); /* past the last block of "s" */
    raw_put(&r, key, BS + 4);
    raw_key(key, 1, 1); /* block 1 of "s", cut short */
    raw_put(&r, key, BS);
    raw_key(key, 3, 0); /* a block under a whole object's id */
    raw_put(&r, key, 104);
    raw_key(key, 2, 2); /* the only block of "t" without its CRC: "t" goes */
    raw_put(&r, key, BS);
    raw_close(&r);

    open_store(f);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.objects, 2); /* "s" and "w" */
    assert_int_equal(s.block_objects, 1);
    assert_int_equal(s.blocks, 1);
    assert_int_equal(s.used_bytes, BS + 100);
    bool first[3] = {true, false, false};
    assert_blocks(f->st, "s", body, size, first);
    assert_not_cached(f->st, "t");
    close_store(f);

    raw_open(&r, f->dir, "blocks");
    assert_int_equal(raw_count(&r), 1);
    assert_true(raw_has(&r, 1, 0));
    assert_false(raw_has(&r, 1000, 0));
    assert_false(raw_has(&r, 3, 0));
    raw_close(&r);
    open_store(f);
    /* A new object gets an id above every one seen, the orphan's included. */
    assert_int_equal(meta_sync(f->st, "new", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "new", ETAG, 0, body, size), SC_OK);
    close_store(f);
    raw_open(&r, f->dir, "blocks");
    raw_nth_key(&r, 1, key, &(size_t){0});
    assert_true(key[6] == 0x03 && key[7] > 0xe8);
    raw_close(&r);
    open_store(f);
    free(body);
}

static void bad_block_size_is_refused(void **state)
{
    struct fixture *f = *state;
    struct store_config cfg = f->cfg;
    store *st = NULL;
    cfg.block_size = STORE_BLOCK_MIN - 1;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    cfg.block_size = STORE_BLOCK_MAX + 1;
    assert_int_equal(store_open(&cfg, &st), SC_EINVAL);
    assert_null(st);
}

static void file_span_of_a_block_reads_its_bytes_from_the_data_file(void **state)
{
    struct fixture *f = *state;
    const uint64_t size = 2 * BS + 77;
    unsigned char *body = make_body(size, 23);
    assert_int_equal(meta_sync(f->st, "fs", ETAG, size), SC_OK);
    assert_int_equal(block_sync(f->st, "fs", ETAG, 2, body, size), SC_OK);
    assert_int_equal(block_sync(f->st, "fs", ETAG, 1, body, size), SC_OK);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "fs", &obj), SC_OK);
    for (uint32_t idx = 1; idx <= 2; idx++) {
        const void *data = NULL;
        uint32_t len = 0;
        assert_int_equal(store_obj_block(obj, idx, &data, &len), SC_OK);
        int fd = -1;
        uint64_t off = 0;
        assert_int_equal(store_obj_file_span(obj, data, len, &fd, &off), SC_OK);
        unsigned char *got = malloc(len);
        assert_non_null(got);
        assert_int_equal(pread(fd, got, len, (off_t)off), (ssize_t)len);
        assert_memory_equal(got, body + (uint64_t)idx * BS, len);
        free(got);
    }
    store_obj_close(obj);
    free(body);
}

int main(void)
{
#define T(name)          cmocka_unit_test_setup_teardown(name, setup, teardown)
#define T_SMALL(name, s) cmocka_unit_test_setup_teardown(name, s, teardown)
    const struct CMUnitTest tests[] = {
        T(blocks_out_of_order_read_back_byte_exact),
        T(wrong_etag_or_length_is_refused),
        T(meta_of_another_version_drops_old_blocks),
        T(corrupt_block_is_detected_and_dropped_alone),
        T(unverified_store_serves_a_flipped_block),
        T_SMALL(eviction_per_block_keeps_used_within_capacity, setup_small_lru),
        T_SMALL(eviction_per_block_keeps_used_within_capacity, setup_small_s3fifo),
        T_SMALL(lru_evicts_the_least_recently_read_block, setup_small_lru),
        T_SMALL(block_keeps_its_record_when_its_siblings_are_evicted, setup_one_lru),
        T_SMALL(block_keeps_its_record_when_its_siblings_are_evicted, setup_one_s3fifo),
        T_SMALL(full_map_fails_blocks_cleanly_and_recovers, setup_two_lru),
        T(remove_prefix_and_touch_work_on_block_objects),
        T(whole_put_replaces_block_object_and_back),
        T(warm_restart_keeps_a_partly_cached_object),
        T(scan_drops_orphan_and_wrong_length_blocks),
        T(bad_block_size_is_refused),
        T(file_span_of_a_block_reads_its_bytes_from_the_data_file),
    };
#undef T
#undef T_SMALL
    sc_log_set_level(SC_LOG_ERROR);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
