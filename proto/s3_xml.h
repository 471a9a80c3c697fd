/*
 * s3_xml.h - S3 error replies: the XML body and the table of errors the
 * gateway produces itself.
 *
 * A body looks like
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <Error><Code>NoSuchKey</Code><Message>...</Message><Resource>...</Resource>
 *   <RequestId>...</RequestId></Error>
 * (one line after the declaration). Every field is escaped: & < > " ' become
 * entities; tab, LF and CR become character references (so a key holding them
 * survives); other control characters (U+0000-U+001F, U+007F) are dropped;
 * bytes that are not well-formed UTF-8, and U+FFFE/U+FFFF, become U+FFFD. The
 * result is always well-formed XML 1.0 whatever bytes the client sent.
 *
 * Upstream unreachable: S3_XML_BAD_GATEWAY is HTTP 502 with Code "BadGateway".
 * S3 itself never answers 502, so no S3 code names it; ServiceUnavailable is
 * S3's code for its own 503 and would claim the gateway is overloaded. The AWS
 * SDKs (botocore legacy and standard modes, Java v2, Go v2) retry
 * 500/502/503/504 by status whatever the code.
 */
#ifndef S3_XML_H
#define S3_XML_H

#include <stddef.h>

#include "../common/sc_err.h"

/* Each field of an error body is refused beyond this many bytes. */
#define S3_XML_FIELD_MAX (64u * 1024u)

/* The error situations the gateway answers itself. */
enum s3_xml_error {
    S3_XML_INTERNAL_ERROR, /* 500 InternalError: also the fallback for unknown values */
    S3_XML_INVALID_RANGE,  /* 416 InvalidRange */
    S3_XML_NO_SUCH_KEY,    /* 404 NoSuchKey */
    S3_XML_NO_SUCH_BUCKET, /* 404 NoSuchBucket */
    S3_XML_PRECONDITION_FAILED,
    S3_XML_INVALID_REQUEST,
    S3_XML_INVALID_URI,
    S3_XML_INVALID_BUCKET_NAME,
    S3_XML_KEY_TOO_LONG,
    S3_XML_HEADERS_TOO_LARGE, /* 400 RequestHeaderSectionTooLarge */
    S3_XML_BAD_GATEWAY,       /* 502 BadGateway: upstream unreachable */
    S3_XML_SERVICE_UNAVAILABLE,
    S3_XML_SLOW_DOWN,
    S3_XML_METHOD_NOT_ALLOWED,
    S3_XML_NOT_IMPLEMENTED,
    S3_XML_ENTITY_TOO_LARGE,
    S3_XML_INCOMPLETE_BODY,
    S3_XML_MISSING_CONTENT_LENGTH,
    S3_XML_REQUEST_TIMEOUT,
    S3_XML_ACCESS_DENIED,
    S3_XML_SIGNATURE_DOES_NOT_MATCH,
    S3_XML_BAD_DIGEST, /* 400 BadDigest: a body's checksum is not the one sent */
    S3_XML_INVALID_ARGUMENT,
    S3_XML_AUTH_HEADER_MALFORMED, /* 400 AuthorizationHeaderMalformed */
    S3_XML_AUTH_QUERY_MALFORMED,  /* 400 AuthorizationQueryParametersError */
    S3_XML_INVALID_ACCESS_KEY_ID,
    S3_XML_REQUEST_TIME_TOO_SKEWED,
    S3_XML_ERROR_MAX
};

struct s3_xml_error_info {
    int status;          /* HTTP status */
    const char *code;    /* S3 error code */
    const char *message; /* S3's usual English message */
};

/*
 * @brief The status, code and message for an error situation.
 * @return static storage, never NULL; out-of-range values give InternalError.
 */
const struct s3_xml_error_info *s3_xml_error_info(enum s3_xml_error e);

/*
 * @brief XML-escapes s (see the rules at the top of this file).
 * @param[in] s NUL-terminated.
 * @param[out] out malloc'd NUL-terminated result, owned by the caller.
 * @return SC_OK, SC_ETOOBIG (s longer than S3_XML_FIELD_MAX), SC_ENOMEM.
 */
sc_code s3_xml_escape(const char *s, char **out);

/*
 * @brief Builds an error body.
 * @param[in] code the S3 error code; required.
 * @param[in] message, resource, request_id optional: NULL leaves the element out.
 * @param[out] out malloc'd NUL-terminated body, owned by the caller.
 * @param[out] out_len its length without the NUL; may be NULL.
 * @return SC_OK, SC_EINVAL (code NULL), SC_ETOOBIG (a field longer than
 *         S3_XML_FIELD_MAX), SC_ENOMEM. On error *out is NULL.
 */
sc_code s3_xml_error_body(const char *code, const char *message, const char *resource,
                          const char *request_id, char **out, size_t *out_len);

/*
 * @brief Builds the body for a table entry: s3_xml_error_body() with its code
 *        and message.
 * @return as s3_xml_error_body().
 */
sc_code s3_xml_error_body_for(enum s3_xml_error e, const char *resource, const char *request_id,
                              char **out, size_t *out_len);

/*
 * @brief Finds the next <tag>text</tag> at or after *p (no attributes, no
 * nesting of the same tag): enough for S3's own response and request bodies.
 * @param[in,out] p where to search from; on success moved past the closing tag.
 * @param[out] text, text_end the element's raw text, pointing into the input.
 * @return SC_OK, SC_ENOTFOUND (no more such elements), SC_EINVAL (unterminated).
 */
sc_code s3_xml_element(const char **p, const char *end, const char *tag, const char **text,
                       const char **text_end);

/*
 * @brief Decodes element text: the five predefined entities and numeric
 * character references; markup, a bad entity or a NUL byte (no XML character;
 * the result would be cut short at it) is an error.
 * @param max the most bytes the result may have.
 * @param[out] out malloc'd NUL-terminated text, owned by the caller.
 * @return SC_OK, SC_EINVAL (malformed or longer than max), SC_ENOMEM.
 */
sc_code s3_xml_unescape(const char *text, size_t len, size_t max, char **out);

#endif
