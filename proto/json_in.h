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
 * @brief Copies s[0..len) into buf for quoting in an error message: cut to at
 * most 64 bytes at a UTF-8 character boundary with "..." appended when cut,
 * bytes that are not printable ASCII or valid UTF-8 shown as '?'.
 * @return buf. @param[in] cap bytes of buf, at least 72 for the whole excerpt.
 */
const char *json_in_excerpt(char *buf, size_t cap, const char *s, size_t len);

#define JSON_IN_EXCERPT_CAP 72

#endif
