/*
 * digest.c - checking a whole object's body against its ETag or checksum (see digest.h).
 *
 * MD5, SHA-1 and SHA-256 come from OpenSSL, CRC-32C from store/crc32c.c (the store's
 * chunk checksum, with the CPU instruction). CRC-32 (zlib's) and CRC-64/NVME have no
 * library here, so they are the plain reflected table algorithm, one byte per step.
 */
#include "digest.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "../store/crc32c.h"

#define CRC32_POLY     0xedb88320u           /* reflected 0x04c11db7 */
#define CRC64NVME_POLY 0x9a6c9329ac4bc9b5ull /* reflected 0xad93d23594c93659 */
#define WANT_MAX       64                    /* a SHA-256 in base64 is 44 characters */

enum kind { K_MD5_ETAG, K_CRC64NVME, K_CRC32C, K_CRC32, K_SHA256, K_SHA1 };

/* The checksums a fill may get, in the order they are preferred. */
static const struct {
    const char *header;
    enum kind kind;
} checksums[] = {
    {"x-amz-checksum-crc64nvme", K_CRC64NVME}, {"x-amz-checksum-crc32c", K_CRC32C},
    {"x-amz-checksum-crc32", K_CRC32},         {"x-amz-checksum-sha256", K_SHA256},
    {"x-amz-checksum-sha1", K_SHA1},
};

struct digest {
    enum kind kind;
    const char *name;
    char want[WANT_MAX + 1]; /* hex for the MD5 ETag, else the header's base64 */
    bool malformed;          /* a value that cannot be right */
    EVP_MD_CTX *md;          /* MD5, SHA-1, SHA-256 */
    uint64_t crc;            /* the CRCs' register */
};

