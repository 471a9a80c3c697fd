/*
 * test_manifest.c - the manifest registry with byte ranges (manifest.h): a ranged plan's
 * future names the blocks its ranges cover, the trainer's ranged reads consume them (else
 * the key) and move the position by items, progress counts a range's bytes, a future too long
 * is refused, and through a real store the clairvoyant policy keeps the blocks the plan reads
 * next over a sibling it does not read again, before and after a restart (the store tells the
 * policy which block each entry is). Most manifests here do not prefetch ("prefetch": false):
 * the prefetcher has no upstream. Those that do have every item cached already, or no prefetch
 * slot (concurrency 0), so that their walks start nothing: what they count (fits, objects
 * cached) shows how a walk charges items that share blocks, and what it takes an object of
 * unknown size to be. Each test runs in its own mkdtemp directory.
 */
#include <ftw.h>
#include <setjmp.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../manifest/manifest.h"
#include "../../manifest/plan.h"
#include "../../common/hash.h"

#define MiB  (1024u * 1024u)
#define BS   STORE_BLOCK_MIN /* 1 MiB */
#define ETAG "\"v1\""

struct fixture {
    char dir[64];
    struct store_config cfg;
    store *st;
    struct sc_stats stats;
    mf_registry *reg;
};

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void start_registry(struct fixture *f, unsigned concurrency)
{
    struct mf_config mc = {.st = f->st,
                           .capacity = f->cfg.capacity_bytes,
                           .block_size = BS,
                           .concurrency = concurrency,
                           .stats = &f->stats};
    assert_int_equal(mf_registry_start(&mc, &f->reg), SC_OK);
}

static void start(struct fixture *f)
{
    assert_int_equal(store_open(&f->cfg, &f->st), SC_OK);
    start_registry(f, 4);
}

/* A registry whose prefetcher has no slot: a walk that meets an item to fetch stops there. */
static void restart_with_no_slot(struct fixture *f)
{
    mf_registry_stop(f->reg);
    mf_registry_free(f->reg);
    start_registry(f, 0);
}

static void stop(struct fixture *f)
{
    mf_registry_stop(f->reg);
    store_close(f->st);
    mf_registry_free(f->reg);
    f->reg = NULL;
    f->st = NULL;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/sc-manifest-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->cfg = (struct store_config){.dir = f->dir,
                                   .capacity_bytes = 3ull * BS, /* three blocks */
                                   .max_readers = 16,
                                   .block_size = BS,
                                   .policy = policy_find("clairvoyant")};
    start(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    stop(f);
    nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Registers body; returns the manifest's id (static storage). */
static const char *create(mf_registry *r, const char *body)
{
    static char id[32];
    json_t *reply = NULL;
    struct api_err err = {API_OK, ""};
    sc_code rc = mf_create(r, body, strlen(body), &reply, &err);
    if (rc != SC_OK)
        fail_msg("refused %s: %s", body, err.message);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(reply, "id")));
    json_decref(reply);
    return id;
}

static json_int_t progress_int(mf_registry *r, const char *id, const char *field)
{
    json_t *o = mf_progress(r, id);
    assert_non_null(o);
    json_t *v = json_object_get(o, field);
    assert_true(json_is_integer(v));
    json_int_t n = json_integer_value(v);
    json_decref(o);
    return n;
}

/* Waits (up to 5 s) for a walk to make progress field `field` reach `want`; returns it. */
static json_int_t wait_for(mf_registry *r, const char *id, const char *field, json_int_t want)
{
    json_int_t got = progress_int(r, id, field);
    for (int i = 0; i < 500 && got != want; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        got = progress_int(r, id, field);
    }
    return got;
}

/* Waits (up to 5 s) for a first walk over a plan; returns its fits. */
static json_int_t wait_for_walk(mf_registry *r, const char *id)
{
    json_int_t fits = progress_int(r, id, "fits");
    for (int i = 0; i < 500 && fits == 0; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        fits = progress_int(r, id, "fits");
    }
    return fits;
}

static const char *progress_state(mf_registry *r, const char *id)
{
    static char state[32];
    json_t *o = mf_progress(r, id);
    assert_non_null(o);
    snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(o, "state")));
    json_decref(o);
    return state;
}

