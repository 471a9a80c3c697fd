/*
 * trailer_sum.c - the checksum an aws-chunked upload announces in its trailer
 * (see trailer_sum.h). CRC-32 comes from zlib, CRC-32C from the store's
 * implementation, the digests and base64 from OpenSSL.
 */
#include "trailer_sum.h"

#include <openssl/evp.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "../store/crc32c.h"

enum alg { ALG_NONE, ALG_CRC32, ALG_CRC32C, ALG_SHA1, ALG_SHA256 };

static const struct {
    const char *name;
    enum alg alg;
} algs[] = {
    {"x-amz-checksum-crc32", ALG_CRC32},
    {"x-amz-checksum-crc32c", ALG_CRC32C},
    {"x-amz-checksum-sha1", ALG_SHA1},
    {"x-amz-checksum-sha256", ALG_SHA256},
};

sc_code trailer_sum_init(struct trailer_sum *s, const char *name)
{
    *s = (struct trailer_sum){.alg = ALG_NONE};
    for (size_t i = 0; name != NULL && i < sizeof(algs) / sizeof(algs[0]); i++)
        if (strcasecmp(name, algs[i].name) == 0)
            s->alg = algs[i].alg;
    if (s->alg != ALG_SHA1 && s->alg != ALG_SHA256)
        return SC_OK;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL ||
        EVP_DigestInit_ex(ctx, s->alg == ALG_SHA1 ? EVP_sha1() : EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        s->alg = ALG_NONE;
        return SC_ENOMEM;
    }
    s->md = ctx;
    return SC_OK;
}

bool trailer_sum_active(const struct trailer_sum *s)
{
    return s->alg != ALG_NONE;
}

void trailer_sum_update(struct trailer_sum *s, const void *buf, size_t len)
{
    switch (s->alg) {
    case ALG_CRC32:
        /* zlib takes an unsigned int length: feed a huge slice in parts */
        for (const unsigned char *p = buf; len > 0;) {
            unsigned int n = len > 1u << 30 ? 1u << 30 : (unsigned int)len;
            s->crc = (uint32_t)crc32(s->crc, p, n);
            p += n;
            len -= n;
        }
        break;
    case ALG_CRC32C:
        s->crc = crc32c(s->crc, buf, len);
        break;
    case ALG_SHA1:
    case ALG_SHA256:
        EVP_DigestUpdate(s->md, buf, len);
        break;
    default:
        break;
    }
}

bool trailer_sum_matches(struct trailer_sum *s, const char *b64)
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (s->alg == ALG_NONE)
        return true;
    if (s->alg == ALG_CRC32 || s->alg == ALG_CRC32C) {
        for (int i = 0; i < 4; i++)
            sum[i] = (unsigned char)(s->crc >> (24 - 8 * i));
        n = 4;
    } else if (EVP_DigestFinal_ex(s->md, sum, &n) != 1) {
        return false;
    }
    unsigned char want[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    EVP_EncodeBlock(want, sum, (int)n);
    return b64 != NULL && strcmp((const char *)want, b64) == 0;
}

void trailer_sum_free(struct trailer_sum *s)
{
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
}
