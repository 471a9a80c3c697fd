/*
 * sha256.h - SHA-256 of a few strings, each but the last with its terminating NUL, so that
 * ("ab", "c") and ("a", "bc") differ: the names of cached objects and of authorization answers.
 */
#ifndef SC_SHA256_H
#define SC_SHA256_H

#include <stddef.h>

#include "sc_err.h"

#define SC_SHA256_LEN 32

/*
 * @brief out = SHA-256(fields[0] NUL fields[1] NUL ... fields[n-1]). Any thread; the digest
 * is fetched from OpenSSL once (EVP_sha256() is fetched again at every init, under OpenSSL
 * 3.0's method-store lock, about eight times: every hit makes such a name, and the threads
 * met on that lock).
 * @return SC_OK, SC_ECRYPTO (OpenSSL failed; out is undefined).
 */
sc_code sc_sha256_fields(const char *const *fields, size_t n, unsigned char out[SC_SHA256_LEN]);

#endif
