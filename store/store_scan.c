/*
 * store_scan.c - what the store does with what it finds on disk at start-up.
 *
 * In one write transaction, before the writer thread exists:
 *   1. open (or create) the five databases and read next_id;
 *   2. walk "meta": keep each well-formed record, delete the others;
 *   3. walk "chunks" in key order beside the records sorted by id: a whole
 *      object is complete if its chunks 0..n-1 are all there with the right
 *      lengths; chunks of no whole object are leftovers and are deleted;
 *   4. walk "blocks" the same way: a block is kept if its record is a block
 *      object of that id, its index below the block count and its value of
 *      the right length (bytes and CRC); the others are deleted;
 *   5. walk "ids": delete entries that do not point back to their record;
 *   6. delete incomplete whole objects and block objects without a block,
 *      add missing ids entries, save next_id;
 *   7. count used bytes, objects and blocks and register every object (every
 *      block of a block object, in index order) with the policy, oldest
 *      stored_at first, so the policy starts in storage order.
 * Chunk and block values are never read (only their lengths), so the walk
 * touches leaf pages, not the bodies; their CRCs are checked when first served
 * (store_verify.c) or by the scrubber.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

struct live {
    enum st_kind kind;
    uint64_t id;
    uint64_t size;
    int64_t stored_at;
    uint32_t chunk_size;  /* whole objects */
    uint32_t n_chunks;    /* whole objects; 0 for block objects */
    uint32_t seen;        /* whole: chunks 0..seen-1 were found; blocks: blocks kept */
    uint32_t block_size;  /* block objects */
    uint32_t n_blocks;    /* block objects; 0 for whole ones */
    uint64_t block_bytes; /* block objects: the bytes of the blocks kept */
    bool bad;             /* incomplete or duplicated: to be deleted */
    bool has_id;          /* "ids" holds a matching entry */
    unsigned char mkey[ST_MKEY_LEN];
};

struct scan {
    store *st;
    MDB_txn *txn;
    struct live *objs; /* sorted by id after scan_meta() */
    size_t n;
    size_t cap;
    uint64_t max_id;  /* the largest id seen anywhere */
    uint64_t dropped; /* entries deleted */
};