static void observe_range(mf_registry *r, const char *key, uint64_t first, uint64_t last)
{
    struct mf_read span = {first, last};
    mf_observe(r, "bkt", key, &span);
}

static void ranged_reads_move_the_plan_by_the_blocks_they_cover(void **state)
{
    struct fixture *f = *state;
    /* The future: big's block 0; small's key; big's blocks 3 and 4 (one access). */
    const char *id = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"epochs\":[["
                                    "{\"key\":\"big\",\"offset\":0,\"length\":1000},\"small\","
                                    "{\"key\":\"big\",\"offset\":3145728,\"length\":2097152}]]}");
    assert_int_equal(progress_int(f->reg, id, "accesses"), 3);
    assert_int_equal(progress_int(f->reg, id, "position"), 0);
    /* a range's bytes count before its object is seen; small's size is unknown */
    assert_int_equal(progress_int(f->reg, id, "bytes_total"), 1000 + 2 * MiB);

    mf_observe(f->reg, "bkt", "big", NULL); /* a whole read: big is planned by blocks only */
    observe_range(f->reg, "big", 2 * MiB, 2 * MiB + 9); /* block 2: not planned either */
    assert_int_equal(progress_int(f->reg, id, "position"), 0);
    observe_range(f->reg, "big", 10, 19);
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
    observe_range(f->reg, "small", 0, 99); /* small has no planned block: its key */
    assert_int_equal(progress_int(f->reg, id, "position"), 2);
    observe_range(f->reg, "big", 3 * MiB, 3 * MiB + 4); /* half of the last access */
    assert_int_equal(progress_int(f->reg, id, "position"), 2);
    observe_range(f->reg, "big", 4 * MiB + 5, UINT64_MAX); /* to the end: its first block */
    assert_int_equal(progress_int(f->reg, id, "position"), 3);
}

/* mf_observe() skips its lock while no manifest is registered: reads before any, and after the
 * last one left, move nothing; a manifest registered after that sees reads again. */
static void reads_move_a_manifest_registered_after_the_last_one_left(void **state)
{
    struct fixture *f = *state;
    mf_observe(f->reg, "bkt", "a", NULL); /* none registered */
    const char *body = "{\"bucket\":\"bkt\",\"prefetch\":false,\"keys\":[\"a\",\"b\"]}";
    char first[32];
    snprintf(first, sizeof(first), "%s", create(f->reg, body));
    mf_observe(f->reg, "bkt", "a", NULL);
    assert_int_equal(progress_int(f->reg, first, "position"), 1);
    json_decref(mf_cancel(f->reg, first));
    assert_null(mf_progress(f->reg, first));
    mf_observe(f->reg, "bkt", "b", NULL); /* none registered again */
    const char *second = create(f->reg, body);
    assert_int_equal(progress_int(f->reg, second, "position"), 0);
    mf_observe(f->reg, "bkt", "a", NULL);
    assert_int_equal(progress_int(f->reg, second, "position"), 1);
    mf_observe(f->reg, "bkt", "b", NULL);
    assert_int_equal(progress_int(f->reg, second, "position"), 2);
}

static void a_read_over_several_blocks_consumes_each(void **state)
{
    struct fixture *f = *state;
    const char *id = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"keys\":["
                                    "{\"key\":\"t\",\"offset\":0,\"length\":3145728},"
                                    "{\"key\":\"t\",\"offset\":3145728,\"length\":10}]}");
    observe_range(f->reg, "t", 0, 3 * MiB - 1); /* blocks 0..2: the first access whole */
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
    observe_range(f->reg, "t", 0, UINT64_MAX); /* block 0 again: nothing left to consume */
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
    observe_range(f->reg, "t", 2 * MiB, 3 * MiB + 1); /* blocks 2 and 3 */
    assert_int_equal(progress_int(f->reg, id, "position"), 2);
}

/* A client reading one planned range in two parts (an 8 MiB part size, pyarrow reading a row
 * group's column chunks one by one) must not move the plan into the next epoch: the second
 * part continues the item, it does not read the block's next occurrence. */
