/*
 * store_writer.c - the single writer thread: its job queue, batching, and
 * what happens when the LMDB map is full.
 *
 * store_put(), store_put_meta(), store_put_block() (store_block.c) and
 * store_remove() queue jobs; the writer takes whatever is queued (up to
 * BATCH_MAX_JOBS jobs and BATCH_MAX_BYTES of bodies, blocks and header blobs,
 * so one transaction's dirty pages stay bounded), applies it in one write
 * transaction, commits, and only then reports each job: put callbacks run,
 * waiting removers wake, and seq_done advances for store_flush().
 *
 * A full map (MDB_MAP_FULL) aborts the whole transaction, so no object is
 * ever half written. The writer then evicts in a transaction of its own
 * (down to 90% of the capacity, and at least the batch's bytes plus 1/16 of
 * the capacity) and retries, up to MAP_FULL_ROUNDS times. If a batch still
 * fails, its jobs are retried one per transaction, so one job cannot sink
 * the others; what still fails is reported as SC_EFULL (or SC_EIO).
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"

#define BATCH_MAX_JOBS  256u
#define BATCH_MAX_BYTES (64ull * 1024 * 1024)
#define MAP_FULL_ROUNDS 3

sc_code st_submit(store *st, struct st_job *job, store_done_fn done, void *arg)
{
    job->stored_at = (int64_t)time(NULL);
    job->done = done;
    job->arg = arg;
    sc_code rc = st_enqueue(st, job);
    if (rc != SC_OK)
        free(job);
    return rc;
}

sc_code st_enqueue(store *st, struct st_job *job)
{
    sc_code rc = SC_ECANCELED;
    pthread_mutex_lock(&st->q_lock);
    if (st->stopping)
        goto out;
    job->next = NULL;
    job->seq = ++st->seq_queued;
    if (st->q_tail != NULL)
        st->q_tail->next = job;
    else
        st->q_head = job;
    st->q_tail = job;
    pthread_cond_signal(&st->q_work);
    rc = SC_OK;
out:
    pthread_mutex_unlock(&st->q_lock);
    return rc;
}

/* The bytes a job writes: a body or block and a header blob (not a block object's size). */
static uint64_t job_bytes(const struct st_job *j)
{
    if (j->kind == ST_JOB_META)
        return j->hdrs_len;
    return j->size + j->hdrs_len;
}

/*
 * Waits for jobs and detaches the next batch (a NULL-terminated list) and its
 * length. Returns NULL once the store is stopping and the queue is empty.
 */
static struct st_job *take_batch(store *st, size_t *n)
{
    struct st_job *first, *last = NULL;
    uint64_t bytes = 0;
    *n = 0;
    pthread_mutex_lock(&st->q_lock);
    while (st->q_head == NULL && !st->stopping)
        pthread_cond_wait(&st->q_work, &st->q_lock);
    first = st->q_head;
    for (struct st_job *j = first; j != NULL && *n < BATCH_MAX_JOBS; j = j->next) {
        if (*n > 0 && bytes + job_bytes(j) > BATCH_MAX_BYTES)
            break;
        bytes += job_bytes(j);
        last = j;
        (*n)++;
    }
    if (last != NULL) {
        st->q_head = last->next;
        if (st->q_head == NULL)
            st->q_tail = NULL;
        last->next = NULL;
    }
    pthread_mutex_unlock(&st->q_lock);
    return first;
}

/* Applies one job in w; the result is the transaction's (the job's own goes to j->result). */
static sc_code apply_job(struct st_wtxn *w, struct st_job *j)
{
    sc_code rc;
    switch (j->kind) {
    case ST_JOB_PUT:
        return st_wtxn_put(w, j);
    case ST_JOB_META:
        return st_wtxn_put_meta(w, j);
    case ST_JOB_BLOCK:
        return st_wtxn_put_block(w, j);
    case ST_JOB_TOUCH:
        return st_wtxn_touch(w, j->mkey, j->expect_id, j->stored_at);
    case ST_JOB_DROP_BLOCK:
        return st_wtxn_drop_block(w, j->mkey, j->expect_id, j->idx);
    case ST_JOB_REMOVE:
    default:
        rc = st_wtxn_remove(w, j->mkey, j->expect_id);
        j->result = rc;
        return rc;
    }
}

