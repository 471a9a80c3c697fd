/*
 * digest.h - checking a whole object's body against what the upstream says it is.
 *
 * Two things in an S3 response head describe the body: the ETag, which is the body's MD5
 * for a single-part upload (a quoted 32-digit hex string), and, when the request asked
 * with `x-amz-checksum-mode: ENABLED`, a full-object checksum: one of
 * x-amz-checksum-crc64nvme, -crc32c, -crc32, -sha256, -sha1, base64 of the big-endian
 * value. The cheapest check offered is the one made: a CRC (crc64nvme, crc32c, crc32, in
 * that order), else the MD5, else sha256, sha1. Each alone tells the body from any other.
 * SSE-KMS and SSE-C objects have ETags that look like an MD5 but are not one: for them
 * only a checksum counts.
 * A multipart ETag ("...-N") and a COMPOSITE checksum (x-amz-checksum-type: COMPOSITE,
 * or a value ending in "-N") describe the parts, not the body: nothing to check then.
 *
 * The same checksums guard an aws-chunked upload: an SDK that streams one
 * (x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER and friends) names a checksum
 * in x-amz-trailer and sends its value after the last chunk. The upstream never sees that
 * trailer (the gateway sends it a plain body), so the gateway checks it over the decoded
 * payload (digest_for_checksum), before the upstream may have the body's last byte.
 *
 * The check runs over the body as it streams (digest_update) and gives its verdict once,
 * at the end (digest_matches, or digest_matches_value when the value comes last).
 */
#ifndef GW_DIGEST_H
#define GW_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/md5.h"
#include "../common/sc_err.h"
#include "http_header.h"

/* The request header that asks S3 for the full-object checksum (GetObject, HeadObject). */
#define DIGEST_MODE_HEADER "x-amz-checksum-mode"
#define DIGEST_MODE_VALUE  "ENABLED"

typedef struct digest digest;

/* What a body is checked against (digest_check_of), for counting. */
enum digest_check {
    DIGEST_LENGTH,    /* its length alone: the head offers no MD5 and no full-object checksum */
    DIGEST_CRC64NVME, /* the full-object x-amz-checksum-* of that name */
    DIGEST_CRC32C,
    DIGEST_CRC32,
    DIGEST_MD5, /* the ETag of a single-part upload */
    DIGEST_SHA256,
    DIGEST_SHA1,
    DIGEST_CHECKS /* how many there are */
};

/*
 * @brief Starts the check that a response head offers.
 * @param[in] h, n the response headers (names compared case-insensitively).
 * @param[out] out the check, owned by the caller (digest_free()); NULL when the head
 *             offers nothing to check the body against.
 * @return SC_OK, SC_ENOMEM, SC_ECRYPTO (OpenSSL could not start the hash).
 */
sc_code digest_for(const struct http_header *h, size_t n, digest **out);

/*
 * @brief Starts the check of the checksum a header called name carries, whose value comes
 * at the end (digest_matches_value): an aws-chunked upload's trailer.
 * @param[in] name x-amz-checksum-crc64nvme, -crc32c, -crc32, -sha256 or -sha1, in any case;
 *            NULL: none.
 * @param[out] out the check, owned by the caller (digest_free()); NULL when name is NULL or
 *             names no checksum of that list (then nothing is checked).
 * @return SC_OK, SC_ENOMEM, SC_ECRYPTO (OpenSSL could not start the hash).
 */
sc_code digest_for_checksum(const char *name, digest **out);

/* @brief Whether a response head offers something to check the body against (as digest_for). */
bool digest_offered(const struct http_header *h, size_t n);

/*
 * @brief Adds the next n body bytes.
 * @return SC_OK, or SC_ECRYPTO (the hash failed: the body can no longer be verified, and
 *         the verdict is that it does not match).
 */
sc_code digest_update(digest *d, const void *p, size_t n);

/*
 * @brief The verdict: true if the bytes added are the body the head described. Call once,
 * after the last byte; a value that is not even well-formed never matches.
 */
bool digest_matches(digest *d);

/*
 * @brief As digest_matches, against a value given now (as sent: base64 for a checksum).
 * @param[in] value NULL (it was never sent) never matches.
 */
bool digest_matches_value(digest *d, const char *value);

/* @brief When d checks the ETag's MD5 (DIGEST_MD5, well-formed): true, and the 16 bytes it wants
 * in out. False for any other check, or NULL. */
bool digest_md5_want(const digest *d, uint8_t out[SC_MD5_LEN]);

/* @brief What is checked, for logs: "ETag" or the checksum header's name. Static. */
const char *digest_name(const digest *d);

/* @brief What d checks; DIGEST_LENGTH for NULL (digest_for found nothing to check). */
enum digest_check digest_check_of(const digest *d);

/* @brief The check's name as a metric label: "crc64nvme", ..., "md5", "length". Static. */
const char *digest_check_label(enum digest_check check);

/* @brief Frees the check. NULL is a no-op. */
void digest_free(digest *d);

/*
 * A 200's body checked as it streams to its readers: its length against Content-Length, and
 * its digest where the head offers one. The relay that carries it must hold the last byte
 * back (relay_hold_tail) and finish with the verdict, so that a body that fails the check
 * reaches no reader as a success. Zero-initialize; used on the upstream thread only.
 */
struct body_check {
    bool active;       /* a 200 whose body is checked */
    bool broken;       /* the digest itself failed: the body cannot be verified */
    digest *digest;    /* NULL: the length is all there is to check */
    int64_t length;    /* announced, or -1 */
    uint64_t received; /* body bytes added */
    bool deferred;     /* the MD5 is checked over the whole body elsewhere (body_check_defer) */
};

/* @brief Starts checking the body of head, if it is a 200. Cannot fail (see broken). */
void body_check_start(struct body_check *c, const struct http_head *head);

/*
 * @brief Leaves the MD5 to the caller, who will hash the whole body at once (upstream/verify.h)
 * and give the verdict with body_check_md5_verdict(): only when the check is the ETag's MD5
 * and no byte was added yet. Then the bytes added count for the length only.
 * @param[out] want the MD5 the body must have.
 * @return true if deferred; false: nothing changed, the check goes on as it streams.
 */
bool body_check_defer(struct body_check *c, uint8_t want[SC_MD5_LEN]);

/* @brief Adds the next n body bytes (those the relay took). */
void body_check_add(struct body_check *c, const void *p, size_t n);

/*
 * @brief The verdict on a transfer that ended with rc: rc itself unless SC_OK, else SC_OK or
 * SC_EMISMATCH (the length or digest is wrong; logged with bucket/key and what failed). A
 * deferred check's SC_OK covers the length only.
 */
sc_code body_check_verdict(struct body_check *c, sc_code rc, const char *bucket, const char *key);

/* @brief The verdict of a deferred MD5 (after body_check_verdict() said SC_OK): SC_OK if it
 * matched, else SC_EMISMATCH (logged as body_check_verdict does). */
sc_code body_check_md5_verdict(const struct body_check *c, bool matches, const char *bucket,
                               const char *key);

/* @brief Frees what the check holds; it may be started again. */
void body_check_release(struct body_check *c);

/*
 * @brief Tells whether an ETag is a quoted 32-digit hex MD5 (a single-part upload's, which
 * is the MD5 of the body); if so and hex is not NULL, writes the digest there in lower case.
 */
bool digest_etag_md5(const char *etag, char hex[33]);

#endif
