/*
 * cond.h - conditional GET/HEAD headers (If-Match, If-None-Match,
 * If-Modified-Since, If-Unmodified-Since) evaluated as Amazon S3 does.
 *
 * The order is RFC 9110 section 13.2.2 (RFC 7232 section 6):
 *   1. If-Match present: false -> 412; true -> If-Unmodified-Since is skipped.
 *   2. Otherwise If-Unmodified-Since (valid date): false -> 412.
 *   3. If-None-Match present: false -> 304 for GET/HEAD, 412 for other
 *      methods; true -> If-Modified-Since is skipped.
 *   4. Otherwise If-Modified-Since (valid date, GET/HEAD only): false -> 304.
 *   5. Otherwise proceed.
 * This order gives the two cases the S3 GetObject and HeadObject documentation
 * spells out: If-Match true with If-Unmodified-Since false is 200, and
 * If-None-Match false with If-Modified-Since true is 304.
 *
 * Conditionals are evaluated before the Range header: a 304 or 412 is sent
 * without looking at Range (cond_overrides_range() says so in code).
 *
 * Entity tags: a header holds "*" or a comma-separated list of tags, each
 * quoted ("abc"), weak (W/"abc") or, tolerated because some clients send it,
 * unquoted (abc). If-Match compares strongly (a weak tag never matches);
 * If-None-Match compares weakly (W/ is ignored). "*" matches any existing
 * object. The object's own etag may be given with or without quotes. A list
 * that stops making sense (an unclosed quote, junk after a tag) matches
 * nothing from the faulty element on, so a garbled If-Match fails (412)
 * rather than succeeding by accident. An empty header counts as absent.
 *
 * Dates: compared at one-second resolution; an unparseable date is ignored,
 * as RFC 9110 requires. If-Range is not handled here.
 */
#ifndef COND_H
#define COND_H

#include <stdbool.h>
#include <time.h>

/* The request's conditional headers; NULL for each one absent. Not owned. */
struct cond_headers {
    const char *if_match;
    const char *if_none_match;
    const char *if_modified_since;
    const char *if_unmodified_since;
};

enum cond_result {
    COND_PROCEED,             /* serve normally (Range still applies) */
    COND_NOT_MODIFIED,        /* 304 */
    COND_PRECONDITION_FAILED, /* 412 PreconditionFailed */
};

/*
 * @brief Evaluates the conditional headers against an existing object.
 * @param[in] h the headers; every field may be NULL.
 * @param[in] etag the object's ETag (quoted or not), NUL-terminated; NULL for an object
 *            without one (an upstream 200 that sent none), which only "*" matches.
 * @param[in] last_modified the object's Last-Modified, seconds since the epoch.
 * @param[in] is_get_or_head true for GET and HEAD (304 possible), false for
 *            other methods (a failed If-None-Match is then 412, and
 *            If-Modified-Since is ignored).
 * @return the outcome; never fails.
 */
enum cond_result cond_evaluate(const struct cond_headers *h, const char *etag, time_t last_modified,
                               bool is_get_or_head);

/*
 * @brief The HTTP status for an outcome.
 * @return 304, 412, or 0 for COND_PROCEED (the status then depends on Range).
 */
int cond_http_status(enum cond_result r);

/*
 * @brief Whether the outcome is sent instead of any range handling.
 * @return true for 304 and 412 (Range is not evaluated, no 416 is possible),
 *         false for COND_PROCEED.
 */
bool cond_overrides_range(enum cond_result r);

#endif
