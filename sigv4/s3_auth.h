/*
 * s3_auth.h - verifying the AWS Signature Version 4 of an incoming S3 request
 * against the configured client keys (client_keys.h). Pure: no network, no
 * clock (the caller passes the time), no logging.
 *
 * A request is one of:
 *   anonymous     no Authorization header, no X-Amz-Algorithm/-Credential/
 *                 -Signature/-Date/-SignedHeaders/-Expires query parameter and
 *                 no SigV2 query (AWSAccessKeyId);
 *   header        Authorization: AWS4-HMAC-SHA256 Credential=AK/YYYYMMDD/REGION/s3/
 *                 aws4_request, SignedHeaders=a;b, Signature=<64 hex>; the time is
 *                 x-amz-date, else Date; x-amz-content-sha256 is required and its
 *                 value, as the client declared it (hex SHA-256, UNSIGNED-PAYLOAD or
 *                 STREAMING-*), is the payload hash signed: the body itself is not
 *                 hashed and aws-chunked chunk signatures are not checked;
 *   presigned     X-Amz-Algorithm=AWS4-HMAC-SHA256, X-Amz-Credential, X-Amz-Date,
 *                 X-Amz-Expires (0..604800), X-Amz-SignedHeaders, X-Amz-Signature in the
 *                 query; the payload is UNSIGNED-PAYLOAD; the canonical query is the
 *                 raw query without X-Amz-Signature.
 * The canonical URI is the raw path as received, decoded once and encoded once
 * (sigv4.h's S3 mode: a correctly encoded path is used byte for byte, never
 * normalized). Headers are those named in SignedHeaders, with the values
 * received. The credential scope must name the gateway's region and service
 * "s3", and its date must be the request's. Signatures are compared with
 * CRYPTO_memcmp. Clock skew: a header-signed request more than
 * S3_AUTH_SKEW_SECONDS away from now is refused; a presigned URL is valid from
 * S3_AUTH_SKEW_SECONDS before its X-Amz-Date to X-Amz-Date + X-Amz-Expires.
 * After a good signature, every x-amz-* header but x-amz-content-sha256 must
 * have been signed, as S3 requires. SigV2 (header "AWS AK:sig", or
 * AWSAccessKeyId in the query) and SigV4A (AWS4-ECDSA-P256-SHA256) are refused.
 * A session token (x-amz-security-token) is neither required nor checked: the
 * configured keys are long-term keys.
 */
#ifndef GW_S3_AUTH_H
#define GW_S3_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../common/sc_err.h"
#include "../proto/s3_xml.h"
#include "client_keys.h"
#include "sigv4.h"

#define S3_AUTH_SKEW_SECONDS (15 * 60)
#define S3_AUTH_MAX_EXPIRES  (7 * 24 * 3600)

enum s3_auth_kind {
    S3_AUTH_ANONYMOUS, /* no signature of any kind */
    S3_AUTH_HEADER,    /* the Authorization header */
    S3_AUTH_PRESIGNED, /* query-string authentication (a presigned URL) */
};

/* Why a request was refused; s3_auth_fault_info() gives the S3 error to answer with. */
enum s3_auth_fault {
    S3_AUTH_FAULT_NONE,
    S3_AUTH_FAULT_UNSUPPORTED,      /* 400 InvalidRequest: SigV2, SigV4A, another scheme */
    S3_AUTH_FAULT_TWO_MECHANISMS,   /* 400 InvalidArgument: header and query both */
    S3_AUTH_FAULT_HEADER_MALFORMED, /* 400 AuthorizationHeaderMalformed */
    S3_AUTH_FAULT_QUERY_MALFORMED,  /* 400 AuthorizationQueryParametersError */
    S3_AUTH_FAULT_MISSING_SHA256,   /* 400 InvalidRequest: no x-amz-content-sha256 */
    S3_AUTH_FAULT_BAD_SHA256,       /* 400 InvalidArgument: not hex, UNSIGNED or STREAMING */
    S3_AUTH_FAULT_NO_DATE,          /* 403 AccessDenied: no valid x-amz-date or Date */
    S3_AUTH_FAULT_UNKNOWN_KEY,      /* 403 InvalidAccessKeyId */
    S3_AUTH_FAULT_SKEWED,           /* 403 RequestTimeTooSkewed */
    S3_AUTH_FAULT_EXPIRED,          /* 403 AccessDenied: the presigned URL has expired */
    S3_AUTH_FAULT_NOT_YET_VALID,    /* 403 AccessDenied: X-Amz-Date is in the future */
    S3_AUTH_FAULT_SIGNATURE,        /* 403 SignatureDoesNotMatch */
    S3_AUTH_FAULT_UNSIGNED_HEADERS, /* 403 AccessDenied: an x-amz-* header was not signed */
    S3_AUTH_FAULT_MAX
};

/* What is verified: the request as received. Everything is borrowed. */
struct s3_auth_input {
    const char *method;
    const char *raw_path;               /* as received, percent-encoded */
    const char *raw_query;              /* after '?', as received; NULL when none */
    const struct sigv4_header *headers; /* every request header, in the order received */
    size_t n_headers;
    const ckeys *keys;
    const char *region; /* the gateway's --region */
    time_t now;
};

struct s3_auth_result {
    enum s3_auth_kind kind;
    const struct ckey *key;   /* the key that signed (owned by the key table); NULL if none */
    enum s3_auth_fault fault; /* S3_AUTH_FAULT_NONE unless SC_EINVAL was returned */
    char message[256];        /* the error message for the client; "" unless refused */
};

/*
 * @brief Verifies in (see the rules at the top).
 * @param[out] out filled in every case.
 * @return SC_OK: signed by out->key with a good signature, or anonymous
 *         (out->kind; whether anonymous is admitted is the caller's choice);
 *         SC_EINVAL: refused, out->fault and out->message say why;
 *         SC_ENOMEM, SC_ECRYPTO.
 */
sc_code s3_auth_verify(const struct s3_auth_input *in, struct s3_auth_result *out);

/* @brief The entry of the S3 error table (proto/s3_xml.h) to answer a fault with. */
enum s3_xml_error s3_auth_fault_error(enum s3_auth_fault f);

/* @brief That entry's status, code and usual message; static storage, never NULL. */
const struct s3_xml_error_info *s3_auth_fault_info(enum s3_auth_fault f);

/*
 * @brief True for the query parameters of a presigned URL (X-Amz-Algorithm,
 * -Credential, -Date, -Expires, -SignedHeaders, -Signature, -Security-Token, and SigV2's
 * AWSAccessKeyId, Expires and Signature; the name decoded, any case): they are the
 * client's signature and never go upstream (no S3 operation has a parameter of these names).
 */
bool s3_auth_is_query_param(const char *name);

/*
 * @brief Copies raw_query without the parameters s3_auth_is_query_param() names.
 * @param[out] out malloc'd result owned by the caller; NULL when nothing is left.
 * @return SC_OK, SC_EINVAL (a bad escape), SC_ENOMEM.
 */
sc_code s3_auth_strip_query(const char *raw_query, char **out);

#endif
