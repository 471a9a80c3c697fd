/*
 * store_scrub.c - the scrubber: a store thread that checks every chunk and block
 * against its CRC32C, at most store_config.scrub_rate bytes a second, so that a
 * value nobody reads is found corrupt too, and so is what a residency check cannot
 * see (store_verify.c: a resident page written or read in by another process, a
 * page read back during a send, a bit flipped in RAM), within one pass.
 *
 * It walks "chunks", then "blocks", in key order (object id, index), one value per
 * step, and starts over. A step renews the scrubber's read transaction (its reader
 * slot stays its own, so no lock of LMDB's is taken), finds the first value at or
 * after the position, reads its record through "ids" for the expected length and
 * CRC (a chunk's is in the record, a block's follows its bytes), checks it, and
 * resets the transaction: no snapshot is held between steps, nor longer than one
 * value's check (at most 64 MiB). The value is taken out of the record while it is
 * read (its pages may come from the disk now) and put back when its check passes;
 * one that fails is counted and removed as a read's would be (the whole object for a
 * chunk, the block alone), through the writer's queue. A value whose record is gone
 * or does not claim it is skipped: its removal is on its way.
 *
 * Pacing: a step of n bytes moves the next step's start n / rate seconds later (a
 * value costs at least SCRUB_VALUE_MIN of the budget, so small ones cannot spin); a
 * late scrubber catches up at most one second of lag, and a pass starts at most once
 * a second, so an empty or tiny cache is not read in a loop. Waits end at once when
 * the store closes; a value being checked is finished first. What it reads goes
 * through the map like a read, and stays in the page cache's inactive list (read
 * once), which the kernel reclaims first.
 */
#include "store_int.h"

#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"

#define NS_PER_S        1000000000ll
#define SCRUB_VALUE_MIN (16u * 1024u) /* bytes of the budget a step costs at least */

/* Where the walk is: the database, and the key to look for next (at or after it). */
struct scrub_pos {
    bool blocks; /* walking "blocks" (else "chunks") */
    unsigned char key[ST_CKEY_LEN];
};

/* What one step did. */
struct scrub_step {
    uint64_t bytes; /* of the value checked (0: none) */
    bool pass_done; /* the walk came back to the first chunk */
};

/* Waits until due (sc_now_ns() time); false if the store is closing. */
static bool pause_until(store *st, int64_t due)
{
    struct timespec at = {.tv_sec = (time_t)(due / NS_PER_S), .tv_nsec = (long)(due % NS_PER_S)};
    pthread_mutex_lock(&st->scrub_lock);
    while (!st->scrub_stop && sc_now_ns() < due)
        pthread_cond_timedwait(&st->scrub_wake, &st->scrub_lock, &at);
    bool go = !st->scrub_stop;
    pthread_mutex_unlock(&st->scrub_lock);
    return go;
}

static void count(store *st, uint64_t bytes, bool corrupt)
{
    pthread_mutex_lock(&st->stats_lock);
    st->stats.scrubbed++;
    st->stats.scrubbed_bytes += bytes;
    st->stats.scrub_corrupt += corrupt;
    pthread_mutex_unlock(&st->stats_lock);
}

/* Checks value v, block or chunk idx of object id, against its record (in txn). */
static void scrub_value(store *st, MDB_txn *txn, bool block, uint64_t id, uint32_t idx,
                        const MDB_val *v, struct scrub_step *out)
{
    unsigned char mkey[ST_MKEY_LEN];
    struct st_record r;
    bool has_mkey;
    if (st_record_of_id(st, txn, id, mkey, &r, &has_mkey) != SC_OK ||
        r.kind != (block ? ST_BLOCKS : ST_WHOLE) || idx >= (block ? r.n_blocks : r.n_chunks))
        return; /* not (or no longer) a value of a cached object */
    uint32_t len = st_chunk_len(r.size, block ? r.block_size : r.chunk_size, idx);
    const unsigned char *bytes = v->mv_data;
    bool ok = v->mv_size == (size_t)len + (block ? ST_CRC_LEN : 0);
    const char *why = "has the wrong length";
    if (ok) {
        st_uncheck(st, bytes, len); /* before its pages (the stored CRC's too) are read */
        ok =
            st_check(st, txn, bytes, len, block ? st_get_crc(bytes + len) : st_record_crc(&r, idx));
        why = "fails its checksum (found by the scrubber)";
    }
    out->bytes = len;
    count(st, len, !ok && st_queue_corrupt(st, mkey, id, block, idx, why));
}

