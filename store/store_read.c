/*
 * store_read.c - read views on cached objects (store_obj_*).
 *
 * A view is one LMDB read transaction plus the decoded metadata record.
 * Everything it hands out (header blob, iovecs) points into the memory map
 * and stays valid because the transaction stays open until
 * store_obj_close(). Chunks are checked against their CRC32C before they are
 * handed out, unless this process checked them and they stayed in the page
 * cache since (store_verify.c); a failure is counted, the object is queued for
 * removal, and the caller gets SC_ECORRUPT. A block object's view is opened
 * here too, but its blocks are read (and their hits counted) in store_block.c.
 *
 * store_obj_file_span() names where handed-out bytes lie in the data file (the map is that
 * file, mapped from offset 0), for a sender that reads them from the file.
 *
 * A view is used by one thread at a time, but may move between threads
 * (the environment has MDB_NOTLS). Its transaction and its hit go through
 * store_readers.c, which keeps hits on different threads from meeting on a lock.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

static bool same_names(const struct st_record *r, const char *bucket, const char *key)
{
    return strlen(bucket) == r->bucket_len && memcmp(bucket, r->bucket, r->bucket_len) == 0 &&
           strlen(key) == r->key_len && memcmp(key, r->key, r->key_len) == 0;
}

/* Counts a corrupt chunk and queues the object's removal, once per view. */
static void report_corrupt(store_obj *o, uint32_t idx, const char *why)
{
    if (o->reported)
        return;
    o->reported = true;
    st_queue_corrupt(o->st, o->mkey, o->rec.id, false, idx, why);
}

/* Opens a view; count_hit tells the policy about the read (a client's, not a peek). */
static sc_code obj_open(store *st, const char *bucket, const char *key, bool count_hit,
                        store_obj **out)
{
    MDB_val k = {.mv_size = ST_MKEY_LEN};
    MDB_val v;
    store_obj *o = NULL;
    sc_code rc = st_check_names(bucket, key);
    *out = NULL;
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    o = calloc(1, sizeof(*o));
    if (o == NULL)
        goto out;
    o->st = st;
    o->bad_block = UINT32_MAX;
    rc = st_meta_key(bucket, key, o->mkey);
    if (rc != SC_OK)
        goto out;
    rc = st_rtxn_begin(st, &o->txn);
    if (rc != SC_OK)
        goto out;
    k.mv_data = o->mkey;
    rc = st_lmdb_err(mdb_get(o->txn, st->dbi_meta, &k, &v), "reading a record");
    if (rc != SC_OK)
        goto out;
    rc = st_record_decode(v.mv_data, v.mv_size, &o->rec);
    if (rc == SC_ECORRUPT) {
        sc_warn("store: malformed record; removing it");
        st_queue_removal(st, o->mkey, 0);
        rc = SC_ENOTFOUND;
    }
    if (rc == SC_OK && !same_names(&o->rec, bucket, key))
        rc = SC_ENOTFOUND; /* a SHA-256 collision: not this object */
    if (rc != SC_OK)
        goto out;
    if (count_hit && o->rec.kind == ST_WHOLE) /* a block object's hits are its blocks' */
        st_hits_add(st, &o->rec.id, 1);
    *out = o;
    o = NULL;
    rc = SC_OK;
out:
    store_obj_close(o);
    return rc;
}

sc_code store_obj_open(store *st, const char *bucket, const char *key, store_obj **out)
{
    return obj_open(st, bucket, key, true, out);
}

sc_code store_peek(store *st, const char *bucket, const char *key, uint64_t *size)
{
    store_obj *o = NULL;
    sc_code rc = obj_open(st, bucket, key, false, &o);
    if (rc == SC_OK && o->rec.kind == ST_BLOCKS &&
        store_obj_blocks_cached(o, 0, o->rec.n_blocks - 1) != o->rec.n_blocks)
        rc = SC_ENOTFOUND; /* partly cached */
    if (rc == SC_OK)
        *size = o->rec.size;
    store_obj_close(o);
    return rc;
}

