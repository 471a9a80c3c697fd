/*
 * sigv4.h - AWS Signature Version 4 for the requests the gateway sends upstream,
 * and for checking the signatures of the requests clients send it.
 *
 * The gateway signs every upstream request (GET, HEAD, PUT, POST, DELETE,
 * listings, multipart) with its own credentials, or a client's, in the
 * Authorization header; s3_auth.c verifies client requests with
 * sigv4_signature().
 * Two rule sets are supported:
 *
 *   S3 mode       the path is canonicalized as S3 does it: decoded once and
 *                 encoded once with '/' kept, never normalized (".", ".." and
 *                 "//" stay as they are), never double-encoded. A correctly
 *                 encoded wire path is therefore used exactly as given.
 *   generic mode  the rules of the AWS SigV4 test suite for other services:
 *                 "." and ".." segments resolved, empty segments dropped, and
 *                 the result encoded again (a wire path "/a%20b" is signed as
 *                 "/a%2520b"; an unencoded "/a b" as "/a%20b").
 *
 * In both modes the query is canonicalized the same way: split on '&', each
 * name and value decoded then re-encoded with S3 rules ('/' encoded, '+' kept
 * literal and so encoded as %2B), '=' added when missing ("uploads" becomes
 * "uploads="), sorted by name then value in byte order, joined with '&'.
 * Headers are canonicalized by lower-casing names, trimming values and
 * collapsing inner runs of spaces and tabs to one space, sorting by name, and
 * joining repeated names with ',' in the order given.
 *
 * Secrets: the secret key and every key derived from it are wiped with
 * OPENSSL_cleanse before the functions return. Nothing here logs.
 */
#ifndef SIGV4_H
#define SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../common/sc_err.h"

/*
 * Bounds on caller-supplied input; longer input is refused with SC_ETOOBIG.
 * SIGV4_MAX_FIELD is for the path, the query, or one header value: a client's
 * query (at most S3_TARGET_MAX, 8 KiB) is forwarded canonicalized, up to three
 * bytes per byte, and signed as such, so 32 KiB holds any of them.
 */
#define SIGV4_MAX_FIELD   32768 /* bytes in the path, the query, or one header value */
#define SIGV4_MAX_HEADERS 64    /* headers to sign */
#define SIGV4_MAX_SECRET  256   /* bytes in the secret key */

/* Payload hash for a body that is not hashed (S3 only). */
#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* Lower-case hex SHA-256 of the empty string. */
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* One header to sign. The name may be in any case. */
struct sigv4_header {
    const char *name;
    const char *value;
};

struct sigv4_request {
    const char *method; /* "GET", "PUT", ... */
    const char *path;   /* the URI path exactly as sent on the wire; starts with '/' */
    const char *query;  /* raw query as sent, without '?'; NULL or "" for none */
    /* Headers to sign: must include host and x-amz-date, and in S3 mode
     * x-amz-content-sha256. Every one of them must also be sent. */
    const struct sigv4_header *headers;
    size_t n_headers;
    const char *payload_hash; /* lower-case hex SHA-256 of the body, "UNSIGNED-PAYLOAD", or
                                 a "STREAMING-..." marker of an aws-chunked body */
};

struct sigv4_key {
    const char *access_key;
    const char *secret_key;
    const char *region;  /* "us-east-1" */
    const char *service; /* "s3" */
};

/*
 * @brief Computes the Authorization header value of a request.
 *
 * Writes "AWS4-HMAC-SHA256 Credential=AK/YYYYMMDD/region/service/aws4_request,
 * SignedHeaders=h1;h2, Signature=<64 hex>" (one line, ", " between the parts).
 *
 * @param[in] req the request as it will be sent.
 * @param[in] key credentials and scope. access_key, region and service must be
 *            non-empty and free of '/', ',', spaces and control characters.
 * @param[in] amz_date the signing time, "YYYYMMDDTHHMMSSZ"; must equal the
 *            x-amz-date header of req.
 * @param[in] s3_mode true for S3 rules, false for the generic rules (see above).
 * @param[out] out receives the NUL-terminated value; "" on any error.
 * @param[in] out_len size of out in bytes.
 * @return SC_OK, or one of:
 *  - SC_EINVAL a NULL or malformed argument: bad amz_date or payload_hash, a
 *    required header missing, x-amz-date differing from amz_date, (S3 mode)
 *    x-amz-content-sha256 differing from payload_hash, a header name that is
 *    not an HTTP token, a header value with CR or LF, a path not starting
 *    with '/', a bad '%' escape in the path (S3 mode) or the query.
 *  - SC_ETOOBIG out is too small, or input exceeds a SIGV4_MAX_* bound.
 *  - SC_ENOMEM, SC_ECRYPTO.
 * @note Thread-safe; keeps no state. The session token, if any, is not added
 *       here: the caller sends it as x-amz-security-token and lists it in
 *       req->headers so that it is signed.
 */
