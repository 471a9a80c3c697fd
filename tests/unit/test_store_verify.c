/*
 * test_store_verify.c - checksums once per residency (store/store_verify.c) and the
 * scrubber (store/store_scrub.c): a chunk or block checked once, or written by this store,
 * is served without its CRC32C while its pages stay in the page cache, and checked again
 * once they left it; a value rotten on the disk before its first read is caught; a value
 * stored before the store opened is checked at its first read; a removed value's record does
 * not carry over to a value stored later on its pages, even when a reader of the removed
 * one checks it after the removal (those two look at the record through store_int.h); the
 * scrubber finds a value changed under a running store, read or not, and stops at once when
 * the store closes. Values are changed the way
 * the integration tests do: a write to data.mdb, which the store's map sees; rot on the disk
 * is that write, then the page dropped from the page cache.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/clock.h"
#include "../../common/crc32c.h"
#include "../../store/store.h"
#include "../../store/store_int.h"

#define KiB        1024u
#define MiB        (1024u * 1024u)
#define CHUNK      (256u * KiB)
#define BS         STORE_BLOCK_MIN
#define ETAG       "\"etag-1\""
#define SCRUB_FAST (1024ull * MiB) /* bytes a second: a pass over a test's cache takes no time */

#include "store_fixture.h"

static int setup_with(void **state, uint64_t scrub_rate)
{
    return fixture_setup(state, "verify",
                         (struct store_config){.capacity_bytes = 32ull * MiB,
                                               .chunk_size = CHUNK,
                                               .verify_checksums = true,
                                               .max_readers = 16,
                                               .block_size = BS,
                                               .scrub_rate = scrub_rate,
                                               .policy = policy_find("lru")});
}

static int setup(void **state)
{
    return setup_with(state, 0);
}

static int setup_scrubbed(void **state)
{
    return setup_with(state, SCRUB_FAST);
}

static int teardown(void **state)
{
    return fixture_teardown(state);
}

static struct store_stats stats_of(store *st)
{
    struct store_stats s;
    store_get_stats(st, &s);
    return s;
}

/* Puts len bytes made from seed under key and waits for the commit. */
static void put_ok(store *st, const char *key, size_t len, uint32_t seed)
{
    unsigned char *b = make_body(len, seed);
    struct outcome o = {0};
    assert_int_equal(store_put(st, "bkt", key, NULL, 0, b, len, record_outcome, &o), SC_OK);
    store_flush(st);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.rc, SC_OK);
    free(b);
}

/* Stores block idx of a block object of size bytes made from seed under key. */
static void put_block_ok(store *st, const char *key, uint64_t size, uint32_t idx, uint32_t seed)
{
    unsigned char *b = make_body(size, seed);
    struct outcome o = {0};
    assert_int_equal(store_put_meta(st, "bkt", key, ETAG, NULL, 0, size, NULL, NULL), SC_OK);
    uint64_t off = (uint64_t)idx * BS;
    uint32_t len = (uint32_t)(size - off < BS ? size - off : BS);
    assert_int_equal(
        store_put_block(st, "bkt", key, ETAG, BS, idx, b + off, len, record_outcome, &o), SC_OK);
    store_flush(st);
    assert_int_equal(o.rc, SC_OK);
    free(b);
}

/* Reads the whole object key into a fresh view: its result, and where its first byte is in the
 * map (NULL if not read). Compares the bytes with seed's when it succeeds. */
static sc_code read_whole(store *st, const char *key, size_t len, uint32_t seed, const void **at)
{
    store_obj *obj = NULL;
    struct iovec iov[4];
    size_t n = 0;
    sc_code rc = store_obj_open(st, "bkt", key, &obj);
    if (rc != SC_OK)
        return rc;
    rc = store_obj_iov(obj, 0, len, iov, 4, &n);
    if (at != NULL)
        *at = rc == SC_OK ? iov[0].iov_base : NULL;
    if (rc == SC_OK) {
        unsigned char *want = make_body(len, seed);
        assert_int_equal(n, 1);
        assert_memory_equal(iov[0].iov_base, want, len);
        free(want);
    }
    store_obj_close(obj);
    return rc;
}

