/*
 * awschunked.h - a streaming decoder for the aws-chunked content encoding.
 *
 * SDKs send uploads in this framing when x-amz-content-sha256 is one of
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER or
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (Content-Encoding: aws-chunked):
 *
 *   hex-size[;chunk-signature=sig] CRLF  data  CRLF     (repeated)
 *   0[;chunk-signature=sig] CRLF
 *   [name:value CRLF ...]                               (trailers, if any)
 *   CRLF
 *
 * The decoder takes the body in slices of any size (down to one byte) and
 * writes the payload bytes to a caller buffer; framing is removed. Trailers
 * (x-amz-checksum-crc32 and friends, x-amz-trailer-signature) are collected
 * into a small fixed list inside the decoder.
 *
 * Chunk and trailer signatures are NOT verified here: the gateway does not
 * trust the client's signature chain at all, it re-signs the decoded payload
 * for upstream. Whatever the chunk extension says is skipped, as long as it
 * is printable text within the line bound.
 *
 * Strictness: lines end in CRLF exactly (a bare CR or LF is refused); the
 * size is 1 to 16 hex digits with no sign or spaces, leading zeros allowed;
 * a chunk header or trailer line is at most AWSCHUNKED_LINE_MAX bytes
 * (CRLF excluded); a
 * trailer is "name:value" with a token name of at most
 * AWSCHUNKED_TRAILER_NAME_MAX bytes and a value of at most
 * AWSCHUNKED_TRAILER_VALUE_MAX bytes (spaces and tabs around it removed),
 * and at most AWSCHUNKED_TRAILERS_MAX of them. Bytes after the final CRLF are
 * an error. Every refusal is SC_EINVAL, and the decoder then stays failed.
 *
 * The struct is declared here so callers can embed it without allocating; its
 * fields are private to awschunked.c.
 */
#ifndef AWSCHUNKED_H
#define AWSCHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define AWSCHUNKED_LINE_MAX          1024
#define AWSCHUNKED_TRAILERS_MAX      8
#define AWSCHUNKED_TRAILER_NAME_MAX  64
#define AWSCHUNKED_TRAILER_VALUE_MAX 256

/* Passed as decoded_length when x-amz-decoded-content-length was not sent. */
#define AWSCHUNKED_LENGTH_UNKNOWN UINT64_MAX

struct awschunked_trailer {
    char name[AWSCHUNKED_TRAILER_NAME_MAX + 1];   /* as sent, NUL-terminated */
    char value[AWSCHUNKED_TRAILER_VALUE_MAX + 1]; /* trimmed, NUL-terminated */
};

struct awschunked {
    int state;
    uint64_t declared;  /* x-amz-decoded-content-length, or AWSCHUNKED_LENGTH_UNKNOWN */
    uint64_t total;     /* payload bytes announced by chunk headers so far */
    uint64_t remaining; /* payload bytes left in the current chunk */
    size_t line_len;
    char line[AWSCHUNKED_LINE_MAX + 1]; /* room for the line and its CR */
    size_t ntrailers;
    struct awschunked_trailer trailers[AWSCHUNKED_TRAILERS_MAX];
};

/*
 * @brief Prepares d for a new body.
 * @param[out] d the decoder; needs no cleanup.
 * @param[in] decoded_length the value of x-amz-decoded-content-length, or
 *            AWSCHUNKED_LENGTH_UNKNOWN. When known, the payload must be
 *            exactly this long.
 */
void awschunked_init(struct awschunked *d, uint64_t decoded_length);

/*
 * @brief Decodes as much of in as fits, writing payload bytes to out.
 *
 * Stops when the input is used up, out is full (while in a chunk's data), or
 * the body is complete. Framing is consumed even when out_cap is 0. Call
 * again with the rest of the input (in + *consumed) and a fresh buffer.
 *
 * @param[in,out] d the decoder.
 * @param[in] in, in_len the next bytes of the body.
 * @param[out] consumed how many input bytes were used.
 * @param[out] out, out_cap where payload bytes go.
 * @param[out] produced how many payload bytes were written.
 * @return SC_OK, or SC_EINVAL: malformed framing, an over-long line, a size
 *         that overflows 64 bits, more payload than decoded_length (detected
 *         at the chunk header), a final chunk before decoded_length bytes,
 *         too many or malformed trailers, bytes after the end, or an earlier
 *         failure. On error *consumed counts the bytes accepted before the
 *         offending one, and *produced the payload written before it.
 */
sc_code awschunked_feed(struct awschunked *d, const char *in, size_t in_len, size_t *consumed,
                        char *out, size_t out_cap, size_t *produced);

/* @brief True once the final CRLF has been read; the payload is then complete. */
bool awschunked_done(const struct awschunked *d);

/* @brief Payload bytes announced by the chunk headers read so far. */
uint64_t awschunked_total(const struct awschunked *d);

/*
 * @brief Looks up a trailer by name (case-insensitive).
 * @return its value, NUL-terminated and owned by d (valid until the next
 *         awschunked_init), or NULL if it was not sent.
 */
const char *awschunked_trailer(const struct awschunked *d, const char *name);

#endif
