/*
 * store_record.c - encoding and decoding of the store's keys and metadata
 * records (layout in store_record.h). Pure functions: no LMDB, no state.
 */
#include "store_record.h"

#include <string.h>

#include "../common/sha256.h"

#define RECORD_WHOLE  1u  /* the version number of a whole object's record */
#define RECORD_BLOCKS 2u  /* of a block object's */
#define HEAD_LEN      48u /* a whole record's fixed fields, before the CRC array */
#define BLOCKS_HEAD   52u /* a block record's: the same 48 bytes, then etag_len */

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

uint64_t st_get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

uint32_t st_get_be32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}

sc_code st_check_names(const char *bucket, const char *key)
{
    if (bucket == NULL || key == NULL)
        return SC_EINVAL;
    if (strnlen(bucket, ST_BUCKET_MAX + 1) > ST_BUCKET_MAX ||
        strnlen(key, ST_KEY_MAX + 1) > ST_KEY_MAX)
        return SC_EINVAL;
    return SC_OK;
}

_Static_assert(ST_MKEY_LEN == SC_SHA256_LEN, "a meta key is a SHA-256");

sc_code st_meta_key(const char *bucket, const char *key, unsigned char out[ST_MKEY_LEN])
{
    const char *fields[] = {bucket, key};
    return sc_sha256_fields(fields, 2, out);
}

uint64_t st_chunk_count(uint64_t size, uint32_t chunk_size)
{
    return size / chunk_size + (size % chunk_size != 0);
}

uint32_t st_chunk_size_for(uint64_t size, uint32_t preferred)
{
    uint32_t cs = preferred;
    while (st_chunk_count(size, cs) > STORE_MAX_CHUNKS && cs < ST_CHUNK_MAX)
        cs = cs > ST_CHUNK_MAX / 2 ? ST_CHUNK_MAX : cs * 2;
    return cs;
}

uint32_t st_chunk_len(uint64_t size, uint32_t chunk_size, uint32_t idx)
{
    uint64_t start = (uint64_t)idx * chunk_size;
    uint64_t left = size > start ? size - start : 0;
    return left < chunk_size ? (uint32_t)left : chunk_size;
}

size_t st_record_len(const struct st_record *r)
{
    size_t names = r->bucket_len + r->key_len + r->hdrs_len;
    if (r->kind == ST_BLOCKS)
        return BLOCKS_HEAD + names + r->etag_len;
    return HEAD_LEN + 4u * (size_t)r->n_chunks + names;
}

/* Writes the 48 bytes both kinds share; sizes are chunk or block size and count. */
static unsigned char *encode_head(const struct st_record *r, uint32_t version, uint32_t unit,
                                  uint32_t n_units, unsigned char *p)
{
    put_le32(p, version);
    put_le64(p + 4, r->id);
    put_le64(p + 12, r->size);
    put_le64(p + 20, (uint64_t)r->stored_at);
    put_le32(p + 28, unit);
    put_le32(p + 32, n_units);
    put_le32(p + 36, (uint32_t)r->bucket_len);
    put_le32(p + 40, (uint32_t)r->key_len);
    put_le32(p + 44, (uint32_t)r->hdrs_len);
    return p + HEAD_LEN;
}

static unsigned char *put_bytes(unsigned char *p, const void *src, size_t len)
{
    if (len > 0)
        memcpy(p, src, len);
    return p + len;
}

void st_record_encode(const struct st_record *r, unsigned char *out)
{
    unsigned char *p;
    if (r->kind == ST_BLOCKS) {
        p = encode_head(r, RECORD_BLOCKS, r->block_size, r->n_blocks, out);
        put_le32(p, (uint32_t)r->etag_len);
        p += BLOCKS_HEAD - HEAD_LEN;
    } else {
        p = encode_head(r, RECORD_WHOLE, r->chunk_size, r->n_chunks, out);
        memset(p, 0, 4u * (size_t)r->n_chunks);
        p += 4u * (size_t)r->n_chunks;
    }
    p = put_bytes(p, r->bucket, r->bucket_len);
    p = put_bytes(p, r->key, r->key_len);
    if (r->kind == ST_BLOCKS)
        p = put_bytes(p, r->etag, r->etag_len);
    put_bytes(p, r->hdrs, r->hdrs_len);
}

void st_record_set_stored_at(unsigned char *encoded, int64_t stored_at)
{
    put_le64(encoded + 20, (uint64_t)stored_at);
}

void st_record_set_crc(unsigned char *encoded, uint32_t idx, uint32_t crc)
{
    put_le32(encoded + HEAD_LEN + 4u * (size_t)idx, crc);
}

