/*
 * test_score_keep.c - importance scores kept across restarts (manifest/score_keep.h): the
 * latest score per key, a round trip through the file (bit-exact, across write chunks), a
 * missing file, files that are corrupt, truncated (empty too), extended, of another version or
 * magic (each ignored whole), the write rate bound measured by an injected clock (no
 * sleeping), the last write on close, the writer thread, and the memory per key. The
 * policy side (the scores in force after a restart) is tests/integration/
 * test_manifests.py::test_importance_scores_are_in_force_after_a_restart.
 * Each test runs in its own mkdtemp directory.
 */
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/crc32c.h"
#include "../../manifest/score_keep.h"

#define HEAD  24 /* magic, version, reserved, count */
#define ENTRY 16

struct fixture {
    char dir[64];
    char path[128];
};

/* The injected clock: each reading returns now, then moves it on by step. */
static int64_t fake_now, fake_step;

static int64_t fake_clock(void)
{
    int64_t t = fake_now;
    fake_now += fake_step;
    return t;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/sc-scores-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, SCORES_FILE);
    fake_now = 1000;
    fake_step = 0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static score_keep *open_keep(const struct fixture *f)
{
    struct score_keep_config cfg = {.dir = f->dir, .now_ms = fake_clock};
    score_keep *k = NULL;
    assert_int_equal(score_keep_open(&cfg, &k), SC_OK);
    assert_non_null(k);
    return k;
}

/* The score test data gives key hash h: distinct bits, negative and huge values too. */
static double score_of(uint64_t h)
{
    return h % 7 == 0 ? -(double)h * 1e300 : log((double)(h % 1000) + 10.0) + (double)h;
}

/* Posts scores for key hashes [first, first + n). */
static void post(score_keep *k, uint64_t first, size_t n)
{
    struct importance_sample *s = calloc(n, sizeof(*s));
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (struct importance_sample){.khash = first + i, .score = score_of(first + i)};
    struct importance_req r = {.nbatches = 1, .nsamples = n, .samples = s};
    assert_int_equal(score_keep_post(k, &r), n); /* no store: every sample counts as taken */
    free(s);
}

static void post_one(score_keep *k, uint64_t khash, double score)
{
    struct importance_sample s = {.khash = khash, .score = score};
    struct importance_req r = {.nbatches = 1, .nsamples = 1, .samples = &s};
    assert_int_equal(score_keep_post(k, &r), 1);
}

/* k holds exactly the scores of [first, first + n), bit for bit. */
static void assert_holds(score_keep *k, uint64_t first, size_t n)
{
    assert_int_equal(score_keep_count(k), n);
    for (size_t i = 0; i < n; i++) {
        double got, want = score_of(first + i);
        assert_true(score_keep_get(k, first + i, &got));
        assert_memory_equal(&got, &want, sizeof(got));
    }
}

