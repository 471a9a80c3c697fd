/*
 * store_block.c - block objects (store.h, "Block objects"): reading their
 * blocks from a view, and queueing store_put_meta() and store_put_block()
 * for the writer (which applies them in store_txn.c).
 *
 * A block is one value in "blocks": its bytes, then their CRC32C, checked once
 * per residency as chunks are (store_verify.c). A failed check drops only that
 * block.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

bool store_obj_is_blocks(const store_obj *obj)
{
    return obj->rec.kind == ST_BLOCKS;
}

uint32_t store_obj_block_size(const store_obj *obj)
{
    return obj->rec.kind == ST_BLOCKS ? obj->rec.block_size : 0;
}

bool store_obj_is_version(const store_obj *obj, const char *etag, uint64_t size,
                          uint32_t block_size)
{
    return obj->rec.kind == ST_BLOCKS && obj->rec.size == size &&
           obj->rec.block_size == block_size && st_record_etag_is(&obj->rec, etag);
}

/* Counts a corrupt block and queues the removal of that block alone. */
static void report_bad_block(store_obj *o, uint32_t idx, const char *why)
{
    if (o->bad_block == idx)
        return; /* counted already by this view */
    o->bad_block = idx;
    st_queue_corrupt(o->st, o->mkey, o->rec.id, true, idx, why);
}

/* Block idx of the view, its length and checksum checked; no hit counted. */
static sc_code read_block(store_obj *obj, uint32_t idx, const void **data, uint32_t *len)
{
    unsigned char bkey[ST_CKEY_LEN];
    MDB_val k = {.mv_size = sizeof(bkey), .mv_data = bkey};
    MDB_val v;
    const struct st_record *r = &obj->rec;
    if (r->kind != ST_BLOCKS || idx >= r->n_blocks)
        return SC_EINVAL;
    uint32_t want = st_chunk_len(r->size, r->block_size, idx);
    st_chunk_key(r->id, idx, bkey);
    int mrc = mdb_get(obj->txn, obj->st->dbi_blocks, &k, &v);
    if (mrc == MDB_NOTFOUND)
        return SC_ENOTFOUND;
    if (mrc != 0)
        return st_lmdb_err(mrc, "reading a block");
    if (v.mv_size != (size_t)want + ST_CRC_LEN) {
        report_bad_block(obj, idx, "has the wrong length");
        return SC_ECORRUPT;
    }
    const unsigned char *bytes = v.mv_data;
    /* The stored CRC32C is read only once a check is due: it shares the block's last page. */
    if (st_needs_check(obj->st, bytes, want) &&
        !st_check(obj->st, obj->txn, bytes, want, st_get_crc(bytes + want))) {
        report_bad_block(obj, idx, "fails its checksum");
        return SC_ECORRUPT;
    }
    *data = bytes;
    *len = want;
    return SC_OK;
}

static void count_hits(store_obj *obj, uint32_t first, uint32_t n)
{
    uint64_t ids[ST_HITBUF_LEN];
    for (uint32_t done = 0; done < n;) {
        uint32_t k = n - done < ST_HITBUF_LEN ? n - done : ST_HITBUF_LEN;
        for (uint32_t i = 0; i < k; i++)
            ids[i] = STORE_BLOCK_ID(obj->rec.id, first + done + i);
        st_hits_add(obj->st, ids, k);
        done += k;
    }
}

sc_code store_obj_block(store_obj *obj, uint32_t idx, const void **data, uint32_t *len)
{
    return store_obj_blocks_read(obj, idx, 1, data, len, NULL);
}

sc_code store_obj_blocks_read(store_obj *obj, uint32_t first, uint32_t n, const void **data,
                              uint32_t *len, uint32_t *bad)
{
    for (uint32_t i = 0; i < n; i++) {
        sc_code rc = read_block(obj, first + i, &data[i], &len[i]);
        if (rc != SC_OK) {
            if (bad != NULL)
                *bad = first + i;
            return rc;
        }
    }
    count_hits(obj, first, n);
    return SC_OK;
}

uint64_t store_obj_blocks_cached(store_obj *obj, uint32_t first, uint32_t last)
{
    const struct st_record *r = &obj->rec;
    uint64_t count = 0;
    if (r->kind != ST_BLOCKS || first > last || first >= r->n_blocks)
        return 0;
    if (last >= r->n_blocks)
        last = r->n_blocks - 1;
    if (st_count_keys(obj->txn, obj->st->dbi_blocks, r->id, first, last, NULL, NULL, &count) !=
        SC_OK)
        return 0;
    return count;
}

/* An ETag as the store keeps it: present, not empty, at most STORE_ETAG_MAX bytes. */
static bool etag_ok(const char *etag)
{
    return etag != NULL && *etag != '\0' && strnlen(etag, STORE_ETAG_MAX + 1) <= STORE_ETAG_MAX;
}

static sc_code check_meta(const store *st, const char *bucket, const char *key, const char *etag,
                          const void *hdrs, size_t hdrs_len, uint64_t size)
{
    sc_code rc = st_check_names(bucket, key);
    if (rc != SC_OK)
        return rc;
    if (!etag_ok(etag) || (hdrs == NULL && hdrs_len > 0))
        return SC_EINVAL;
    if (size <= st->block_size || st_chunk_count(size, st->block_size) > STORE_BLOCKS_MAX)
        return SC_EINVAL;
    return hdrs_len > ST_HDRS_MAX ? SC_ETOOBIG : SC_OK;
}

sc_code store_put_meta(store *st, const char *bucket, const char *key, const char *etag,
                       const void *hdrs, size_t hdrs_len, uint64_t size, store_done_fn done,
                       void *arg)
{
    struct st_job *job = NULL;
    sc_code rc = check_meta(st, bucket, key, etag, hdrs, hdrs_len, size);
    if (rc == SC_OK)
        rc = st_job_new(ST_JOB_META, bucket, key, etag, hdrs_len, &job);
    if (rc != SC_OK)
        return rc;
    if (hdrs_len > 0)
        memcpy((void *)job->hdrs, hdrs, hdrs_len); /* the job's own copy, after it */
    job->hdrs_len = hdrs_len;
    job->size = size;
    return st_submit(st, job, done, arg);
}

sc_code store_put_block(store *st, const char *bucket, const char *key, const char *etag,
                        uint32_t block_size, uint32_t idx, const void *data, uint32_t len,
                        store_done_fn done, void *arg)
{
    struct st_job *job = NULL;
    sc_code rc = st_check_names(bucket, key);
    if (rc != SC_OK)
        return rc;
    if (!etag_ok(etag) || data == NULL || len == 0 || len > STORE_BLOCK_MAX ||
        idx >= STORE_BLOCKS_MAX)
        return SC_EINVAL;
    rc = st_job_new(ST_JOB_BLOCK, bucket, key, etag, 0, &job);
    if (rc != SC_OK)
        return rc;
    job->idx = idx;
    job->block_size = block_size;
    job->body = data;
    job->size = len;
    return st_submit(st, job, done, arg);
}
