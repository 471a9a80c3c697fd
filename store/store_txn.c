/*
 * store_txn.c - the changes the writer makes inside one write transaction:
 * put an object, a block object's record or one of its blocks, remove an
 * object or a block, evict policy victims (objects or blocks).
 *
 * The policy is told at once about every object a transaction adds or
 * removes, so that pick_victim() moves on to the next victim while the
 * transaction is still open. Each such call is logged; if the transaction
 * aborts (a full map, an I/O error), the log is replayed backwards so the
 * policy again matches what is committed. Counters live in the st_wtxn and
 * reach the store only when the commit succeeds.
 *
 * Every function here expects the st_wtxn's open write transaction; values
 * read from it are copied before the next write in the same transaction.
 *
 * A block object's record is no policy entry and is not charged; each block
 * is (STORE_BLOCK_ID). A block's eviction drops the record with the last
 * block, except while a block of that same object is being made room for
 * (w->keep_id): the record it needs stays.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/crc32c.h"

#define UNDO_MIN 16u

/* One policy call to take back: an insert (names NULL) or a removal. */
struct st_undo {
    uint64_t id;
    uint64_t size;
    char *names; /* removal: bucket '\0' key '\0', for on_insert() */
    size_t bucket_len;
};

static void pol_remove(store *st, uint64_t id)
{
    pthread_mutex_lock(&st->pol_lock);
    st->pol->on_remove(st->pol_state, id);
    pthread_mutex_unlock(&st->pol_lock);
}

static sc_code pol_insert(store *st, const struct policy_obj *obj)
{
    pthread_mutex_lock(&st->pol_lock);
    sc_code rc = st->pol->on_insert(st->pol_state, obj);
    pthread_mutex_unlock(&st->pol_lock);
    return rc;
}

bool st_pol_admit(store *st, const struct policy_obj *obj)
{
    if (st->pol->admit == NULL)
        return true;
    st_hits_drain(st); /* the policy decides on every hit so far */
    pthread_mutex_lock(&st->pol_lock);
    bool yes = st->pol->admit(st->pol_state, obj);
    pthread_mutex_unlock(&st->pol_lock);
    return yes;
}

static bool pol_victim(store *st, uint64_t *id)
{
    pthread_mutex_lock(&st->pol_lock);
    bool found = st->pol->pick_victim(st->pol_state, id);
    pthread_mutex_unlock(&st->pol_lock);
    return found;
}

/* Makes room for one more undo entry, so that logging a call cannot fail after it is made. */
static sc_code undo_reserve(struct st_wtxn *w)
{
    if (w->n_undo < w->cap_undo)
        return SC_OK;
    size_t cap = w->cap_undo != 0 ? w->cap_undo * 2 : UNDO_MIN;
    struct st_undo *undo = realloc(w->undo, cap * sizeof(*undo));
    if (undo == NULL)
        return SC_ENOMEM;
    w->undo = undo;
    w->cap_undo = cap;
    return SC_OK;
}

static void undo_free(struct st_wtxn *w)
{
    for (size_t i = 0; i < w->n_undo; i++)
        free(w->undo[i].names);
    free(w->undo);
    w->undo = NULL;
    w->n_undo = 0;
    w->cap_undo = 0;
}

/* Takes back the logged policy calls, newest first. */
static void undo_rollback(struct st_wtxn *w)
{
    for (size_t i = w->n_undo; i-- > 0;) {
        const struct st_undo *u = &w->undo[i];
        if (u->names == NULL) {
            pol_remove(w->st, u->id);
            continue;
        }
        struct policy_obj obj = {.id = u->id,
                                 .size = u->size,
                                 .bucket = u->names,
                                 .key = u->names + u->bucket_len + 1,
                                 .is_block = STORE_ID_IS_BLOCK(u->id)};
        uint64_t obj_id;
        if (obj.is_block)
            st_block_id_split(u->id, &obj_id, &obj.block);
        if (pol_insert(w->st, &obj) != SC_OK)
            sc_warn("store: policy lost object %llu while undoing a transaction",
                    (unsigned long long)u->id);
    }
    undo_free(w);
}

static void written_free(struct st_wtxn *w)
{
    free(w->written);
    w->written = NULL;
    w->n_written = 0;
    w->cap_written = 0;
}

/* Lists a value the transaction wrote, for st_mark_written() at the commit. Out of memory,
 * it is left out: its first read then checks it, as any. */
static void written_add(struct st_wtxn *w, bool block, const unsigned char *key, size_t len)
{
    if (!st_tracks_len(w->st, len))
        return;
    if (w->n_written == w->cap_written) {
        size_t cap = w->cap_written ? 2 * w->cap_written : 64;
        struct st_written *grown = realloc(w->written, cap * sizeof(*grown));
        if (grown == NULL)
            return;
        w->written = grown;
        w->cap_written = cap;
    }
    struct st_written *x = &w->written[w->n_written++];
    x->block = block;
    memcpy(x->key, key, ST_CKEY_LEN);
}