static void a_range_read_in_parts_stays_within_its_item(void **state)
{
    struct fixture *f = *state;
    const char *id = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"num_epochs\":2,"
                                    "\"keys\":[{\"key\":\"t\",\"offset\":0,\"length\":3145728},"
                                    "{\"key\":\"t\",\"offset\":3145728,\"length\":1048576},"
                                    "{\"key\":\"t\",\"offset\":4194304,\"length\":1048576}]}");
    observe_range(f->reg, "t", 0, 1572863);           /* item 0's blocks 0 and 1 */
    observe_range(f->reg, "t", 1572864, 3 * MiB - 1); /* blocks 1 and 2: the rest of item 0 */
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
    observe_range(f->reg, "t", 3 * MiB, 4 * MiB - 1); /* item 1 */
    assert_int_equal(progress_int(f->reg, id, "position"), 2);
    observe_range(f->reg, "t", 4 * MiB, 5 * MiB - 1); /* item 2: epoch 1 done */
    observe_range(f->reg, "t", 0, 3 * MiB - 1);       /* epoch 2's item 0, whole */
    assert_int_equal(progress_int(f->reg, id, "position"), 4);
}

/* The same for whole objects read in parts (the CRT's 8 MiB parts of a shard): each part past
 * the first continues the object's read, the plan's next occurrence of it stays. */
static void a_whole_object_read_in_parts_is_one_access(void **state)
{
    struct fixture *f = *state;
    const char *id = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"num_epochs\":2,"
                                    "\"keys\":[\"a\",\"b\"]}");
    observe_range(f->reg, "a", 0, 8 * MiB - 1);
    observe_range(f->reg, "a", 8 * MiB, 16 * MiB - 1);
    observe_range(f->reg, "a", 16 * MiB, UINT64_MAX);
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
    observe_range(f->reg, "b", 0, UINT64_MAX);
    assert_int_equal(progress_int(f->reg, id, "position"), 2);
}

/* Parts arrive in any order (boto3's download_file runs 10 threads): the part that starts the
 * item, coming second, must not take the next epoch's occurrence either. */
static void parts_in_any_order_stay_within_their_item(void **state)
{
    struct fixture *f = *state;
    const char *ranges = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"num_epochs\":2,"
                                        "\"keys\":[{\"key\":\"t\",\"offset\":0,\"length\":3145728},"
                                        "{\"key\":\"t\",\"offset\":3145728,\"length\":1048576}]}");
    observe_range(f->reg, "t", 1572864, 3 * MiB - 1); /* item 0's second part first */
    observe_range(f->reg, "t", 0, 1572863);           /* then its first */
    assert_true(progress_int(f->reg, ranges, "position") <= 1);
    observe_range(f->reg, "t", 3 * MiB, 4 * MiB - 1); /* item 1: epoch 1 ends */
    assert_int_equal(progress_int(f->reg, ranges, "position"), 2);

    const char *whole = create(f->reg, "{\"bucket\":\"bkt\",\"prefetch\":false,\"num_epochs\":2,"
                                       "\"keys\":[\"a\",\"b\"]}");
    observe_range(f->reg, "a", 8 * MiB, 16 * MiB - 1); /* part 1 */
    observe_range(f->reg, "a", 0, 8 * MiB - 1);        /* part 0 */
    assert_int_equal(progress_int(f->reg, whole, "position"), 1);
}

/* A range over more blocks than a read consumes is planned by its first MF_OBSERVE_BLOCKS: 20
 * ranges of nearly 5 TiB are 20,480 positions, not 10^8 (a few bytes of body, gigabytes of
 * future, under the lock every GET takes). */
static void a_huge_range_is_planned_by_its_first_blocks(void **state)
{
    struct fixture *f = *state;
    char body[4096];
    size_t at =
        (size_t)snprintf(body, sizeof(body), "{\"bucket\":\"bkt\",\"prefetch\":false,\"keys\":[");
    for (unsigned i = 0; i < 20; i++)
        at += (size_t)snprintf(body + at, sizeof(body) - at,
                               "%s{\"key\":\"huge\",\"offset\":%u,\"length\":%llu}", i ? "," : "",
                               i, (unsigned long long)(PLAN_MAX_OBJECT_SIZE - i));
    snprintf(body + at, sizeof(body) - at, "]}");
    const char *id = create(f->reg, body);
    observe_range(f->reg, "huge", 0, 4 * MiB - 1);             /* item 0 (offset 0), blocks 0..3 */
    assert_int_equal(progress_int(f->reg, id, "position"), 0); /* 1024 blocks: not passed */
    observe_range(f->reg, "huge", 1, 2);                       /* item 1 starts at byte 1 */
    assert_int_equal(progress_int(f->reg, id, "position"), 1);
}

