/*
 * s3_xml.c - S3 error bodies and the gateway's error table (see s3_xml.h).
 *
 * Output is sized up front: one input byte never becomes more than
 * ESCAPE_MAX output bytes ("&quot;", "&apos;"), so each body is one malloc
 * and the writers never check for room.
 */
#include "s3_xml.h"

#include <stdio.h>

#include "../common/uri.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ESCAPE_MAX 6
#define ENTITY_MAX 12 /* the longest reference read: "&#x" and 8 digits and ";" */

static const struct s3_xml_error_info table[S3_XML_ERROR_MAX] = {
    [S3_XML_INTERNAL_ERROR] = {500, "InternalError",
                               "We encountered an internal error. Please try again."},
    [S3_XML_INVALID_RANGE] = {416, "InvalidRange", "The requested range is not satisfiable"},
    [S3_XML_NO_SUCH_KEY] = {404, "NoSuchKey", "The specified key does not exist."},
    [S3_XML_NO_SUCH_BUCKET] = {404, "NoSuchBucket", "The specified bucket does not exist"},
    [S3_XML_PRECONDITION_FAILED] = {412, "PreconditionFailed",
                                    "At least one of the pre-conditions you specified did not "
                                    "hold"},
    [S3_XML_INVALID_REQUEST] = {400, "InvalidRequest", "Invalid Request"},
    [S3_XML_INVALID_URI] = {400, "InvalidURI", "Couldn't parse the specified URI."},
    [S3_XML_INVALID_BUCKET_NAME] = {400, "InvalidBucketName", "The specified bucket is not valid."},
    [S3_XML_KEY_TOO_LONG] = {400, "KeyTooLongError", "Your key is too long"},
    [S3_XML_HEADERS_TOO_LARGE] = {400, "RequestHeaderSectionTooLarge",
                                  "Your request header section exceeds the maximum allowed size."},
    [S3_XML_BAD_GATEWAY] = {502, "BadGateway",
                            "The gateway could not reach the upstream S3 service. Please try "
                            "again."},
    [S3_XML_SERVICE_UNAVAILABLE] = {503, "ServiceUnavailable",
                                    "The gateway is shutting down. Please try again."},
    [S3_XML_SLOW_DOWN] = {503, "SlowDown", "Please reduce your request rate."},
    [S3_XML_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed",
                                   "The specified method is not allowed against this resource."},
    [S3_XML_NOT_IMPLEMENTED] = {501, "NotImplemented",
                                "A header you provided implies functionality that is not "
                                "implemented."},
    [S3_XML_ENTITY_TOO_LARGE] = {400, "EntityTooLarge",
                                 "Your proposed upload exceeds the maximum allowed size."},
    [S3_XML_INCOMPLETE_BODY] = {400, "IncompleteBody",
                                "You did not provide the number of bytes specified by the "
                                "Content-Length HTTP header."},
    [S3_XML_MISSING_CONTENT_LENGTH] = {411, "MissingContentLength",
                                       "You must provide the Content-Length HTTP header."},
    [S3_XML_REQUEST_TIMEOUT] = {400, "RequestTimeout",
                                "Your socket connection to the server was not read from or "
                                "written to within the timeout period."},
    [S3_XML_ACCESS_DENIED] = {403, "AccessDenied", "Access Denied"},
    [S3_XML_SIGNATURE_DOES_NOT_MATCH] = {403, "SignatureDoesNotMatch",
                                         "The request signature we calculated does not match the "
                                         "signature you provided. Check your key and signing "
                                         "method."},
    [S3_XML_BAD_DIGEST] = {400, "BadDigest",
                           "The checksum you specified did not match the calculated checksum."},
    [S3_XML_INVALID_ARGUMENT] = {400, "InvalidArgument", "Invalid Argument"},
    [S3_XML_AUTH_HEADER_MALFORMED] = {400, "AuthorizationHeaderMalformed",
                                      "The authorization header is malformed"},
    [S3_XML_AUTH_QUERY_MALFORMED] = {400, "AuthorizationQueryParametersError",
                                     "The query-string authentication parameters are malformed"},
    [S3_XML_INVALID_ACCESS_KEY_ID] = {403, "InvalidAccessKeyId",
                                      "The AWS Access Key Id you provided does not exist in our "
                                      "records."},
    [S3_XML_REQUEST_TIME_TOO_SKEWED] = {403, "RequestTimeTooSkewed",
                                        "The difference between the request time and the current "
                                        "time is too large."},
};

