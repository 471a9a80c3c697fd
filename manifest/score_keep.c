/*
 * score_keep.c - importance scores kept across restarts (score_keep.h).
 *
 * The table is an array of entries in the order their keys were first scored, found by
 * key hash through an idmap; entries are never removed, so a write streams the array a
 * chunk at a time, taking the lock per chunk only: posts wait for one chunk's copy, never
 * for the disk. A score posted meanwhile may or may not make this write; it marks the table
 * changed, so it makes the next one.
 */
#include "score_keep.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crc32c.h"
#include "../common/log.h"
#include "../policy/idmap.h"

#define MAGIC       "S3CSCORE"
#define HEAD_BYTES  24u
#define ENTRY_BYTES 16u
#define CRC_BYTES   4u
#define CHUNK       4096u /* entries per read or write */
#define FIRST_CAP   1024u

struct entry {
    uint64_t khash;
    double score;
};

struct score_keep {
    pthread_mutex_t mu; /* guards everything below but the configuration */
    struct entry *entries;
    size_t count, cap;
    struct idmap by_khash; /* key hash -> index in entries */
    bool changed;          /* since the last write began */
    bool full_warned;      /* SCORES_MAX reached, said once */
    bool failing;          /* the last write failed, said once */
    int64_t next_write;    /* now_ms() before which no write starts */

    store *st;
    char *path, *tmp_path; /* NULL: not on disk */
    int64_t (*now_ms)(void);

    pthread_t thread;
    bool running, stopping;
    pthread_cond_t wake;
};

static uint64_t khash_of(const void *ctx, uint32_t i)
{
    return ((const score_keep *)ctx)->entries[i].khash;
}

/* Makes room for cap entries in the array (mu held, or not yet shared). */
static sc_code reserve_entries(score_keep *k, size_t cap)
{
    if (cap <= k->cap)
        return SC_OK;
    struct entry *grown = realloc(k->entries, cap * sizeof(*grown));
    if (grown == NULL)
        return SC_ENOMEM;
    k->entries = grown;
    k->cap = cap;
    return SC_OK;
}

/* Keeps score as khash's latest (mu held). @return SC_OK, SC_ETOOBIG (full), SC_ENOMEM. */
static sc_code put_locked(score_keep *k, uint64_t khash, double score)
{
    uint32_t i = idmap_get(&k->by_khash, khash);
    if (i != IDMAP_NONE) {
        k->entries[i].score = score;
        k->changed = true;
        return SC_OK;
    }
    if (k->count >= SCORES_MAX)
        return SC_ETOOBIG;
    if (k->count == k->cap && reserve_entries(k, k->cap ? k->cap + k->cap / 2 : FIRST_CAP) != SC_OK)
        return SC_ENOMEM;
    k->entries[k->count] = (struct entry){khash, score};
    if (idmap_put(&k->by_khash, (uint32_t)k->count) != SC_OK)
        return SC_ENOMEM;
    k->count++;
    k->changed = true;
    return SC_OK;
}

/* Forgets every score (mu held, or not yet shared). @return SC_OK or SC_ENOMEM. */
static sc_code clear(score_keep *k)
{
    idmap_free(&k->by_khash);
    free(k->entries);
    k->entries = NULL;
    k->count = k->cap = 0;
    return idmap_init(&k->by_khash, khash_of, k);
}

/* ---- the file ---------------------------------------------------------------- */

static void encode_head(unsigned char *p, uint64_t count)
{
    uint32_t version = htole32(SCORES_VERSION), reserved = 0;
    uint64_t n = htole64(count);
    memcpy(p, MAGIC, 8);
    memcpy(p + 8, &version, 4);
    memcpy(p + 12, &reserved, 4);
    memcpy(p + 16, &n, 8);
}

static void encode_entry(unsigned char *p, const struct entry *e)
{
    uint64_t bits;
    memcpy(&bits, &e->score, 8);
    uint64_t khash = htole64(e->khash);
    bits = htole64(bits);
    memcpy(p, &khash, 8);
    memcpy(p + 8, &bits, 8);
}