uint32_t st_record_crc(const struct st_record *r, uint32_t idx)
{
    return get_le32(r->crcs + 4u * (size_t)idx);
}

/* Checks the fields of a whole object's record; points crcs and the names after them. */
static bool decode_whole(const unsigned char *p, size_t len, struct st_record *out)
{
    out->chunk_size = get_le32(p + 28);
    out->n_chunks = get_le32(p + 32);
    if (out->chunk_size < ST_CHUNK_MIN || out->chunk_size > ST_CHUNK_MAX ||
        st_chunk_count(out->size, out->chunk_size) != out->n_chunks || st_record_len(out) != len)
        return false;
    out->crcs = p + HEAD_LEN;
    out->bucket = (const char *)out->crcs + 4u * (size_t)out->n_chunks;
    return true;
}

/* Checks the fields of a block object's record; points bucket after its fixed fields. */
static bool decode_blocks(const unsigned char *p, size_t len, struct st_record *out)
{
    if (len < BLOCKS_HEAD)
        return false;
    out->block_size = get_le32(p + 28);
    out->n_blocks = get_le32(p + 32);
    out->etag_len = get_le32(p + HEAD_LEN);
    if (out->id >= ST_ID_LIMIT || out->block_size < STORE_BLOCK_MIN ||
        out->block_size > STORE_BLOCK_MAX || out->size <= out->block_size ||
        st_chunk_count(out->size, out->block_size) != out->n_blocks ||
        out->n_blocks > STORE_BLOCKS_MAX || out->etag_len == 0 || out->etag_len > STORE_ETAG_MAX ||
        st_record_len(out) != len)
        return false;
    out->bucket = (const char *)p + BLOCKS_HEAD;
    return true;
}

sc_code st_record_decode(const void *buf, size_t len, struct st_record *out)
{
    const unsigned char *p = buf;
    memset(out, 0, sizeof(*out));
    if (len < HEAD_LEN)
        return SC_ECORRUPT;
    uint32_t version = get_le32(p);
    if (version != RECORD_WHOLE && version != RECORD_BLOCKS)
        return SC_ECORRUPT;
    out->kind = version == RECORD_WHOLE ? ST_WHOLE : ST_BLOCKS;
    out->id = get_le64(p + 4);
    out->size = get_le64(p + 12);
    out->stored_at = (int64_t)get_le64(p + 20);
    out->bucket_len = get_le32(p + 36);
    out->key_len = get_le32(p + 40);
    out->hdrs_len = get_le32(p + 44);
    if (out->id == 0 || out->bucket_len > ST_BUCKET_MAX || out->key_len > ST_KEY_MAX ||
        out->hdrs_len > ST_HDRS_MAX)
        return SC_ECORRUPT;
    bool ok = out->kind == ST_WHOLE ? decode_whole(p, len, out) : decode_blocks(p, len, out);
    if (!ok)
        return SC_ECORRUPT;
    out->key = out->bucket + out->bucket_len;
    out->hdrs = out->key + out->key_len;
    if (out->kind == ST_BLOCKS) {
        out->etag = out->key + out->key_len;
        out->hdrs = out->etag + out->etag_len;
        if (memchr(out->etag, '\0', out->etag_len) != NULL)
            return SC_ECORRUPT;
    }
    if (memchr(out->bucket, '\0', out->bucket_len) != NULL ||
        memchr(out->key, '\0', out->key_len) != NULL)
        return SC_ECORRUPT;
    return SC_OK;
}

bool st_record_etag_is(const struct st_record *r, const char *etag)
{
    return r->kind == ST_BLOCKS && strlen(etag) == r->etag_len &&
           memcmp(etag, r->etag, r->etag_len) == 0;
}

void st_block_id_split(uint64_t block_id, uint64_t *obj_id, uint32_t *idx)
{
    *obj_id = (block_id >> 24) & (ST_ID_LIMIT - 1);
    *idx = (uint32_t)(block_id & 0xffffffu);
}

void st_put_crc(unsigned char *p, uint32_t crc)
{
    put_le32(p, crc);
}

uint32_t st_get_crc(const unsigned char *p)
{
    return get_le32(p);
}

void st_chunk_key(uint64_t id, uint32_t idx, unsigned char out[ST_CKEY_LEN])
{
    put_be(out, id, 8);
    put_be(out + 8, idx, 4);
}

void st_id_key(uint64_t id, unsigned char out[ST_IDKEY_LEN])
{
    put_be(out, id, 8);
}