static sc_code read_block(store *st, const char *key, uint32_t idx, const void **at)
{
    store_obj *obj = NULL;
    const void *data = NULL;
    uint32_t len = 0;
    sc_code rc = store_obj_open(st, "bkt", key, &obj);
    if (rc == SC_OK)
        rc = store_obj_block(obj, idx, &data, &len);
    if (at != NULL)
        *at = data;
    store_obj_close(obj);
    return rc;
}

/* The offset in data.mdb of the only copy of needle (asserting there is one). */
static off_t find_in_file(struct fixture *f, const void *needle, size_t len)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    unsigned char *all = malloc((size_t)sb.st_size);
    assert_non_null(all);
    assert_int_equal(pread(fd, all, (size_t)sb.st_size, 0), sb.st_size);
    close(fd);
    unsigned char *at = memmem(all, (size_t)sb.st_size, needle, len);
    assert_non_null(at);
    size_t rest = (size_t)sb.st_size - (size_t)(at - all) - 1;
    assert_null(memmem(at + 1, rest, needle, len)); /* the only copy */
    off_t off = at - all;
    free(all);
    return off;
}

/* Flips the byte at off of data.mdb with a write(2), as another process would: the running
 * store's map sees the page change. */
static void flip_in_file(struct fixture *f, off_t off)
{
    char path[128];
    unsigned char byte;
    snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, off), 1);
    byte ^= 0x5a;
    assert_int_equal(pwrite(fd, &byte, 1, off), 1);
    close(fd);
}

/* Flips byte at of the body made from seed, where the store keeps it. */
static void flip_body(struct fixture *f, size_t len, uint32_t seed, size_t at)
{
    unsigned char *b = make_body(len, seed);
    size_t from = at > 64 ? at - 64 : 0;
    off_t off = find_in_file(f, b + from, 128);
    flip_in_file(f, off + (off_t)(at - from));
    free(b);
}

static bool all_resident(const void *data, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)data & ~(uintptr_t)(page - 1);
    size_t pages = ((uintptr_t)data + len - start + page - 1) / page;
    unsigned char *vec = malloc(pages);
    assert_non_null(vec);
    assert_int_equal(mincore((void *)start, pages * page, vec), 0);
    bool all = true;
    for (size_t i = 0; i < pages; i++)
        all &= (vec[i] & 1) != 0;
    free(vec);
    return all;
}

/* ---- once per residency ------------------------------------------------------- */

/* The writer computed the CRC32C of the bytes it wrote to the page cache: reading them from
 * there again proves nothing more, so a chunk it stored is served unchecked while resident. */
static void a_chunk_its_writer_stored_is_not_checked_while_resident(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "a", 100 * KiB, 1);
    assert_int_equal(stats_of(f->st).checks, 0); /* a write is no check */
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "a", 100 * KiB, 1, &at), SC_OK);
    if (!all_resident(at, 100 * KiB))
        skip(); /* the page cache let it go already: nothing to show */
    for (int i = 0; i < 5; i++)
        assert_int_equal(read_whole(f->st, "a", 100 * KiB, 1, NULL), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 0);
}

static void a_block_its_writer_stored_is_not_checked_while_resident(void **state)
{
    struct fixture *f = *state;
    put_block_ok(f->st, "b", 2 * BS + 5, 1, 2);
    const void *at = NULL;
    assert_int_equal(read_block(f->st, "b", 1, &at), SC_OK);
    if (!all_resident(at, BS))
        skip();
    assert_int_equal(read_block(f->st, "b", 1, NULL), SC_OK);
    assert_int_equal(read_block(f->st, "b", 1, NULL), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 0);
}

