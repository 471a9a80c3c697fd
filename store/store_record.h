/*
 * store_record.h - the store's on-disk encodings (private to store/).
 *
 * These keys and values live in LMDB:
 *   "meta"   key: SHA-256(bucket '\0' key), 32 bytes (LMDB keys stop at 511
 *            bytes, S3 keys at 1024) -> the metadata record below.
 *   "chunks" key: object id (u64 big-endian) + chunk index (u32 big-endian)
 *            -> the raw chunk bytes of a whole object, nothing else, so they can
 *            be sent as is.
 *   "blocks" key: object id (u64 big-endian) + block index (u32 big-endian)
 *            -> a block object's block: its raw bytes followed by the CRC32C of
 *            them (u32 little-endian), so the bytes are one contiguous range.
 *   "ids"    key: object id (u64 big-endian) -> the 32-byte meta key (both kinds).
 * Big-endian ids make LMDB's byte order the numeric order, and a cursor at
 * (id, 0) walks one object's chunks or blocks in index order.
 *
 * The metadata record of a whole object, all integers little-endian:
 *   u32 version (1), u64 id, u64 size, i64 stored_at, u32 chunk_size,
 *   u32 n_chunks, u32 bucket_len, u32 key_len, u32 hdrs_len,
 *   u32 crc32c[n_chunks], bucket bytes, key bytes, header blob.
 * The record of a block object (its blocks carry their own CRCs):
 *   u32 version (2), u64 id, u64 size, i64 stored_at, u32 block_size,
 *   u32 n_blocks, u32 bucket_len, u32 key_len, u32 hdrs_len, u32 etag_len,
 *   bucket bytes, key bytes, ETag bytes, header blob.
 * The first 48 bytes have the same layout in both, so stored_at is rewritten
 * in place alike. A record decodes only if every length agrees with the total
 * and with the size (n_chunks = ceil(size / chunk_size); for a block object
 * size > block_size, n_blocks = ceil(size / block_size) <= STORE_BLOCKS_MAX,
 * block_size in STORE_BLOCK_MIN..STORE_BLOCK_MAX, id < 2^39, a non-empty ETag
 * without NUL), so a decoded record can be trusted for bounds.
 */
#ifndef STORE_RECORD_H
#define STORE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "store.h"

#define ST_MKEY_LEN   32u
#define ST_IDKEY_LEN  8u
#define ST_CKEY_LEN   12u
#define ST_BUCKET_MAX STORE_BUCKET_MAX
#define ST_KEY_MAX    STORE_KEY_MAX
#define ST_HDRS_MAX   STORE_HDRS_MAX
#define ST_CHUNK_MIN  1024u
#define ST_CHUNK_MAX  (64u * 1024u * 1024u)
#define ST_CRC_LEN    4u           /* the CRC32C after a block's bytes */
#define ST_ID_LIMIT   (1ull << 39) /* object ids stay below: STORE_BLOCK_ID keeps 39 bits */

/* What a record describes. */
enum st_kind { ST_WHOLE = 1, ST_BLOCKS = 2 };

/* A decoded record. Pointers refer into the buffer given to st_record_decode(). */
struct st_record {
    enum st_kind kind;
    uint64_t id;
    uint64_t size;
    int64_t stored_at;
    uint32_t chunk_size;       /* ST_WHOLE; 0 for ST_BLOCKS */
    uint32_t n_chunks;         /* ST_WHOLE; 0 for ST_BLOCKS */
    const unsigned char *crcs; /* n_chunks little-endian u32, possibly unaligned; ST_WHOLE */
    uint32_t block_size;       /* ST_BLOCKS; 0 for ST_WHOLE */
    uint32_t n_blocks;         /* ST_BLOCKS; 0 for ST_WHOLE */
    const char *etag;          /* ST_BLOCKS: not NUL-terminated; NULL for ST_WHOLE */
    size_t etag_len;
    const char *bucket; /* not NUL-terminated */
    size_t bucket_len;
    const char *key; /* not NUL-terminated */
    size_t key_len;
    const void *hdrs;
    size_t hdrs_len;
};

