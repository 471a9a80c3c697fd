/*
 * http_header.h - one header as a name and a value: how headers go to the upstream, come
 * back from it, and are kept beside a cached object. Pure: no I/O.
 */
#ifndef PROTO_HTTP_HEADER_H
#define PROTO_HTTP_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

struct http_header {
    const char *name;
    const char *value;
};

/* A response's status line and headers, as they came. */
struct http_head {
    long status;
    const struct http_header *headers;
    size_t n_headers;
    int64_t content_length; /* -1 when not announced */
};

/* @brief Finds a header by case-insensitive name; NULL if absent. */
const char *http_header_get(const struct http_header *h, size_t n, const char *name);

/*
 * @brief Deep-copies n headers.
 * @param[out] out the copy, owned by the caller; release with http_headers_free(*out, *n_out).
 *             On failure, what was copied so far is returned too, for the caller to free.
 * @return SC_OK or SC_ENOMEM.
 */
sc_code http_headers_copy(const struct http_header *h, size_t n, struct http_header **out,
                          size_t *n_out);

/* @brief Frees headers made by http_headers_copy(). NULL is a no-op. */
void http_headers_free(struct http_header *h, size_t n);

#endif