/* Whether a job reports its outcome through a done callback. */
static bool is_put(const struct st_job *j)
{
    return j->kind == ST_JOB_PUT || j->kind == ST_JOB_META || j->kind == ST_JOB_BLOCK;
}

/* Applies n jobs from first in one transaction; the result is the transaction's. */
static sc_code batch_once(store *st, struct st_job *first, size_t n)
{
    struct st_wtxn w;
    struct st_job *j = first;
    sc_code rc = st_wtxn_begin(st, &w);
    if (rc != SC_OK)
        return rc;
    for (size_t i = 0; i < n && rc == SC_OK; i++, j = j->next) {
        rc = apply_job(&w, j);
    }
    if (rc != SC_OK) {
        st_wtxn_abort(&w);
        return rc;
    }
    return st_wtxn_commit(&w);
}

/* Evicts, in a transaction of its own, enough to give a batch of needed bytes room in the map. */
static sc_code evict_for_room(store *st, uint64_t needed)
{
    struct st_wtxn w;
    uint64_t cap = st->capacity;
    uint64_t goal = needed + cap / 16;
    uint64_t high = cap / 10 * 9;
    sc_code rc = st_wtxn_begin(st, &w);
    if (rc != SC_OK)
        return rc;
    if (w.used > high && w.used - high > goal)
        goal = w.used - high;
    rc = st_wtxn_evict(&w, w.used > goal ? w.used - goal : 0);
    if (rc == SC_OK && w.evictions == 0)
        rc = SC_EFULL; /* nothing left to evict */
    if (rc != SC_OK) {
        st_wtxn_abort(&w);
        return rc;
    }
    return st_wtxn_commit(&w);
}

static uint64_t batch_bytes(const struct st_job *first, size_t n)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++, first = first->next)
        bytes += job_bytes(first);
    return bytes;
}

/* batch_once(), answering a full map by evicting and retrying. */
static sc_code batch_with_room(store *st, struct st_job *first, size_t n)
{
    for (int round = 0;; round++) {
        sc_code rc = batch_once(st, first, n);
        if (rc != SC_EFULL || round == MAP_FULL_ROUNDS)
            return rc;
        sc_warn("store: map full; evicting to make room (round %d)", round + 1);
        if (evict_for_room(st, batch_bytes(first, n)) != SC_OK)
            return SC_EFULL;
    }
}

static void fail_job(struct st_job *j, sc_code rc)
{
    if (!is_put(j))
        j->result = SC_EIO;
    else
        j->result = rc == SC_EFULL || rc == SC_ENOMEM ? rc : SC_EIO;
}

static void run_batch(store *st, struct st_job *first, size_t n)
{
    sc_code rc = batch_with_room(st, first, n);
    if (rc == SC_OK)
        return;
    if (n == 1) {
        fail_job(first, rc);
        return;
    }
    sc_warn("store: a batch of %zu jobs failed (%s); retrying them one by one", n, sc_strerror(rc));
    for (struct st_job *j = first; j != NULL; j = j->next) {
        rc = batch_with_room(st, j, 1);
        if (rc != SC_OK)
            fail_job(j, rc);
    }
}

/*
 * Reports a committed batch: put callbacks run and the jobs are freed, then
 * waiting removers wake and seq_done moves past the batch. A waited job
 * belongs to its waiter's stack, so it is not touched once marked finished.
 */