/*
 * @brief Checks that bucket and key are present and within ST_BUCKET_MAX and
 * ST_KEY_MAX bytes.
 * @return SC_OK or SC_EINVAL.
 */
sc_code st_check_names(const char *bucket, const char *key);

/*
 * @brief Computes the meta key SHA-256(bucket '\0' key).
 * @param[out] out the 32-byte key.
 * @return SC_OK, or SC_ECRYPTO if OpenSSL fails.
 */
sc_code st_meta_key(const char *bucket, const char *key, unsigned char out[ST_MKEY_LEN]);

/* @brief Number of chunks for size bytes: ceil(size / chunk_size), 0 for an empty body. */
uint64_t st_chunk_count(uint64_t size, uint32_t chunk_size);

/*
 * @brief The chunk size an object of size bytes is stored with: preferred, doubled (up to
 * ST_CHUNK_MAX) while the object would take more than STORE_MAX_CHUNKS chunks.
 * @return the chunk size; the object may still need more chunks when it is over
 *         STORE_MAX_CHUNKS * ST_CHUNK_MAX bytes (the caller refuses it).
 */
uint32_t st_chunk_size_for(uint64_t size, uint32_t preferred);

/* @brief Length in bytes of chunk idx of an object. */
uint32_t st_chunk_len(uint64_t size, uint32_t chunk_size, uint32_t idx);

/* @brief Encoded length of r, of either kind (its crcs pointer is ignored). */
size_t st_record_len(const struct st_record *r);

/*
 * @brief Writes r (of either kind) into out (st_record_len(r) bytes); for a whole
 * object with every CRC set to 0: fill them in with st_record_set_crc(). r->crcs is
 * ignored.
 */
void st_record_encode(const struct st_record *r, unsigned char *out);

/* @brief Rewrites stored_at in an encoded record, in place. */
void st_record_set_stored_at(unsigned char *encoded, int64_t stored_at);

/* @brief Stores the CRC of chunk idx into an encoded record. */
void st_record_set_crc(unsigned char *encoded, uint32_t idx, uint32_t crc);

/* @brief The CRC of chunk idx (idx < r->n_chunks). */
uint32_t st_record_crc(const struct st_record *r, uint32_t idx);

/*
 * @brief Decodes and validates a record.
 * @param[out] out fields; pointers refer into buf.
 * @return SC_OK, or SC_ECORRUPT if buf is not a well-formed record.
 */
sc_code st_record_decode(const void *buf, size_t len, struct st_record *out);

/* @brief True if the record is a block object whose ETag is etag (NUL-terminated). */
bool st_record_etag_is(const struct st_record *r, const char *etag);

/* @brief The object id and block index a policy id made by STORE_BLOCK_ID() names. */
void st_block_id_split(uint64_t block_id, uint64_t *obj_id, uint32_t *idx);

/* @brief Writes a CRC32C as the 4 little-endian bytes that follow a block's bytes. */
void st_put_crc(unsigned char *p, uint32_t crc);

/* @brief Reads the CRC32C stored after a block's bytes. */
uint32_t st_get_crc(const unsigned char *p);

/* @brief Writes the 12-byte chunks (or blocks) key for (id, idx). */
void st_chunk_key(uint64_t id, uint32_t idx, unsigned char out[ST_CKEY_LEN]);

/* @brief Writes the 8-byte big-endian id key. */
void st_id_key(uint64_t id, unsigned char out[ST_IDKEY_LEN]);

/* @brief Reads a big-endian u64 (the id part of an ids or chunks key). */
uint64_t st_get_be64(const unsigned char *p);

/* @brief Reads a big-endian u32 (the index part of a chunks key). */
uint32_t st_get_be32(const unsigned char *p);

#endif
