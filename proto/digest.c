/*
 * digest.c - checking a body against its ETag or checksum (see digest.h): a fill's, or an
 * aws-chunked upload's against its trailer.
 *
 * MD5, SHA-1 and SHA-256 come from OpenSSL, CRC-32 from zlib, CRC-32C from common/crc32c.c
 * (the store's chunk checksum, with the CPU instruction), CRC-64/NVME from common/crc64nvme.c
 * (carry-less multiplication).
 */
#include "digest.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "../common/log.h"
#include "../common/crc32c.h"
#include "../common/uri.h"
#include "../common/crc64nvme.h"

#define WANT_MAX   64         /* a SHA-256 in base64 is 44 characters */
#define ZLIB_SLICE (1u << 30) /* zlib's crc32() takes an unsigned int length */

bool digest_etag_md5(const char *etag, char hex[33])
{
    if (etag == NULL || strlen(etag) != 34 || etag[0] != '"' || etag[33] != '"')
        return false;
    for (int i = 1; i <= 32; i++) {
        char c = etag[i];
        bool is_hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (!is_hex)
            return false;
        if (hex != NULL)
            hex[i - 1] = (char)(c >= 'A' && c <= 'F' ? c + 32 : c);
    }
    if (hex != NULL)
        hex[32] = '\0';
    return true;
}

/* The checksums a fill may get, in the order they are preferred; those a trailer may name.
 * A CRC costs less than the ETag's MD5 (on the 2-core test machine, MB/s: CRC-32C about
 * 30,000, CRC-64/NVME 4,000, zlib's CRC-32 2,400, MD5 650), a SHA may cost more (SHA-256
 * 1,500 with the CPU's SHA extensions, a third of that without), so the MD5 is preferred
 * after the CRCs and before the SHAs. */
static const struct {
    const char *header;
    enum digest_check kind;
    bool before_md5;
} checksums[] = {
    {"x-amz-checksum-crc64nvme", DIGEST_CRC64NVME, true},
    {"x-amz-checksum-crc32c", DIGEST_CRC32C, true},
    {"x-amz-checksum-crc32", DIGEST_CRC32, true},
    {"x-amz-checksum-sha256", DIGEST_SHA256, false},
    {"x-amz-checksum-sha1", DIGEST_SHA1, false},
};

struct digest {
    enum digest_check kind;
    const char *name;
    char want[WANT_MAX + 1]; /* hex for the MD5 ETag, else the header's base64 */
    bool malformed;          /* a value that cannot be right */
    bool failed;             /* the hash failed: the bytes can no longer be verified */
    EVP_MD_CTX *md;          /* MD5, SHA-1, SHA-256 */
    uint64_t crc;            /* the CRCs' register */
};

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n > 0) {
        unsigned int slice = n > ZLIB_SLICE ? ZLIB_SLICE : (unsigned int)n;
        crc = (uint32_t)crc32(crc, p, slice);
        p += slice;
        n -= slice;
    }
    return crc;
}

static const EVP_MD *md_of(enum digest_check kind)
{
    switch (kind) {
    case DIGEST_MD5:
        return EVP_md5();
    case DIGEST_SHA256:
        return EVP_sha256();
    case DIGEST_SHA1:
        return EVP_sha1();
    default:
        return NULL;
    }
}

/* A multipart upload's checksum of its parts' checksums: no digest of the body. */
static bool is_composite(const struct http_header *h, size_t n, const char *value)
{
    const char *type = http_header_get(h, n, "x-amz-checksum-type");
    return strchr(value, '-') != NULL || (type != NULL && strcasecmp(type, "COMPOSITE") == 0);
}

/* SSE-KMS (aws:kms, aws:kms:dsse) and SSE-C objects have ETags that look like an MD5 but are
 * not the MD5 of the body (SSE-S3 ones are). */
static bool etag_may_be_md5(const struct http_header *h, size_t n)
{
    const char *sse = http_header_get(h, n, "x-amz-server-side-encryption");
    return (sse == NULL || strncasecmp(sse, "aws:kms", 7) != 0) &&
           http_header_get(h, n, "x-amz-server-side-encryption-customer-algorithm") == NULL;
}

/* Sets the value the bytes must have; one too long to be right never matches. */
static void expect(digest *d, const char *value)
{
    d->malformed = strlen(value) > WANT_MAX;
    snprintf(d->want, sizeof(d->want), "%s", d->malformed ? "" : value);
}

/* Takes the first full-object checksum in the head whose before_md5 is before. */
static bool choose_checksum(digest *d, const struct http_header *h, size_t n, bool before)
{
    for (size_t i = 0; i < sizeof(checksums) / sizeof(checksums[0]); i++) {
        const char *value = http_header_get(h, n, checksums[i].header);
        if (checksums[i].before_md5 != before || value == NULL || is_composite(h, n, value))
            continue;
        d->kind = checksums[i].kind;
        d->name = checksums[i].header;
        expect(d, value);
        return true;
    }
    return false;
}

/* Picks what to check (d->kind, d->name, d->want), the cheapest on offer; false if the head
 * offers nothing. */