sc_code sigv4_authorization(const struct sigv4_request *req, const struct sigv4_key *key,
                            const char *amz_date, bool s3_mode, char *out, size_t out_len);

/*
 * @brief Computes the signature a client made for a request it sent us (S3 mode), so that
 * the caller can compare it with the one the client sent (in constant time).
 *
 * Unlike sigv4_authorization(), no header is required and x-amz-content-sha256 is not
 * compared with payload_hash: req->headers are exactly the headers the client named in
 * SignedHeaders, with the values received (a repeated header once per value, in the
 * order received), and payload_hash is what the client declared (the
 * x-amz-content-sha256 value: hex, UNSIGNED-PAYLOAD or a STREAMING-* marker; presigned
 * URLs sign UNSIGNED-PAYLOAD). The caller checks which headers must be signed.
 *
 * @param[in] req the request as received: method, raw path, raw query (for a presigned
 *            URL, without X-Amz-Signature).
 * @param[in] key the client's key and the scope it signed with.
 * @param[in] amz_date the signing time, "YYYYMMDDTHHMMSSZ".
 * @param[out] out 65 bytes: the lower-case hex signature, NUL-terminated; "" on error.
 * @return SC_OK, SC_EINVAL (malformed input, as for sigv4_authorization()), SC_ETOOBIG,
 *         SC_ENOMEM, SC_ECRYPTO.
 * @note The secret and every derived key are wiped before returning.
 */
sc_code sigv4_signature(const struct sigv4_request *req, const struct sigv4_key *key,
                        const char *amz_date, char out[65]);

/*
 * @brief Builds the canonical request (step 1 of SigV4).
 *
 * Exposed for tests and for logging mismatches at debug level; it holds no
 * secret. Validates req as sigv4_authorization() does, except amz_date.
 *
 * @param[out] out NUL-terminated malloc'd string owned by the caller (free()).
 * @return SC_OK, SC_EINVAL, SC_ETOOBIG, SC_ENOMEM; *out is NULL on error.
 */
sc_code sigv4_canonical_request(const struct sigv4_request *req, bool s3_mode, char **out);

/*
 * @brief Builds the string to sign (step 2 of SigV4) from a canonical request:
 * "AWS4-HMAC-SHA256\n<amz_date>\n<date>/<region>/<service>/aws4_request\n<hex
 * SHA-256 of canonical_request>". Only key->region and key->service are read.
 *
 * @param[out] out NUL-terminated malloc'd string owned by the caller (free()).
 * @return SC_OK, SC_EINVAL (bad amz_date or scope), SC_ENOMEM, SC_ECRYPTO;
 *         *out is NULL on error.
 */
sc_code sigv4_string_to_sign(const char *canonical_request, const struct sigv4_key *key,
                             const char *amz_date, char **out);

/*
 * @brief Canonicalizes a raw query string by the rules above.
 *
 * Sending this result on the wire (instead of the client's raw query) makes
 * the query that S3 sees and the query that was signed the same bytes.
 *
 * @param[in] query raw query without '?'; NULL or "" give "".
 * @param[out] out NUL-terminated malloc'd string owned by the caller (free()).
 * @return SC_OK, SC_EINVAL (a bad '%' escape, or one decoding to NUL),
 *         SC_ETOOBIG (longer than SIGV4_MAX_FIELD), SC_ENOMEM; *out is NULL
 *         on error.
 */
sc_code sigv4_canonical_query(const char *query, char **out);

/*
 * @brief Like sigv4_canonical_query(), for the query the gateway sends upstream: a raw '+'
 * means a space there (S3, s3rver and radosgw read the query form-encoded), so it becomes
 * %20, while "%2B" stays a plus. The result is canonical: signing it changes nothing.
 *
 * @return as sigv4_canonical_query().
 */
sc_code sigv4_forwarded_query(const char *query, char **out);

/*
 * @brief Formats t (seconds since the epoch) as "YYYYMMDDTHHMMSSZ" in UTC.
 * @param[out] out 17 bytes; "" if t cannot be represented.
 */
void sigv4_amz_date(time_t t, char out[17]);

/*
 * @brief Lower-case hex SHA-256 of len bytes at data.
 * @param[out] out 65 bytes, NUL-terminated; "" if the digest fails.
 */
void sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/*
 * @brief Lower-case hex HMAC-SHA256 of len bytes at data under the key_len bytes at key
 * (fleet/ signs peer requests with it).
 * @param[out] out 65 bytes, NUL-terminated; "" on error.
 * @return SC_OK, SC_EINVAL (a key longer than INT_MAX), SC_ECRYPTO.
 */
sc_code sigv4_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                              char out[65]);

#endif
