/*
 * store_prefix.c - dropping every cached object of a bucket under a key prefix
 * (POST /_s3cached/invalidate with "prefix").
 *
 * Object names live inside the records, not in the meta keys (hashes), so this
 * walks all of "meta" in one read transaction, queues a removal for each match,
 * and waits until the writer has committed them. Puts queued before the call are
 * committed first, so none of them escapes the walk. A removal names the id it
 * saw: an object replaced meanwhile by a fresh fill is left alone.
 */
#include <string.h>

#include "store_int.h"

static bool matches(const struct st_record *r, const char *bucket, size_t blen, const char *prefix,
                    size_t plen)
{
    return r->bucket_len == blen && memcmp(r->bucket, bucket, blen) == 0 && r->key_len >= plen &&
           memcmp(r->key, prefix, plen) == 0;
}

sc_code store_remove_prefix(store *st, const char *bucket, const char *prefix, uint64_t *removed)
{
    *removed = 0;
    if (bucket == NULL || *bucket == '\0' || prefix == NULL)
        return SC_EINVAL;
    size_t blen = strlen(bucket), plen = strlen(prefix);
    store_flush(st); /* the walk sees every put queued before the call */
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    sc_code rc = st_lmdb_err(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn), "beginning a read");
    if (rc == SC_OK)
        rc = st_lmdb_err(mdb_cursor_open(txn, st->dbi_meta, &cur), "opening a cursor");
    MDB_val k, v;
    int mrc = rc == SC_OK ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : MDB_NOTFOUND;
    while (mrc == 0) {
        struct st_record r;
        if (k.mv_size == ST_MKEY_LEN && st_record_decode(v.mv_data, v.mv_size, &r) == SC_OK &&
            matches(&r, bucket, blen, prefix, plen)) {
            st_queue_removal(st, k.mv_data, r.id);
            (*removed)++;
        }
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (rc == SC_OK && mrc != MDB_NOTFOUND)
        rc = st_lmdb_err(mrc, "walking the cache");
    if (cur)
        mdb_cursor_close(cur);
    if (txn)
        mdb_txn_abort(txn);
    store_flush(st);
    return rc;
}
