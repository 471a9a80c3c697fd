/*
 * digest.h - checking a whole object's body against what the upstream says it is.
 *
 * Two things in an S3 response head describe the body: the ETag, which is the body's MD5
 * for a single-part upload (a quoted 32-digit hex string), and, when the request asked
 * with `x-amz-checksum-mode: ENABLED`, a full-object checksum: one of
 * x-amz-checksum-crc64nvme, -crc32c, -crc32, -sha256, -sha1, base64 of the big-endian
 * value. The MD5 is used where there is one; otherwise the first checksum of that list.
 * A multipart ETag ("...-N") and a COMPOSITE checksum (x-amz-checksum-type: COMPOSITE,
 * or a value ending in "-N") describe the parts, not the body: nothing to check then.
 *
 * The check runs over the body as it streams (digest_update) and gives its verdict once,
 * at the end (digest_matches).
 */
#ifndef GW_DIGEST_H
#define GW_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/sc_err.h"
#include "upstream.h"

/* The request header that asks S3 for the full-object checksum (GetObject, HeadObject). */
#define DIGEST_MODE_HEADER "x-amz-checksum-mode"
#define DIGEST_MODE_VALUE  "ENABLED"

typedef struct digest digest;

/*
 * @brief Starts the check that a response head offers.
 * @param[in] h, n the response headers (names compared case-insensitively).
 * @param[out] out the check, owned by the caller (digest_free()); NULL when the head
 *             offers nothing to check the body against.
 * @return SC_OK, SC_ENOMEM, SC_ECRYPTO (OpenSSL could not start the hash).
 */
sc_code digest_for(const struct up_header *h, size_t n, digest **out);

/*
 * @brief Adds the next n body bytes.
 * @return SC_OK, or SC_ECRYPTO (the hash failed: the body can no longer be verified).
 */
sc_code digest_update(digest *d, const void *p, size_t n);

/*
 * @brief The verdict: true if the bytes added are the body the head described. Call once,
 * after the last byte; a value that is not even well-formed never matches.
 */
bool digest_matches(digest *d);

/* @brief What is checked, for logs: "ETag" or the checksum header's name. Static. */
const char *digest_name(const digest *d);

/* @brief Frees the check. NULL is a no-op. */
void digest_free(digest *d);

#endif
