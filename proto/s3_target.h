/*
 * s3_target.h - what an incoming S3 request is about: bucket, key, query
 * parameters, and whether the cache may answer it.
 *
 * Input is the method, the request-target exactly as received (origin form:
 * path and optional "?query", still percent-encoded), the Host header and the
 * configured virtual-host domain. Nothing here touches the network.
 *
 * Addressing:
 *  - Virtual-hosted style: when Host, without its port and one trailing dot,
 *    is "<bucket>.<vhost-domain>" (case-insensitive), the bucket is that
 *    prefix, lower-cased, and the whole path after the first '/' is the key.
 *  - Otherwise path style: "/bucket/key". "/" alone is the service
 *    (ListBuckets, empty bucket); "/bucket" and "/bucket/" have an empty key.
 *  - "/_s3cached" and "/_s3cached/..." in path style are the admin API
 *    (S3_REQ_ADMIN); key then holds the decoded rest after "/_s3cached/".
 *
 * Keys are percent-decoded to their exact bytes and never normalized: spaces,
 * UTF-8, '+' (a literal plus, never a space), '%' (as %25), runs of '/', "."
 * and ".." segments and a trailing '/' all survive. Query names and values
 * are decoded the same way ('+' stays '+'); the raw query is kept for
 * forwarding, so nothing is lost.
 *
 * Bucket names: the current S3 rules are 3-63 characters of a-z, 0-9, '.'
 * and '-', starting and ending with a letter or digit. Path style also
 * accepts the legacy us-east-1 names (up to 255 characters, with A-Z and
 * '_'), since such buckets still exist and the gateway only forwards to them.
 * Both refuse ".." (it can only be hostile). Virtual-hosted names must follow
 * the current rules, as DNS requires.
 *
 * Refused (SC_EINVAL, with the reason in *fault): a target over S3_TARGET_MAX
 * bytes, not starting with '/', holding control characters or spaces, a bad
 * or %00 escape, more than S3_TARGET_PARAMS_MAX query parameters, an invalid
 * bucket name, a decoded key over S3_KEY_MAX bytes.
 */
#ifndef S3_TARGET_H
#define S3_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/sc_err.h"

#define S3_TARGET_MAX        8192 /* bytes of request-target */
#define S3_KEY_MAX           1024 /* bytes of decoded key, as S3 allows */
#define S3_TARGET_PARAMS_MAX 64   /* query parameters */

enum s3_req_kind {
    S3_REQ_PASS,        /* forward upstream as is */
    S3_REQ_GET_OBJECT,  /* plain GetObject: cacheable */
    S3_REQ_HEAD_OBJECT, /* plain HeadObject: cacheable */
    S3_REQ_ADMIN,       /* the gateway's own API under /_s3cached */
};

enum s3_method {
    S3_METHOD_OTHER, /* not an S3 method (PATCH, TRACE, "get"...): the gateway refuses it */
    S3_METHOD_GET,
    S3_METHOD_HEAD,
    S3_METHOD_PUT,
    S3_METHOD_POST,
    S3_METHOD_DELETE,
    S3_METHOD_OPTIONS, /* CORS preflight */
};

/* Why a target was refused; maps to the S3 error the client gets. */
enum s3_target_fault {
    S3_TARGET_FAULT_NONE,
    S3_TARGET_FAULT_URI,          /* InvalidURI */
    S3_TARGET_FAULT_BUCKET,       /* InvalidBucketName */
    S3_TARGET_FAULT_KEY_TOO_LONG, /* KeyTooLongError */
    S3_TARGET_FAULT_TOO_LONG,     /* InvalidURI: the target is over S3_TARGET_MAX */
};

/* What a request means for cached copies. */
enum s3_invalidate {
    S3_INVALIDATE_NONE,   /* changes no object's content */
    S3_INVALIDATE_KEY,    /* (bucket, key) changes or goes away */
    S3_INVALIDATE_BUCKET, /* some keys of bucket change, named only in the body */
};

struct s3_param {
    char *name;  /* decoded */
    char *value; /* decoded; NULL for a bare flag such as "?uploads" ("?a=" gives "") */
};

