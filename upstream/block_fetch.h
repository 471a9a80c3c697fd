/*
 * block_fetch.h - single-flight fetches of one block of a large object.
 *
 * A block object (store.h) is cached as aligned blocks; the blocks a reader needs and the
 * store lacks are fetched here, each as one ranged GET ("Range: bytes=a-b") carrying
 * "If-Match" with the ETag of the version being read, into a keep-all relay that every
 * reader of that block reads while it arrives. Once complete, the block is queued to the
 * store (store_put_block), which keeps it only if the cached record is still of that ETag.
 *
 * A fetch is named by (bucket, key, ETag, block index): readers of one version share one
 * fetch; readers of two versions never do. Its answer must prove it is that block of that
 * version: status 206, Content-Range "bytes a-b/size" exactly as asked, Content-Length
 * b - a + 1, and the same ETag. Anything else fails the relay without a head, so no
 * reader ever gets a byte of it; block_fetch_outcome() tells why (block_fetch_changed():
 * the object is no longer that version).
 *
 * On a fleet (origin.h), a block is asked of its owner first. One another peer owns is stored
 * here only as the fleet's copy rule says (--fleet-copy); otherwise it is checked and relayed
 * to its readers all the same, and not stored. A block prefetched (block_fetch_prefetch:
 * read-ahead beside a span, a manifest's warm-up) is stored whoever owns it.
 */
#ifndef GW_BLOCK_FETCH_H
#define GW_BLOCK_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/stats.h"
#include "../store/store.h"
#include "origin.h"
#include "relay.h"

/* Each running fetch holds its block in memory until stored: beyond this many readers at full
 * --fetch-parallelism (16 x 4 x 8 MiB: 512 MiB of blocks by default), no fetch is started
 * ahead of a reader (gateway/blocks.c) or adopted from a GET (fill.c). */
#define BLOCK_FETCH_READERS 16

typedef struct block_table block_table;
typedef struct block_fetch block_fetch;

struct block_ctx {
    struct origin *origin;
    store *st;
    struct sc_stats *stats;
};

/* One block of one version of an object. Strings are borrowed for the call. */
struct block_ref {
    const char *bucket, *key;
    const char *etag;    /* the ETag header's value, quotes included */
    uint64_t size;       /* the object's size */
    uint32_t block_size; /* the object's block size */
    uint32_t idx;        /* the block */
};

/* @return SC_OK or SC_ENOMEM. ctx must outlive the table. */
sc_code block_table_new(const struct block_ctx *ctx, block_table **out);

/* @brief Frees the table. Call after the upstream is stopped and the store flushed. */
void block_table_free(block_table *t);

/* @brief Offset and length of block b->idx in its object. */
uint64_t block_ref_start(const struct block_ref *b);
uint32_t block_ref_len(const struct block_ref *b);

/* @brief The number of blocks of an object of size bytes in blocks of block_size. */
uint32_t block_count(uint64_t size, uint32_t block_size);

/*
 * @brief Joins the running fetch of block b, or starts one fetched as `as`.
 * @param[in] as copied; its creds are borrowed and must outlive the fetch.
 * @param[out] out a reader's reference; release with block_fetch_leave().
 * @param[out] started true if this call started it (may be NULL).
 * @return SC_OK, SC_EINVAL (idx past the object's last block), SC_ENOMEM, SC_ECANCELED.
 */
sc_code block_fetch_join(block_table *t, const struct block_ref *b, const struct up_identity *as,
                         block_fetch **out, bool *started);

/*
 * @brief Fetches bytes [from, to) of block b for one reader only: not shared, not stored (a
 * range that starts deep into a block nobody has, which should not wait for the block's
 * front; the block itself is fetched beside it to be cached). Checked as a block is.
 * @param[out] out the reader's reference; its relay's offset 0 is byte `from` of the block.
 * @return SC_OK, SC_EINVAL (an empty or outside span), SC_ENOMEM, SC_ECANCELED.
 */
sc_code block_fetch_part(block_table *t, const struct block_ref *b, uint32_t from, uint32_t to,
                         const struct up_identity *as, block_fetch **out);

/*
 * Called on the upstream thread when an opening's head has named a version (block_fetch_open),
 * before any byte of it can reach the store: records the object's metadata (fill_put_meta),
 * so that the block, stored once whole, finds its record. ctx outlives the table's fetches.
 */
typedef void (*block_named_fn)(void *ctx, const char *bucket, const char *key,
                               const struct http_head *head, const char *etag, uint64_t size,
                               uint64_t epoch);

/* A range to open: what block_fetch_open() asks. Strings are borrowed for the call. */
struct block_opener {
    const char *bucket, *key;
    uint32_t block_size;
    uint64_t first, last; /* the bytes wanted; last may lie past the end (UINT64_MAX) */
    uint64_t max_size;    /* a larger object is not read by blocks: its head names nothing */
    block_named_fn named; /* may be NULL */
    void *named_ctx;
    uint64_t epoch; /* fill_write_epoch() before asking: handed to named, and only an opening
                       asked at the same epoch is joined */
};