static void a_plan_whose_ranges_cover_too_many_blocks_is_refused(void **state)
{
    struct fixture *f = *state;
    size_t cap = 16384;
    char *body = malloc(cap);
    /* 100 ranges of nearly 5 TiB, each planned by its first 1024 blocks, over 1000 epochs:
     * 102,400,000 blocks, over 10^8 */
    size_t at = (size_t)snprintf(body, cap,
                                 "{\"bucket\":\"bkt\",\"prefetch\":false,"
                                 "\"num_epochs\":1000,\"keys\":[");
    for (unsigned i = 0; i < 100; i++)
        at += (size_t)snprintf(body + at, cap - at,
                               "%s{\"key\":\"huge\",\"offset\":%u,\"length\":%llu}", i ? "," : "",
                               i, (unsigned long long)(PLAN_MAX_OBJECT_SIZE - i));
    snprintf(body + at, cap - at, "]}");
    json_t *reply = NULL;
    struct api_err err = {API_OK, ""};
    assert_int_equal(mf_create(f->reg, body, strlen(body), &reply, &err), SC_ETOOBIG);
    assert_null(reply);
    assert_string_equal(api_err_name(err.code), api_err_name(API_TOO_LARGE));
    assert_string_equal(err.message, "the plan's ranges cover more blocks of 1048576 bytes over "
                                     "this rank's accesses than a plan may read (100000000)");
    free(body);
}

/* ---- the clairvoyant policy, through the store ---- */

static void record(void *arg, sc_code rc)
{
    *(sc_code *)arg = rc;
}

static void put_block_of(store *st, const char *key, uint32_t idx)
{
    static unsigned char bytes[BS];
    sc_code got = SC_EIO;
    memset(bytes, (int)idx, sizeof(bytes));
    assert_int_equal(store_put_block(st, "bkt", key, ETAG, BS, idx, bytes, BS, record, &got),
                     SC_OK);
    store_flush(st);
    assert_int_equal(got, SC_OK);
}

static void put_block(store *st, uint32_t idx)
{
    put_block_of(st, "big", idx);
}

/* Caches "tok", two blocks (2 MiB), whole. */
static void put_tok(store *st)
{
    assert_int_equal(
        store_put_meta(st, "bkt", "tok", ETAG, "ETag\0\"v1\"", 10, 2ull * MiB, NULL, NULL), SC_OK);
    put_block_of(st, "tok", 0);
    put_block_of(st, "tok", 1);
}

/* A plan body: head, `n` ranges of `len` bytes of key, `step` bytes apart, then tail. */
static char *ranges_body(const char *head, const char *key, unsigned n, unsigned len, unsigned step,
                         const char *tail)
{
    size_t cap = 128 + (size_t)n * 80 + strlen(head) + strlen(tail);
    char *body = malloc(cap);
    assert_non_null(body);
    size_t at = (size_t)snprintf(body, cap, "{\"bucket\":\"bkt\",%s", head);
    for (unsigned i = 0; i < n; i++)
        at +=
            (size_t)snprintf(body + at, cap - at, "%s{\"key\":\"%s\",\"offset\":%u,\"length\":%u}",
                             i ? "," : "", key, i * step, len);
    snprintf(body + at, cap - at, "%s", tail);
    return body;
}

/* ---- the walk: what items sharing blocks, and objects of unknown size, are charged ---- */

/* Registers the manifest body (freed) and checks that all n of its items fit and are cached. */
static void all_fit_and_warm(struct fixture *f, char *body, json_int_t n)
{
    const char *id = create(f->reg, body);
    free(body);
    assert_int_equal(wait_for(f->reg, id, "objects_cached", n), n);
    assert_int_equal(progress_int(f->reg, id, "fits"), n);
    assert_string_equal(progress_state(f->reg, id), "warm");
}