/* A value stored before the store opened is checked at its first read, then not again while
 * it stays resident. */
static void a_chunk_from_before_the_open_is_checked_once_while_resident(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "old", 100 * KiB, 20);
    close_store(f);
    open_store(f);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "old", 100 * KiB, 20, &at), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 1);
    if (!all_resident(at, 100 * KiB))
        skip();
    for (int i = 0; i < 5; i++)
        assert_int_equal(read_whole(f->st, "old", 100 * KiB, 20, NULL), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 1);
}

static void a_small_chunk_is_checked_at_every_read(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "tiny", 4 * KiB, 3); /* its CRC32C costs less than asking the kernel */
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(read_whole(f->st, "tiny", 4 * KiB, 3, NULL), SC_OK);
        assert_int_equal(stats_of(f->st).checks, (uint64_t)i);
    }
}

/* Drops the pages of [at, at + len) (a value of the running store) out of this process's
 * page tables, then data.mdb's out of the page cache; false if they stayed (tmpfs). */
static bool evict(struct fixture *f, const void *at, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)at & ~(uintptr_t)(page - 1);
    size_t span = ((uintptr_t)at + len - start + page - 1) / page * page;
    assert_int_equal(madvise((void *)start, span, MADV_DONTNEED), 0);
    char path[128];
    snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
    return !all_resident(at, len);
}

static void a_value_whose_pages_left_the_page_cache_is_checked_again(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "cold", len, 4);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "cold", len, 4, &at), SC_OK);
    if (!all_resident(at, len))
        skip();
    assert_int_equal(stats_of(f->st).checks, 0); /* its writer's bytes */
    if (!evict(f, at, len))
        skip(); /* a file system that keeps them: nothing to show */
    assert_int_equal(read_whole(f->st, "cold", len, 4, NULL), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 1);
}

/* Rot read back from the disk into a checked value: the read that finds it takes the value out
 * of the record, so a read beside it (here a view opened before the removal) checks again; the
 * chunk counts once. */
static void a_value_that_failed_its_check_is_checked_by_the_next_read_too(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "rotten", len, 19);
    unsigned char *body = make_body(len, 19);
    off_t off = find_in_file(f, body, 128); /* before the eviction: it reads all of data.mdb */
    free(body);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "rotten", len, 19, &at), SC_OK);
    if (!evict(f, at, len))
        skip();
    flip_in_file(f, off + 70000); /* brings that one page back, changed */
    store_obj *beside = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "rotten", &beside), SC_OK);
    assert_int_equal(read_whole(f->st, "rotten", len, 19, NULL), SC_ECORRUPT);
    assert_true(all_resident(at, len)); /* read whole by that check */
    struct iovec iov[1];
    size_t n = 0;
    assert_int_equal(store_obj_iov(beside, 0, len, iov, 1, &n), SC_ECORRUPT);
    store_obj_close(beside);
    assert_int_equal(stats_of(f->st).checks, 2);  /* the first read was of its writer's bytes */
    assert_int_equal(stats_of(f->st).corrupt, 1); /* one chunk, found twice */
}

/* Writes data.mdb's dirty pages to the disk and drops them from the page cache; false if the
 * page at off stayed (tmpfs). */
static bool evict_unread(struct fixture *f, off_t off)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    /* Out of this process's page tables too: the kernel may map pages near those it reads. */
    assert_int_equal(madvise((void *)(uintptr_t)f->st->map, f->st->map_len, MADV_DONTNEED), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    off_t base = off - off % (off_t)page;
    void *m = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, base);
    assert_true(m != MAP_FAILED);
    bool gone = !all_resident(m, page);
    munmap(m, page);
    close(fd);
    return gone;
}

/* Rot on the disk before the first read: the rotten pages come back from the disk, unchecked,
 * so the first read checks them. (A change made in the page cache itself before the first
 * read, by another process writing data.mdb, is the scrubber's to find: the record holds the
 * writer's value as checked.) */