static int by_id(const void *a, const void *b)
{
    const struct live *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int by_age(const void *a, const void *b)
{
    const struct live *x = a, *y = b;
    if (x->stored_at != y->stored_at)
        return (x->stored_at > y->stored_at) - (x->stored_at < y->stored_at);
    return by_id(a, b);
}

static struct live *find_live(struct scan *s, uint64_t id)
{
    struct live probe = {.id = id};
    if (s->n == 0)
        return NULL;
    return bsearch(&probe, s->objs, s->n, sizeof(probe), by_id);
}

static sc_code open_dbis(struct scan *s)
{
    store *st = s->st;
    int mrc = mdb_dbi_open(s->txn, "meta", MDB_CREATE, &st->dbi_meta);
    if (mrc == 0)
        mrc = mdb_dbi_open(s->txn, "chunks", MDB_CREATE, &st->dbi_chunks);
    if (mrc == 0)
        mrc = mdb_dbi_open(s->txn, "blocks", MDB_CREATE, &st->dbi_blocks);
    if (mrc == 0)
        mrc = mdb_dbi_open(s->txn, "ids", MDB_CREATE, &st->dbi_ids);
    if (mrc == 0)
        mrc = mdb_dbi_open(s->txn, "info", MDB_CREATE, &st->dbi_info);
    return st_lmdb_err(mrc, "opening the databases");
}

static sc_code load_next_id(struct scan *s)
{
    MDB_val k = {.mv_size = sizeof(ST_INFO_NEXT_ID) - 1, .mv_data = ST_INFO_NEXT_ID};
    MDB_val v;
    int mrc = mdb_get(s->txn, s->st->dbi_info, &k, &v);
    if (mrc == MDB_NOTFOUND)
        return SC_OK;
    if (mrc != 0)
        return st_lmdb_err(mrc, "reading next_id");
    if (v.mv_size == ST_IDKEY_LEN)
        s->st->next_id = st_get_be64(v.mv_data);
    return SC_OK;
}

static void see_id(struct scan *s, uint64_t id)
{
    if (id > s->max_id)
        s->max_id = id;
}

static sc_code add_live(struct scan *s, const unsigned char *mkey, const struct st_record *r)
{
    if (s->n == s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 256;
        struct live *objs = realloc(s->objs, cap * sizeof(*objs));
        if (objs == NULL)
            return SC_ENOMEM;
        s->objs = objs;
        s->cap = cap;
    }
    struct live *l = &s->objs[s->n++];
    *l = (struct live){.kind = r->kind,
                       .id = r->id,
                       .size = r->size,
                       .stored_at = r->stored_at,
                       .chunk_size = r->chunk_size,
                       .n_chunks = r->n_chunks,
                       .block_size = r->block_size,
                       .n_blocks = r->n_blocks};
    memcpy(l->mkey, mkey, ST_MKEY_LEN);
    return SC_OK;
}

/*
 * Walks dbi, calling judge on every entry; entries it returns true for are
 * deleted. judge may fail (SC_ENOMEM), which stops the walk.
 */
typedef sc_code (*judge_fn)(struct scan *s, const MDB_val *k, const MDB_val *v, bool *drop);

static sc_code walk(struct scan *s, MDB_dbi dbi, judge_fn judge)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    sc_code rc = SC_OK;
    int mrc = mdb_cursor_open(s->txn, dbi, &cur);
    if (mrc == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (mrc == 0) {
        bool drop = false;
        rc = judge(s, &k, &v, &drop);
        if (rc != SC_OK)
            break;
        if (drop) {
            st_forget(s->st, s->txn, v.mv_data, v.mv_size);
            mrc = mdb_cursor_del(cur, 0);
            if (mrc != 0)
                break;
            s->dropped++;
        }
        /* After a delete the cursor already sits on the next entry, and MDB_NEXT returns it. */
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (cur != NULL)
        mdb_cursor_close(cur);
    if (rc != SC_OK)
        return rc;
    return mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "scanning");
}

static sc_code judge_meta(struct scan *s, const MDB_val *k, const MDB_val *v, bool *drop)
{
    struct st_record r;
    *drop = k->mv_size != ST_MKEY_LEN || st_record_decode(v->mv_data, v->mv_size, &r) != SC_OK;
    if (*drop)
        return SC_OK;
    see_id(s, r.id);
    return add_live(s, k->mv_data, &r);
}

/* Chunks come in (id, index) order, so each object's chunks are checked as they pass. */
static sc_code judge_chunk(struct scan *s, const MDB_val *k, const MDB_val *v, bool *drop)
{
    *drop = true;
    if (k->mv_size != ST_CKEY_LEN)
        return SC_OK;
    uint64_t id = st_get_be64(k->mv_data);
    uint32_t idx = st_get_be32((const unsigned char *)k->mv_data + ST_IDKEY_LEN);
    struct live *l = find_live(s, id);
    see_id(s, id);
    if (l == NULL || idx >= l->n_chunks)
        return SC_OK;
    *drop = false;
    if (idx == l->seen && v->mv_size == st_chunk_len(l->size, l->chunk_size, idx))
        l->seen++;
    else
        l->bad = true;
    return SC_OK;
}

/* Blocks: kept if they belong to a block object's record, in range, of the right length. */
static sc_code judge_block(struct scan *s, const MDB_val *k, const MDB_val *v, bool *drop)
{
    *drop = true;
    if (k->mv_size != ST_CKEY_LEN)
        return SC_OK;
    uint64_t id = st_get_be64(k->mv_data);
    uint32_t idx = st_get_be32((const unsigned char *)k->mv_data + ST_IDKEY_LEN);
    struct live *l = find_live(s, id);
    see_id(s, id);
    if (l == NULL || l->bad || idx >= l->n_blocks)
        return SC_OK;
    uint32_t len = st_chunk_len(l->size, l->block_size, idx);
    if (v->mv_size != (size_t)len + ST_CRC_LEN)
        return SC_OK;
    *drop = false;
    l->seen++;
    l->block_bytes += len;
    return SC_OK;
}

static sc_code judge_id(struct scan *s, const MDB_val *k, const MDB_val *v, bool *drop)
{
    *drop = true;
    if (k->mv_size != ST_IDKEY_LEN || v->mv_size != ST_MKEY_LEN)
        return SC_OK;
    uint64_t id = st_get_be64(k->mv_data);
    struct live *l = find_live(s, id);
    see_id(s, id);
    if (l == NULL || memcmp(l->mkey, v->mv_data, ST_MKEY_LEN) != 0)
        return SC_OK;
    *drop = false;
    l->has_id = true;
    return SC_OK;
}

/* Two records claiming one id cannot both own its chunks: both go. */
static void mark_duplicates(struct scan *s)
{
    for (size_t i = 1; i < s->n; i++) {
        if (s->objs[i].id == s->objs[i - 1].id) {
            s->objs[i].bad = true;
            s->objs[i - 1].bad = true;
        }
    }
}

static sc_code put_kv(struct scan *s, MDB_dbi dbi, void *key, size_t klen, void *val, size_t vlen)
{
    MDB_val k = {.mv_size = klen, .mv_data = key};
    MDB_val v = {.mv_size = vlen, .mv_data = val};
    return st_lmdb_err(mdb_put(s->txn, dbi, &k, &v, 0), "repairing");
}

static sc_code del_kv(struct scan *s, MDB_dbi dbi, void *key, size_t klen)
{
    MDB_val k = {.mv_size = klen, .mv_data = key};
    int mrc = mdb_del(s->txn, dbi, &k, NULL);
    return mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "dropping");
}