static void samples_in_one_block_charge_it_once(void **state)
{
    struct fixture *f = *state;
    put_tok(f->st);
    /* 512 samples of 4 KiB over both blocks, shuffled: 2 MiB in all, within the walk's
     * 2.7 MiB (90 % of three blocks); charged a block each, 2 fit */
    all_fit_and_warm(f, ranges_body("\"shuffle\":true,\"keys\":[", "tok", 512, 4096, 4096, "]}"),
                     512);
}

static void ranges_of_a_small_object_charge_it_once(void **state)
{
    struct fixture *f = *state;
    static unsigned char body512k[512 * 1024];
    sc_code got = SC_EIO;
    assert_int_equal(
        store_put(f->st, "bkt", "small", NULL, 0, body512k, sizeof(body512k), record, &got), SC_OK);
    store_flush(f->st);
    assert_int_equal(got, SC_OK);
    /* 10 ranges of 1 KiB of one 512 KiB object: the object once; charged whole each, at most 5 fit
     */
    all_fit_and_warm(f, ranges_body("\"keys\":[", "small", 10, 1024, 50000, "]}"), 10);
}

static void a_whole_object_of_unknown_size_is_not_taken_for_a_range(void **state)
{
    struct fixture *f = *state;
    restart_with_no_slot(f);
    /* Ten whole objects not seen yet, then a sample of tok. The walk stops at the first (no
     * slot) and estimates the rest of its budget at that object's charge: 1 MiB (no whole
     * object known), so 2 fit in 2.7 MiB. Taken as the sample's 4 KiB, all 11 did. */
    char *body = ranges_body("\"epochs\":[[\"w0\",\"w1\",\"w2\",\"w3\",\"w4\",\"w5\","
                             "\"w6\",\"w7\",\"w8\",\"w9\",",
                             "tok", 1, 4096, 0, "]]}");
    const char *id = create(f->reg, body);
    free(body);
    assert_int_equal(wait_for_walk(f->reg, id), 2);
}

static void a_ranges_plan_estimates_by_blocks_not_range_lengths(void **state)
{
    struct fixture *f = *state;
    restart_with_no_slot(f);
    /* 100 samples of 4 KiB, each of its own cold object: a block (1 MiB) each, so 2 fit in
     * 2.7 MiB; by the samples' length the estimate said all 100 */
    size_t cap = 100 * 80 + 64, at;
    char *body = malloc(cap);
    assert_non_null(body);
    at = (size_t)snprintf(body, cap, "{\"bucket\":\"bkt\",\"keys\":[");
    for (unsigned i = 0; i < 100; i++)
        at += (size_t)snprintf(body + at, cap - at,
                               "%s{\"key\":\"k%u\",\"offset\":0,\"length\":4096}", i ? "," : "", i);
    snprintf(body + at, cap - at, "]}");
    const char *id = create(f->reg, body);
    free(body);
    assert_int_equal(wait_for_walk(f->reg, id), 2);
}

static bool has_block(store *st, uint32_t idx)
{
    store_obj *obj = NULL;
    if (store_obj_open(st, "bkt", "big", &obj) != SC_OK)
        return false;
    bool in = store_obj_blocks_cached(obj, idx, idx) == 1;
    store_obj_close(obj);
    return in;
}

static const char *const BLOCK_PLAN =
    "{\"bucket\":\"bkt\",\"prefetch\":false,\"epochs\":[[{\"key\":\"big\",\"offset\":5242880,"
    "\"length\":100},{\"key\":\"big\",\"offset\":1048576,\"length\":100}]]}";

