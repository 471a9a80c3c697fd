/*
 * store.h - the object cache on local disk, in LMDB.
 *
 * The store keeps, per cached object, one metadata record (size, stored-at
 * time, the opaque header blob the gateway wants replayed, one CRC32C per
 * chunk) and the body split into fixed-size chunks. It is the only code that
 * touches LMDB.
 *
 * Reads run on the caller's thread in their own read transaction (the
 * environment is opened with MDB_NOTLS, so a read view may be closed on a
 * different thread than the one that opened it). Writes go through one
 * writer thread that batches queued jobs into a transaction, so readers
 * never wait on disk. Eviction happens on the writer thread: before an
 * object is written, the policy names victims until the new object fits in
 * the capacity; a full map (MDB_MAP_FULL) is answered by evicting more.
 *
 * Objects are named by (bucket, key); both are arbitrary byte strings
 * without NUL, key up to 1024 bytes. On open, the store scans what is on disk,
 * re-registers every object with the policy, and drops incomplete leftovers.
 */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../common/sc_err.h"
#include "../policy/policy.h"

typedef struct store store;
typedef struct store_obj store_obj;

#define STORE_DEFAULT_CHUNK_SIZE (256u * 1024u)
#define STORE_BUCKET_MAX         255u            /* bytes in a bucket name */
#define STORE_KEY_MAX            1024u           /* bytes in an object key */
#define STORE_HDRS_MAX           (1024u * 1024u) /* bytes in a header blob */
/*
 * Most chunks in one object. A hit is sent as one iovec per chunk, and one sendmsg(2)
 * takes at most IOV_MAX (1024) of them: libmicrohttpd 0.9.75 stalls on a longer iovec
 * response and then aborts the process. An object that would need more chunks of the
 * configured size is stored in larger ones (doubling, up to 64 MiB).
 */
#define STORE_MAX_CHUNKS 1024u

/*
 * Block objects. An object larger than the block size is cached as a block object: one
 * metadata record (size, stored-at time, ETag, header blob, block size) and any
 * subset of its aligned blocks (block i holds bytes [i * block_size, min(size, (i + 1) *
 * block_size))), each one LMDB value of its raw bytes followed by the CRC32C of them (so a
 * block can be sent from the data file as one contiguous range). Blocks are named by the
 * object's id, which is bound to one ETag: blocks of two versions can never be read as one.
 * Every block is its own entry for the policy (id STORE_BLOCK_ID(object id, index), size
 * its length, the object's bucket and key), so eviction and capacity work per block; the
 * record goes when its last block goes, or when it is removed or replaced as a whole object
 * would be (store_touch() renews its stored-at time). A record that never got a block (after
 * store_put_meta(), before any store_put_block() succeeded) stays until it is replaced or
 * removed, or until the next start-up drops it. Object ids stay under 2^39, so a block id
 * never collides with an object id or another block's.
 */
#define STORE_DEFAULT_BLOCK_SIZE (8u * 1024u * 1024u)
#define STORE_BLOCK_MIN          (1024u * 1024u)
#define STORE_BLOCK_MAX          (64u * 1024u * 1024u)
#define STORE_BLOCKS_MAX         (1u << 24) /* blocks in one object (16 TiB at 1 MiB blocks) */
#define STORE_ETAG_MAX           255u       /* bytes in a block object's ETag */
/* A block's policy id: top bit set, the object id, the block index. Object ids are never
 * reused; a block id is when a block evicted or dropped is stored again in the same object. */
#define STORE_BLOCK_ID(obj_id, idx) ((1ull << 63) | ((uint64_t)(obj_id) << 24) | (uint64_t)(idx))
#define STORE_ID_IS_BLOCK(id)       (((id) >> 63) != 0)