static struct entry decode_entry(const unsigned char *p)
{
    uint64_t khash, bits;
    memcpy(&khash, p, 8);
    memcpy(&bits, p + 8, 8);
    bits = le64toh(bits);
    struct entry e = {.khash = le64toh(khash)};
    memcpy(&e.score, &bits, 8);
    return e;
}

/* What is wrong with a file's head, given the file's size; NULL if nothing. */
static const char *head_problem(const unsigned char *p, off_t size, uint64_t *count)
{
    uint32_t version, reserved;
    memcpy(&version, p + 8, 4);
    memcpy(&reserved, p + 12, 4);
    memcpy(count, p + 16, 8);
    *count = le64toh(*count);
    if (memcmp(p, MAGIC, 8) != 0)
        return "not a scores file (bad magic)";
    if (le32toh(version) != SCORES_VERSION || reserved != 0)
        return "another format version";
    if (*count > SCORES_MAX)
        return "too many entries";
    if ((uint64_t)size != HEAD_BYTES + *count * ENTRY_BYTES + CRC_BYTES)
        return "truncated or extended (its length does not match its count)";
    return NULL;
}

/* Reads f into the empty table. @return NULL, or what is wrong (the table then holds part). */
static const char *read_scores(score_keep *k, FILE *f, off_t size, unsigned char *buf)
{
    uint64_t count;
    if (fread(buf, 1, HEAD_BYTES, f) != HEAD_BYTES)
        return "shorter than its head";
    const char *problem = head_problem(buf, size, &count);
    if (problem != NULL)
        return problem;
    /* Sized once for what the file holds: no growth while loading. */
    if (reserve_entries(k, (size_t)count) != SC_OK ||
        idmap_reserve(&k->by_khash, (size_t)count) != SC_OK)
        return "out of memory";
    uint32_t crc = crc32c(0, buf, HEAD_BYTES);
    for (uint64_t done = 0; done < count;) {
        size_t n = count - done < CHUNK ? (size_t)(count - done) : CHUNK;
        if (fread(buf, ENTRY_BYTES, n, f) != n)
            return "truncated while read";
        crc = crc32c(crc, buf, n * ENTRY_BYTES);
        for (size_t i = 0; i < n; i++) {
            struct entry e = decode_entry(buf + i * ENTRY_BYTES);
            if (put_locked(k, e.khash, e.score) != SC_OK)
                return "out of memory";
        }
        done += n;
    }
    uint32_t want;
    if (fread(&want, 1, CRC_BYTES, f) != CRC_BYTES)
        return "truncated while read";
    if (le32toh(want) != crc)
        return "corrupt (CRC-32C mismatch)";
    return NULL;
}

/* Loads the file, all of it or nothing (mu held, or not yet shared). A missing file is fine. */
static sc_code load(score_keep *k)
{
    FILE *f = fopen(k->path, "rb");
    if (f == NULL) {
        if (errno != ENOENT)
            sc_warn("importance scores in %s ignored: %s", k->path, strerror(errno));
        return SC_OK;
    }
    struct stat sb;
    unsigned char *buf = malloc(CHUNK * ENTRY_BYTES);
    const char *problem = buf == NULL ? "out of memory" : NULL;
    if (problem == NULL && fstat(fileno(f), &sb) != 0)
        problem = strerror(errno);
    if (problem == NULL)
        problem = read_scores(k, f, sb.st_size, buf);
    free(buf);
    fclose(f);
    k->changed = false;
    if (problem == NULL)
        return SC_OK;
    sc_warn("importance scores in %s ignored: %s", k->path, problem);
    return clear(k);
}

