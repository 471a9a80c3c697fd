/* block_object.c - a large object, or a run of its blocks, fetched block by block (see
 * block_object.h). */
#include "block_object.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct object_job {
    block_table *t;
    struct block_ref ref; /* its strings are the job's own */
    struct up_identity as;
    unsigned parallelism;
    unsigned char *todo; /* one bit per block of the run: not cached when the job started */
    pthread_mutex_t mu;
    uint32_t first;       /* the run's first block; todo's bit 0 */
    uint32_t next, count; /* the next block to consider; one past the run's last */
    unsigned in_flight;
    bool stepping, again; /* job_step() runs; a block ended meanwhile */
    sc_code rc;
    uint64_t bytes;
    block_object_fn done;
    void *arg;
};

static void job_free(struct object_job *j)
{
    pthread_mutex_destroy(&j->mu);
    free((char *)j->ref.bucket);
    free((char *)j->ref.key);
    free((char *)j->ref.etag);
    free(j->todo);
    free(j);
}

/* Marks the blocks the store lacks at this version (all of them if it has no such copy). */
static void mark_missing(store *st, struct object_job *j)
{
    store_obj *obj = NULL;
    bool have_view = store_obj_open(st, j->ref.bucket, j->ref.key, &obj) == SC_OK &&
                     store_obj_is_version(obj, j->ref.etag, j->ref.size, j->ref.block_size);
    for (uint32_t i = j->first; i < j->count; i++) {
        uint32_t bit = i - j->first;
        if (!have_view || store_obj_blocks_cached(obj, i, i) == 0)
            j->todo[bit / 8] |= (unsigned char)(1u << (bit % 8));
    }
    store_obj_close(obj);
}

static void job_step(struct object_job *j, bool completion, sc_code rc);

static void on_object_block(void *arg, sc_code rc)
{
    job_step(arg, true, rc);
}

/* The next block to fetch, or false when none is left (job locked). */
static bool next_todo(struct object_job *j, uint32_t *idx)
{
    while (j->next < j->count) {
        uint32_t i = j->next++;
        uint32_t bit = i - j->first;
        if (j->todo[bit / 8] & (1u << (bit % 8))) {
            *idx = i;
            return true;
        }
    }
    return false;
}

/*
 * Keeps `parallelism` blocks in flight until none is left, then reports. A completion (a
 * block ended with rc) is counted in the same locked section that decides whether the job is
 * over, so only the call that sees it over touches the job afterwards. A block that ends while
 * another call steps (at once, when it was being fetched already) only sets `again`: that call
 * goes on, so the stack never grows with the number of blocks.
 */
static void job_step(struct object_job *j, bool completion, sc_code rc)
{
    pthread_mutex_lock(&j->mu);
    if (completion) {
        j->in_flight--;
        if (rc != SC_OK && j->rc == SC_OK)
            j->rc = rc;
    }
    if (j->stepping) {
        j->again = true;
        pthread_mutex_unlock(&j->mu);
        return;
    }
    j->stepping = true;
    do {
        j->again = false;
        uint32_t idx;
        while (j->rc == SC_OK && j->in_flight < j->parallelism && next_todo(j, &idx)) {
            j->in_flight++;
            j->bytes += block_ref_len(&(struct block_ref){
                .size = j->ref.size, .block_size = j->ref.block_size, .idx = idx});
            pthread_mutex_unlock(&j->mu);
            struct block_ref b = j->ref;
            b.idx = idx;
            sc_code sent = block_fetch_prefetch(j->t, &b, &j->as, on_object_block, j);
            pthread_mutex_lock(&j->mu);
            if (sent != SC_OK) {
                j->in_flight--;
                j->rc = sent;
            }
        }
    } while (j->again);
    j->stepping = false;
    bool finished = j->in_flight == 0 && (j->rc != SC_OK || j->next >= j->count);
    pthread_mutex_unlock(&j->mu);
    if (finished) {
        j->done(j->arg, j->rc, j->rc == SC_OK ? j->bytes : 0);
        job_free(j);
    }
}

sc_code block_object_fetch_range(block_table *t, store *st, const struct block_ref *b,
                                 uint32_t first, uint32_t last, const struct up_identity *as,
                                 unsigned parallelism, block_object_fn done, void *arg)
{
    if (b->block_size == 0 || b->etag == NULL || b->size == 0 || parallelism == 0 || first > last ||
        last >= block_count(b->size, b->block_size))
        return SC_EINVAL;
    struct object_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return SC_ENOMEM;
    pthread_mutex_init(&j->mu, NULL);
    j->t = t;
    j->as = *as;
    j->parallelism = parallelism;
    j->first = j->next = first;
    j->count = last + 1;
    j->ref = (struct block_ref){strdup(b->bucket), strdup(b->key), strdup(b->etag),
                                b->size,           b->block_size,  0};
    j->todo = calloc((size_t)(last - first) / 8 + 1, 1);
    j->done = done;
    j->arg = arg;
    if (!j->ref.bucket || !j->ref.key || !j->ref.etag || !j->todo) {
        job_free(j);
        return SC_ENOMEM;
    }
    mark_missing(st, j);
    job_step(j, false, SC_OK);
    return SC_OK;
}

sc_code block_object_fetch(block_table *t, store *st, const struct block_ref *b,
                           const struct up_identity *as, unsigned parallelism, block_object_fn done,
                           void *arg)
{
    uint32_t count = b->block_size ? block_count(b->size, b->block_size) : 0;
    if (count == 0)
        return SC_EINVAL;
    return block_object_fetch_range(t, st, b, 0, count - 1, as, parallelism, done, arg);
}