/*
 * Deletes incomplete whole objects, block objects without a block (and both records of a
 * duplicated id, with their chunks and blocks), and gives the others their missing ids entry.
 */
static sc_code settle(struct scan *s)
{
    store *st = s->st;
    unsigned char idkey[ST_IDKEY_LEN];
    sc_code rc = SC_OK;
    for (size_t i = 0; i < s->n && rc == SC_OK; i++) {
        struct live *l = &s->objs[i];
        if (l->kind == ST_WHOLE ? l->seen != l->n_chunks : l->seen == 0)
            l->bad = true;
        st_id_key(l->id, idkey);
        if (l->bad) {
            s->dropped++;
            rc = del_kv(s, st->dbi_meta, l->mkey, ST_MKEY_LEN);
            if (rc == SC_OK)
                rc = st_delete_chunks(st, s->txn, st->dbi_chunks, l->id);
            if (rc == SC_OK)
                rc = st_delete_chunks(st, s->txn, st->dbi_blocks, l->id);
            if (rc == SC_OK && l->has_id)
                rc = del_kv(s, st->dbi_ids, idkey, sizeof(idkey));
        } else if (!l->has_id) {
            rc = put_kv(s, st->dbi_ids, idkey, sizeof(idkey), l->mkey, ST_MKEY_LEN);
        }
    }
    return rc;
}

static sc_code save_next_id(struct scan *s)
{
    unsigned char idbuf[ST_IDKEY_LEN];
    store *st = s->st;
    if (st->next_id <= s->max_id)
        st->next_id = s->max_id + 1;
    st_id_key(st->next_id, idbuf);
    return put_kv(s, st->dbi_info, ST_INFO_NEXT_ID, sizeof(ST_INFO_NEXT_ID) - 1, idbuf,
                  sizeof(idbuf));
}

/* One block of a block object found at start-up, for the policy. */
struct block_ctx {
    store *st;
    const struct live *l;
    const struct policy_obj *obj; /* the object's names */
};

static sc_code register_block(void *ctx, uint32_t idx, size_t value_len)
{
    const struct block_ctx *b = ctx;
    struct policy_obj obj = *b->obj;
    (void)value_len; /* checked by judge_block */
    obj.id = STORE_BLOCK_ID(b->l->id, idx);
    obj.is_block = true;
    obj.block = idx;
    obj.size = st_chunk_len(b->l->size, b->l->block_size, idx);
    return b->st->pol->on_insert(b->st->pol_state, &obj);
}