/*
 * Checksums. Every chunk and block has a CRC32C, checked before a read hands out a pointer
 * to it, once per residency: the first read since store_open() computes it, and later reads
 * do again only if some page of the value has left the page cache since (mincore(2)), since
 * that is when bytes on the disk come back into the map. Values under 16 KiB are checked at
 * every read. What this guarantees, and the cases only the scrubber catches (a write to
 * data.mdb by another process while the page is resident, a page read in by another
 * process): docs/security.md, "Bytes on disk". The descriptor store_obj_file_span() gives
 * has POSIX_FADV_RANDOM (and so have its dup(2)s): a read or sendfile(2) of checked bytes
 * through it reads in no neighbouring value's pages unchecked. Another descriptor of the
 * data file needs the same.
 *
 * The scrubber (store_config.scrub_rate) is a store thread that computes the CRC32C of
 * every chunk and block in turn, in key order, at most scrub_rate bytes a second, each in
 * a short read transaction of its own, and handles a failure as a read would.
 */

struct store_config {
    const char *dir;                 /* created if missing */
    uint64_t capacity_bytes;         /* bound on the sum of cached body sizes */
    uint32_t chunk_size;             /* 0 means STORE_DEFAULT_CHUNK_SIZE; else 1 KiB..64 MiB */
    bool verify_checksums;           /* check each chunk's and block's CRC32C before it is served
                                        (once per residency: see "Checksums" below) */
    unsigned max_readers;            /* concurrent read views; 0 means 512 */
    uint32_t block_size;             /* block objects' block size; 0 means STORE_DEFAULT_BLOCK_SIZE;
                                        else STORE_BLOCK_MIN..STORE_BLOCK_MAX */
    const struct policy_ops *policy; /* eviction policy; required */
    uint64_t scrub_rate;             /* bytes a second the scrubber re-checks; 0: no scrubber
                                        (none either without verify_checksums) */
};

struct store_stats {
    uint64_t objects;
    uint64_t used_bytes; /* sum of cached body sizes */
    uint64_t capacity_bytes;
    uint64_t evictions;      /* objects or blocks removed to make room */
    uint64_t corrupt;        /* chunks or blocks that failed their checksum (reads and scrubber) */
    uint64_t blocks;         /* blocks cached (of block objects; also counted in used_bytes) */
    uint64_t block_objects;  /* block objects with metadata cached (included in objects) */
    uint64_t checks;         /* chunks or blocks whose CRC32C a read computed */
    uint64_t scrubbed;       /* chunks or blocks the scrubber checked */
    uint64_t scrubbed_bytes; /* their bytes */
    uint64_t scrub_corrupt;  /* of corrupt, found by the scrubber */
};

/*
 * @brief Opens (or creates) the store in cfg->dir and starts its writer.
 * @param[out] out the store, owned by the caller; release with store_close().
 * @return SC_OK, SC_EINVAL (bad config), SC_EBUSY (another process has the directory
 *         open: one store per directory), SC_EIO (cannot open LMDB), SC_ENOMEM.
 * @note The store holds an exclusive lock on cfg->dir/s3cached.lock until store_close().
 */
sc_code store_open(const struct store_config *cfg, store **out);

/*
 * @brief Drains queued writes, stops the writer and closes LMDB. NULL is a no-op.
 * @note Every read view must be closed before, and no other call may run during it.
 */
void store_close(store *st);

/*
 * @brief Opens a read view on a cached object and counts a hit with the policy (for a
 * block object, hits are counted per block by store_obj_block()).
 * The view holds an LMDB read transaction: close it promptly (bounded by the
 * gateway's connection timeout), on any thread.
 * @param[out] out the view, owned by the caller; release with store_obj_close().
 * @return SC_OK, SC_ENOTFOUND (not cached), SC_EBUSY (no free reader slot),
 *         SC_EINVAL (bucket or key NULL or longer than STORE_BUCKET_MAX /
 *         STORE_KEY_MAX), SC_ENOMEM, SC_EIO.
 */
sc_code store_obj_open(store *st, const char *bucket, const char *key, store_obj **out);