/* Records the values the committed transaction wrote as checked (st_mark_written), found
 * where the commit put them in the map, unless a check failed since failed_before. A value
 * deleted later in the same transaction is not found; one written again under its key is the
 * one found. */
static void mark_written(struct st_wtxn *w, uint64_t failed_before)
{
    store *st = w->st;
    MDB_txn *txn = NULL;
    if (w->n_written > 0 && st_rtxn_begin(st, &txn) == SC_OK) {
        for (size_t i = 0; i < w->n_written; i++) {
            struct st_written *x = &w->written[i];
            MDB_val k = {.mv_size = ST_CKEY_LEN, .mv_data = (void *)x->key}, v;
            x->data = NULL;
            if (mdb_get(txn, x->block ? st->dbi_blocks : st->dbi_chunks, &k, &v) != 0)
                continue;
            x->data = v.mv_data;
            x->len = x->block && v.mv_size >= ST_CRC_LEN ? v.mv_size - ST_CRC_LEN : v.mv_size;
        }
        st_mark_written(st, w->written, w->n_written, failed_before);
        st_rtxn_end(st, txn);
    }
    written_free(w);
}

sc_code st_wtxn_begin(store *st, struct st_wtxn *w)
{
    memset(w, 0, sizeof(*w));
    w->st = st;
    w->used = st->used;
    w->objects = st->objects;
    w->blocks = st->blocks;
    w->block_objects = st->block_objects;
    w->next_id = st->next_id;
    return st_lmdb_err(mdb_txn_begin(st->env, NULL, 0, &w->txn), "beginning a write");
}

void st_wtxn_abort(struct st_wtxn *w)
{
    if (w->txn != NULL)
        mdb_txn_abort(w->txn);
    w->txn = NULL;
    undo_rollback(w);
    written_free(w);
}

static sc_code put_next_id(struct st_wtxn *w)
{
    unsigned char idbuf[ST_IDKEY_LEN];
    MDB_val k = {.mv_size = sizeof(ST_INFO_NEXT_ID) - 1, .mv_data = ST_INFO_NEXT_ID};
    MDB_val v = {.mv_size = sizeof(idbuf), .mv_data = idbuf};
    st_id_key(w->next_id, idbuf);
    return st_lmdb_err(mdb_put(w->txn, w->st->dbi_info, &k, &v, 0), "saving next_id");
}

static void publish(struct st_wtxn *w)
{
    store *st = w->st;
    st->used = w->used;
    st->objects = w->objects;
    st->blocks = w->blocks;
    st->block_objects = w->block_objects;
    st->next_id = w->next_id;
    pthread_mutex_lock(&st->stats_lock);
    st->stats.used_bytes = w->used;
    st->stats.objects = w->objects;
    st->stats.blocks = w->blocks;
    st->stats.block_objects = w->block_objects;
    st->stats.evictions += w->evictions;
    pthread_mutex_unlock(&st->stats_lock);
}

sc_code st_wtxn_commit(struct st_wtxn *w)
{
    sc_code rc = SC_OK;
    if (w->next_id != w->st->next_id)
        rc = put_next_id(w);
    if (rc != SC_OK) {
        st_wtxn_abort(w);
        return rc;
    }
    uint64_t failed_before = st_failed_checks(w->st); /* before any read can see the values */
    rc = st_lmdb_err(mdb_txn_commit(w->txn), "committing");
    w->txn = NULL; /* freed by LMDB whether or not the commit worked */
    if (rc != SC_OK) {
        undo_rollback(w);
        written_free(w);
        return rc;
    }
    publish(w);
    undo_free(w);
    mark_written(w, failed_before);
    return SC_OK;
}

