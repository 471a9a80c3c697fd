/*
 * store_readers.c - what reading threads share without a lock in common: hits waiting for
 * the policy, and idle read transactions.
 *
 * Hits: a read used to take pol_lock to call the policy's on_hit(), so every hit on every
 * thread went through one lock. Now each thread appends the id to a buffer of its own
 * (st->hits[its slot], under that buffer's lock, which no other thread takes but a drain),
 * and gives the whole buffer to the policy under pol_lock once it is full. Before a decision
 * that hits may change (choosing victims, admitting), the writer drains every buffer, so a
 * hit that happened before a put was queued is seen by the eviction it causes, as before.
 * Within one thread the policy gets hits in the order they happened; between threads, in
 * buffer order (as Caffeine's read buffers and memcached's LRU bumps do). A policy ignores
 * the id of an entry it no longer tracks, and ids are never reused, so a late hit is harmless.
 *
 * Read transactions: mdb_txn_begin() on an MDB_NOTLS environment takes LMDB's reader-table
 * mutex to find a free slot, and allocates the transaction. A closed view's transaction is
 * reset (it keeps its reader slot but pins no snapshot) and parked in its thread's slot of
 * st->idle; the next view opened on that thread renews it (a fresh snapshot, no mutex).
 *
 * Lock order: a hit buffer's lock, then pol_lock. Calls nothing else of store/.
 */
#include "store_int.h"

#include <stdatomic.h>
#include <stdlib.h>

/* This thread's slot: threads are numbered once, round robin over ST_SLOTS. */
static unsigned thread_slot(void)
{
    static atomic_uint next_thread;
    static _Thread_local unsigned slot_plus1;
    if (slot_plus1 == 0)
        slot_plus1 =
            atomic_fetch_add_explicit(&next_thread, 1, memory_order_relaxed) % ST_SLOTS + 1;
    return slot_plus1 - 1;
}

sc_code st_readers_init(store *st, unsigned max_readers)
{
    unsigned made = 0;
    for (; made < ST_SLOTS; made++) {
        if (pthread_mutex_init(&st->hits[made].mu, NULL) != 0)
            break;
        st->hits[made].n = 0;
    }
    if (made < ST_SLOTS) {
        while (made > 0)
            pthread_mutex_destroy(&st->hits[--made].mu);
        return SC_ENOMEM;
    }
    /* Parked transactions hold reader slots: at most a quarter of them. */
    st->n_idle = max_readers / 4 < ST_SLOTS ? max_readers / 4 : ST_SLOTS;
    for (unsigned i = 0; i < ST_SLOTS; i++)
        atomic_init(&st->idle[i], NULL);
    return SC_OK;
}

void st_readers_free(store *st)
{
    st_rtxn_drop_idle(st);
    for (unsigned i = 0; i < ST_SLOTS; i++)
        pthread_mutex_destroy(&st->hits[i].mu);
}

/* Gives b's hits to the policy (b locked, pol_lock held). */
static void give(store *st, struct st_hitbuf *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        st->pol->on_hit(st->pol_state, b->ids[i]);
    b->n = 0;
}

void st_hits_add(store *st, const uint64_t *ids, uint32_t n)
{
    struct st_hitbuf *b = &st->hits[thread_slot()];
    pthread_mutex_lock(&b->mu);
    for (uint32_t i = 0; i < n; i++) {
        b->ids[b->n++] = ids[i];
        if (b->n == ST_HITBUF_LEN) {
            pthread_mutex_lock(&st->pol_lock);
            give(st, b);
            pthread_mutex_unlock(&st->pol_lock);
        }
    }
    pthread_mutex_unlock(&b->mu);
}

void st_hits_drain(store *st)
{
    for (unsigned i = 0; i < ST_SLOTS; i++) {
        struct st_hitbuf *b = &st->hits[i];
        pthread_mutex_lock(&b->mu);
        if (b->n > 0) {
            pthread_mutex_lock(&st->pol_lock);
            give(st, b);
            pthread_mutex_unlock(&st->pol_lock);
        }
        pthread_mutex_unlock(&b->mu);
    }
}

sc_code st_rtxn_begin(store *st, MDB_txn **txn)
{
    unsigned slot = thread_slot();
    MDB_txn *t = slot < st->n_idle ? atomic_exchange(&st->idle[slot], NULL) : NULL;
    if (t != NULL) {
        int mrc = mdb_txn_renew(t);
        if (mrc == 0) {
            *txn = t;
            return SC_OK;
        }
        mdb_txn_abort(t);
    }
    int mrc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn);
    if (mrc == MDB_READERS_FULL && st->n_idle > 0) { /* parked ones hold slots: free them */
        st_rtxn_drop_idle(st);
        mrc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn);
    }
    return st_lmdb_err(mrc, "beginning a read");
}

void st_rtxn_end(store *st, MDB_txn *txn)
{
    unsigned slot = thread_slot();
    MDB_txn *none = NULL;
    if (slot < st->n_idle) {
        mdb_txn_reset(txn);
        if (atomic_compare_exchange_strong(&st->idle[slot], &none, txn))
            return;
    }
    mdb_txn_abort(txn);
}

void st_rtxn_drop_idle(store *st)
{
    for (unsigned i = 0; i < ST_SLOTS; i++) {
        MDB_txn *t = atomic_exchange(&st->idle[i], NULL);
        if (t != NULL)
            mdb_txn_abort(t);
    }
}
