/*
 * range.h - the Range request header, resolved the way Amazon S3 does.
 *
 * S3 serves one byte range per GET (RFC 9110 section 14). Whatever S3 would
 * ignore yields RANGE_WHOLE (200 with the whole object): no header, a unit
 * other than "bytes", bad syntax (letters, signs, inner spaces, first > last,
 * a lone "-"), or more than one range (any ','). A well-formed range that
 * selects nothing yields RANGE_UNSATISFIABLE (416 InvalidRange, whose
 * Content-Range has a '*' in place of start-end). Otherwise RANGE_PARTIAL (206).
 *
 * Decisions, each checked against reports of S3's behaviour:
 *  - "bytes=a-b" with b past the end is clamped to size-1 (206).
 *  - "bytes=a-" or "bytes=a-b" with a >= size is 416.
 *  - "bytes=-n" with n >= size is the whole object as a 206 "bytes 0-(size-1)/size";
 *    "bytes=-0" is 416.
 *  - An empty object: "bytes=0-", "bytes=0-0" and every first-pos form are 416
 *    (S3 answers InvalidRange; there is no byte 0), and so is "bytes=-0";
 *    "bytes=-n" with n > 0 is RANGE_WHOLE (S3 answers 200 with an empty body,
 *    since "bytes 0--1/0" cannot be written).
 *  - Numbers too large for 64 bits are not a syntax error: RFC 9110 asks
 *    recipients to expect large numerals, so they saturate. A huge first-pos
 *    is therefore 416, a huge last-pos is clamped, a huge suffix is the whole
 *    object as a 206.
 *  - The unit is matched case-insensitively ("Bytes=" works); spaces and tabs
 *    around the whole value are ignored.
 */
#ifndef RANGE_H
#define RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

enum range_result {
    RANGE_WHOLE,         /* serve the whole object: 200 */
    RANGE_PARTIAL,       /* serve [start, start+len): 206 */
    RANGE_UNSATISFIABLE, /* 416 InvalidRange */
};

/* Buffer size for range_content_range(): "bytes " and three 20-digit numbers. */
#define RANGE_CONTENT_RANGE_LEN 72

/*
 * @brief Resolves a Range header against an object of size bytes.
 * @param[in] header the field value, NUL-terminated, or NULL when absent.
 * @param[in] size the object's length.
 * @param[out] start first byte to send: 0 unless RANGE_PARTIAL.
 * @param[out] len bytes to send: size for RANGE_WHOLE, at least 1 for
 *             RANGE_PARTIAL, 0 for RANGE_UNSATISFIABLE.
 * @return which response to give; never fails.
 */
enum range_result range_resolve(const char *header, uint64_t size, uint64_t *start, uint64_t *len);

/*
 * @brief The bytes a Range header asks for, before the object's size is known (a read
 * reported to the manifests, whose plans name byte ranges): "bytes=a-b" is first a, last b
 * (b may lie past the end); "bytes=a-" is first a, last UINT64_MAX (to the end).
 * @param[in] header the field value, NUL-terminated, or NULL when absent.
 * @return true for those two forms; false for a suffix range ("bytes=-n", which needs the
 *         size) and whenever range_resolve() would serve the whole object (no header, bad
 *         syntax, several ranges). *first and *last are set only on true.
 */
bool range_span(const char *header, uint64_t *first, uint64_t *last);

/*
 * @brief Formats the Content-Range value for a 206 or a 416.
 * @param[in] start,len the range sent (len 0 asks for the 416 form).
 * @param[in] size the object's length.
 * @param[out] buf "bytes start-end/size", or with '*' in place of start-end
 *             (the unsatisfied form) when len is 0.
 * @return SC_OK, or SC_EINVAL when [start, start+len) does not lie inside the
 *         object (buf then holds the 416 form).
 */
sc_code range_content_range(uint64_t start, uint64_t len, uint64_t size,
                            char buf[RANGE_CONTENT_RANGE_LEN]);

/*
 * @brief Parses a Content-Range value of a 206 exactly: "bytes a-b/size", digits only, one
 * space, no '*' forms.
 * @param[in] cr the value, or NULL.
 * @param[out] first,last,size a, b and size; set only on true.
 * @return true when it is that form with a <= b < size and every number fits in 64 bits.
 */
bool range_parse_content_range(const char *cr, uint64_t *first, uint64_t *last, uint64_t *size);

#endif