sc_code st_delete_chunks(store *st, MDB_txn *txn, MDB_dbi dbi, uint64_t id)
{
    unsigned char first[ST_CKEY_LEN];
    MDB_cursor *cur = NULL;
    MDB_val k = {.mv_size = sizeof(first), .mv_data = first};
    MDB_val v;
    st_chunk_key(id, 0, first);
    int mrc = mdb_cursor_open(txn, dbi, &cur);
    if (mrc != 0)
        goto out;
    mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    /* After a delete the cursor already sits on the next entry, and MDB_NEXT returns it. */
    while (mrc == 0 && k.mv_size >= ST_IDKEY_LEN && memcmp(k.mv_data, first, ST_IDKEY_LEN) == 0) {
        st_forget(st, txn, v.mv_data, v.mv_size);
        mrc = mdb_cursor_del(cur, 0);
        if (mrc == 0)
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (mrc == MDB_NOTFOUND)
        mrc = 0;
out:
    if (cur != NULL)
        mdb_cursor_close(cur);
    return st_lmdb_err(mrc, "deleting chunks");
}

sc_code st_count_keys(MDB_txn *txn, MDB_dbi dbi, uint64_t id, uint32_t first, uint32_t last,
                      st_each_fn each, void *ctx, uint64_t *count)
{
    unsigned char from[ST_CKEY_LEN];
    MDB_cursor *cur = NULL;
    MDB_val k = {.mv_size = sizeof(from), .mv_data = from};
    MDB_val v;
    sc_code rc = SC_OK;
    *count = 0;
    st_chunk_key(id, first, from);
    int mrc = mdb_cursor_open(txn, dbi, &cur);
    if (mrc == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0 && k.mv_size == ST_CKEY_LEN && memcmp(k.mv_data, from, ST_IDKEY_LEN) == 0) {
        uint32_t idx = st_get_be32((const unsigned char *)k.mv_data + ST_IDKEY_LEN);
        if (idx > last)
            break;
        (*count)++;
        rc = each != NULL ? each(ctx, idx, v.mv_size) : SC_OK;
        if (rc != SC_OK)
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (cur != NULL)
        mdb_cursor_close(cur);
    if (rc != SC_OK)
        return rc;
    return mrc == 0 || mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "counting blocks");
}

/* Deletes key from dbi; a missing key is not an error. */
static sc_code del_key(struct st_wtxn *w, MDB_dbi dbi, const void *key, size_t len)
{
    MDB_val k = {.mv_size = len, .mv_data = (void *)key};
    int mrc = mdb_del(w->txn, dbi, &k, NULL);
    return mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "deleting");
}

/* Deletes block key bkey, forgetting its value (st_forget); SC_ENOTFOUND if it is not there. */
static sc_code del_block(struct st_wtxn *w, const unsigned char bkey[ST_CKEY_LEN])
{
    MDB_val k = {.mv_size = ST_CKEY_LEN, .mv_data = (void *)bkey};
    MDB_val v;
    int mrc = mdb_get(w->txn, w->st->dbi_blocks, &k, &v);
    if (mrc == 0) {
        st_forget(w->st, w->txn, v.mv_data, v.mv_size);
        mrc = mdb_del(w->txn, w->st->dbi_blocks, &k, NULL);
    }
    return mrc == MDB_NOTFOUND ? SC_ENOTFOUND : st_lmdb_err(mrc, "deleting a block");
}

/* Reads the record under mkey: SC_OK, SC_ENOTFOUND, SC_ECORRUPT (malformed), or an LMDB error. */
static sc_code read_record(store *st, MDB_txn *txn, const unsigned char *mkey, struct st_record *r)
{
    MDB_val k = {.mv_size = ST_MKEY_LEN, .mv_data = (void *)mkey};
    MDB_val v;
    sc_code rc = st_lmdb_err(mdb_get(txn, st->dbi_meta, &k, &v), "reading a record");
    if (rc != SC_OK)
        return rc;
    return st_record_decode(v.mv_data, v.mv_size, r);
}

static sc_code get_record(struct st_wtxn *w, const unsigned char *mkey, struct st_record *r)
{
    return read_record(w->st, w->txn, mkey, r);
}

/* "bucket\0key\0" of a record, copied before the deletes that may change its pages. */
struct st_names {
    char buf[ST_BUCKET_MAX + ST_KEY_MAX + 2];
    size_t bucket_len;
    size_t len; /* both NULs included */
};

static void names_of(const struct st_record *r, struct st_names *n)
{
    memcpy(n->buf, r->bucket, r->bucket_len);
    n->buf[r->bucket_len] = '\0';
    memcpy(n->buf + r->bucket_len + 1, r->key, r->key_len);
    n->buf[r->bucket_len + 1 + r->key_len] = '\0';
    n->bucket_len = r->bucket_len;
    n->len = r->bucket_len + r->key_len + 2;
}

/* Tells the policy that entry id (size bytes, named n) left, logging it for the undo. */
static sc_code pol_forget(struct st_wtxn *w, uint64_t id, uint64_t size, const struct st_names *n)
{
    sc_code rc = undo_reserve(w);
    char *copy = rc == SC_OK ? malloc(n->len) : NULL;
    if (copy == NULL)
        return rc != SC_OK ? rc : SC_ENOMEM;
    memcpy(copy, n->buf, n->len);
    pol_remove(w->st, id);
    w->undo[w->n_undo++] =
        (struct st_undo){.id = id, .size = size, .names = copy, .bucket_len = n->bucket_len};
    return SC_OK;
}