struct s3_target {
    enum s3_req_kind kind;
    enum s3_method method;
    bool virtual_host;       /* the bucket came from Host */
    char *bucket;            /* "" for service-level and admin requests */
    char *key;               /* decoded, "" when none; no NUL inside (%00 is refused) */
    size_t key_len;          /* strlen(key) */
    char *raw_path;          /* as received, percent-encoded */
    char *raw_query;         /* as received, after '?'; NULL when there was no '?' */
    struct s3_param *params; /* in order of appearance; duplicates kept */
    size_t nparams;
};

/*
 * @brief Parses and classifies a request.
 * @param[in] method the HTTP method, e.g. "GET" (case-sensitive).
 * @param[in] target the request-target as received.
 * @param[in] host the Host header, or NULL.
 * @param[in] vhost_domain the configured domain for virtual-hosted style
 *            (e.g. "s3.local"), or NULL/"" to accept path style only.
 * @param[out] out the result; on success owned by the caller and released
 *             with s3_target_free(); on error zeroed (free is still safe).
 * @param[out] fault the reason when SC_EINVAL is returned, else
 *             S3_TARGET_FAULT_NONE; may be NULL.
 * @return SC_OK, SC_EINVAL (see the list at the top), SC_ENOMEM.
 * @note GET/HEAD are cacheable only with a non-empty bucket and key and no
 *       query parameter other than "x-id" (added by SDK v3, any value).
 *       versionId, partNumber, response-*, uploadId, acl, tagging, torrent,
 *       attributes, presigned-URL parameters, and anything unknown make the
 *       request S3_REQ_PASS. Headers are not seen here: the caller passes a
 *       read with a header s3_target_header_needs_upstream() names. A method
 *       that is S3_METHOD_OTHER still parses; the caller refuses it.
 */
sc_code s3_target_parse(const char *method, const char *target, const char *host,
                        const char *vhost_domain, struct s3_target *out,
                        enum s3_target_fault *fault);

/*
 * @brief Says whether a request header asks for something only the upstream can answer, so
 *        that a GET or HEAD Object carrying it must be forwarded, uncached.
 * @param[in] name the header's name, any case.
 * @param[in] value its value, or NULL.
 * @return true for every x-amz-* header except those that only authenticate or describe
 *         the request (x-amz-date, x-amz-content-sha256, x-amz-security-token,
 *         x-amz-user-agent) and "x-amz-checksum-mode: ENABLED", which the gateway honours
 *         itself: SSE-C keys (x-amz-server-side-encryption-customer-*), x-amz-request-payer,
 *         x-amz-expected-bucket-owner, and whatever S3 adds later. False for other headers
 *         (Range and the conditionals are answered by the gateway).
 */
bool s3_target_header_needs_upstream(const char *name, const char *value);

/* @brief Frees what t owns and zeroes it; safe on a zeroed struct. */
void s3_target_free(struct s3_target *t);

/*
 * @brief Finds the first query parameter called name (exact, case-sensitive).
 * @return the parameter, owned by t, or NULL.
 */
const struct s3_param *s3_target_param(const struct s3_target *t, const char *name);

/*
 * @brief Says which cached objects a request may change, so the gateway can
 *        drop them when it is forwarded.
 * @return for requests on a key (t->bucket, t->key):
 *         S3_INVALIDATE_KEY for PUT (PutObject, and CopyObject, whose
 *         destination is this key), DELETE (DeleteObject, any version),
 *         POST with uploadId (CompleteMultipartUpload) and any other POST on
 *         the key (restore and the like, conservatively);
 *         S3_INVALIDATE_NONE for PUT/DELETE with uploadId (UploadPart,
 *         UploadPartCopy, AbortMultipartUpload), POST with uploads
 *         (CreateMultipartUpload) or select, GET, HEAD, and admin requests.
 *         For requests on the bucket (empty key): S3_INVALIDATE_BUCKET for
 *         POST (DeleteObjects "?delete" carries its keys in the body, and a
 *         browser-form POST upload carries its key in the body) and DELETE
 *         (DeleteBucket); S3_INVALIDATE_NONE otherwise.
 */
enum s3_invalidate s3_target_invalidation(const struct s3_target *t);

#endif
