/*
 * resume.h - the arithmetic of resuming a response from the bucket after a fleet peer died
 * in the middle of its body (upstream.h): which bytes the head already handed over covers,
 * the Range that asks for the rest, and whether the bucket's answer is exactly that rest of
 * that version. Pure functions, no I/O.
 */
#ifndef GW_RESUME_H
#define GW_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes first..last (inclusive) of an object of size bytes: what a response's body holds. */
struct up_span {
    uint64_t first, last, size;
};

/* "bytes=" and two 20-digit numbers. */
#define UP_RESUME_RANGE_LEN 48

/*
 * @brief The span a response head announces: a 200 of content_length bytes is the whole
 * object (first 0), a 206 is what its Content-Range says and must agree with content_length.
 * @param[in] content_range the 206's Content-Range, or NULL.
 * @return false for any other status, an empty or unannounced body, a 206 whose
 *         Content-Range is malformed or disagrees with content_length.
 */
bool up_span_of_head(long status, const char *content_range, int64_t content_length,
                     struct up_span *out);

/*
 * @brief The Range that asks for what is left of span s once handed bytes of it were handed
 * over: "bytes=NEXT-LAST" with NEXT = s->first + handed.
 * @param[out] range at least UP_RESUME_RANGE_LEN bytes.
 * @return false when nothing is left (handed covers the span) or handed overflows it.
 */
bool up_resume_range(const struct up_span *s, uint64_t handed, char *range, size_t cap);

/*
 * @brief Whether a resume's answer is exactly the rest of span s after handed bytes, of the
 * version etag: a 206 whose Content-Range is "bytes NEXT-LAST/SIZE" with s's last and size,
 * Content-Length LAST - NEXT + 1, and the same ETag (present: an answer without one names
 * no version).
 */
bool up_resume_proves(const struct up_span *s, uint64_t handed, const char *etag, long status,
                      const char *content_range, int64_t content_length, const char *answer_etag);

#endif