/* Whether object id has any block left (a cursor at its first key). */
static sc_code has_blocks(struct st_wtxn *w, uint64_t id, bool *any)
{
    unsigned char first[ST_CKEY_LEN];
    MDB_cursor *cur = NULL;
    MDB_val k = {.mv_size = sizeof(first), .mv_data = first};
    MDB_val v;
    st_chunk_key(id, 0, first);
    int mrc = mdb_cursor_open(w->txn, w->st->dbi_blocks, &cur);
    if (mrc == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    *any = mrc == 0 && k.mv_size == ST_CKEY_LEN && memcmp(k.mv_data, first, ST_IDKEY_LEN) == 0;
    if (cur != NULL)
        mdb_cursor_close(cur);
    return mrc == 0 || mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "finding blocks");
}

/* Deletes the ids entry and record of object id under mkey and counts one object less. */
static sc_code drop_record(struct st_wtxn *w, const unsigned char *mkey, uint64_t id,
                           enum st_kind kind)
{
    unsigned char idkey[ST_IDKEY_LEN];
    st_id_key(id, idkey);
    sc_code rc = del_key(w, w->st->dbi_ids, idkey, sizeof(idkey));
    if (rc == SC_OK)
        rc = del_key(w, w->st->dbi_meta, mkey, ST_MKEY_LEN);
    if (rc != SC_OK)
        return rc;
    w->objects = w->objects > 0 ? w->objects - 1 : 0;
    if (kind == ST_BLOCKS)
        w->block_objects = w->block_objects > 0 ? w->block_objects - 1 : 0;
    return SC_OK;
}

/* Uncharges a block of len bytes that left with its policy entry. */
static sc_code forget_block(struct st_wtxn *w, uint64_t id, uint32_t idx, uint64_t len,
                            const struct st_names *n)
{
    w->used = w->used >= len ? w->used - len : 0;
    w->blocks = w->blocks > 0 ? w->blocks - 1 : 0;
    return pol_forget(w, STORE_BLOCK_ID(id, idx), len, n);
}

/* Deletes every block of object id, telling the policy of each. */
static sc_code drop_all_blocks(struct st_wtxn *w, uint64_t id, const struct st_names *n)
{
    unsigned char first[ST_CKEY_LEN];
    MDB_cursor *cur = NULL;
    MDB_val k = {.mv_size = sizeof(first), .mv_data = first};
    MDB_val v;
    sc_code rc = SC_OK;
    st_chunk_key(id, 0, first);
    int mrc = mdb_cursor_open(w->txn, w->st->dbi_blocks, &cur);
    if (mrc == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (mrc == 0 && k.mv_size == ST_CKEY_LEN && memcmp(k.mv_data, first, ST_IDKEY_LEN) == 0) {
        uint32_t idx = st_get_be32((const unsigned char *)k.mv_data + ST_IDKEY_LEN);
        uint64_t len = v.mv_size >= ST_CRC_LEN ? v.mv_size - ST_CRC_LEN : 0;
        st_forget(w->st, w->txn, v.mv_data, v.mv_size);
        mrc = mdb_cursor_del(cur, 0);
        if (mrc != 0)
            break;
        rc = forget_block(w, id, idx, len, n);
        if (rc != SC_OK)
            break;
        /* After a delete the cursor already sits on the next entry, and MDB_NEXT returns it. */
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc != SC_OK)
        return rc;
    return mrc == 0 || mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "deleting blocks");
}

/* Deletes a cached object (chunks or blocks, ids entry, record), then tells the policy. */
static sc_code drop_object(struct st_wtxn *w, const unsigned char *mkey, const struct st_record *r,
                           bool eviction)
{
    struct st_names n;
    uint64_t id = r->id;
    uint64_t size = r->size;
    enum st_kind kind = r->kind;
    names_of(r, &n); /* r points into pages the deletes below may change */
    sc_code rc = kind == ST_BLOCKS ? drop_all_blocks(w, id, &n)
                                   : st_delete_chunks(w->st, w->txn, w->st->dbi_chunks, id);
    if (rc == SC_OK)
        rc = drop_record(w, mkey, id, kind);
    if (rc != SC_OK || kind == ST_BLOCKS)
        return rc;
    w->used = w->used >= size ? w->used - size : 0;
    w->evictions += eviction;
    return pol_forget(w, id, size, &n);
}

/*
 * Deletes block idx of block object r (under mkey), and the record too if that was its
 * last block (unless it is w->keep_id). SC_ENOTFOUND if the block is not there.
 */