/* Sends every kept score to the policy (at start-up, before serving). */
static void replay(score_keep *k)
{
    size_t refused = 0;
    for (size_t i = 0; i < k->count; i++) {
        struct policy_hint h = {
            .kind = POLICY_HINT_SCORE, .khash = k->entries[i].khash, .score = k->entries[i].score};
        if (store_hint(k->st, &h) != SC_OK)
            refused++;
    }
    if (k->count > 0)
        sc_info("importance scores: %zu restored from %s%s", k->count - refused, k->path,
                refused ? " (the policy ran out of memory for the rest)" : "");
}

/* Writes entries [0, count) to f: the head, the entries a chunk at a time, the CRC. */
static bool write_scores(score_keep *k, FILE *f, size_t count, unsigned char *buf)
{
    encode_head(buf, count);
    uint32_t crc = crc32c(0, buf, HEAD_BYTES);
    if (fwrite(buf, 1, HEAD_BYTES, f) != HEAD_BYTES)
        return false;
    for (size_t done = 0; done < count;) {
        size_t n = count - done < CHUNK ? count - done : CHUNK;
        pthread_mutex_lock(&k->mu);
        for (size_t i = 0; i < n; i++)
            encode_entry(buf + i * ENTRY_BYTES, &k->entries[done + i]);
        pthread_mutex_unlock(&k->mu);
        crc = crc32c(crc, buf, n * ENTRY_BYTES);
        if (fwrite(buf, ENTRY_BYTES, n, f) != n)
            return false;
        done += n;
    }
    uint32_t le = htole32(crc);
    return fwrite(&le, 1, CRC_BYTES, f) == CRC_BYTES;
}

/* Writes the first count entries to the temporary file and renames it over the file. */
static sc_code write_file(score_keep *k, size_t count)
{
    unsigned char *buf = malloc(CHUNK * ENTRY_BYTES);
    if (buf == NULL)
        return SC_ENOMEM;
    int fd = open(k->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f == NULL && fd >= 0)
        close(fd);
    bool ok = f != NULL && write_scores(k, f, count, buf);
    int err = errno;
    if (f != NULL && fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(k->tmp_path, k->path) != 0) {
        ok = false;
        err = errno;
    }
    free(buf);
    if (!ok)
        unlink(k->tmp_path);
    if (!ok && !k->failing)
        sc_warn("cannot keep importance scores in %s: %s (will try again)", k->path, strerror(err));
    else if (ok && k->failing)
        sc_info("importance scores kept in %s again", k->path);
    k->failing = !ok;
    return ok ? SC_OK : SC_EIO;
}

sc_code score_keep_save_due(score_keep *k, bool *written)
{
    if (written)
        *written = false;
    pthread_mutex_lock(&k->mu);
    int64_t start = k->now_ms();
    bool due = k->path != NULL && k->changed && start >= k->next_write;
    size_t count = k->count;
    if (due)
        k->changed = false;
    pthread_mutex_unlock(&k->mu);
    if (!due)
        return SC_OK;
    sc_code rc = write_file(k, count);
    int64_t took = k->now_ms() - start;
    pthread_mutex_lock(&k->mu);
    k->next_write =
        start + (took * SCORES_DUTY > SCORES_MIN_GAP_MS ? took * SCORES_DUTY : SCORES_MIN_GAP_MS);
    if (rc != SC_OK)
        k->changed = true;
    pthread_mutex_unlock(&k->mu);
    if (written)
        *written = rc == SC_OK;
    return rc;
}

/* ---- the writer thread --------------------------------------------------------- */

/* Looks about once a second whether a write is due; score_keep_close() wakes it to stop. */
static void *writer_main(void *arg)
{
    score_keep *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stopping) {
        struct timespec until = sc_deadline_in_ns(999999999L);
        pthread_cond_timedwait(&k->wake, &k->mu, &until);
        if (k->stopping)
            break;
        pthread_mutex_unlock(&k->mu);
        (void)score_keep_save_due(k, NULL); /* a failure was logged; tried again when due */
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------- */

static sc_code set_paths(score_keep *k, const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        sc_err("cannot create %s for the importance scores: %s", dir, strerror(errno));
        return SC_EIO;
    }
    if (asprintf(&k->path, "%s/%s", dir, SCORES_FILE) < 0) {
        k->path = NULL;
        return SC_ENOMEM;
    }
    if (asprintf(&k->tmp_path, "%s.new", k->path) < 0) {
        k->tmp_path = NULL;
        return SC_ENOMEM;
    }
    return SC_OK;
}