/*
 * @brief Opens a range of an object the cache knows nothing of, in one round trip: a GET of
 * bytes [o->first, o->last] clipped to the block of `first`, without If-Match, whose head
 * names the object's size and ETag (block_fetch_opened). A range that starts a block and
 * reaches its end asks the whole block, listed by (bucket, key, block) so that concurrent
 * openers of it with the same identity and write epoch share it (a write or an invalidation
 * in between moves the epoch: nobody joins an answer that may predate it); once its head
 * proves a block of a large object (block_size < size <= max_size) it
 * goes on as that block's fetch of that version, stored as any fetched block. Any other
 * range is fetched for this reader alone, as block_fetch_part() does. An answer that is not
 * such a range (a 416, a small object, a 404, an upstream that ignores Range) fails the relay
 * without a head; block_fetch_status() tells the opener what it was.
 * @param[in] as copied; its creds are borrowed and must outlive the fetch.
 * @param[out] out the reader's reference; its relay's offset 0 is byte block_from of the
 *             block (block_fetch_opened). Release with block_fetch_leave().
 * @return SC_OK, SC_EINVAL (last < first, or no block size), SC_ENOMEM, SC_ECANCELED.
 */
sc_code block_fetch_open(block_table *t, const struct block_opener *o, const struct up_identity *as,
                         block_fetch **out);

/* What the head of an opening (block_fetch_open) said, once its relay has a head. */
struct block_opened {
    const char *etag;    /* the version's ETag, quotes included; valid while referenced */
    uint64_t size;       /* the object's */
    uint32_t idx;        /* the block */
    uint64_t block_from; /* the offset in its block of the relay's first byte */
    uint32_t len;        /* the relay's bytes */
    bool whole;          /* the fetch is the whole block's (shared, stored) */
};

/* @brief Fills *o once the fetch's head named its version. @return false before. */
bool block_fetch_opened(block_fetch *f, struct block_opened *o);

/* @brief True while an opening of block b->idx of (b->bucket, b->key) waits for its head,
 * which may name b's version or another: read-ahead leaves that block to it. */
bool block_fetch_being_opened(block_table *t, const struct block_ref *b);

/* @brief The relay holding the block's bytes (offset 0 = the block's first byte); valid while
 * the reference is held. */
relay *block_fetch_relay(block_fetch *f);

/*
 * @brief Why the fetch failed, once its relay has failed: SC_OK while it has not, else
 * SC_EMISMATCH (an answer that is not that block of that version), SC_ENOTFOUND (404),
 * SC_EUPSTREAM (another status, or the transfer failed), SC_ECANCELED (canceled from outside,
 * as at shutdown; an answer that is not the block, whose transfer the fetch cancels itself,
 * fails as what it was: a 412 is SC_EMISMATCH).
 */
sc_code block_fetch_outcome(block_fetch *f);

/* @brief True once the fetch learned the object is no longer that version (412, or another
 * ETag, or 404): its cached blocks must go. */
bool block_fetch_changed(block_fetch *f);

/* @brief The upstream's status, once the head is in (0 before). */
long block_fetch_status(block_fetch *f);

/* @brief Drops a reader's reference. The fetch goes on without readers: its block is stored
 * for the next one. */
void block_fetch_leave(block_fetch *f);

/*
 * @brief Lists the fetch of block b fed by a GET already under way instead of a request of its
 * own: a whole-object GET of b's ETag whose head revealed a large object (fill.c) hands its
 * first bytes to the readers of block 0, who so wait for no second round trip. head is that
 * GET's head. The block is checked and stored as any fetched block (its version checked with
 * a HEAD after its last byte unless the upstream honors If-Match), if keep (the GET's copy
 * rule, origin_fetch). Upstream thread.
 * The feeder then passes the body to block_fetch_feed() as it arrives, and calls
 * block_fetch_fed() if the GET ends before the block is whole.
 * @return the fetch, the feeder's until block_fetch_feed() sets *whole or block_fetch_fed()
 *         is called; NULL when the block is being fetched already, or out of memory.
 */
block_fetch *block_fetch_adopt(block_table *t, const struct block_ref *b,
                               const struct up_identity *as, const struct http_head *head,
                               bool keep);

/*
 * @brief Feeds the next body bytes of the adopted GET.
 * @param[out] whole set once the block is whole (or failed): the fetch is no longer the
 *             feeder's, and the rest of the GET's body is not the block's.
 * @return how many of the n bytes were the block's.
 */
size_t block_fetch_feed(block_fetch *f, const char *p, size_t n, bool *whole);

/* @brief The adopted GET ended (rc) before the block was whole: the fetch fails as a short
 * transfer does. The fetch is no longer the feeder's. */
void block_fetch_fed(block_fetch *f, sc_code rc);

/*
 * @brief Fetches block b into the cache with no reader (read-ahead, warm-up), signed as
 * `as`, unless it is being fetched already. done(arg, rc) follows exactly once (on the
 * upstream or store thread, must not block), with the store's outcome (SC_OK: stored), or
 * at once with SC_OK when it is being fetched already; NULL: no report.
 * @return SC_OK (done follows), SC_ENOMEM, SC_ECANCELED; on error done is not called.
 */
sc_code block_fetch_prefetch(block_table *t, const struct block_ref *b,
                             const struct up_identity *as, store_done_fn done, void *arg);

/* @brief True when block b has arrived whole in a fetch still listed (being stored): a
 * reader gets it with no upstream work. */
bool block_fetch_arrived(block_table *t, const struct block_ref *b);

/* @brief Block fetches running now (for read-ahead's bound and the metrics). */
unsigned block_fetches_running(block_table *t);

#endif
