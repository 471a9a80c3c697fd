/*
 * answer.h - what to answer a GET or HEAD of an object of a given ETag, date and size:
 * the conditional headers first (RFC 9110 13.2.2, with S3's precedence, cond.h),
 * then Range (range.h). Pure: values in, an answer out.
 */
#ifndef PROTO_ANSWER_H
#define PROTO_ANSWER_H

#include <stdint.h>

#include "cond.h"

/* What to answer for an object of a given size, ETag and date. */
struct answer {
    int status;     /* 200, 206, 304, 412 or 416 */
    uint64_t start; /* body bytes to send, for 200 and 206 */
    uint64_t len;
};

/*
 * @brief The answer to a request with conditional headers ch and Range range (NULL: none)
 * for an object of etag (may be NULL), last_modified (an HTTP date; NULL or unreadable:
 * the date conditions do not apply) and size bytes.
 */
struct answer answer_decide(const struct cond_headers *ch, const char *range, const char *etag,
                            const char *last_modified, uint64_t size);

#endif