/*
 * @brief Whether (bucket, key) is cached, and its size, without counting a
 * read with the policy (for the prefetcher's bookkeeping). A block object counts as
 * cached only when every one of its blocks is.
 * @return SC_OK, SC_ENOTFOUND, SC_EINVAL (bad names), SC_EBUSY, SC_EIO.
 */
sc_code store_peek(store *st, const char *bucket, const char *key, uint64_t *size);

/*
 * @brief Whether store_obj_open() would find (bucket, key): a whole object, or a block
 * object's record, however few of its blocks are cached; without counting a read with the
 * policy (the fill table's "stored since the lookup?", upstream/fill.c).
 * @return SC_OK, SC_ENOTFOUND, SC_EINVAL (bad names), SC_EBUSY, SC_EIO.
 */
sc_code store_recorded(store *st, const char *bucket, const char *key);

/* @brief Body size of the object in bytes. */
uint64_t store_obj_size(const store_obj *obj);

/*
 * @brief The header blob given to store_put(); valid until store_obj_close().
 */
const void *store_obj_headers(const store_obj *obj, size_t *len);

/* @brief Unix time (seconds) at which the object was stored. */
int64_t store_obj_stored_at(const store_obj *obj);

/*
 * @brief Points iov at the body bytes [off, off + len) inside the map, without
 * copying. Each chunk touched is checked against its CRC32C first when the
 * store verifies checksums (unless checked and resident since: "Checksums").
 * @param[out] iov filled with up to max_iov entries, valid until store_obj_close().
 * @param[out] n_iov entries used.
 * @return SC_OK, SC_EINVAL (range outside the object or max_iov too small),
 *         SC_ECORRUPT (a checksum failed: the object is queued for removal),
 *         SC_EIO.
 * @note The number of entries needed is at most len / chunk_size + 2 (chunk_size as
 *       configured: an object's own is never smaller), and never over STORE_MAX_CHUNKS.
 */
sc_code store_obj_iov(store_obj *obj, uint64_t off, uint64_t len, struct iovec *iov, size_t max_iov,
                      size_t *n_iov);

/*
 * @brief Where bytes this view handed out lie in the store's data file, so that they can be
 * sent from the file (sendfile(2)) instead of from the map: the map is the data file mapped
 * from offset 0, so the offset is the bytes' address minus the map's base.
 * @param[in] data, len bytes inside the map, as store_obj_iov() or store_obj_block() returned
 *            them (any span within one such range); they were checked as those functions say.
 * @param[out] fd the data file's descriptor (mdb_env_get_fd()), the store's own: never close
 *             it; dup(2) it to hand it to something that closes. Valid until store_close().
 * @param[out] offset the first byte's offset in that file.
 * @return SC_OK, SC_EINVAL (data NULL, len 0, or the span not wholly inside the map: bytes
 *         that are not the store's).
 * @note The file holds these bytes at offset while the view is open, and no longer: once it
 *       closes, a writer may reuse the pages in place. The kernel reads the pages of a
 *       sendfile(2) when it sends them, not when the call returns (over loopback or a veth,
 *       when the receiving process reads them): keep the view open until the receiver has
 *       read every byte, not until the call returns (gateway/zerocopy.h).
 */
sc_code store_obj_file_span(const store_obj *obj, const void *data, uint64_t len, int *fd,
                            uint64_t *offset);

/* @brief True if the object is a block object (read it with store_obj_block()); false for
 * a whole object (store_obj_iov()). */
bool store_obj_is_blocks(const store_obj *obj);

/* @brief The block size of a block object (0 for a whole object). */
uint32_t store_obj_block_size(const store_obj *obj);

/* @brief True if the view is a block object of that version: that ETag (the header's value,
 * quotes included), size and block size, so that its blocks are the ones asked for. */
bool store_obj_is_version(const store_obj *obj, const char *etag, uint64_t size,
                          uint32_t block_size);