static void finish_batch(store *st, struct st_job *first)
{
    struct st_job *waiters = NULL, *next;
    uint64_t last_seq = 0;
    for (struct st_job *j = first; j != NULL; j = next) {
        next = j->next;
        last_seq = j->seq;
        if (is_put(j) && j->done != NULL)
            j->done(j->arg, j->result);
        if (j->waited) {
            j->next = waiters;
            waiters = j;
        } else {
            free(j);
        }
    }
    pthread_mutex_lock(&st->q_lock);
    for (struct st_job *j = waiters; j != NULL; j = next) {
        next = j->next;
        j->finished = true;
    }
    st->seq_done = last_seq;
    pthread_cond_broadcast(&st->q_done);
    pthread_mutex_unlock(&st->q_lock);
}

static void *writer_main(void *arg)
{
    store *st = arg;
    struct st_job *batch;
    size_t n;
    pthread_setname_np(pthread_self(), "store-writer");
    for (;;) {
        batch = take_batch(st, &n);
        if (batch == NULL)
            break;
        run_batch(st, batch, n);
        finish_batch(st, batch);
    }
    return NULL;
}

sc_code st_writer_start(store *st)
{
    if (pthread_create(&st->writer, NULL, writer_main, st) != 0)
        return SC_ENOMEM;
    st->writer_running = true;
    return SC_OK;
}

void st_writer_stop(store *st)
{
    pthread_mutex_lock(&st->q_lock);
    st->stopping = true;
    pthread_cond_signal(&st->q_work);
    pthread_mutex_unlock(&st->q_lock);
    if (st->writer_running)
        pthread_join(st->writer, NULL);
    st->writer_running = false;
}

void st_queue_removal(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id)
{
    struct st_job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        sc_err("store: no memory to queue a removal");
        return;
    }
    job->kind = ST_JOB_REMOVE;
    job->expect_id = id;
    memcpy(job->mkey, mkey, ST_MKEY_LEN);
    if (st_enqueue(st, job) != SC_OK)
        free(job);
}

void st_queue_block_removal(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id,
                            uint32_t idx)
{
    struct st_job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        sc_err("store: no memory to queue a removal");
        return;
    }
    job->kind = ST_JOB_DROP_BLOCK;
    job->expect_id = id;
    job->idx = idx;
    memcpy(job->mkey, mkey, ST_MKEY_LEN);
    if (st_enqueue(st, job) != SC_OK)
        free(job);
}

bool st_queue_corrupt(store *st, const unsigned char mkey[ST_MKEY_LEN], uint64_t id, bool block,
                      uint32_t idx, const char *why)
{
    struct st_reported me = {.id = id, .idx = idx, .block = block};
    bool seen = false;
    pthread_mutex_lock(&st->stats_lock);
    unsigned n = st->n_reported < ST_REPORTED_MAX ? st->n_reported : ST_REPORTED_MAX;
    for (unsigned i = 0; i < n && !seen; i++) {
        const struct st_reported *r = &st->reported[i];
        seen = r->id == id && r->idx == idx && r->block == block;
    }
    if (!seen) {
        st->reported[st->n_reported++ % ST_REPORTED_MAX] = me;
        st->stats.corrupt++;
    }
    pthread_mutex_unlock(&st->stats_lock);
    if (!seen)
        sc_warn("store: object %llu %s %u %s; removing it", (unsigned long long)id,
                block ? "block" : "chunk", idx, why);
    if (block)
        st_queue_block_removal(st, mkey, id, idx);
    else
        st_queue_removal(st, mkey, id);
    return !seen;
}

sc_code st_job_new(enum st_job_kind kind, const char *bucket, const char *key, const char *etag,
                   size_t extra_len, struct st_job **out)
{
    size_t blen = strlen(bucket), klen = strlen(key), elen = etag != NULL ? strlen(etag) : 0;
    *out = NULL;
    struct st_job *job = calloc(1, sizeof(*job) + blen + klen + elen + 3 + extra_len);
    if (job == NULL)
        return SC_ENOMEM;
    char *names = (char *)(job + 1);
    job->kind = kind;
    job->bucket = memcpy(names, bucket, blen + 1);
    job->key = memcpy(names + blen + 1, key, klen + 1);
    if (etag != NULL)
        job->etag = memcpy(names + blen + klen + 2, etag, elen + 1);
    if (extra_len > 0)
        job->hdrs = names + blen + klen + elen + 3;
    sc_code rc = st_meta_key(bucket, key, job->mkey);
    if (rc != SC_OK) {
        free(job);
        return rc;
    }
    *out = job;
    return SC_OK;
}