sc_code store_recorded(store *st, const char *bucket, const char *key)
{
    store_obj *o = NULL;
    sc_code rc = obj_open(st, bucket, key, false, &o);
    store_obj_close(o);
    return rc;
}

uint64_t store_obj_size(const store_obj *obj)
{
    return obj->rec.size;
}

const void *store_obj_headers(const store_obj *obj, size_t *len)
{
    *len = obj->rec.hdrs_len;
    return obj->rec.hdrs;
}

int64_t store_obj_stored_at(const store_obj *obj)
{
    return obj->rec.stored_at;
}

/* Finds chunk idx, checks its length and (once per residency) its CRC32C. */
static sc_code get_chunk(store_obj *o, uint32_t idx, const unsigned char **data)
{
    unsigned char ckey[ST_CKEY_LEN];
    MDB_val k = {.mv_size = sizeof(ckey), .mv_data = ckey};
    MDB_val v;
    const struct st_record *r = &o->rec;
    st_chunk_key(r->id, idx, ckey);
    int mrc = mdb_get(o->txn, o->st->dbi_chunks, &k, &v);
    if (mrc == MDB_NOTFOUND ||
        (mrc == 0 && v.mv_size != st_chunk_len(r->size, r->chunk_size, idx))) {
        report_corrupt(o, idx, mrc == 0 ? "has the wrong length" : "is missing");
        return SC_ECORRUPT;
    }
    if (mrc != 0)
        return st_lmdb_err(mrc, "reading a chunk");
    if (st_needs_check(o->st, v.mv_data, v.mv_size) &&
        !st_check(o->st, o->txn, v.mv_data, v.mv_size, st_record_crc(r, idx))) {
        report_corrupt(o, idx, "fails its checksum");
        return SC_ECORRUPT;
    }
    *data = v.mv_data;
    return SC_OK;
}

sc_code store_obj_iov(store_obj *obj, uint64_t off, uint64_t len, struct iovec *iov, size_t max_iov,
                      size_t *n_iov)
{
    const struct st_record *r = &obj->rec;
    uint64_t cs = r->chunk_size;
    *n_iov = 0;
    if (r->kind != ST_WHOLE)
        return SC_EINVAL; /* read with store_obj_block() */
    if (off > r->size || len > r->size - off)
        return SC_EINVAL;
    if (len == 0)
        return SC_OK;
    uint64_t first = off / cs;
    uint64_t last = (off + len - 1) / cs;
    if (last - first >= max_iov)
        return SC_EINVAL;
    for (uint64_t idx = first; idx <= last; idx++) {
        const unsigned char *data = NULL;
        sc_code rc = get_chunk(obj, (uint32_t)idx, &data);
        if (rc != SC_OK)
            return rc;
        uint64_t start = idx == first ? off - idx * cs : 0;
        uint64_t end = idx == last ? off + len - idx * cs
                                   : st_chunk_len(r->size, r->chunk_size, (uint32_t)idx);
        iov[idx - first] =
            (struct iovec){.iov_base = (void *)(data + start), .iov_len = (size_t)(end - start)};
    }
    *n_iov = (size_t)(last - first + 1);
    return SC_OK;
}

sc_code store_obj_file_span(const store_obj *obj, const void *data, uint64_t len, int *fd,
                            uint64_t *offset)
{
    const store *st = obj->st;
    uintptr_t at = (uintptr_t)data, base = (uintptr_t)st->map;
    if (data == NULL || len == 0 || at < base || at - base >= st->map_len ||
        len > st->map_len - (at - base))
        return SC_EINVAL;
    *fd = st->data_fd;
    *offset = (uint64_t)(at - base);
    return SC_OK;
}

void store_obj_close(store_obj *obj)
{
    if (obj == NULL)
        return;
    if (obj->txn != NULL)
        st_rtxn_end(obj->st, obj->txn);
    free(obj);
}