static void a_value_rotten_on_disk_before_its_first_read_is_caught(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "rot", 100 * KiB, 5);
    put_block_ok(f->st, "rotb", 2 * BS + 5, 0, 6);
    unsigned char *b = make_body(100 * KiB, 5);
    off_t off = find_in_file(f, b + 50000 - 64, 128);
    free(b);
    flip_body(f, 100 * KiB, 5, 50000);
    flip_body(f, 2 * BS + 5, 6, 1000);
    if (!evict_unread(f, off))
        skip(); /* a file system without a disk behind its page cache: no rot to show */
    assert_int_equal(read_whole(f->st, "rot", 100 * KiB, 5, NULL), SC_ECORRUPT);
    assert_int_equal(read_block(f->st, "rotb", 0, NULL), SC_ECORRUPT);
    assert_int_equal(stats_of(f->st).corrupt, 2);
    store_flush(f->st);
    assert_int_equal(read_whole(f->st, "rot", 100 * KiB, 5, NULL), SC_ENOTFOUND);
    assert_int_equal(read_block(f->st, "rotb", 0, NULL), SC_ENOTFOUND);
}

static void the_record_does_not_outlive_the_process(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "k", 100 * KiB, 7);
    assert_int_equal(read_whole(f->st, "k", 100 * KiB, 7, NULL), SC_OK);
    close_store(f);
    flip_body(f, 100 * KiB, 7, 12345); /* while no gateway runs: still in the page cache */
    open_store(f);
    assert_int_equal(read_whole(f->st, "k", 100 * KiB, 7, NULL), SC_ECORRUPT);
    assert_int_equal(stats_of(f->st).checks, 1);
}

/*
 * A removed value's record must not carry over to a value stored later on its pages (LMDB
 * reuses them once no reader can see the removed one): removal clears it, and a reader whose
 * snapshot still shows the value and checks it after the removal leaves it clear. Which page
 * the next value gets is LMDB's choice, so these look at the record itself (store_int.h):
 * st_needs_check() is true for a value the record does not hold.
 */
static void a_removed_value_is_no_longer_in_the_record(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "a", len, 8);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "a", len, 8, &at), SC_OK);
    if (!all_resident(at, len))
        skip();
    assert_false(st_needs_check(f->st, at, len));
    assert_int_equal(store_remove(f->st, "bkt", "a"), SC_OK);
    assert_true(st_needs_check(f->st, at, len));
}

static void a_removed_block_is_no_longer_in_the_record(void **state)
{
    struct fixture *f = *state;
    put_block_ok(f->st, "b", 2 * BS + 5, 0, 9);
    const void *at = NULL;
    assert_int_equal(read_block(f->st, "b", 0, &at), SC_OK);
    if (!all_resident(at, BS))
        skip();
    assert_false(st_needs_check(f->st, at, BS));
    assert_int_equal(store_remove(f->st, "bkt", "b"), SC_OK);
    assert_true(st_needs_check(f->st, at, BS));
}

static void a_check_by_a_reader_from_before_the_removal_is_not_recorded(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "a", len, 10);
    store_obj *late = NULL; /* its snapshot shows A after A is gone */
    assert_int_equal(store_obj_open(f->st, "bkt", "a", &late), SC_OK);
    assert_int_equal(store_remove(f->st, "bkt", "a"), SC_OK);
    struct iovec iov[1];
    size_t n = 0;
    assert_int_equal(store_obj_iov(late, 0, len, iov, 1, &n), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 1);
    assert_true(all_resident(iov[0].iov_base, len)); /* just read */
    assert_true(st_needs_check(f->st, iov[0].iov_base, len));
    store_obj_close(late);
}

