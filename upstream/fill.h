/*
 * fill.h - single-flight cache fills.
 *
 * A fill fetches one whole object from the origin into a keep-all relay,
 * which every client missing on that object reads from while it arrives, and
 * stores it once it is complete and verified: its length matched what the
 * upstream announced, the transfer ended cleanly, and the body matched its
 * MD5 ETag (single-part uploads) or else its full-object checksum, where the
 * upstream gave one (digest.h). Anything else is never stored, and reaches
 * its readers as a failed transfer: the last byte of every 200 fill waits for
 * that verdict (relay_hold_tail). Concurrent misses for one object join one fill.
 *
 * On a fleet, a fill asks the name's owner first (origin.h). A fill of a name another peer owns
 * is stored only as the fleet's copy rule says (--fleet-copy: none, hot, all); otherwise it is
 * verified and relayed to its readers as any fill (concurrent misses join it, the last byte
 * waits for the verdict), and not stored. A fill a prefetcher started or joined is stored
 * whoever owns the name.
 *
 * A fill is fetched with the credentials of whoever started it (struct
 * up_identity: a client's key with --identity client, else the gateway's);
 * fill_identity() tells whom, so that a reader of another identity can be
 * checked first (authz.h).
 *
 * An object that turns out not to be cacheable (not 200, no length, larger
 * than the maximum object size, no ETag) is still relayed to the clients already
 * waiting, through a bounded window, and the fill leaves the table so that
 * nobody else joins it.
 *
 * An object larger than the block size is a large object: the fill records its metadata
 * in the store (store_put_meta, unless a write to it is in flight), and its GET goes on as
 * the fetch of block 0 (block_fetch_adopt), canceled once that block is whole; its readers
 * read it by blocks (block_fetch.h). When block 0 is being fetched already, the fill goes no
 * further than its head and its transfer is canceled once its readers have all left. A
 * prefetch of a large object fetches its blocks (block_object_fetch) before it reports.
 */
#ifndef GW_FILL_H
#define GW_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"
#include "block_fetch.h"
#include "origin.h"
#include "relay.h"
#include "verify.h"
#include "../common/stats.h"

typedef struct fill_table fill_table;
typedef struct fill fill;

struct fill_ctx {
    struct origin *origin;
    store *st;
    struct sc_stats *stats;
    uint64_t max_object_size;
    size_t window;         /* bytes buffered ahead of the slowest reader of an uncacheable object */
    uint32_t block_size;   /* larger objects are cached in blocks (block_fetch.h), not by fills */
    block_table *blocks;   /* where a prefetch of a large object fetches its blocks */
    unsigned parallelism;  /* blocks of one large object prefetched at once */
    uint64_t unstored_max; /* bytes of prefetched bodies that may wait for the store after their
                              prefetchers were told they arrived (fill_watcher.arrived); 0: a
                              prefetch is in flight until its object is stored */
    verifier *verify;      /* checks the MD5 of bodies up to 1 MiB at their end, several at a
                              time, off the upstream thread (verify.h); NULL: every body's check
                              streams with it on the upstream thread */
};

/* @return SC_OK or SC_ENOMEM. ctx must outlive the table. */
sc_code fill_table_new(const struct fill_ctx *ctx, fill_table **out);

/* @brief The context the table was made with. */
const struct fill_ctx *fill_table_ctx(const fill_table *t);

/* @brief Whether an object of size bytes is cached by blocks (block_fetch.h), not by a fill:
 * over the block size and within the maximum object size (the gateway's gw_blocks_is_large()
 * says the same). */
bool fill_is_large(const fill_table *t, uint64_t size);

/* @brief Frees the table. Call after the upstream is stopped and the store flushed. */
void fill_table_free(fill_table *t);

/*
 * @brief Joins the running fill of (bucket, key), or starts one fetched as `as`.
 * @param[in] as copied; its creds are borrowed and must outlive the fill.
 * @param unless_stored when no fill is listed, first asks the store, under the table's lock.
 *        A fill leaves the table only after its object is stored, so a name neither listed
 *        nor stored is not cached at that instant: a fill that ended after the caller's
 *        lookup found nothing is found in the store, not fetched again. "Stored" is what a
 *        lookup finds (store_recorded): a block object's record, however few blocks it has.
 * @param[out] out a reader's reference; release with fill_leave().
 * @param[out] started true if this call started the fill (a miss that goes upstream).
 * @return SC_OK, SC_EEXIST (unless_stored, and the store has the object now: nothing
 *         joined, look it up again), SC_ENOMEM, SC_ECANCELED (shutting down).
 */
sc_code fill_join(fill_table *t, const char *bucket, const char *key, const struct up_identity *as,
                  bool unless_stored, fill **out, bool *started);

/*
 * @brief Joins the running fill of (bucket, key) only if there is one.
 * @param unless_stored as for fill_join().
 * @return SC_OK (*out holds a reader's reference), SC_ENOTFOUND, SC_EEXIST (as fill_join).
 */
sc_code fill_join_running(fill_table *t, const char *bucket, const char *key, bool unless_stored,
                          fill **out);