static void save(score_keep *k, bool want_written)
{
    bool written = !want_written;
    assert_int_equal(score_keep_save_due(k, &written), SC_OK);
    assert_int_equal(written, want_written);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static unsigned char *read_all(const char *path, long *len)
{
    *len = file_size(path);
    assert_true(*len >= 0);
    unsigned char *buf = malloc((size_t)*len + 1);
    FILE *fp = fopen(path, "rb");
    assert_non_null(buf);
    assert_non_null(fp);
    assert_int_equal(fread(buf, 1, (size_t)*len, fp), (size_t)*len);
    fclose(fp);
    return buf;
}

static void write_all(const char *path, const unsigned char *buf, long len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(buf, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
}

/* Keeps n scores in the file (one write), as a gateway that ran before. */
static void keep_file(const struct fixture *f, size_t n)
{
    score_keep *k = open_keep(f);
    post(k, 1, n);
    save(k, true);
    score_keep_close(k);
}

/* Opening finds no score (the file, if any, was ignored whole). */
static void assert_ignored(const struct fixture *f)
{
    score_keep *k = open_keep(f);
    assert_int_equal(score_keep_count(k), 0);
    double s;
    assert_false(score_keep_get(k, 1, &s));
    score_keep_close(k);
}

/* ---- the table and the file ---------------------------------------------------- */

static void test_a_missing_file_starts_empty(void **state)
{
    struct fixture *f = *state;
    assert_ignored(f);
    assert_int_equal(file_size(f->path), -1); /* nothing changed: nothing written */
}

static void test_the_latest_score_of_a_key_is_kept(void **state)
{
    struct fixture *f = *state;
    score_keep *k = open_keep(f);
    post_one(k, 42, 1.0);
    post_one(k, 7, 3.0);
    post_one(k, 42, 2.5);
    double s;
    assert_int_equal(score_keep_count(k), 2);
    assert_true(score_keep_get(k, 42, &s));
    assert_true(s == 2.5);
    assert_false(score_keep_get(k, 8, &s));
    score_keep_close(k); /* writes */
    k = open_keep(f);
    assert_int_equal(score_keep_count(k), 2);
    assert_true(score_keep_get(k, 42, &s) && s == 2.5);
    assert_true(score_keep_get(k, 7, &s) && s == 3.0);
    score_keep_close(k);
}

/* 10,000 scores: more than one write chunk, every bit back; the file is exactly its length. */
static void test_scores_round_trip_through_the_file(void **state)
{
    struct fixture *f = *state;
    keep_file(f, 10000);
    assert_int_equal(file_size(f->path), HEAD + 10000 * ENTRY + 4);
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s.new", f->path);
    assert_int_equal(file_size(tmp), -1); /* renamed over the file */
    score_keep *k = open_keep(f);
    assert_holds(k, 1, 10000);
    post_one(k, 5, -1.0); /* one changed score: the next file holds it and the rest */
    score_keep_close(k);
    k = open_keep(f);
    double s;
    assert_true(score_keep_get(k, 5, &s) && s == -1.0);
    assert_int_equal(score_keep_count(k), 10000);
    score_keep_close(k);
}

/* A flipped bit anywhere (head, an entry, the CRC): the whole file is ignored. */
static void test_a_corrupt_file_is_ignored_whole(void **state)
{
    struct fixture *f = *state;
    keep_file(f, 5000);
    long len;
    unsigned char *good = read_all(f->path, &len);
    long at[] = {0, 16, HEAD, HEAD + 2500 * ENTRY + 9, len - 5, len - 1};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        good[at[i]] ^= 0x10;
        write_all(f->path, good, len);
        assert_ignored(f);
        good[at[i]] ^= 0x10;
    }
    write_all(f->path, good, len); /* and whole again, it is read */
    score_keep *k = open_keep(f);
    assert_holds(k, 1, 5000);
    score_keep_close(k);
    free(good);
}

/* Cut anywhere (a power failure without fsync may leave it empty), or longer: ignored. */
static void test_a_truncated_or_extended_file_is_ignored(void **state)
{
    struct fixture *f = *state;
    keep_file(f, 5000);
    long len;
    unsigned char *good = read_all(f->path, &len);
    long cut[] = {0, 7, HEAD - 1, HEAD, HEAD + 100 * ENTRY, len - 4, len - 1};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        write_all(f->path, good, cut[i]);
        assert_ignored(f);
    }
    unsigned char *longer = calloc(1, (size_t)len + ENTRY);
    assert_non_null(longer);
    memcpy(longer, good, (size_t)len);
    write_all(f->path, longer, len + 1); /* longer than its count says */
    assert_ignored(f);
    write_all(f->path, longer, len + ENTRY);
    assert_ignored(f);
    free(longer);
    free(good);
}

/* Rewrites the file's head field at off (width bytes, little-endian) and its CRC. */
static void rewrite_head(const struct fixture *f, size_t off, uint64_t v, size_t width)
{
    long len;
    unsigned char *buf = read_all(f->path, &len);
    for (size_t i = 0; i < width; i++)
        buf[off + i] = (unsigned char)(v >> (8 * i));
    uint32_t crc = crc32c(0, buf, (size_t)len - 4);
    for (size_t i = 0; i < 4; i++)
        buf[len - 4 + (long)i] = (unsigned char)(crc >> (8 * i));
    write_all(f->path, buf, len);
    free(buf);
}

/* A file of another format version (or magic), with a right CRC: ignored whole. */
static void test_another_version_is_ignored(void **state)
{
    struct fixture *f = *state;
    keep_file(f, 100);
    rewrite_head(f, 8, SCORES_VERSION + 1, 4);
    assert_ignored(f);
    keep_file(f, 100);
    rewrite_head(f, 12, 1, 4); /* the reserved word */
    assert_ignored(f);
    keep_file(f, 100);
    rewrite_head(f, 0, 0x45524f4353433353ull ^ 1, 8); /* "S3CSCORE" with one bit off */
    assert_ignored(f);
    keep_file(f, 100);
    rewrite_head(f, 16, 99, 8); /* a count that disagrees with the length */
    assert_ignored(f);
    keep_file(f, 100);
    rewrite_head(f, 8, SCORES_VERSION, 4); /* the same version again: read */
    score_keep *k = open_keep(f);
    assert_holds(k, 1, 100);
    score_keep_close(k);
}

/* ---- the write rate ---------------------------------------------------------------- */