static sc_code drop_block(struct st_wtxn *w, const unsigned char *mkey, const struct st_record *r,
                          uint32_t idx, bool eviction)
{
    unsigned char bkey[ST_CKEY_LEN];
    struct st_names n;
    uint64_t id = r->id;
    uint64_t len = st_chunk_len(r->size, r->block_size, idx);
    names_of(r, &n);
    st_chunk_key(id, idx, bkey);
    sc_code rc = del_block(w, bkey); /* SC_ENOTFOUND goes back as it is */
    if (rc == SC_OK)
        rc = forget_block(w, id, idx, len, &n);
    if (rc != SC_OK)
        return rc;
    w->evictions += eviction;
    bool any = true;
    if (id != w->keep_id)
        rc = has_blocks(w, id, &any);
    if (rc == SC_OK && !any)
        rc = drop_record(w, mkey, id, ST_BLOCKS);
    return rc;
}

sc_code st_wtxn_touch(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN], uint64_t expect_id,
                      int64_t stored_at)
{
    struct st_record r;
    sc_code rc = get_record(w, mkey, &r);
    if (rc == SC_ENOTFOUND || rc == SC_ECORRUPT)
        return SC_OK; /* gone, or left for the next reader to drop */
    if (rc != SC_OK || (expect_id != 0 && r.id != expect_id))
        return rc;
    MDB_val k = {.mv_size = ST_MKEY_LEN, .mv_data = (void *)mkey};
    MDB_val v;
    rc = st_lmdb_err(mdb_get(w->txn, w->st->dbi_meta, &k, &v), "reading a record");
    unsigned char *copy = rc == SC_OK ? malloc(v.mv_size) : NULL;
    if (rc != SC_OK || copy == NULL)
        return rc != SC_OK ? rc : SC_ENOMEM;
    memcpy(copy, v.mv_data, v.mv_size); /* the map's bytes are read-only */
    st_record_set_stored_at(copy, stored_at);
    v.mv_data = copy;
    rc = st_lmdb_err(mdb_put(w->txn, w->st->dbi_meta, &k, &v, 0), "updating a record");
    free(copy);
    return rc;
}

sc_code st_wtxn_remove(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN], uint64_t expect_id)
{
    struct st_record r;
    sc_code rc = get_record(w, mkey, &r);
    if (rc == SC_ENOTFOUND)
        return SC_OK;
    if (rc == SC_ECORRUPT) {
        sc_warn("store: deleting a malformed record");
        return del_key(w, w->st->dbi_meta, mkey, ST_MKEY_LEN);
    }
    if (rc != SC_OK)
        return rc;
    if (expect_id != 0 && r.id != expect_id)
        return SC_OK; /* replaced since: the new copy stays */
    return drop_object(w, mkey, &r, false);
}

sc_code st_wtxn_drop_block(struct st_wtxn *w, const unsigned char mkey[ST_MKEY_LEN],
                           uint64_t expect_id, uint32_t idx)
{
    struct st_record r;
    sc_code rc = get_record(w, mkey, &r);
    if (rc == SC_ENOTFOUND || rc == SC_ECORRUPT)
        return SC_OK; /* gone, or left for the next reader to drop */
    if (rc != SC_OK || r.id != expect_id || r.kind != ST_BLOCKS || idx >= r.n_blocks)
        return rc;
    rc = drop_block(w, mkey, &r, idx, false);
    return rc == SC_ENOTFOUND ? SC_OK : rc;
}

/*
 * The policy named an id that has no consistent record: forget it, and delete
 * whatever is left under that id (a stale ids entry, a malformed record's
 * chunks).
 */
static sc_code drop_ghost(struct st_wtxn *w, uint64_t id, const unsigned char *mkey)
{
    unsigned char idkey[ST_IDKEY_LEN];
    sc_code rc = SC_OK;
    struct st_record r;
    sc_warn("store: policy victim %llu has no consistent record", (unsigned long long)id);
    if (mkey != NULL && get_record(w, mkey, &r) == SC_ECORRUPT)
        rc = del_key(w, w->st->dbi_meta, mkey, ST_MKEY_LEN);
    if (rc == SC_OK)
        rc = st_delete_chunks(w->st, w->txn, w->st->dbi_chunks, id);
    st_id_key(id, idkey);
    if (rc == SC_OK)
        rc = del_key(w, w->st->dbi_ids, idkey, sizeof(idkey));
    if (rc == SC_OK)
        pol_remove(w->st, id);
    return rc;
}

/* The policy named a block that is not cached as such: forget it, delete a stray value. */
static sc_code drop_block_ghost(struct st_wtxn *w, uint64_t block_id, uint64_t obj_id, uint32_t idx)
{
    unsigned char bkey[ST_CKEY_LEN];
    sc_warn("store: policy victim %llu (block %u of %llu) is not a cached block",
            (unsigned long long)block_id, idx, (unsigned long long)obj_id);
    st_chunk_key(obj_id, idx, bkey);
    sc_code rc = del_block(w, bkey);
    if (rc == SC_ENOTFOUND)
        rc = SC_OK;
    if (rc == SC_OK)
        pol_remove(w->st, block_id);
    return rc;
}