static uint32_t crc32_table[256];
static uint64_t crc64nvme_table[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint32_t c32 = i;
        uint64_t c64 = i;
        for (int k = 0; k < 8; k++) {
            c32 = c32 & 1 ? (c32 >> 1) ^ CRC32_POLY : c32 >> 1;
            c64 = c64 & 1 ? (c64 >> 1) ^ CRC64NVME_POLY : c64 >> 1;
        }
        crc32_table[i] = c32;
        crc64nvme_table[i] = c64;
    }
}

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    uint32_t c = ~crc;
    while (n--)
        c = crc32_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static uint64_t crc64nvme_update(uint64_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = ~crc;
    while (n--)
        c = crc64nvme_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static const EVP_MD *md_of(enum kind kind)
{
    switch (kind) {
    case K_MD5_ETAG:
        return EVP_md5();
    case K_SHA256:
        return EVP_sha256();
    case K_SHA1:
        return EVP_sha1();
    default:
        return NULL;
    }
}

/* A multipart upload's checksum of its parts' checksums: no digest of the body. */
static bool is_composite(const struct up_header *h, size_t n, const char *value)
{
    const char *type = up_header_get(h, n, "x-amz-checksum-type");
    return strchr(value, '-') != NULL || (type != NULL && strcasecmp(type, "COMPOSITE") == 0);
}

/* SSE-KMS (aws:kms, aws:kms:dsse) and SSE-C objects have ETags that look like an MD5 but are
 * not the MD5 of the body (SSE-S3 ones are). */
static bool etag_may_be_md5(const struct up_header *h, size_t n)
{
    const char *sse = up_header_get(h, n, "x-amz-server-side-encryption");
    return (sse == NULL || strncasecmp(sse, "aws:kms", 7) != 0) &&
           up_header_get(h, n, "x-amz-server-side-encryption-customer-algorithm") == NULL;
}

/* Picks what to check (d->kind, d->name, d->want); false if the head offers nothing. */
static bool choose(digest *d, const struct up_header *h, size_t n)
{
    if (etag_may_be_md5(h, n) && up_etag_md5(up_header_get(h, n, "etag"), d->want)) {
        d->kind = K_MD5_ETAG;
        d->name = "ETag";
        return true;
    }
    for (size_t i = 0; i < sizeof(checksums) / sizeof(checksums[0]); i++) {
        const char *value = up_header_get(h, n, checksums[i].header);
        if (value == NULL || is_composite(h, n, value))
            continue;
        d->kind = checksums[i].kind;
        d->name = checksums[i].header;
        d->malformed = strlen(value) > WANT_MAX;
        snprintf(d->want, sizeof(d->want), "%s", d->malformed ? "" : value);
        return true;
    }
    return false;
}

bool digest_offered(const struct up_header *h, size_t n)
{
    digest d = {0};
    return choose(&d, h, n);
}

sc_code digest_for(const struct up_header *h, size_t n, digest **out)
{
    *out = NULL;
    digest *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return SC_ENOMEM;
    if (!choose(d, h, n)) {
        free(d);
        return SC_OK;
    }
    pthread_once(&tables_once, make_tables);
    const EVP_MD *md = md_of(d->kind);
    if (md != NULL) {
        d->md = EVP_MD_CTX_new();
        if (d->md == NULL || EVP_DigestInit_ex(d->md, md, NULL) != 1) {
            digest_free(d);
            return SC_ECRYPTO;
        }
    }
    *out = d;
    return SC_OK;
}

sc_code digest_update(digest *d, const void *p, size_t n)
{
    switch (d->kind) {
    case K_CRC64NVME:
        d->crc = crc64nvme_update(d->crc, p, n);
        return SC_OK;
    case K_CRC32C:
        d->crc = crc32c((uint32_t)d->crc, p, n);
        return SC_OK;
    case K_CRC32:
        d->crc = crc32_update((uint32_t)d->crc, p, n);
        return SC_OK;
    default:
        return EVP_DigestUpdate(d->md, p, n) == 1 ? SC_OK : SC_ECRYPTO;
    }
}

/* The value as the upstream spells it: lower-case hex for the ETag, else base64. */
static bool spell(digest *d, char *out, size_t cap)
{
    unsigned char raw[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (d->md != NULL) {
        if (EVP_DigestFinal_ex(d->md, raw, &len) != 1)
            return false;
    } else {
        len = d->kind == K_CRC64NVME ? 8 : 4;
        for (unsigned i = 0; i < len; i++)
            raw[i] = (unsigned char)(d->crc >> (8 * (len - 1 - i)));
    }
    if (d->kind == K_MD5_ETAG) {
        for (unsigned i = 0; i < len && 2 * i + 2 < cap; i++)
            snprintf(out + 2 * i, 3, "%02x", raw[i]);
        return true;
    }
    if (4 * ((len + 2) / 3) >= cap)
        return false;
    EVP_EncodeBlock((unsigned char *)out, raw, (int)len);
    return true;
}

bool digest_matches(digest *d)
{
    char got[2 * EVP_MAX_MD_SIZE + 1] = "";
    return !d->malformed && spell(d, got, sizeof(got)) && strcmp(got, d->want) == 0;
}

const char *digest_name(const digest *d)
{
    return d->name;
}

void digest_free(digest *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->md);
    free(d);
}

void body_check_start(struct body_check *c, const struct up_head *head)
{
    body_check_release(c);
    c->active = head->status == 200;
    c->length = head->content_length;
    if (c->active && digest_for(head->headers, head->n_headers, &c->digest) != SC_OK)
        c->broken = true;
}

void body_check_add(struct body_check *c, const void *p, size_t n)
{
    c->received += n;
    if (c->digest && !c->broken && digest_update(c->digest, p, n) != SC_OK)
        c->broken = true;
}

sc_code body_check_verdict(struct body_check *c, sc_code rc, const char *bucket, const char *key)
{
    if (rc != SC_OK || !c->active)
        return rc;
    if (c->length >= 0 && c->received != (uint64_t)c->length) {
        sc_warn("upstream body of %s/%s is %llu bytes, not the %lld announced: the transfer fails",
                bucket, key, (unsigned long long)c->received, (long long)c->length);
        return SC_EMISMATCH;
    }
    if (c->broken || (c->digest && !digest_matches(c->digest))) {
        sc_warn("upstream body of %s/%s does not match its %s: the transfer fails", bucket, key,
                c->digest ? digest_name(c->digest) : "digest");
        return SC_EMISMATCH;
    }
    return SC_OK;
}

void body_check_release(struct body_check *c)
{
    digest_free(c->digest);
    *c = (struct body_check){.length = -1};
}