/*
 * Tells the policy about one surviving object (or each of its blocks, in index order),
 * with NUL-terminated copies of its names.
 */
static sc_code register_one(struct scan *s, const struct live *l)
{
    char bucket[ST_BUCKET_MAX + 1];
    char key[ST_KEY_MAX + 1];
    struct st_record r;
    store *st = s->st;
    MDB_val k = {.mv_size = ST_MKEY_LEN, .mv_data = (void *)l->mkey};
    MDB_val v;
    sc_code rc = st_lmdb_err(mdb_get(s->txn, st->dbi_meta, &k, &v), "re-reading a record");
    if (rc == SC_OK)
        rc = st_record_decode(v.mv_data, v.mv_size, &r);
    if (rc != SC_OK)
        return rc == SC_ECORRUPT ? SC_EIO : rc;
    memcpy(bucket, r.bucket, r.bucket_len);
    bucket[r.bucket_len] = '\0';
    memcpy(key, r.key, r.key_len);
    key[r.key_len] = '\0';
    struct policy_obj obj = {.id = r.id, .size = r.size, .bucket = bucket, .key = key};
    if (l->kind == ST_WHOLE)
        return st->pol->on_insert(st->pol_state, &obj);
    struct block_ctx b = {.st = st, .l = l, .obj = &obj};
    uint64_t count = 0;
    return st_count_keys(s->txn, st->dbi_blocks, l->id, 0, UINT32_MAX, register_block, &b, &count);
}

/* Adds a surviving object to the counters. */
static void count_one(store *st, const struct live *l)
{
    st->objects++;
    if (l->kind == ST_WHOLE) {
        st->used += l->size;
        return;
    }
    st->used += l->block_bytes;
    st->blocks += l->seen;
    st->block_objects++;
}

static sc_code register_all(struct scan *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->objs[i].bad)
            s->objs[kept++] = s->objs[i];
    s->n = kept;
    if (s->n > 1)
        qsort(s->objs, s->n, sizeof(*s->objs), by_age);
    for (size_t i = 0; i < s->n; i++) {
        sc_code rc = register_one(s, &s->objs[i]);
        if (rc != SC_OK)
            return rc;
        count_one(s->st, &s->objs[i]);
    }
    return SC_OK;
}

static void publish(store *st)
{
    pthread_mutex_lock(&st->stats_lock);
    st->stats.used_bytes = st->used;
    st->stats.objects = st->objects;
    st->stats.blocks = st->blocks;
    st->stats.block_objects = st->block_objects;
    pthread_mutex_unlock(&st->stats_lock);
}

sc_code st_scan(store *st)
{
    struct scan s = {.st = st};
    sc_code rc = st_lmdb_err(mdb_txn_begin(st->env, NULL, 0, &s.txn), "beginning the scan");
    if (rc != SC_OK)
        goto out;
    rc = open_dbis(&s);
    if (rc == SC_OK)
        rc = load_next_id(&s);
    if (rc == SC_OK)
        rc = walk(&s, st->dbi_meta, judge_meta);
    if (rc != SC_OK)
        goto out;
    if (s.n > 1)
        qsort(s.objs, s.n, sizeof(*s.objs), by_id);
    mark_duplicates(&s);
    rc = walk(&s, st->dbi_chunks, judge_chunk);
    if (rc == SC_OK)
        rc = walk(&s, st->dbi_blocks, judge_block);
    if (rc == SC_OK)
        rc = walk(&s, st->dbi_ids, judge_id);
    if (rc == SC_OK)
        rc = settle(&s);
    if (rc == SC_OK)
        rc = save_next_id(&s);
    if (rc == SC_OK)
        rc = register_all(&s);
    if (rc != SC_OK)
        goto out;
    rc = st_lmdb_err(mdb_txn_commit(s.txn), "committing the scan");
    s.txn = NULL;
    if (rc != SC_OK)
        goto out;
    publish(st);
    if (s.dropped > 0)
        sc_warn("store: dropped %llu leftover or malformed entries", (unsigned long long)s.dropped);
out:
    if (s.txn != NULL)
        mdb_txn_abort(s.txn);
    free(s.objs);
    return rc;
}