/* How a watched fill ended (see fill_prefetch). */
struct fill_result {
    sc_code rc;    /* SC_OK: stored; SC_ENOTFOUND (404), SC_EUPSTREAM (other status or
                      transfer failure), SC_ETOOBIG (over the maximum object size),
                      SC_EMISMATCH (body/ETag, checksum or length mismatch), SC_EINVAL (a
                      200 without an ETag: never cached), SC_EFULL (the store or
                      its policy refused it), SC_ECANCELED (invalidated or shutting down) */
    long status;   /* the upstream's HTTP status, 0 if no response */
    uint64_t size; /* the object's size when known, else 0 */
    bool large;    /* rc SC_ETOOBIG: a large object, cached by blocks, not by this fill */
};

/*
 * @brief Where writes to (bucket, key) stand: a number that changes whenever one begins or
 * ends (fill_write_begin(), fill_write_end(), also for a whole bucket) and when the key is
 * invalidated (fill_invalidate(): the object changed at the upstream). Read it before asking
 * the upstream about an object, and hand it to fill_put_meta() with the answer; two questions
 * asked at one epoch may share one answer (block_fetch_open).
 */
uint64_t fill_write_epoch(fill_table *t, const char *bucket, const char *key);

/*
 * @brief Records the metadata of a large object learned elsewhere (a HEAD sent at write
 * epoch `epoch`), unless a write to it is in flight or began since (the answer may describe
 * what the write replaced): store_put_meta, hdrs copied, etag the one in hdrs.
 * @return SC_OK (queued), SC_ECANCELED (a write is in flight or began since: not recorded),
 *         or the store's refusal.
 */
sc_code fill_put_meta(fill_table *t, const char *bucket, const char *key, const char *etag,
                      const char *hdrs, size_t hdrs_len, uint64_t size, uint64_t epoch);

typedef void (*fill_watch_fn)(void *arg, const struct fill_result *r);
typedef void (*fill_arrived_fn)(void *arg);

/* A prefetcher following a fill (fill_prefetch, range_prefetch); the callbacks run on the
 * upstream, verifier or store thread and must not block. */
struct fill_watcher {
    fill_watch_fn done;      /* exactly once: the object is stored, or the fill failed */
    fill_arrived_fn arrived; /* NULL, or at most once, before done: the whole body is in memory
                                (its MD5 may still be being checked, verify.h), and the table's
                                budget of bodies waiting for the store (fill_ctx.unstored_max)
                                holds it, so the prefetcher may count the fetch as no longer
                                in flight. done still follows with the outcome (SC_OK only once
                                stored; SC_EMISMATCH if the check failed; SC_ECANCELED if a
                                write came first, SC_EFULL...). */
    void *arg;
};

/*
 * @brief Fetches (bucket, key) into the cache with no client reading it (a
 * prefetch, signed with the gateway's credentials), joining the running fill if
 * there is one. w->done is called exactly once when the object is stored or the fill has
 * failed, after w->arrived if that is called (struct fill_watcher).
 * @param[in] w copied.
 * @return SC_OK (done() will follow), SC_ENOMEM, SC_ECANCELED (shutting down);
 *         on error no callback is called.
 */
sc_code fill_prefetch(fill_table *t, const char *bucket, const char *key,
                      const struct fill_watcher *w);

/* @brief Whose credentials fetch the fill; valid while the reference is held. */
const struct up_identity *fill_identity(fill *f);

/* @brief The relay to read the object from; valid while the reference is held. */
relay *fill_relay(fill *f);

/* @brief Drops a reader's reference. An uncacheable fill nobody reads is canceled. */
void fill_leave(fill *f);

/*
 * @brief Makes sure no fill of (bucket, key) running now gets stored, and that
 * the next miss starts a new one. Used before and after writes to the key.
 */
void fill_invalidate(fill_table *t, const char *bucket, const char *key);

/* @brief Like fill_invalidate() for every fill of a bucket (multi-object delete). */
void fill_invalidate_bucket(fill_table *t, const char *bucket);

/*
 * @brief Notes a write to (bucket, key) about to be forwarded (key NULL: to keys of
 * bucket named only in the write's body). Until the matching fill_write_end(), no
 * fill of an affected key is stored: the fills running now are invalidated, and
 * those starting meanwhile are never stored, whenever they finish.
 * @return SC_OK, SC_ENOMEM (nothing noted: do not forward the write).
 * @note Call before removing the stored copy, so no fill can store it again.
 */
sc_code fill_write_begin(fill_table *t, const char *bucket, const char *key);

/* How long a write whose outcome is unknown still counts as in flight after it ended:
 * the upstream may commit it late (a slow CompleteMultipartUpload, a stalled answer). */
#define FILL_WRITE_DOUBT_SECONDS 300.0

/*
 * @brief Ends what fill_write_begin() began, once the write's transfer is over
 * whatever its outcome, and invalidates the fills that started while it was in
 * flight so the next miss fetches what the upstream holds now.
 * @param in_doubt the outcome is unknown (no answer, or a 5xx): fills of the key
 *        still are not stored for FILL_WRITE_DOUBT_SECONDS.
 */
void fill_write_end(fill_table *t, const char *bucket, const char *key, bool in_doubt);

#endif