static void free_keep(score_keep *k)
{
    idmap_free(&k->by_khash);
    free(k->entries);
    free(k->path);
    free(k->tmp_path);
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

sc_code score_keep_open(const struct score_keep_config *cfg, score_keep **out)
{
    *out = NULL;
    score_keep *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return SC_ENOMEM;
    pthread_mutex_init(&k->mu, NULL);
    sc_cond_init_monotonic(&k->wake);
    k->st = cfg->st;
    k->now_ms = cfg->now_ms ? cfg->now_ms : sc_now_ms;
    sc_code rc = idmap_init(&k->by_khash, khash_of, k);
    if (rc == SC_OK && cfg->dir != NULL && (rc = set_paths(k, cfg->dir)) == SC_OK)
        rc = load(k);
    if (rc == SC_OK && k->st != NULL)
        replay(k);
    if (rc == SC_OK && cfg->writer) {
        if (pthread_create(&k->thread, NULL, writer_main, k) != 0)
            rc = SC_EIO;
        k->running = rc == SC_OK;
    }
    if (rc != SC_OK) {
        free_keep(k);
        return rc;
    }
    *out = k;
    return SC_OK;
}

size_t score_keep_post(score_keep *k, const struct importance_req *r)
{
    size_t taken = 0;
    for (size_t i = 0; i < r->nsamples; i++) {
        struct policy_hint h = {
            .kind = POLICY_HINT_SCORE, .khash = r->samples[i].khash, .score = r->samples[i].score};
        if (k->st == NULL || store_hint(k->st, &h) == SC_OK)
            taken++;
    }
    pthread_mutex_lock(&k->mu);
    bool full = false;
    for (size_t i = 0; i < r->nsamples; i++)
        full |= put_locked(k, r->samples[i].khash, r->samples[i].score) == SC_ETOOBIG;
    bool warn = full && !k->full_warned;
    k->full_warned |= full;
    pthread_mutex_unlock(&k->mu);
    if (warn)
        sc_warn("importance scores: %u keys kept, the most there is room for; scores of further "
                "keys reach the policy but do not survive a restart",
                SCORES_MAX);
    return taken;
}

bool score_keep_get(score_keep *k, uint64_t khash, double *score)
{
    pthread_mutex_lock(&k->mu);
    uint32_t i = idmap_get(&k->by_khash, khash);
    if (i != IDMAP_NONE)
        *score = k->entries[i].score;
    pthread_mutex_unlock(&k->mu);
    return i != IDMAP_NONE;
}

size_t score_keep_count(score_keep *k)
{
    pthread_mutex_lock(&k->mu);
    size_t n = k->count;
    pthread_mutex_unlock(&k->mu);
    return n;
}

size_t score_keep_bytes(score_keep *k)
{
    pthread_mutex_lock(&k->mu);
    size_t n = k->cap * sizeof(struct entry) + k->by_khash.n_slots * sizeof(*k->by_khash.slots);
    pthread_mutex_unlock(&k->mu);
    return n;
}

void score_keep_close(score_keep *k)
{
    if (k == NULL)
        return;
    if (k->running) {
        pthread_mutex_lock(&k->mu);
        k->stopping = true;
        pthread_cond_signal(&k->wake);
        pthread_mutex_unlock(&k->mu);
        pthread_join(k->thread, NULL);
    }
    pthread_mutex_lock(&k->mu);
    k->next_write = INT64_MIN; /* the last write is never held back by the rate */
    pthread_mutex_unlock(&k->mu);
    (void)score_keep_save_due(k, NULL);
    free_keep(k);
}