static bool choose(digest *d, const struct http_header *h, size_t n)
{
    if (choose_checksum(d, h, n, true))
        return true;
    if (etag_may_be_md5(h, n) && digest_etag_md5(http_header_get(h, n, "etag"), d->want)) {
        d->kind = DIGEST_MD5;
        d->name = "ETag";
        return true;
    }
    return choose_checksum(d, h, n, false);
}

bool digest_offered(const struct http_header *h, size_t n)
{
    digest d = {0};
    return choose(&d, h, n);
}

/* Allocates the check that pick describes and starts its hash. */
static sc_code start(const digest *pick, digest **out)
{
    digest *d = malloc(sizeof(*d));
    if (d == NULL)
        return SC_ENOMEM;
    *d = *pick;
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

sc_code digest_for(const struct http_header *h, size_t n, digest **out)
{
    *out = NULL;
    digest pick = {0};
    return choose(&pick, h, n) ? start(&pick, out) : SC_OK;
}

sc_code digest_for_checksum(const char *name, digest **out)
{
    *out = NULL;
    for (size_t i = 0; name != NULL && i < sizeof(checksums) / sizeof(checksums[0]); i++)
        if (strcasecmp(name, checksums[i].header) == 0)
            return start(&(digest){.kind = checksums[i].kind, .name = checksums[i].header}, out);
    return SC_OK;
}

sc_code digest_update(digest *d, const void *p, size_t n)
{
    switch (d->kind) {
    case DIGEST_CRC64NVME:
        d->crc = crc64nvme(d->crc, p, n);
        return SC_OK;
    case DIGEST_CRC32C:
        d->crc = crc32c((uint32_t)d->crc, p, n);
        return SC_OK;
    case DIGEST_CRC32:
        d->crc = crc32_update((uint32_t)d->crc, p, n);
        return SC_OK;
    default:
        if (EVP_DigestUpdate(d->md, p, n) != 1)
            d->failed = true;
        return d->failed ? SC_ECRYPTO : SC_OK;
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
        len = d->kind == DIGEST_CRC64NVME ? 8 : 4;
        for (unsigned i = 0; i < len; i++)
            raw[i] = (unsigned char)(d->crc >> (8 * (len - 1 - i)));
    }
    if (d->kind == DIGEST_MD5) {
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
    return !d->malformed && !d->failed && spell(d, got, sizeof(got)) && strcmp(got, d->want) == 0;
}

bool digest_md5_want(const digest *d, uint8_t out[SC_MD5_LEN])
{
    if (d == NULL || d->kind != DIGEST_MD5 || d->malformed || strlen(d->want) != 2 * SC_MD5_LEN)
        return false;
    for (int i = 0; i < SC_MD5_LEN; i++) {
        int hi = uri_hex_digit(d->want[2 * i]), lo = uri_hex_digit(d->want[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

bool digest_matches_value(digest *d, const char *value)
{
    if (value == NULL)
        return false;
    expect(d, value);
    return digest_matches(d);
}

const char *digest_name(const digest *d)
{
    return d->name;
}

enum digest_check digest_check_of(const digest *d)
{
    return d == NULL ? DIGEST_LENGTH : d->kind;
}

const char *digest_check_label(enum digest_check check)
{
    static const char *const labels[DIGEST_CHECKS] = {
        [DIGEST_LENGTH] = "length", [DIGEST_CRC64NVME] = "crc64nvme",
        [DIGEST_CRC32C] = "crc32c", [DIGEST_CRC32] = "crc32",
        [DIGEST_MD5] = "md5",       [DIGEST_SHA256] = "sha256",
        [DIGEST_SHA1] = "sha1",
    };
    return check < DIGEST_CHECKS ? labels[check] : "length";
}

void digest_free(digest *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->md);
    free(d);
}

void body_check_start(struct body_check *c, const struct http_head *head)
{
    body_check_release(c);
    c->active = head->status == 200;
    c->length = head->content_length;
    if (c->active && digest_for(head->headers, head->n_headers, &c->digest) != SC_OK)
        c->broken = true;
}

bool body_check_defer(struct body_check *c, uint8_t want[SC_MD5_LEN])
{
    c->deferred = c->active && !c->broken && c->received == 0 && digest_md5_want(c->digest, want);
    return c->deferred;
}

void body_check_add(struct body_check *c, const void *p, size_t n)
{
    c->received += n;
    if (c->digest && !c->broken && !c->deferred && digest_update(c->digest, p, n) != SC_OK)
        c->broken = true;
}

static sc_code mismatch(const struct body_check *c, const char *bucket, const char *key)
{
    sc_warn("upstream body of %s/%s does not match its %s: the transfer fails", bucket, key,
            c->digest ? digest_name(c->digest) : "digest");
    return SC_EMISMATCH;
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
    if (c->deferred)
        return SC_OK; /* the length is right; the MD5 is for body_check_md5_verdict() */
    if (c->broken || (c->digest && !digest_matches(c->digest)))
        return mismatch(c, bucket, key);
    return SC_OK;
}

sc_code body_check_md5_verdict(const struct body_check *c, bool matches, const char *bucket,
                               const char *key)
{
    return matches ? SC_OK : mismatch(c, bucket, key);
}

void body_check_release(struct body_check *c)
{
    digest_free(c->digest);
    *c = (struct body_check){.length = -1};
}