/*
 * The writer marks its values after its commit (st_mark_written). If, between the two, a page
 * of a value left the page cache and a reader's check of it failed (rot on the disk), the mark
 * must not put the value back in the record over the rotten resident page: hits would serve
 * it unchecked. The race itself cannot be timed from here, so this plays its three steps on
 * the record: the value as the commit leaves it (not in the record), a reader's failed check,
 * then the writer's mark with the failure count it read before its commit.
 */
static void a_check_failed_between_the_commit_and_the_mark_takes_the_mark_back(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "a", len, 11);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "a", len, 11, &at), SC_OK);
    if (!all_resident(at, len))
        skip();
    struct st_written v = {.data = at, .len = len};
    MDB_txn *txn = NULL;
    assert_int_equal(st_rtxn_begin(f->st, &txn), SC_OK);

    st_uncheck(f->st, at, len); /* no check failed: the mark stands */
    st_mark_written(f->st, &v, 1, st_failed_checks(f->st));
    assert_false(st_needs_check(f->st, at, len));

    st_uncheck(f->st, at, len);
    uint64_t before_commit = st_failed_checks(f->st);
    uint32_t stored = crc32c(0, at, len) ^ 1u; /* the bytes no longer match what was stored */
    assert_false(st_check(f->st, txn, at, len, stored)); /* the reader's rotten read */
    assert_int_equal(st_failed_checks(f->st), before_commit + 1);
    st_mark_written(f->st, &v, 1, before_commit);
    assert_true(st_needs_check(f->st, at, len));
    st_rtxn_end(f->st, txn);
}

/* ---- the scrubber ----------------------------------------------------------------- */

/* Waits up to 10 s for the scrubber to have found want corrupt values. */
static struct store_stats wait_scrub_corrupt(store *st, uint64_t want)
{
    int64_t give_up = sc_now_ms() + 10000;
    struct store_stats s = stats_of(st);
    while (s.scrub_corrupt < want && sc_now_ms() < give_up) {
        struct timespec ms10 = {0, 10 * 1000 * 1000};
        nanosleep(&ms10, NULL);
        s = stats_of(st);
    }
    return s;
}

static void the_scrubber_finds_a_changed_value_nobody_reads(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "whole", 300 * KiB, 11);         /* two chunks */
    put_block_ok(f->st, "big", 2 * BS + 5, 2, 12); /* the short last block */
    put_block_ok(f->st, "big", 2 * BS + 5, 0, 12);
    flip_body(f, 300 * KiB, 11, 280 * KiB); /* in its second chunk */
    flip_body(f, 2 * BS + 5, 12, 100);      /* in block 0 */
    struct store_stats s = wait_scrub_corrupt(f->st, 2);
    assert_int_equal(s.scrub_corrupt, 2);
    assert_true(s.corrupt >= 2);
    assert_true(s.scrubbed >= 2);
    store_flush(f->st);
    store_obj *obj = NULL;
    assert_int_equal(store_obj_open(f->st, "bkt", "whole", &obj), SC_ENOTFOUND);
    assert_int_equal(read_block(f->st, "big", 0, NULL), SC_ENOTFOUND); /* that block alone */
    assert_int_equal(read_block(f->st, "big", 2, NULL), SC_OK);
    assert_int_equal(stats_of(f->st).checks, 1); /* the scrubber's checks are its own */
}

static void the_scrubber_catches_a_change_to_a_checked_resident_value(void **state)
{
    struct fixture *f = *state;
    const size_t len = 100 * KiB;
    put_ok(f->st, "hot", len, 13);
    const void *at = NULL;
    assert_int_equal(read_whole(f->st, "hot", len, 13, &at), SC_OK);
    /* Changed in the page cache by another process: a read does not look again (the
     * documented limit), the scrubber's next pass does. */
    flip_body(f, len, 13, 4321);
    struct store_stats s = wait_scrub_corrupt(f->st, 1);
    assert_int_equal(s.scrub_corrupt, 1);
    store_flush(f->st);
    assert_int_equal(read_whole(f->st, "hot", len, 13, NULL), SC_ENOTFOUND);
}

