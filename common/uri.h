/*
 * uri.h - percent-encoding as S3 and SigV4 define it.
 *
 * Encoding keeps the unreserved set (A-Z a-z 0-9 - . _ ~) and, when asked,
 * '/'; every other byte becomes %XX with upper-case hex. Decoding turns %XX
 * into bytes and leaves '+' alone (in S3 paths '+' is a literal plus).
 */
#ifndef SC_URI_H
#define SC_URI_H

#include <stdbool.h>
#include <stddef.h>

#include "sc_err.h"

/*
 * @brief Percent-encodes len bytes of src.
 * @param[out] out receives a NUL-terminated malloc'd string owned by the caller.
 * @return SC_OK or SC_ENOMEM.
 */
sc_code uri_encode(const char *src, size_t len, bool keep_slash, char **out);

/*
 * @brief Decodes %XX escapes in len bytes of src.
 * @param[out] out NUL-terminated malloc'd string owned by the caller.
 * @return SC_OK, SC_EINVAL (a '%' not followed by two hex digits, or an
 *         escape that decodes to NUL), SC_ENOMEM.
 */
sc_code uri_decode(const char *src, size_t len, char **out);

/* @brief The value of hex digit c (either case), or -1 if c is not one. */
int uri_hex_digit(char c);

#endif
