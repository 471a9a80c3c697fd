/*
 * s3_delete.h - the keys named in a DeleteObjects (POST ?delete) request body.
 *
 * The gateway forwards the body unchanged and only reads it to know which
 * cached objects the request removes. Parsing is deliberately small: every
 * <Key>...</Key> element's text, with the five predefined XML entities and
 * numeric character references decoded. Anything unexpected (an unterminated
 * element, a bad entity, a key over S3's 1024 bytes) fails the whole parse,
 * and the caller then drops the whole bucket from its fills instead.
 */
#ifndef GW_S3_DELETE_H
#define GW_S3_DELETE_H

#include <stddef.h>

#include "../common/sc_err.h"

/* DeleteObjects accepts at most 1000 keys; its body is bounded accordingly. */
#define S3_DELETE_MAX_KEYS 1000
#define S3_DELETE_MAX_BODY (2u * 1024u * 1024u)

struct s3_delete_keys {
    char **keys; /* decoded keys, each malloc'd */
    size_t n;
};

/*
 * @brief Extracts the keys of a DeleteObjects body.
 * @param[out] out the keys, owned by the caller; release with s3_delete_keys_free().
 * @return SC_OK, SC_EINVAL (malformed), SC_ETOOBIG (more than S3_DELETE_MAX_KEYS keys),
 *         SC_ENOMEM.
 */
sc_code s3_delete_keys_parse(const char *body, size_t len, struct s3_delete_keys *out);

/* @brief Frees every key. Safe on a zeroed struct. */
void s3_delete_keys_free(struct s3_delete_keys *k);

#endif