/*
 * @brief Points at block idx of a block object inside the map, without copying, checked
 * against its CRC32C first when the store verifies checksums (unless checked and resident
 * since: "Checksums"), and counts a hit on the block with the policy.
 * @param[out] data the block's bytes, valid until store_obj_close(). @param[out] len its
 *             length (block_size, or less for the last block).
 * @return SC_OK, SC_ENOTFOUND (this block is not cached in this view), SC_EINVAL (not a
 *         block object, or idx past the last block), SC_ECORRUPT (checksum failed: the
 *         block is queued for removal), SC_EIO.
 */
sc_code store_obj_block(store_obj *obj, uint32_t idx, const void **data, uint32_t *len);

/*
 * @brief store_obj_block() for the n blocks from first on, all or none: the policy counts a
 * hit on each only when every one is cached and checked.
 * @param[out] data, len arrays of n: each block's bytes and length.
 * @param[out] bad on failure, the first block that failed (may be NULL).
 * @return as store_obj_block(), for that block.
 */
sc_code store_obj_blocks_read(store_obj *obj, uint32_t first, uint32_t n, const void **data,
                              uint32_t *len, uint32_t *bad);

/*
 * @brief Counts the blocks in [first, last] cached in this view (no checksum, no hit).
 * @return the count; 0 for a whole object.
 */
uint64_t store_obj_blocks_cached(store_obj *obj, uint32_t first, uint32_t last);

/* @brief Ends the read view. NULL is a no-op. */
void store_obj_close(store_obj *obj);

/*
 * Called on the writer thread once a queued job is done (SC_OK or the reason it
 * failed). It must not call store_remove(), store_flush() or store_close(),
 * which wait for that same thread.
 */
typedef void (*store_done_fn)(void *arg, sc_code result);

/*
 * @brief Queues an object for insertion, replacing any cached copy.
 * body and hdrs must stay valid and unchanged until done is called; the store
 * does not copy them before its writer uses them. done may be NULL.
 * @return SC_OK (queued: done reports the outcome), SC_ETOOBIG (larger than
 *         the capacity or than STORE_MAX_CHUNKS chunks of 64 MiB, or hdrs_len
 *         over STORE_HDRS_MAX), SC_EINVAL (bad
 *         names, or NULL with a non-zero length), SC_ECANCELED (the store is
 *         closing), SC_ENOMEM. On any error done is not called.
 * @note Outcomes through done: SC_OK, SC_EFULL (no room: not admitted by the
 *       policy, nothing left to evict, or the map stayed full), SC_ENOMEM,
 *       SC_EIO. A refused put still removes the older cached copy.
 */
sc_code store_put(store *st, const char *bucket, const char *key, const void *hdrs, size_t hdrs_len,
                  const void *body, uint64_t size, store_done_fn done, void *arg);

/*
 * @brief Queues the metadata of a block object: size bytes (over the block size), its ETag
 * etag (the ETag header's value, quotes included; the store cannot parse the header blob,
 * so it is passed on its own) and the header blob hdrs to replay; both are copied. If the
 * cached record is a block object with the same ETag, size and block size, it is kept with its
 * blocks (nothing changes); anything else cached under (bucket, key) is replaced (its blocks
 * dropped). The record is not charged against the capacity (only blocks are). done may be
 * NULL.
 * @return SC_OK (queued), SC_EINVAL (bad names, etag NULL, empty or over STORE_ETAG_MAX
 *         bytes, size not over the block size or over STORE_BLOCKS_MAX blocks, hdrs NULL
 *         with a non-zero length), SC_ETOOBIG (hdrs over STORE_HDRS_MAX), SC_ECANCELED
 *         (closing), SC_ENOMEM. On error done is not called.
 * @note Outcomes through done: SC_OK, SC_EFULL (the map stayed full), SC_ENOMEM, SC_EIO.
 */
sc_code store_put_meta(store *st, const char *bucket, const char *key, const char *etag,
                       const void *hdrs, size_t hdrs_len, uint64_t size, store_done_fn done,
                       void *arg);