static sc_code check_put(store *st, const char *bucket, const char *key, const void *hdrs,
                         size_t hdrs_len, const void *body, uint64_t size)
{
    sc_code rc = st_check_names(bucket, key);
    if (rc != SC_OK)
        return rc;
    if ((hdrs == NULL && hdrs_len > 0) || (body == NULL && size > 0))
        return SC_EINVAL;
    if (hdrs_len > ST_HDRS_MAX || size > st->capacity ||
        st_chunk_count(size, st_chunk_size_for(size, st->chunk_size)) > STORE_MAX_CHUNKS)
        return SC_ETOOBIG;
    return SC_OK;
}

sc_code store_put(store *st, const char *bucket, const char *key, const void *hdrs, size_t hdrs_len,
                  const void *body, uint64_t size, store_done_fn done, void *arg)
{
    struct st_job *job = NULL;
    sc_code rc = check_put(st, bucket, key, hdrs, hdrs_len, body, size);
    if (rc == SC_OK)
        rc = st_job_new(ST_JOB_PUT, bucket, key, NULL, 0, &job);
    if (rc != SC_OK)
        return rc;
    job->hdrs = hdrs;
    job->hdrs_len = hdrs_len;
    job->body = body;
    job->size = size;
    return st_submit(st, job, done, arg);
}

sc_code store_touch(store *st, const char *bucket, const char *key)
{
    sc_code rc = st_check_names(bucket, key);
    if (rc != SC_OK)
        return rc;
    struct st_job *job = calloc(1, sizeof(*job));
    if (job == NULL)
        return SC_ENOMEM;
    job->kind = ST_JOB_TOUCH;
    job->stored_at = (int64_t)time(NULL);
    rc = st_meta_key(bucket, key, job->mkey);
    if (rc == SC_OK)
        rc = st_enqueue(st, job);
    if (rc != SC_OK)
        free(job);
    return rc;
}

sc_code store_remove(store *st, const char *bucket, const char *key)
{
    struct st_job job = {.kind = ST_JOB_REMOVE, .waited = true};
    sc_code rc = st_check_names(bucket, key);
    if (rc == SC_OK)
        rc = st_meta_key(bucket, key, job.mkey);
    if (rc == SC_OK)
        rc = st_enqueue(st, &job);
    if (rc != SC_OK)
        return rc;
    pthread_mutex_lock(&st->q_lock);
    while (!job.finished)
        pthread_cond_wait(&st->q_done, &st->q_lock);
    rc = job.result;
    pthread_mutex_unlock(&st->q_lock);
    return rc;
}

sc_code store_remove_queued(store *st, const char *bucket, const char *key)
{
    unsigned char mkey[ST_MKEY_LEN];
    sc_code rc = st_check_names(bucket, key);
    if (rc == SC_OK)
        rc = st_meta_key(bucket, key, mkey);
    if (rc != SC_OK)
        return rc;
    struct st_job *job = calloc(1, sizeof(*job));
    if (job == NULL)
        return SC_ENOMEM;
    job->kind = ST_JOB_REMOVE; /* expect_id 0: whatever is cached */
    memcpy(job->mkey, mkey, ST_MKEY_LEN);
    rc = st_enqueue(st, job);
    if (rc != SC_OK)
        free(job);
    return rc;
}

void store_flush(store *st)
{
    pthread_mutex_lock(&st->q_lock);
    uint64_t target = st->seq_queued;
    while (st->seq_done < target)
        pthread_cond_wait(&st->q_done, &st->q_lock);
    pthread_mutex_unlock(&st->q_lock);
}