/* At most one write per SCORES_MIN_GAP_MS while scores change; none without a change. */
static void test_writes_are_at_most_one_per_gap(void **state)
{
    struct fixture *f = *state;
    score_keep *k = open_keep(f);
    save(k, false); /* nothing changed */
    assert_int_equal(file_size(f->path), -1);
    post(k, 1, 10);
    save(k, true); /* the first change is written at once */
    int64_t first = fake_now;
    post(k, 11, 10);
    fake_now = first + SCORES_MIN_GAP_MS - 1;
    save(k, false);
    save(k, false);
    fake_now = first + SCORES_MIN_GAP_MS;
    save(k, true);
    assert_int_equal(file_size(f->path), HEAD + 20 * ENTRY + 4);
    fake_now += 10 * SCORES_MIN_GAP_MS;
    save(k, false); /* nothing changed since */
    post(k, 21, 1);
    save(k, true); /* long after the last write: at once */
    score_keep_close(k);
}

/* A write that took long holds the next one back SCORES_DUTY times as long. */
static void test_a_slow_write_stretches_the_gap(void **state)
{
    struct fixture *f = *state;
    score_keep *k = open_keep(f);
    post(k, 1, 10);
    int64_t start = fake_now;
    fake_step = 1000; /* the clock is read before and after a write: it took 1 s */
    save(k, true);
    fake_step = 0;
    post(k, 11, 1);
    fake_now = start + 1000 * SCORES_DUTY - 1;
    assert_true(fake_now > start + SCORES_MIN_GAP_MS);
    save(k, false);
    fake_now = start + 1000 * SCORES_DUTY;
    save(k, true);
    score_keep_close(k);
}

/* Close writes what changed, however soon after the last write. */
static void test_close_writes_the_last_scores(void **state)
{
    struct fixture *f = *state;
    score_keep *k = open_keep(f);
    post(k, 1, 10);
    save(k, true);
    post(k, 11, 5);
    save(k, false); /* not due */
    score_keep_close(k);
    k = open_keep(f);
    assert_holds(k, 1, 15);
    score_keep_close(k);
}

/* A write that fails (the directory is gone) leaves the scores changed for the next try. */
static void test_a_failed_write_is_tried_again(void **state)
{
    struct fixture *f = *state;
    score_keep *k = open_keep(f);
    post(k, 1, 3);
    assert_int_equal(rmdir(f->dir), 0);
    bool written = true;
    assert_int_equal(score_keep_save_due(k, &written), SC_EIO);
    assert_false(written);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    fake_now += SCORES_MIN_GAP_MS;
    save(k, true);
    score_keep_close(k);
    k = open_keep(f);
    assert_holds(k, 1, 3);
    score_keep_close(k);
}

/* With the writer thread (the real clock), close stops it and writes. */
static void test_the_writer_thread_stops_and_writes_on_close(void **state)
{
    struct fixture *f = *state;
    struct score_keep_config cfg = {.dir = f->dir, .writer = true};
    score_keep *k = NULL;
    assert_int_equal(score_keep_open(&cfg, &k), SC_OK);
    post(k, 1, 100);
    score_keep_close(k);
    k = open_keep(f);
    assert_holds(k, 1, 100);
    score_keep_close(k);
}

/* ---- memory ------------------------------------------------------------------------- */

/* Bytes per kept key at 2^20 keys (printed; the header promises 24 to 40). */
static void test_memory_per_key_is_small(void **state)
{
    struct fixture *f = *state;
    struct score_keep_config cfg = {.now_ms = fake_clock}; /* in memory only */
    score_keep *k = NULL;
    assert_int_equal(score_keep_open(&cfg, &k), SC_OK);
    size_t n = 1u << 20;
    post(k, 1, n);
    double per_key = (double)score_keep_bytes(k) / (double)score_keep_count(k);
    printf("score_keep: %zu keys, %zu bytes, %.1f bytes per key\n", score_keep_count(k),
           score_keep_bytes(k), per_key);
    assert_int_equal(score_keep_count(k), n);
    assert_true(per_key >= 24.0 && per_key <= 40.0);
    save(k, false); /* no directory: nothing to write */
    score_keep_close(k);
    assert_int_equal(file_size(f->path), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_missing_file_starts_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_latest_score_of_a_key_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scores_round_trip_through_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_corrupt_file_is_ignored_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_truncated_or_extended_file_is_ignored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_another_version_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes_are_at_most_one_per_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_slow_write_stretches_the_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_writes_the_last_scores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_write_is_tried_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_writer_thread_stops_and_writes_on_close, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_memory_per_key_is_small, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