/*
 * @brief Queues block idx of the block object (bucket, key) at version etag (the ETag
 * header's value, quotes included), cut in blocks of block_size bytes. data (len bytes) must
 * stay valid and unchanged until done is called. Stored only if, when the writer applies it,
 * the record under (bucket, key) is a block object with that ETag and block size (blocks of
 * another layout have the same index and length but other bytes) and len is the length of
 * its block idx; an already
 * cached block is kept. The policy admits it and victims are evicted for it as for a put.
 * @return SC_OK (queued), SC_EINVAL (bad names or arguments), SC_ECANCELED, SC_ENOMEM.
 *         On error done is not called.
 * @note Outcomes through done: SC_OK (stored, or was already), SC_ECANCELED (no such
 *       record: removed, replaced, of another ETag or block size), SC_EMISMATCH (wrong
 *       length),
 *       SC_EFULL, SC_ENOMEM, SC_EIO.
 */
sc_code store_put_block(store *st, const char *bucket, const char *key, const char *etag,
                        uint32_t block_size, uint32_t idx, const void *data, uint32_t len,
                        store_done_fn done, void *arg);

/*
 * @brief Removes the cached copy of (bucket, key) if any, and waits until the
 * removal is committed, so that no later store_obj_open() sees the old copy.
 * @return SC_OK (removed or was not cached), SC_EINVAL (bad names),
 *         SC_ECANCELED (the store is closing), SC_EIO.
 */
sc_code store_remove(store *st, const char *bucket, const char *key);

/*
 * @brief Queues the removal of the cached copy of (bucket, key) and returns at
 * once; store_flush() then waits for every removal queued so far (one commit
 * for many keys, where store_remove() waits for each).
 * @return SC_OK (queued), SC_EINVAL (bad names), SC_ECANCELED (closing), SC_ENOMEM.
 */
sc_code store_remove_queued(store *st, const char *bucket, const char *key);

/*
 * @brief Marks the cached copy of (bucket, key) as stored now (it was revalidated
 * against the upstream). Queued: returns before the writer applies it.
 * @return SC_OK (queued; a no-op if not cached), SC_EINVAL, SC_ECANCELED, SC_ENOMEM.
 */
sc_code store_touch(store *st, const char *bucket, const char *key);

/*
 * @brief Removes every cached object of bucket whose key starts with prefix ("" for the
 * whole bucket) and waits until the removals are committed.
 * @param[out] removed how many objects were found and removed.
 * Puts queued before the call are committed first and so are removed too.
 * @return SC_OK, SC_EINVAL (no bucket), SC_EIO. Objects stored while it runs may stay.
 */
sc_code store_remove_prefix(store *st, const char *bucket, const char *prefix, uint64_t *removed);

/*
 * @brief Passes a hint to the policy, serialized with the store's own calls.
 * @return the policy's result: SC_OK (also when it ignores hints), SC_ENOMEM.
 */
sc_code store_hint(store *st, const struct policy_hint *h);

/*
 * @brief Asks the policy whether it would admit (bucket, key) of size bytes
 * now, so that a prefetcher does not fetch what would be refused or would push
 * out something needed sooner. Only advice: store_put() asks again.
 * @return true if the policy admits it (always, for policies without admit).
 */
bool store_would_admit(store *st, const char *bucket, const char *key, uint64_t size);

/*
 * @brief store_would_admit() for block idx of a block object (a manifest's ranged item
 * asks for the first block it covers, with the bytes of all of them): a policy that plans
 * by blocks (clairvoyant) judges it by the block's next use, not the object's.
 */
bool store_would_admit_block(store *st, const char *bucket, const char *key, uint32_t idx,
                             uint64_t size);

/* @brief Copies the current counters into out. Cannot fail. */
void store_get_stats(store *st, struct store_stats *out);

/* @brief Blocks until every job queued so far is committed (for tests and shutdown). */
void store_flush(store *st);

#endif
