/*
 * score_keep.h - importance scores kept across restarts.
 *
 * The latest score of every key hash (sc_key_hash(bucket, key)) posted with
 * POST /_s3cached/importance, in a table in memory and in one file in the
 * cache directory. score_keep_post() sends a request's scores to the policy as
 * POLICY_HINT_SCORE hints (store_hint()) and keeps them; at start-up
 * score_keep_open() reads the file back and sends every kept score to the policy
 * as the same hints, so a restarted gateway ranks objects as before.
 *
 * Writing: a changed table is written at most once every SCORES_MIN_GAP_MS,
 * and never more often than SCORES_DUTY times the last write took, so a large
 * table costs the disk a bounded share of its time; once more by
 * score_keep_close(). Each write goes to a temporary file renamed over the
 * last (atomic: a reader finds the old file or the new one, whole). No fsync:
 * a crash loses the scores posted since the last write, and a power failure
 * may also leave the file empty or short, which the next start finds and
 * ignores.
 *
 * The file (SCORES_FILE in the directory; integers little-endian):
 *   "S3CSCORE"  8 bytes of magic
 *   version     u32, SCORES_VERSION
 *   reserved    u32, 0
 *   count       u64, entries that follow (at most SCORES_MAX)
 *   entries     count times {khash u64, score: the IEEE-754 bits of a double, u64}
 *   crc         u32, CRC-32C of every byte before it
 * A file whose magic, version, length or CRC is wrong is ignored as a whole, with a warning:
 * no score of it reaches the policy.
 *
 * Memory: 16 bytes per kept key in an array grown by half, and 8 to 16 bytes of hash table
 * (policy/idmap.h): 24 to 40 bytes per key, score_keep_bytes() says exactly. At most
 * SCORES_MAX keys are kept; scores of further keys still reach the policy but are not kept.
 *
 * All functions are thread-safe unless said otherwise.
 */
#ifndef MF_SCORE_KEEP_H
#define MF_SCORE_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "../store/store.h"
#include "importance_req.h"

#define SCORES_FILE       "importance.scores"
#define SCORES_VERSION    1u
#define SCORES_MIN_GAP_MS 5000       /* between the starts of two writes, at least */
#define SCORES_DUTY       20         /* and at least this many times the last write's duration */
#define SCORES_MAX        (1u << 24) /* keys kept: 16,777,216 (about 0.5 GB) */

typedef struct score_keep score_keep;

struct score_keep_config {
    store *st;       /* where scores go as hints; NULL: nowhere (a table alone, for tests) */
    const char *dir; /* where SCORES_FILE is kept (created if missing); NULL: not on disk */
    /* The clock the write rate is measured by, in milliseconds; NULL: sc_now_ms(). */
    int64_t (*now_ms)(void);
    bool writer; /* start a thread that writes when due; false: call score_keep_save_due() */
};

/*
 * @brief Loads the scores kept in cfg->dir, sends each to cfg->st as a POLICY_HINT_SCORE
 * hint, and starts the writer (cfg->writer). A missing file starts empty; an unreadable,
 * corrupt, truncated or other-version file too, with a warning.
 * @param[out] out release with score_keep_close().
 * @return SC_OK, SC_ENOMEM, SC_EIO (cannot create cfg->dir or start the thread).
 */
sc_code score_keep_open(const struct score_keep_config *cfg, score_keep **out);

/*
 * @brief Sends every sample of r to the policy (store_hint()) and keeps its score, the
 * latest for its key hash.
 * @return the samples the policy took (store_hint() returned SC_OK), as the API reports.
 */
size_t score_keep_post(score_keep *k, const struct importance_req *r);

/* @brief The score kept for khash. @return false if none is kept. */
bool score_keep_get(score_keep *k, uint64_t khash, double *score);

/* @brief The number of key hashes kept. */
size_t score_keep_count(score_keep *k);

/* @brief The bytes the table holds in memory (entries and hash table, allocated capacity). */
size_t score_keep_bytes(score_keep *k);

/*
 * @brief Writes the file if scores changed since the last write and the write rate allows
 * it now (see above). Not while the writer thread runs (cfg->writer), nor from two threads.
 * @param[out] written true if the file was written; may be NULL.
 * @return SC_OK (also when not due, or with no directory), SC_ENOMEM, SC_EIO (the scores
 *         stay changed, for the next try).
 */
sc_code score_keep_save_due(score_keep *k, bool *written);

/* @brief Stops the writer, writes the file once more if scores changed, and frees k. NULL: no-op.
 */
void score_keep_close(score_keep *k);

#endif
