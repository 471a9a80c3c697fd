/*
 * json_in.h - loading a client-supplied JSON body with bounds: size, nesting
 * depth, duplicate object keys and "\u0000" refused, every failure reported
 * as an admin API error (api_err.h). Shared by the admin API's parsers.
 */
#ifndef JSON_IN_H
#define JSON_IN_H

#include <stddef.h>

#include <jansson.h>

#include "../common/sc_err.h"
#include "api_err.h"
#include "json_scan.h"

/*
 * @brief Parses body[0..len) as one JSON value.
 * @param[in] max_body more bytes: TooLarge. @param[in] max_depth deeper
 *            nesting of arrays and objects (the top level is depth 1): InvalidJSON.
 * @param[out] out a new reference (json_decref) on SC_OK, NULL otherwise.
 * @param[out] err the error, may be NULL.
 * @return SC_OK; SC_ETOOBIG (TooLarge); SC_EINVAL (InvalidJSON: syntax,
 *         invalid UTF-8, duplicate key, "\u0000", integer out of range, too deep).
 * @note jansson's own errors cannot be told from allocation failures; all
 *       are reported as InvalidJSON.
 */
sc_code json_in_load(const char *body, size_t len, size_t max_body, unsigned max_depth,
                     json_t **out, struct api_err *err);

/*
 * @brief json_in_load() without the largest part of the tree: each member of the top-level
 * object named in names[0..n) whose value is an array stands in *out as an empty array, and
 * spans[k] is that array's text in body (json_scan.h walks it). The arrays are checked exactly
 * as jansson would check them, and every error (code and message, jansson's wording, line and
 * column) is json_in_load()'s.
 * @param[out] spans n entries; spans[k].p is NULL when names[k] is absent or not an array, or
 *             when the body could not be read ahead (then *out holds the array itself).
 * @return as json_in_load().
 * @note Costs two reads of the arrays' bytes and no memory per element. An invalid body is
 *       loaded whole to report its error, as json_in_load() does.
 */
sc_code json_in_load_hollow(const char *body, size_t len, size_t max_body, unsigned max_depth,
                            const char *const *names, size_t n, struct json_span *spans,
                            json_t **out, struct api_err *err);

/*
 * @brief Copies s[0..len) into buf for quoting in an error message: cut to at
 * most 64 bytes at a UTF-8 character boundary with "..." appended when cut,
 * bytes that are not printable ASCII or valid UTF-8 shown as '?'.
 * @return buf. @param[in] cap bytes of buf, at least 72 for the whole excerpt.
 */
const char *json_in_excerpt(char *buf, size_t cap, const char *s, size_t len);

#define JSON_IN_EXCERPT_CAP 72

#endif