/* Sets the position past (id, idx). */
static void advance(struct scrub_pos *pos, uint64_t id, uint32_t idx)
{
    if (idx == UINT32_MAX) {
        id++;
        idx = 0;
    } else {
        idx++;
    }
    st_chunk_key(id, idx, pos->key);
}

/* Checks the first value at or after pos (moving to "blocks", or back to the first chunk,
 * when a database ends). */
static sc_code scrub_step(store *st, MDB_txn *txn, struct scrub_pos *pos, struct scrub_step *out)
{
    *out = (struct scrub_step){0};
    for (int dbs = 0; dbs < 2; dbs++) {
        MDB_cursor *cur = NULL;
        MDB_val k = {.mv_size = ST_CKEY_LEN, .mv_data = pos->key};
        MDB_val v;
        int mrc = mdb_cursor_open(txn, pos->blocks ? st->dbi_blocks : st->dbi_chunks, &cur);
        if (mrc == 0)
            mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        while (mrc == 0 && k.mv_size != ST_CKEY_LEN) /* the scan keeps none such */
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        if (mrc == 0) {
            uint64_t id = st_get_be64(k.mv_data);
            uint32_t idx = st_get_be32((const unsigned char *)k.mv_data + ST_IDKEY_LEN);
            advance(pos, id, idx);
            scrub_value(st, txn, pos->blocks, id, idx, &v, out);
        }
        if (cur != NULL)
            mdb_cursor_close(cur);
        if (mrc != MDB_NOTFOUND)
            return st_lmdb_err(mrc, "scrubbing");
        out->pass_done = pos->blocks;
        pos->blocks = !pos->blocks;
        memset(pos->key, 0, sizeof(pos->key));
        if (out->pass_done)
            break;
    }
    return SC_OK;
}

/* Renews (or first begins) the scrubber's read transaction. */
static sc_code take_snapshot(store *st, MDB_txn **txn)
{
    if (*txn != NULL)
        return st_lmdb_err(mdb_txn_renew(*txn), "renewing the scrubber's read");
    int mrc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn);
    if (mrc != 0)
        *txn = NULL;
    return st_lmdb_err(mrc, "beginning the scrubber's read");
}

static void *scrub_main(void *arg)
{
    store *st = arg;
    struct scrub_pos pos = {0};
    MDB_txn *txn = NULL;
    int64_t due = sc_now_ns();
    int64_t pass_began = due;
    pthread_setname_np(pthread_self(), "store-scrub");
    while (pause_until(st, due)) {
        struct scrub_step step = {0};
        sc_code rc = take_snapshot(st, &txn);
        if (rc == SC_OK) {
            rc = scrub_step(st, txn, &pos, &step);
            mdb_txn_reset(txn);
        }
        int64_t now = sc_now_ns();
        if (rc != SC_OK) { /* no reader slot, an LMDB error: try again in a second */
            due = now + NS_PER_S;
            continue;
        }
        uint64_t cost = step.bytes > SCRUB_VALUE_MIN ? step.bytes : SCRUB_VALUE_MIN;
        due += (int64_t)(cost * (uint64_t)NS_PER_S / st->scrub_rate);
        if (due < now - NS_PER_S)
            due = now - NS_PER_S;
        if (step.pass_done) {
            if (due < pass_began + NS_PER_S)
                due = pass_began + NS_PER_S;
            pass_began = due;
        }
    }
    if (txn != NULL)
        mdb_txn_abort(txn);
    return NULL;
}

sc_code st_scrub_start(store *st)
{
    if (!st->verify || st->scrub_rate == 0)
        return SC_OK;
    if (pthread_create(&st->scrubber, NULL, scrub_main, st) != 0)
        return SC_ENOMEM;
    st->scrub_running = true;
    sc_info("store: the scrubber checks every chunk and block, %llu bytes a second",
            (unsigned long long)st->scrub_rate);
    return SC_OK;
}

void st_scrub_stop(store *st)
{
    if (!st->scrub_running)
        return;
    pthread_mutex_lock(&st->scrub_lock);
    st->scrub_stop = true;
    pthread_cond_signal(&st->scrub_wake);
    pthread_mutex_unlock(&st->scrub_lock);
    pthread_join(st->scrubber, NULL);
    st->scrub_running = false;
}