static void the_scrubber_checks_every_value_and_counts_its_bytes(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "x", 300 * KiB, 14);
    put_ok(f->st, "y", 20 * KiB, 15);
    put_block_ok(f->st, "z", 2 * BS + 5, 1, 16);
    const uint64_t pass = 300 * KiB + 20 * KiB + BS;
    int64_t give_up = sc_now_ms() + 10000;
    struct store_stats s = stats_of(f->st);
    while (s.scrubbed_bytes < 2 * pass && sc_now_ms() < give_up) {
        struct timespec ms10 = {0, 10 * 1000 * 1000};
        nanosleep(&ms10, NULL);
        s = stats_of(f->st);
    }
    assert_true(s.scrubbed_bytes >= 2 * pass); /* passes go on, at most one a second */
    assert_true(s.scrubbed >= 4);
    assert_int_equal(s.scrub_corrupt, 0);
    assert_int_equal(s.corrupt, 0);
}

static void the_scrubber_stops_at_once_when_the_store_closes(void **state)
{
    struct fixture *f = *state;
    close_store(f);
    f->cfg.scrub_rate = 1; /* a byte a second: after one value, a wait of hours */
    open_store(f);
    put_ok(f->st, "w", 100 * KiB, 17);
    int64_t t0 = sc_now_ms();
    close_store(f);
    assert_true(sc_now_ms() - t0 < 1000);
    open_store(f); /* for the teardown */
}

static void without_verification_nothing_is_checked_or_scrubbed(void **state)
{
    struct fixture *f = *state;
    put_ok(f->st, "u", 100 * KiB, 18);
    close_store(f);
    f->cfg.verify_checksums = false;
    f->cfg.scrub_rate = SCRUB_FAST;
    open_store(f);
    flip_body(f, 100 * KiB, 18, 99);
    store_obj *obj = NULL;
    struct iovec iov[1];
    size_t n = 0;
    assert_int_equal(store_obj_open(f->st, "bkt", "u", &obj), SC_OK);
    assert_int_equal(store_obj_iov(obj, 0, 100 * KiB, iov, 1, &n), SC_OK); /* served as it is */
    store_obj_close(obj);
    struct timespec ms200 = {0, 200 * 1000 * 1000};
    nanosleep(&ms200, NULL);
    struct store_stats s = stats_of(f->st);
    assert_int_equal(s.checks, 0);
    assert_int_equal(s.scrubbed, 0);
    assert_int_equal(s.corrupt, 0);
}

#define T(name)  cmocka_unit_test_setup_teardown(name, setup, teardown)
#define TS(name) cmocka_unit_test_setup_teardown(name, setup_scrubbed, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(a_chunk_its_writer_stored_is_not_checked_while_resident),
        T(a_block_its_writer_stored_is_not_checked_while_resident),
        T(a_chunk_from_before_the_open_is_checked_once_while_resident),
        T(a_small_chunk_is_checked_at_every_read),
        T(a_value_whose_pages_left_the_page_cache_is_checked_again),
        T(a_value_that_failed_its_check_is_checked_by_the_next_read_too),
        T(a_value_rotten_on_disk_before_its_first_read_is_caught),
        T(the_record_does_not_outlive_the_process),
        T(a_removed_value_is_no_longer_in_the_record),
        T(a_removed_block_is_no_longer_in_the_record),
        T(a_check_by_a_reader_from_before_the_removal_is_not_recorded),
        T(a_check_failed_between_the_commit_and_the_mark_takes_the_mark_back),
        TS(the_scrubber_finds_a_changed_value_nobody_reads),
        TS(the_scrubber_catches_a_change_to_a_checked_resident_value),
        TS(the_scrubber_checks_every_value_and_counts_its_bytes),
        T(the_scrubber_stops_at_once_when_the_store_closes),
        T(without_verification_nothing_is_checked_or_scrubbed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
