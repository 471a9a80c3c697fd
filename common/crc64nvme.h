/*
 * crc64nvme.h - CRC-64/NVME, the full-object checksum S3 computes for every new object
 * (x-amz-checksum-crc64nvme).
 *
 * Uses carry-less multiplication (PCLMULQDQ) when the CPU has it (checked at run time):
 * 16 bytes per step in four lanes, several GB/s; a byte-wise table otherwise. Both give the
 * same result; the portable one is exported so tests can compare the two.
 */
#ifndef SC_CRC64NVME_H
#define SC_CRC64NVME_H

#include <stddef.h>
#include <stdint.h>

/*
 * @brief Extends a CRC-64/NVME over len more bytes.
 * @param[in] crc the CRC of the bytes before buf, or 0 to start.
 * @param[in] buf the bytes; may be NULL when len is 0.
 * @param[in] len number of bytes.
 * @return the CRC-64/NVME of everything so far (crc64nvme(0, "123456789", 9) is
 *         0xae8b14860a799888). Cannot fail.
 */
uint64_t crc64nvme(uint64_t crc, const void *buf, size_t len);

/* @brief Same as crc64nvme(), always with the table (no CPU instruction). */
uint64_t crc64nvme_portable(uint64_t crc, const void *buf, size_t len);

#endif