sc_code st_record_of_id(store *st, MDB_txn *txn, uint64_t id, unsigned char mkey[ST_MKEY_LEN],
                        struct st_record *r, bool *has_mkey)
{
    unsigned char idkey[ST_IDKEY_LEN];
    MDB_val k = {.mv_size = sizeof(idkey), .mv_data = idkey};
    MDB_val v;
    *has_mkey = false;
    st_id_key(id, idkey);
    sc_code rc = st_lmdb_err(mdb_get(txn, st->dbi_ids, &k, &v), "reading an id");
    if (rc == SC_OK && v.mv_size != ST_MKEY_LEN)
        rc = SC_ENOTFOUND;
    if (rc != SC_OK)
        return rc;
    memcpy(mkey, v.mv_data, ST_MKEY_LEN);
    *has_mkey = true;
    rc = read_record(st, txn, mkey, r);
    if (rc == SC_ENOTFOUND || (rc == SC_OK && r->id != id))
        rc = SC_ECORRUPT;
    return rc;
}

static sc_code evict_block(struct st_wtxn *w, uint64_t block_id)
{
    unsigned char mkey[ST_MKEY_LEN];
    struct st_record r;
    uint64_t obj_id;
    uint32_t idx;
    bool has_mkey;
    st_block_id_split(block_id, &obj_id, &idx);
    sc_code rc = st_record_of_id(w->st, w->txn, obj_id, mkey, &r, &has_mkey);
    if (rc == SC_OK && r.kind == ST_BLOCKS && idx < r.n_blocks)
        rc = drop_block(w, mkey, &r, idx, true);
    else if (rc == SC_OK)
        rc = SC_ENOTFOUND; /* the id names a whole object, or no block of it */
    if (rc == SC_ENOTFOUND || rc == SC_ECORRUPT)
        return drop_block_ghost(w, block_id, obj_id, idx);
    return rc;
}

static sc_code evict_one(struct st_wtxn *w, uint64_t id)
{
    unsigned char mkey[ST_MKEY_LEN];
    struct st_record r;
    bool has_mkey;
    if (STORE_ID_IS_BLOCK(id))
        return evict_block(w, id);
    sc_code rc = st_record_of_id(w->st, w->txn, id, mkey, &r, &has_mkey);
    if (rc == SC_OK && r.kind == ST_BLOCKS) {
        sc_warn("store: policy victim %llu is a block object, not a block", (unsigned long long)id);
        pol_remove(w->st, id); /* only the name is wrong: its blocks stay */
        return SC_OK;
    }
    if (rc == SC_ENOTFOUND || rc == SC_ECORRUPT)
        return drop_ghost(w, id, has_mkey ? mkey : NULL);
    if (rc != SC_OK)
        return rc;
    return drop_object(w, mkey, &r, true);
}

sc_code st_wtxn_evict(struct st_wtxn *w, uint64_t target)
{
    uint64_t id;
    uint64_t last = 0;
    if (w->used > target)
        st_hits_drain(w->st); /* victims are chosen knowing every hit so far */
    while (w->used > target && pol_victim(w->st, &id)) {
        if (id == last) {
            sc_err("store: policy %s named victim %llu again", w->st->pol->name,
                   (unsigned long long)id);
            break;
        }
        sc_code rc = evict_one(w, id);
        if (rc != SC_OK)
            return rc;
        last = id;
    }
    return SC_OK;
}

/* Writes the ids entry of r and the encoded record under mkey. */
static sc_code write_index(struct st_wtxn *w, const unsigned char *mkey, const struct st_record *r,
                           unsigned char *encoded)
{
    unsigned char idkey[ST_IDKEY_LEN];
    st_id_key(r->id, idkey);
    MDB_val k = {.mv_size = sizeof(idkey), .mv_data = idkey};
    MDB_val v = {.mv_size = ST_MKEY_LEN, .mv_data = (void *)mkey};
    int mrc = mdb_put(w->txn, w->st->dbi_ids, &k, &v, 0);
    if (mrc != 0)
        return st_lmdb_err(mrc, "writing an id");
    k = (MDB_val){.mv_size = ST_MKEY_LEN, .mv_data = (void *)mkey};
    v = (MDB_val){.mv_size = st_record_len(r), .mv_data = encoded};
    return st_lmdb_err(mdb_put(w->txn, w->st->dbi_meta, &k, &v, 0), "writing a record");
}

