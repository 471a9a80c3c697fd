/*
 * store_record.c - encoding and decoding of the store's keys and metadata
 * records (layout in store_record.h). Pure functions: no LMDB, no state.
 */
#include "store_record.h"

#include <openssl/evp.h>
#include <string.h>

#define RECORD_VERSION 1u
#define HEAD_LEN       48u /* the fixed fields before the CRC array */

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

sc_code st_meta_key(const char *bucket, const char *key, unsigned char out[ST_MKEY_LEN])
{
    sc_code rc = SC_ECRYPTO;
    unsigned int len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        goto out;
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, bucket, strlen(bucket) + 1) != 1 || /* with its '\0' */
        EVP_DigestUpdate(ctx, key, strlen(key)) != 1 || EVP_DigestFinal_ex(ctx, out, &len) != 1 ||
        len != ST_MKEY_LEN)
        goto out;
    rc = SC_OK;
out:
    EVP_MD_CTX_free(ctx);
    return rc;
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
    return HEAD_LEN + 4u * (size_t)r->n_chunks + r->bucket_len + r->key_len + r->hdrs_len;
}

void st_record_encode(const struct st_record *r, unsigned char *out)
{
    unsigned char *p = out;
    put_le32(p, RECORD_VERSION);
    put_le64(p + 4, r->id);
    put_le64(p + 12, r->size);
    put_le64(p + 20, (uint64_t)r->stored_at);
    put_le32(p + 28, r->chunk_size);
    put_le32(p + 32, r->n_chunks);
    put_le32(p + 36, (uint32_t)r->bucket_len);
    put_le32(p + 40, (uint32_t)r->key_len);
    put_le32(p + 44, (uint32_t)r->hdrs_len);
    p += HEAD_LEN;
    memset(p, 0, 4u * (size_t)r->n_chunks);
    p += 4u * (size_t)r->n_chunks;
    memcpy(p, r->bucket, r->bucket_len);
    p += r->bucket_len;
    memcpy(p, r->key, r->key_len);
    p += r->key_len;
    if (r->hdrs_len > 0)
        memcpy(p, r->hdrs, r->hdrs_len);
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

sc_code st_record_decode(const void *buf, size_t len, struct st_record *out)
{
    const unsigned char *p = buf;
    if (len < HEAD_LEN || get_le32(p) != RECORD_VERSION)
        return SC_ECORRUPT;
    out->id = get_le64(p + 4);
    out->size = get_le64(p + 12);
    out->stored_at = (int64_t)get_le64(p + 20);
    out->chunk_size = get_le32(p + 28);
    out->n_chunks = get_le32(p + 32);
    out->bucket_len = get_le32(p + 36);
    out->key_len = get_le32(p + 40);
    out->hdrs_len = get_le32(p + 44);
    if (out->id == 0 || out->chunk_size < ST_CHUNK_MIN || out->chunk_size > ST_CHUNK_MAX ||
        st_chunk_count(out->size, out->chunk_size) != out->n_chunks ||
        out->bucket_len > ST_BUCKET_MAX || out->key_len > ST_KEY_MAX ||
        out->hdrs_len > ST_HDRS_MAX || st_record_len(out) != len)
        return SC_ECORRUPT;
    out->crcs = p + HEAD_LEN;
    out->bucket = (const char *)out->crcs + 4u * (size_t)out->n_chunks;
    out->key = out->bucket + out->bucket_len;
    out->hdrs = out->key + out->key_len;
    if (memchr(out->bucket, '\0', out->bucket_len) != NULL ||
        memchr(out->key, '\0', out->key_len) != NULL)
        return SC_ECORRUPT;
    return SC_OK;
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
