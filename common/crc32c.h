/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum the store keeps per chunk.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked at run
 * time), and a byte-wise table otherwise. Both give the same result; the
 * portable one is exported so tests can compare the two.
 */
#ifndef SC_CRC32C_H
#define SC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * @brief Extends a CRC-32C over len more bytes.
 * @param[in] crc the CRC of the bytes before buf, or 0 to start.
 * @param[in] buf the bytes; may be NULL when len is 0.
 * @param[in] len number of bytes.
 * @return the CRC-32C of everything so far (crc32c(0, "123456789", 9) is
 *         0xe3069283). Cannot fail.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* @brief Same as crc32c(), always with the table (no CPU instruction). */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif
