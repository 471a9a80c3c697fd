/*
 * store_int.h - the store's private state and the functions the files of
 * store/ share. Nothing outside store/ includes it.
 *
 *   store.c        open, close, statistics
 *   store_prefix.c removing every object under a prefix (store_remove_prefix)
 *   store_scrub.c  the scrubber: a thread re-checking every value at a bounded rate
 *   store_read.c   read views (store_obj_*), of both kinds of objects
 *   store_block.c  block objects: reading blocks (store_obj_block...), queueing
 *                  store_put_meta() and store_put_block() jobs
 *   store_scan.c   the start-up scan: rebuild counters and policy, drop leftovers
 *   store_writer.c the job queue, the writer thread, batching, map-full retries
 *   store_txn.c    changes inside one write transaction, mirrored in the policy
 *   store_readers.c what reading threads share: hits buffered for the policy, idle read
 *                  transactions
 *   store_verify.c checksums once per residency: the record of values checked
 *   store_record.c key and record encodings
 *   store_err.c    LMDB and errno codes translated into sc_code
 *
 * Calls point down this list, never back up (make layers checks it): store.c
 * starts the scan, the writer and the scrubber and fits the capacity through
 * store_txn.c; store_prefix.c, store_scrub.c, store_read.c and store_block.c
 * queue jobs through the writer (store_read.c asks store_block.c whether every
 * block of an object is cached); the scan and the writer change the database
 * through store_txn.c; readers and the scrubber check values, and the writer
 * forgets the values it deletes, through store_verify.c; all of them use
 * store_record.c and store_err.c, which call nothing else of store/.
 *
 * Locks (never two held at once, but a hit buffer's lock, then pol_lock: store_readers.c):
 *   pol_lock   every call into the policy (readers' buffered on_hit, the writer's others)
 *   hits[i].mu one thread's buffered hits (store_readers.c)
 *   stats_lock the counters in stats
 *   q_lock     the job queue, seq_* and each waited job's finished flag
 *   scrub_lock the scrubber's stop flag (it waits on scrub_wake between values)
 * The record of checked values (checked, forgot, checks) takes no lock: atomics.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "store.h"
#include "store_record.h"

/* The key in "info" holding the next object id (u64 big-endian). */
#define ST_INFO_NEXT_ID "next_id"

/* Slots of forgot[] (store_verify.c): the latest deletion among the pages hashed to each. */
#define ST_FORGOT_SLOTS 1024u

/* The latest corrupt values counted (st_queue_corrupt), so that one found by several reads or
 * by a read and the scrubber before its removal is committed counts once. */
#define ST_REPORTED_MAX 16u
struct st_reported {
    uint64_t id;
    uint32_t idx;
    bool block;
};

enum st_job_kind {
    ST_JOB_PUT,        /* store_put() */
    ST_JOB_META,       /* store_put_meta() */
    ST_JOB_BLOCK,      /* store_put_block() */
    ST_JOB_REMOVE,     /* removals of a whole or a block object */
    ST_JOB_DROP_BLOCK, /* one block that failed its checksum */
    ST_JOB_TOUCH,
};

/* Reading threads' slots (store_readers.c): a thread's hit buffer and its idle transaction. */
#define ST_SLOTS      64
#define ST_HITBUF_LEN 64 /* hits a thread buffers before it gives them to the policy */

/* One thread's hits, not yet given to the policy. */
struct st_hitbuf {
    pthread_mutex_t mu;
    uint32_t n;
    uint64_t ids[ST_HITBUF_LEN];
    char apart[64]; /* keeps the next buffer's lock off this one's cache lines */
};

/* One queued write. */
struct st_job {
    struct st_job *next;
    enum st_job_kind kind;
    uint64_t seq; /* queue order, from 1 */
    unsigned char mkey[ST_MKEY_LEN];
    sc_code result; /* the outcome, set by the writer */

    /*
     * ST_JOB_PUT, _META, _BLOCK: bucket, key and etag (_META, _BLOCK) are copies stored
     * after the struct, and so is a _META job's header blob; body (a _PUT's object, a
     * _BLOCK's block) and a _PUT's hdrs are the caller's. size is the body's length, or
     * for _META the object's size.
     */
    const char *bucket;
    const char *key;
    const char *etag;
    const void *hdrs;
    size_t hdrs_len;
    const void *body;
    uint64_t size;
    uint32_t idx;        /* _BLOCK, _DROP_BLOCK: the block's index */
    uint32_t block_size; /* _BLOCK: the block size the block was cut with */
    int64_t stored_at;
    store_done_fn done;
    void *arg;

    /* ST_JOB_REMOVE, _DROP_BLOCK, _TOUCH (which sets the record's stored_at to the job's) */
    uint64_t expect_id; /* act only on this object id; 0: whatever is cached */
    bool waited;        /* a caller sleeps on it (its stack owns the job) */
    bool finished;      /* set under q_lock once committed; the writer then forgets the job */
};

struct store {
    int lock_fd; /* holds the cache directory's lock (store.c); -1 before it is taken */
    MDB_env *env;
    int data_fd;              /* the data file's descriptor (mdb_env_get_fd), LMDB's own */
    const unsigned char *map; /* where LMDB mapped the data file (store.c's find_map), or NULL */
    size_t map_len;           /* bytes mapped (the map size, fixed once open) */
    MDB_dbi dbi_meta;
    MDB_dbi dbi_chunks;
    MDB_dbi dbi_blocks;
    MDB_dbi dbi_ids;
    MDB_dbi dbi_info;
    uint64_t capacity;
    uint32_t chunk_size;
    uint32_t block_size; /* of new block objects */
    bool verify;

    /*
     * The values checked since the store opened (store_verify.c): one bit per page of the
     * map, set on the first page of a chunk or block whose CRC32C matched; forgot[] holds,
     * per slot of pages, the id of the latest write transaction that deleted a value there.
     */
    size_t page;               /* LMDB's page size */
    size_t os_page;            /* what mincore() counts in */
    _Atomic uint64_t *checked; /* map_len / page bits, in an anonymous mapping */
    size_t checked_len;        /* bytes of that mapping */
    _Atomic uint64_t forgot[ST_FORGOT_SLOTS];
    atomic_uint_fast64_t checks; /* CRC32Cs computed for reads (store_stats.checks) */
    atomic_uint_fast64_t failed; /* checks that did not match, ever (st_mark_written) */

    const struct policy_ops *pol;
    void *pol_state;
    pthread_mutex_t pol_lock;

    pthread_mutex_t stats_lock;
    struct store_stats stats;
    struct st_reported reported[ST_REPORTED_MAX]; /* under stats_lock; a ring */
    unsigned n_reported;                          /* reports so far (next slot: % MAX) */

    /* store_readers.c */
    struct st_hitbuf hits[ST_SLOTS];
    _Atomic(MDB_txn *) idle[ST_SLOTS]; /* a reset read transaction parked by its thread, or NULL */
    unsigned n_idle;                   /* slots below this may park one (reader slots are few) */

    /* Committed state, touched only by the writer once the store is open. */
    uint64_t used;
    uint64_t objects;
    uint64_t blocks;
    uint64_t block_objects;
    uint64_t next_id;

    pthread_mutex_t q_lock;
    pthread_cond_t q_work; /* the writer waits here for jobs */
    pthread_cond_t q_done; /* store_flush() and store_remove() wait here */
    struct st_job *q_head;
    struct st_job *q_tail;
    uint64_t seq_queued; /* seq of the last job queued */
    uint64_t seq_done;   /* every job up to this seq is committed and reported */
    bool stopping;
    bool writer_running;
    pthread_t writer;

    /* The scrubber (store_scrub.c). */
    uint64_t scrub_rate; /* bytes a second; 0: none */
    pthread_mutex_t scrub_lock;
    pthread_cond_t scrub_wake; /* on CLOCK_MONOTONIC: the scrubber's pauses, cut short by stop */
    bool scrub_stop;
    bool scrub_running;
    pthread_t scrubber;
};

/* A read view (store_read.c, store_block.c). */
struct store_obj {
    store *st;
    MDB_txn *txn;
    struct st_record rec;
    bool reported;      /* a corruption was already counted and queued */
    uint32_t bad_block; /* the last block reported corrupt, or UINT32_MAX */
    unsigned char mkey[ST_MKEY_LEN];
};

/* A write transaction in progress, with the policy calls it made (undone on abort). */
struct st_undo;
struct st_wtxn {
    store *st;
    MDB_txn *txn;
    uint64_t used;          /* as if the transaction were committed */
    uint64_t objects;       /* same */
    uint64_t blocks;        /* same */
    uint64_t block_objects; /* same */
    uint64_t evictions;     /* victims removed in this transaction */
    uint64_t next_id;
    uint64_t keep_id; /* a block object whose record stays when its last block goes (0: none) */
    struct st_undo *undo;
    size_t n_undo;
    size_t cap_undo;
    /* The chunks and blocks this transaction wrote, recorded as checked once it commits
     * (st_mark_written); a value the record does not keep is not listed. */
    struct st_written *written;
    size_t n_written;
    size_t cap_written;
};

/* A value written in a write transaction: its table and key; after the commit, where it is
 * in the map and the length its reads check (data NULL: not found, deleted since). */
struct st_written {
    bool block; /* dbi_blocks (its CRC32C after its bytes), else dbi_chunks */
    unsigned char key[ST_CKEY_LEN];
    const void *data;
    size_t len;
};

/* store_err.c */

/* Translates an LMDB or errno code; logs what failed unless it is an expected outcome. */
sc_code st_lmdb_err(int mdb_rc, const char *what);

/* True if errno value err is the file system refusing this process (EACCES, EPERM, EROFS). */
bool st_refused(int err);

/* Logs why the file system refused what ("the cache directory"...) at dir; SC_EACCES. */
sc_code st_report_refused(const char *dir, const char *what, int err);

/* store_txn.c */

/* Starts a write transaction from the committed state. */
sc_code st_wtxn_begin(store *st, struct st_wtxn *w);

/*
 * Commits. On success publishes counters and forgets the undo log; on failure
 * (SC_EFULL for a full map, SC_EIO...) undoes the policy calls. The
 * transaction is gone either way.
 */
sc_code st_wtxn_commit(struct st_wtxn *w);

/* Aborts and undoes the policy calls. */
void st_wtxn_abort(struct st_wtxn *w);

/*
 * Applies a put, put_meta or put_block job (by its kind). The job's own outcome goes to job->result
 * (SC_OK, SC_EFULL, SC_ENOMEM; for a block SC_ECANCELED and SC_EMISMATCH too); the return value is
 * the transaction's: anything but SC_OK means it must be aborted (SC_EFULL then means the map is
 * full).
 */
sc_code st_wtxn_put(struct st_wtxn *w, struct st_job *job);
sc_code st_wtxn_put_meta(struct st_wtxn *w, struct st_job *job);
sc_code st_wtxn_put_block(struct st_wtxn *w, struct st_job *job);

/* Sets stored_at of the record under mkey (if its id is expect_id, or any if 0). */
sc_code st_wtxn_touch(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN], uint64_t expect_id,
                      int64_t stored_at);

/*
 * Deletes the object under mkey if cached (and, if expect_id != 0, if its id matches): a
 * whole object's chunks, or every block of a block object, with its record.
 */
sc_code st_wtxn_remove(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN],
                       uint64_t expect_id);

/* Deletes block idx of the block object expect_id under mkey, if both are still there. */
sc_code st_wtxn_drop_block(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN],
                           uint64_t expect_id, uint32_t idx);

/* Evicts policy victims until w->used <= target or the policy has none left. */
sc_code st_wtxn_evict(struct st_wtxn *w, uint64_t target);

/* Deletes every chunk (dbi "chunks") or block (dbi "blocks") of object id in the write
 * transaction txn, forgetting each (st_forget). */
sc_code st_delete_chunks(store *st, MDB_txn *txn, MDB_dbi dbi, uint64_t id);

/*
 * Reads the record of object id through "ids" in txn (any transaction): SC_OK (mkey and r
 * set; r points into txn's pages), SC_ENOTFOUND (no usable ids entry: *has_mkey false),
 * SC_ECORRUPT (the entry leads to no record of that id: *has_mkey true), or an LMDB error.
 */
sc_code st_record_of_id(store *st, MDB_txn *txn, uint64_t id, unsigned char mkey[ST_MKEY_LEN],
                        struct st_record *r, bool *has_mkey);

/*
 * Counts the keys of object id in dbi with an index in [first, last], by a cursor over
 * the keys present (cost proportional to the count, not to the range); each key's value
 * length goes to each (if not NULL) with ctx. Returns SC_OK or an LMDB error.
 */
typedef sc_code (*st_each_fn)(void *ctx, uint32_t idx, size_t value_len);
sc_code st_count_keys(MDB_txn *txn, MDB_dbi dbi, uint64_t id, uint32_t first, uint32_t last,
                      st_each_fn each, void *ctx, uint64_t *count);

/* store_readers.c */

/* Initializes the hit buffers and idle slots (at most max_readers / 4 park a transaction). */
sc_code st_readers_init(store *st, unsigned max_readers);

/* Aborts the parked transactions and destroys the buffers' locks; hits not given are dropped. */
void st_readers_free(store *st);

/* Records n hits for the policy in this thread's buffer (given to it when the buffer fills). */
void st_hits_add(store *st, const uint64_t *ids, uint32_t n);

/* Gives every buffered hit to the policy. The caller must not hold pol_lock. */
void st_hits_drain(store *st);

/* Whether the policy would admit obj, after every hit buffered so far (pol_lock not held). */
bool st_pol_admit(store *st, const struct policy_obj *obj);

/* Begins a read transaction: this thread's parked one renewed, or a new one. */
sc_code st_rtxn_begin(store *st, MDB_txn **txn);

/* Ends a read transaction from st_rtxn_begin(): parked for this thread, or aborted. */
void st_rtxn_end(store *st, MDB_txn *txn);

/* Aborts every parked transaction (their reader slots are freed). */
void st_rtxn_drop_idle(store *st);

/* store_verify.c */

/*
 * Sets up the record of checked values once the environment is open (map address and
 * size, page size). SC_OK or SC_ENOMEM. st_verify_free() releases it (safe if never set up).
 */
sc_code st_verify_init(store *st);
void st_verify_free(store *st);

/*
 * Whether a read must compute the CRC32C of the len bytes at data (in the map, from the
 * read transaction that is about to hand them out) before serving them: true unless the
 * store does not verify, or the value was checked since the store opened and every page of
 * it is in the page cache now. Counts the checks it asks for (st->checks). Reads nothing at
 * data: a read must not fault a page in before this has looked.
 */
bool st_needs_check(store *st, const void *data, size_t len);

/*
 * Computes the CRC32C of the len bytes at data (read in txn, a read transaction) and compares
 * it with want; on a match records the value as checked. True if it matched.
 */
bool st_check(store *st, MDB_txn *txn, const void *data, size_t len, uint32_t want);

/*
 * Whether the record would keep a value of len bytes: one smaller is checked at every read
 * (its CRC32C costs about what the residency test does), so its writer need not list it.
 */
bool st_tracks_len(const store *st, size_t len);

/* The number of checks that have failed since the store opened (a sequentially consistent
 * load: see st_mark_written). */
uint64_t st_failed_checks(store *st);

/*
 * Records as checked the n values this process's writer has just committed (their data and
 * len, as a read transaction begun after the commit returns them; a NULL data is skipped), so
 * their first read does not compute the CRC32C the writer computed from the same bytes. Sound
 * because LMDB (without MDB_WRITEMAP) writes those bytes to the page cache in the commit: a
 * page that leaves it is seen by the residency test and checked when read back; and only
 * the writer, the caller, deletes values, so no deletion can race the set.
 *
 * One race is left to close: between the commit and the mark, a page of a value may leave
 * the page cache and come back rotten for a reader, whose check fails and takes the value out
 * of the record; the mark would then put it back over the rotten resident page. So the caller
 * reads st_failed_checks() before its commit and passes it as failed_before: if any check
 * failed since (a failing reader counts before it unchecks), the marks are taken back, and
 * these values are checked at their first read, as any. Cannot fail.
 */
void st_mark_written(store *st, const struct st_written *v, size_t n, uint64_t failed_before);

/*
 * Takes the value at data (len bytes, in the map) out of the record, so that reads check it
 * until st_check() puts it back: the scrubber calls it before reading a value, whose pages
 * may come from the disk as it reads them. Cannot fail.
 */
void st_uncheck(store *st, const void *data, size_t len);

/*
 * Forgets the value at data (len bytes, as mdb_get or a cursor returned it in the write
 * transaction txn) before txn deletes it: its pages may then hold another value. Every
 * deletion of a chunk or block calls it. Cannot fail.
 */
void st_forget(store *st, MDB_txn *txn, const void *data, size_t len);

/* store_scan.c */

/*
 * Opens the databases, drops leftovers and malformed entries, repairs the ids
 * index, loads next_id, counts used bytes and objects, and registers every
 * object with the policy, oldest first. Runs before the writer starts.
 */
sc_code st_scan(store *st);

/* store_writer.c */

sc_code st_writer_start(store *st);

/* Drains the queue and joins the writer. */
void st_writer_stop(store *st);

/* Queues a removal of object id under mkey that nobody waits for (a checksum failure, a prefix). */
void st_queue_removal(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id);

/* Queues the removal of block idx of block object id under mkey (a checksum failure). */
void st_queue_block_removal(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id,
                            uint32_t idx);

/*
 * Counts a chunk or block (block true) of object id under mkey that failed its check (why:
 * "fails its checksum"...) and logs it, unless it is among the latest counted, and queues what
 * a failure calls for in any case: the removal of the whole object for a chunk, of that block
 * alone for a block. True if it was counted now.
 */
bool st_queue_corrupt(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id, bool block,
                      uint32_t idx, const char *why);

/*
 * Makes a job of kind for (bucket, key) with copies of bucket, key and etag (may be NULL)
 * after it, extra_len more bytes there at job->hdrs if extra_len > 0 (for the caller to fill),
 * and its meta key. Returns SC_OK, SC_ENOMEM or SC_ECRYPTO; free the job with free().
 */
sc_code st_job_new(enum st_job_kind kind, const char *bucket, const char *key, const char *etag,
                   size_t extra_len, struct st_job **out);

/* Queues job for the writer, which then owns it. Returns SC_OK or SC_ECANCELED (closing). */
sc_code st_enqueue(store *st, struct st_job *job);

/* Queues a write job stamped now, reported to done(arg); frees it if it cannot be queued
 * (done is then not called). Returns st_enqueue()'s result. */
sc_code st_submit(store *st, struct st_job *job, store_done_fn done, void *arg);

/* store_scrub.c */

/* Starts the scrubber if the store verifies and st->scrub_rate > 0. SC_OK or SC_ENOMEM. */
sc_code st_scrub_start(store *st);

/* Stops the scrubber and waits for it (at most one value's check). No-op if not running. */
void st_scrub_stop(store *st);

#endif