/* Writes the chunks (computing their CRCs into the encoded record), the ids entry, the record. */
static sc_code write_object(struct st_wtxn *w, const struct st_job *job, const struct st_record *r,
                            unsigned char *encoded)
{
    store *st = w->st;
    unsigned char ckey[ST_CKEY_LEN];
    const unsigned char *body = job->body;
    int mrc = 0;
    st_record_encode(r, encoded);
    for (uint32_t i = 0; i < r->n_chunks && mrc == 0; i++) {
        const unsigned char *chunk = body + (uint64_t)i * r->chunk_size;
        uint32_t len = st_chunk_len(r->size, r->chunk_size, i);
        st_record_set_crc(encoded, i, crc32c(0, chunk, len));
        st_chunk_key(r->id, i, ckey);
        MDB_val k = {.mv_size = sizeof(ckey), .mv_data = ckey};
        MDB_val v = {.mv_size = len, .mv_data = (void *)chunk};
        /* Never over an older value: its pages would be freed without st_forget(). */
        mrc = mdb_put(w->txn, st->dbi_chunks, &k, &v, MDB_NOOVERWRITE);
        if (mrc == 0)
            written_add(w, false, ckey, len);
    }
    if (mrc != 0)
        return st_lmdb_err(mrc, "writing a chunk");
    return write_index(w, job->mkey, r, encoded);
}

/* Evicts until size more bytes fit; job->result becomes SC_EFULL if they cannot. */
static sc_code make_room(struct st_wtxn *w, struct st_job *job)
{
    uint64_t cap = w->st->capacity;
    if (w->used + job->size <= cap)
        return SC_OK;
    if (job->size > cap) {
        job->result = SC_EFULL;
        return SC_OK;
    }
    sc_code rc = st_wtxn_evict(w, cap - job->size);
    if (rc == SC_OK && w->used + job->size > cap)
        job->result = SC_EFULL;
    return rc;
}

sc_code st_wtxn_put(struct st_wtxn *w, struct st_job *job)
{
    store *st = w->st;
    unsigned char *encoded = NULL;
    struct policy_obj obj = {
        .id = w->next_id, .size = job->size, .bucket = job->bucket, .key = job->key};
    uint32_t chunk_size = st_chunk_size_for(job->size, st->chunk_size);
    struct st_record r = {.id = w->next_id,
                          .size = job->size,
                          .stored_at = job->stored_at,
                          .chunk_size = chunk_size,
                          .n_chunks = (uint32_t)st_chunk_count(job->size, chunk_size),
                          .bucket = job->bucket,
                          .bucket_len = strlen(job->bucket),
                          .key = job->key,
                          .key_len = strlen(job->key),
                          .hdrs = job->hdrs,
                          .hdrs_len = job->hdrs_len};
    job->result = SC_OK;
    /* Whether or not the new copy gets in, the old one is stale. */
    sc_code rc = st_wtxn_remove(w, job->mkey, 0);
    if (rc != SC_OK)
        goto out;
    if (!st_pol_admit(st, &obj)) {
        job->result = SC_EFULL;
        goto out;
    }
    rc = make_room(w, job);
    if (rc != SC_OK || job->result != SC_OK)
        goto out;
    encoded = malloc(st_record_len(&r));
    if (encoded == NULL || undo_reserve(w) != SC_OK) {
        job->result = SC_ENOMEM;
        goto out;
    }
    job->result = pol_insert(st, &obj);
    if (job->result != SC_OK)
        goto out;
    w->undo[w->n_undo++] = (struct st_undo){.id = r.id};
    w->next_id++;
    rc = write_object(w, job, &r, encoded);
    if (rc != SC_OK)
        goto out;
    w->used += job->size;
    w->objects++;
out:
    free(encoded);
    return rc;
}

/* The record job (ST_JOB_META) would write: a block object with the next id. */
static struct st_record meta_record(const struct st_wtxn *w, const struct st_job *job)
{
    uint32_t bs = w->st->block_size;
    return (struct st_record){.kind = ST_BLOCKS,
                              .id = w->next_id,
                              .size = job->size,
                              .stored_at = job->stored_at,
                              .block_size = bs,
                              .n_blocks = (uint32_t)st_chunk_count(job->size, bs),
                              .bucket = job->bucket,
                              .bucket_len = strlen(job->bucket),
                              .key = job->key,
                              .key_len = strlen(job->key),
                              .etag = job->etag,
                              .etag_len = strlen(job->etag),
                              .hdrs = job->hdrs,
                              .hdrs_len = job->hdrs_len};
}