const struct s3_xml_error_info *s3_xml_error_info(enum s3_xml_error e)
{
    if ((unsigned)e >= S3_XML_ERROR_MAX)
        return &table[S3_XML_INTERNAL_ERROR];
    return &table[e];
}

/* A write cursor into a buffer already known to be large enough. */
struct out {
    char *p;
    size_t len;
};

static void put(struct out *o, const char *s, size_t n)
{
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void put_str(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/*
 * Length of the well-formed UTF-8 sequence at s (at most avail bytes), or 0
 * if there is none (overlong forms, surrogates, beyond U+10FFFF, truncated).
 * *cp gets the code point.
 */
static size_t utf8_char(const unsigned char *s, size_t avail, uint32_t *cp)
{
    size_t n;
    uint32_t v;
    uint32_t min;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
        v = s[0] & 0x1Fu;
        min = 0x80;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        v = s[0] & 0x0Fu;
        min = 0x800;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        v = s[0] & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0u) != 0x80u)
            return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* The replacement for one ASCII byte, "" to drop it, or NULL to copy it as is. */
static const char *ascii_escape(unsigned char c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&apos;";
    case '\t':
        return "&#9;";
    case '\n':
        return "&#10;";
    case '\r':
        return "&#13;";
    default:
        return c < 0x20 || c == 0x7F ? "" : NULL;
    }
}

/* Appends s escaped; o must have room for ESCAPE_MAX bytes per input byte. */
static void put_escaped(struct out *o, const char *s)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)s;
    size_t avail = strlen(s);
    while (avail > 0) {
        uint32_t cp;
        size_t n = utf8_char(p, avail, &cp);
        if (n == 0 || cp == 0xFFFE || cp == 0xFFFF) {
            /* one U+FFFD per stray byte, or per non-XML character */
            put(o, replacement, sizeof(replacement) - 1);
            n = n == 0 ? 1 : n;
        } else if (n == 1) {
            const char *esc = ascii_escape(p[0]);
            if (esc != NULL)
                put_str(o, esc);
            else
                put(o, (const char *)p, 1);
        } else {
            put(o, (const char *)p, n);
        }
        p += n;
        avail -= n;
    }
}

/* Adds room for s, escaped, to *need; false if s is too long. */
static bool reserve(const char *s, size_t *need)
{
    if (s == NULL)
        return true;
    size_t n = strlen(s);
    if (n > S3_XML_FIELD_MAX)
        return false;
    *need += n * ESCAPE_MAX;
    return true;
}

sc_code s3_xml_escape(const char *s, char **out)
{
    size_t need = 1;
    *out = NULL;
    if (!reserve(s, &need))
        return SC_ETOOBIG;
    struct out o = {malloc(need), 0};
    if (o.p == NULL)
        return SC_ENOMEM;
    put_escaped(&o, s);
    o.p[o.len] = '\0';
    *out = o.p;
    return SC_OK;
}

static void put_element(struct out *o, const char *name, const char *value)
{
    if (value == NULL)
        return;
    put_str(o, "<");
    put_str(o, name);
    put_str(o, ">");
    put_escaped(o, value);
    put_str(o, "</");
    put_str(o, name);
    put_str(o, ">");
}