static void clairvoyant_keeps_the_blocks_the_plan_reads_next(void **state)
{
    struct fixture *f = *state;
    create(f->reg, BLOCK_PLAN); /* reads block 5, then block 1 */
    assert_int_equal(
        store_put_meta(f->st, "bkt", "big", ETAG, "ETag\0\"v1\"", 10, 8ull * MiB, NULL, NULL),
        SC_OK);
    put_block(f->st, 1);
    put_block(f->st, 5);
    put_block(f->st, 0); /* full */
    put_block(f->st, 2); /* evicts block 0, read by no plan: not 1, the least recently used */
    assert_true(has_block(f->st, 1));
    assert_true(has_block(f->st, 5));
    assert_true(has_block(f->st, 2));
    assert_false(has_block(f->st, 0));

    /* After a restart the start-up scan tells the policy each block again, with its index. */
    stop(f);
    start(f);
    create(f->reg, BLOCK_PLAN);
    put_block(f->st, 6); /* evicts block 2; by the scan's order lru would evict block 1 */
    assert_true(has_block(f->st, 1));
    assert_true(has_block(f->st, 5));
    assert_true(has_block(f->st, 6));
    assert_false(has_block(f->st, 2));
}

/*
 * On a fleet of three, a gateway plans and warms only the names it owns: its walk meets (and
 * here finds cached) about a third of a plan's 300 objects, and the trainers' reads of those
 * alone move the position to the end (the others' reads reach their owners). Every object is
 * in the store, so a walk that looked at all of them would count all 300 cached.
 */
static void on_a_fleet_a_gateway_plans_the_names_it_owns(void **state)
{
    struct fixture *f = *state;
    static const unsigned char secret[] = "0123456789abcdef0123456789abcdef";
    static unsigned char body1k[1024];
    enum { N = 300 };
    char body[8192] = "{\"bucket\":\"bkt\",\"keys\":[", key[16];
    sc_code got = SC_EIO;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        assert_int_equal(
            store_put(f->st, "bkt", key, NULL, 0, body1k, sizeof(body1k), record, &got), SC_OK);
        snprintf(body + strlen(body), sizeof(body) - strlen(body), "%s\"%s\"", i ? "," : "", key);
    }
    strcat(body, "]}");
    store_flush(f->st);
    struct fleet_config fc = {.peers = "http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3",
                              .self = "http://127.0.0.1:1",
                              .secret = secret,
                              .secret_len = sizeof(secret) - 1};
    fleet *fl = NULL;
    assert_int_equal(fleet_start(&fc, &fl), SC_OK);
    mf_registry_stop(f->reg);
    mf_registry_free(f->reg);
    struct mf_config mc = {.st = f->st,
                           .capacity = f->cfg.capacity_bytes,
                           .block_size = BS,
                           .concurrency = 4,
                           .stats = &f->stats,
                           .fleet = fl};
    assert_int_equal(mf_registry_start(&mc, &f->reg), SC_OK);
    int mine = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        mine += fleet_owns(fl, sc_key_hash("bkt", key));
    }
    assert_in_range(mine, N / 3 - 40, N / 3 + 40); /* about a third */
    const char *id = create(f->reg, body);
    assert_int_equal(wait_for(f->reg, id, "objects_cached", mine), mine);
    assert_string_equal(progress_state(f->reg, id), "warm");
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        if (fleet_owns(fl, sc_key_hash("bkt", key)))
            mf_observe(f->reg, "bkt", key, NULL);
    }
    assert_int_equal(progress_int(f->reg, id, "position"), N);
    mf_registry_stop(f->reg);
    mf_registry_free(f->reg);
    f->reg = NULL;
    fleet_free(fl);
    start_registry(f, 4); /* for teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ranged_reads_move_the_plan_by_the_blocks_they_cover, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reads_move_a_manifest_registered_after_the_last_one_left,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_read_over_several_blocks_consumes_each, setup, teardown),
        cmocka_unit_test_setup_teardown(a_range_read_in_parts_stays_within_its_item, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_whole_object_read_in_parts_is_one_access, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(parts_in_any_order_stay_within_their_item, setup, teardown),
        cmocka_unit_test_setup_teardown(a_huge_range_is_planned_by_its_first_blocks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_plan_whose_ranges_cover_too_many_blocks_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(clairvoyant_keeps_the_blocks_the_plan_reads_next, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(samples_in_one_block_charge_it_once, setup, teardown),
        cmocka_unit_test_setup_teardown(on_a_fleet_a_gateway_plans_the_names_it_owns, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ranges_of_a_small_object_charge_it_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_whole_object_of_unknown_size_is_not_taken_for_a_range,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_ranges_plan_estimates_by_blocks_not_range_lengths, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
