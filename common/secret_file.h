/*
 * secret_file.h - reading a file that holds a secret (client key pairs, the fleet secret).
 *
 * The file must be a regular file that neither its group nor others may write (whoever can
 * change it can make the gateway trust them): otherwise it is refused. One that they may
 * read is accepted with a warning (a Kubernetes Secret volume is 0644 unless its
 * defaultMode says otherwise). The secret itself is never logged.
 */
#ifndef SC_SECRET_FILE_H
#define SC_SECRET_FILE_H

#include <stddef.h>

#include "sc_err.h"

/*
 * @brief Reads the whole of path, checked as above.
 * @param max the largest size accepted, in bytes.
 * @param[out] out the bytes, NUL-terminated, malloc'd and owned by the caller, who wipes
 *             them (explicit_bzero) before freeing; NULL on failure.
 * @param[out] len how many bytes were read (the NUL not counted).
 * @param[out] err on failure, why, naming path.
 * @return SC_OK, SC_EIO (cannot open or read it, not a regular file, writable by group or
 *         others), SC_ETOOBIG (larger than max), SC_ENOMEM.
 */
sc_code sc_secret_file_read(const char *path, size_t max, char **out, size_t *len, char *err,
                            size_t err_len);

#endif