sc_code s3_xml_error_body(const char *code, const char *message, const char *resource,
                          const char *request_id, char **out, size_t *out_len)
{
    static const char head[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>";
    static const char tail[] = "</Error>";
    /* head, tail, four "<RequestId></RequestId>"-sized tags at most, NUL */
    size_t need = sizeof(head) + sizeof(tail) + 4 * (2 * sizeof("RequestId") + 5) + 1;
    *out = NULL;
    if (code == NULL)
        return SC_EINVAL;
    if (!reserve(code, &need) || !reserve(message, &need) || !reserve(resource, &need) ||
        !reserve(request_id, &need))
        return SC_ETOOBIG;
    struct out o = {malloc(need), 0};
    if (o.p == NULL)
        return SC_ENOMEM;
    put_str(&o, head);
    put_element(&o, "Code", code);
    put_element(&o, "Message", message);
    put_element(&o, "Resource", resource);
    put_element(&o, "RequestId", request_id);
    put_str(&o, tail);
    o.p[o.len] = '\0';
    *out = o.p;
    if (out_len != NULL)
        *out_len = o.len;
    return SC_OK;
}

sc_code s3_xml_error_body_for(enum s3_xml_error e, const char *resource, const char *request_id,
                              char **out, size_t *out_len)
{
    const struct s3_xml_error_info *info = s3_xml_error_info(e);
    return s3_xml_error_body(info->code, info->message, resource, request_id, out, out_len);
}

/* ---- reading: element text and entities ------------------------------------ */

/* The first occurrence of needle in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* Appends code point cp as UTF-8; false if it is not a valid XML character. */
static bool put_utf8(char *dst, size_t *n, uint32_t cp)
{
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return false;
    if (cp < 0x80) {
        dst[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        dst[(*n)++] = (char)(0xC0 | cp >> 6);
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        dst[(*n)++] = (char)(0xE0 | cp >> 12);
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        dst[(*n)++] = (char)(0xF0 | cp >> 18);
        dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return true;
}

/* Decodes one entity at p ('&' .. ';'); returns the bytes consumed, 0 if malformed. */
static size_t decode_entity(const char *p, const char *end, char *dst, size_t *n)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        size_t len = strlen(named[i].name);
        if ((size_t)(end - p) >= len && memcmp(p, named[i].name, len) == 0) {
            dst[(*n)++] = named[i].c;
            return len;
        }
    }
    if (end - p < 4 || p[1] != '#')
        return 0;
    bool hex = p[2] == 'x';
    uint32_t cp = 0;
    const char *q = p + (hex ? 3 : 2);
    const char *digits = q;
    for (; q < end && *q != ';' && q - digits < 8; q++) {
        int d = uri_hex_digit(*q);
        if (!hex && d > 9)
            d = -1;
        if (d < 0)
            return 0;
        cp = cp * (hex ? 16 : 10) + (uint32_t)d;
    }
    if (q == digits || q >= end || *q != ';' || !put_utf8(dst, n, cp))
        return 0;
    return (size_t)(q + 1 - p);
}

sc_code s3_xml_unescape(const char *text, size_t len, size_t max, char **out)
{
    const char *p = text, *end = text + len;
    if (max < SIZE_MAX / ENTITY_MAX && len > max * ENTITY_MAX)
        return SC_EINVAL; /* cannot decode to max bytes or fewer: every byte costs 12 at most */
    char *dst = malloc((size_t)(end - p) + 1);
    if (dst == NULL)
        return SC_ENOMEM;
    size_t n = 0;
    while (p < end) {
        size_t used = 1;
        if (*p == '&')
            used = decode_entity(p, end, dst, &n);
        else if (*p == '<' || *p == '\0')
            used = 0; /* markup inside text, or a NUL (no XML character): refused */
        else
            dst[n++] = *p;
        if (used == 0 || n > max) {
            free(dst);
            return SC_EINVAL;
        }
        p += used;
    }
    dst[n] = '\0';
    *out = dst;
    return SC_OK;
}

sc_code s3_xml_element(const char **p, const char *end, const char *tag, const char **text,
                       const char **text_end)
{
    char open[64], close[64];
    if (snprintf(open, sizeof(open), "<%s>", tag) >= (int)sizeof(open) ||
        snprintf(close, sizeof(close), "</%s>", tag) >= (int)sizeof(close))
        return SC_EINVAL;
    const char *o = find(*p, end, open);
    if (o == NULL)
        return SC_ENOTFOUND;
    *text = o + strlen(open);
    const char *c = find(*text, end, close);
    if (c == NULL)
        return SC_EINVAL;
    *text_end = c;
    *p = c + strlen(close);
    return SC_OK;
}
