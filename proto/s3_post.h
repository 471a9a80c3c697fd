/*
 * s3_post.h - the key a browser-form POST upload (PostObject) writes.
 *
 * PostObject is "POST /bucket" with a multipart/form-data body (RFC 7578): form
 * fields, then the "file" field with the object's bytes (fields after it are
 * ignored by S3). The key is the "key" field's value, where "${filename}" stands
 * for the file field's filename parameter (S3 and radosgw substitute it; s3rver
 * takes the key literally, so both spellings are returned). The gateway forwards the body unchanged
 * and reads only its beginning (the fields up to the file's part headers), to know
 * which cached copy the upload replaces. Anything it cannot read for certain (no
 * boundary, no or two key fields, a key field after the file, a filename with a
 * path or escapes, a key over S3's 1024 bytes) is an error, and the caller then
 * treats the upload as one that may change any key of the bucket.
 */
#ifndef GW_S3_POST_H
#define GW_S3_POST_H

#include <stddef.h>

#include "../common/sc_err.h"

/* How much of a PostObject body the gateway keeps to read its key: S3 allows 20 KB of
 * fields before the file; the rest is room for the part headers. */
#define S3_POST_FIELDS_MAX (64u * 1024u)

/*
 * @brief Finds the key a PostObject form body writes.
 * @param[in] content_type the request's Content-Type (multipart/form-data; boundary=...).
 * @param[in] body the body's first len bytes (it may continue beyond them).
 * @param[out] key the key field's value, malloc'd, owned by the caller.
 * @param[out] expanded the key with "${filename}" replaced by the file's name,
 *             malloc'd and owned by the caller; NULL when the key has no "${filename}".
 * @return SC_OK, SC_EINVAL (not readable for certain: see above), SC_ENOMEM; on error
 *         both are NULL.
 */
sc_code s3_post_form_key(const char *content_type, const char *body, size_t len, char **key,
                         char **expanded);

#endif
