/*
 * hdrblob.h - the response headers kept with a cached object.
 *
 * A blob is a run of "name\0value\0" pairs: what the upstream said about the
 * object (ETag, Last-Modified, Content-Type, x-amz-meta-*, checksums, ...),
 * replayed on every hit. Headers that describe one response rather than the
 * object (Date, Content-Length, Connection, request ids) are never kept.
 */
#ifndef GW_HDRBLOB_H
#define GW_HDRBLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/sc_err.h"
#include "http_header.h"

/* @brief True for upstream response headers that describe the object and are replayed. */
bool hdrblob_keeps(const char *name);

/*
 * @brief Encodes the replayable headers among h[0..n).
 * @param[out] blob malloc'd, owned by the caller; *len its size.
 * @return SC_OK, SC_ENOMEM.
 */
sc_code hdrblob_encode(const struct http_header *h, size_t n, char **blob, size_t *len);

/*
 * @brief Iterates a blob: start with *pos = 0; each call yields one pair.
 * @return false at the end or on a malformed blob. Pointers are into blob.
 */
bool hdrblob_next(const char *blob, size_t len, size_t *pos, const char **name, const char **value);

/* @brief The value of the first header called name (any case), or NULL. */
const char *hdrblob_get(const char *blob, size_t len, const char *name);

#endif