sc_code st_wtxn_put_meta(struct st_wtxn *w, struct st_job *job)
{
    struct st_record r;
    job->result = SC_OK;
    sc_code rc = get_record(w, job->mkey, &r);
    if (rc == SC_OK && r.size == job->size && st_record_etag_is(&r, job->etag) &&
        r.block_size == w->st->block_size)
        return SC_OK; /* this version is cached already, in blocks of this size: they stay */
    if (rc != SC_OK && rc != SC_ENOTFOUND && rc != SC_ECORRUPT)
        return rc;
    rc = st_wtxn_remove(w, job->mkey, 0);
    if (rc != SC_OK)
        return rc;
    if (w->next_id >= ST_ID_LIMIT) {
        sc_err("store: object ids are exhausted");
        job->result = SC_EIO;
        return SC_OK;
    }
    r = meta_record(w, job);
    unsigned char *encoded = malloc(st_record_len(&r));
    if (encoded == NULL) {
        job->result = SC_ENOMEM;
        return SC_OK;
    }
    st_record_encode(&r, encoded);
    rc = write_index(w, job->mkey, &r, encoded);
    free(encoded);
    if (rc != SC_OK)
        return rc;
    w->next_id++;
    w->objects++;
    w->block_objects++;
    return SC_OK;
}

/* Writes block idx of object id: its bytes, then their CRC32C, as one value. */
static sc_code write_block(struct st_wtxn *w, uint64_t id, const struct st_job *job)
{
    unsigned char bkey[ST_CKEY_LEN];
    st_chunk_key(id, job->idx, bkey);
    MDB_val k = {.mv_size = sizeof(bkey), .mv_data = bkey};
    MDB_val v = {.mv_size = (size_t)job->size + ST_CRC_LEN, .mv_data = NULL};
    int mrc = mdb_put(w->txn, w->st->dbi_blocks, &k, &v, MDB_RESERVE | MDB_NOOVERWRITE);
    if (mrc != 0)
        return st_lmdb_err(mrc, "writing a block");
    memcpy(v.mv_data, job->body, (size_t)job->size);
    st_put_crc((unsigned char *)v.mv_data + job->size, crc32c(0, job->body, (size_t)job->size));
    written_add(w, true, bkey, (size_t)job->size);
    return SC_OK;
}

/*
 * Checks job (ST_JOB_BLOCK) against the record: sets job->result to SC_ECANCELED (no block
 * object of that ETag) or SC_EMISMATCH (wrong length), and *id to the object's id.
 */
static sc_code check_block_job(struct st_wtxn *w, struct st_job *job, uint64_t *id)
{
    struct st_record r;
    sc_code rc = get_record(w, job->mkey, &r);
    if (rc == SC_ENOTFOUND || rc == SC_ECORRUPT ||
        (rc == SC_OK && (!st_record_etag_is(&r, job->etag) || r.block_size != job->block_size)))
        job->result = SC_ECANCELED;
    else if (rc == SC_OK &&
             (job->idx >= r.n_blocks || job->size != st_chunk_len(r.size, r.block_size, job->idx)))
        job->result = SC_EMISMATCH;
    else if (rc != SC_OK)
        return rc;
    if (rc == SC_OK)
        *id = r.id;
    return SC_OK;
}

/* Whether block idx of object id is cached. */
static sc_code block_cached(struct st_wtxn *w, uint64_t id, uint32_t idx, bool *cached)
{
    unsigned char bkey[ST_CKEY_LEN];
    MDB_val k = {.mv_size = sizeof(bkey), .mv_data = bkey};
    MDB_val v;
    st_chunk_key(id, idx, bkey);
    int mrc = mdb_get(w->txn, w->st->dbi_blocks, &k, &v);
    *cached = mrc == 0;
    return mrc == 0 || mrc == MDB_NOTFOUND ? SC_OK : st_lmdb_err(mrc, "reading a block");
}

sc_code st_wtxn_put_block(struct st_wtxn *w, struct st_job *job)
{
    uint64_t id = 0;
    bool cached = false;
    job->result = SC_OK;
    sc_code rc = check_block_job(w, job, &id);
    if (rc == SC_OK && job->result == SC_OK)
        rc = block_cached(w, id, job->idx, &cached);
    if (rc != SC_OK || job->result != SC_OK || cached)
        return rc;
    struct policy_obj obj = {.id = STORE_BLOCK_ID(id, job->idx),
                             .size = job->size,
                             .bucket = job->bucket,
                             .key = job->key,
                             .is_block = true,
                             .block = job->idx};
    if (!st_pol_admit(w->st, &obj)) {
        job->result = SC_EFULL;
        return SC_OK;
    }
    w->keep_id = id; /* evicting the object's other blocks keeps its record */
    rc = make_room(w, job);
    w->keep_id = 0;
    if (rc != SC_OK || job->result != SC_OK)
        return rc;
    if (undo_reserve(w) != SC_OK) {
        job->result = SC_ENOMEM;
        return SC_OK;
    }
    job->result = pol_insert(w->st, &obj);
    if (job->result != SC_OK)
        return SC_OK;
    w->undo[w->n_undo++] = (struct st_undo){.id = obj.id};
    rc = write_block(w, id, job);
    if (rc != SC_OK)
        return rc;
    w->used += job->size;
    w->blocks++;
    return SC_OK;
}
