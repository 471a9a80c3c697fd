/*
 * md5.h - MD5 (RFC 1321), one message at a time or several side by side.
 *
 * Why here and not OpenSSL: the MD5 of one message is a chain of 64 dependent steps per 64-byte
 * block, so one stream cannot go faster than that chain (about 650 MB/s on the 2-core test
 * machine). Eight messages hashed together in the eight 32-bit lanes of AVX2 take about the
 * same time per block as one: the upstream's ETag of every fetched object is checked this way
 * (upstream/verify.h). MD5 is used to check a body against its ETag, never for security.
 *
 * The lanes are used when the CPU has AVX2 (checked at run time) and there are three messages
 * or more to share them; otherwise a portable one-lane code runs. Both give the same digests.
 */
#ifndef SC_MD5_H
#define SC_MD5_H

#include <stddef.h>
#include <stdint.h>

#define SC_MD5_LEN   16
#define SC_MD5_LANES 8 /* messages hashed side by side at most: a batch this long fills them */

/* One message to hash: in, p and len; out, digest. */
struct sc_md5_msg {
    const void *p; /* may be NULL when len is 0 */
    uint64_t len;
    uint8_t digest[SC_MD5_LEN];
};

/* @brief The MD5 of len bytes at p, one lane. Cannot fail. */
void sc_md5(const void *p, uint64_t len, uint8_t digest[SC_MD5_LEN]);

/*
 * @brief Sets the digest of each of the n messages, eight at a time where the CPU has AVX2 (a
 * lane that finishes takes the next message). Cannot fail.
 */
void sc_md5_many(struct sc_md5_msg *m, size_t n);

/* @brief As sc_md5_many(), with the lanes whatever the CPU says: for tests, on a CPU with
 * AVX2 only (false and nothing done without it). */
int sc_md5_many_lanes(struct sc_md5_msg *m, size_t n);

#endif
