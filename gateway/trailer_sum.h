/*
 * trailer_sum.h - the checksum an aws-chunked upload announces in its trailer.
 *
 * An SDK that streams an upload (x-amz-content-sha256:
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER and friends) names a checksum in
 * x-amz-trailer and sends its value after the last chunk, base64 of the
 * big-endian CRC or of the digest. The upstream never sees that trailer (the
 * gateway sends it a plain body), so the gateway checks it itself, over the
 * decoded payload, before the upstream may have the body's last byte.
 *
 * Known: x-amz-checksum-crc32 (zlib's CRC-32), -crc32c (Castagnoli), -sha1,
 * -sha256. Any other name (crc64nvme, say) is not checked.
 */
#ifndef GW_TRAILER_SUM_H
#define GW_TRAILER_SUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

struct trailer_sum {
    int alg; /* private to trailer_sum.c */
    uint32_t crc;
    void *md; /* the digest context, for sha1 and sha256 */
};

/*
 * @brief Prepares s for the checksum the trailer called name carries.
 * @param[out] s needs trailer_sum_free() after SC_OK.
 * @param[in] name the x-amz-trailer header's value (any case); NULL: none.
 * @return SC_OK (also for a name it does not know: then nothing is checked),
 *         SC_ENOMEM.
 */
sc_code trailer_sum_init(struct trailer_sum *s, const char *name);

/* @brief True when s computes a checksum to compare. */
bool trailer_sum_active(const struct trailer_sum *s);

/* @brief Adds len payload bytes to the checksum. Cannot fail. */
void trailer_sum_update(struct trailer_sum *s, const void *buf, size_t len);

/*
 * @brief Compares the checksum of the bytes added so far with a trailer's value.
 * @param[in] b64 the trailer's value, base64 as sent; NULL: the trailer was not sent.
 * @return true if they are the same. Call once, after the last update.
 */
bool trailer_sum_matches(struct trailer_sum *s, const char *b64);

/* @brief Frees what trailer_sum_init() took; s may be zeroed, never initialized. */
void trailer_sum_free(struct trailer_sum *s);

#endif
