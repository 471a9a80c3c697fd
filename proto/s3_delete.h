/*
 * s3_delete.h - the keys named in a DeleteObjects (POST ?delete) request body.
 *
 * The same reading serves for the upstream's answer (a DeleteResult), whose
 * Deleted and Error elements name their keys the same way.
 *
 * The gateway forwards the body unchanged and only reads it to know which
 * cached objects the request removes, so it reads the keys as an XML parser
 * does: the text of every element whose local name is Key (with or without a
 * namespace prefix), made of its character data (the five predefined entities
 * and numeric character references decoded, CR LF read as LF) and its CDATA
 * sections, comments and processing instructions skipped. Anything it cannot
 * read for certain (an unterminated or mismatched element, a bad entity, a
 * document type declaration, an encoding other than UTF-8, a NUL byte, markup
 * inside a key, a key over S3's 1024 bytes)
 * fails the whole parse, and the caller then drops every cached object of the
 * bucket instead.
 */
#ifndef GW_S3_DELETE_H
#define GW_S3_DELETE_H

#include <stddef.h>

#include "../common/sc_err.h"

/* DeleteObjects accepts at most 1000 keys; its body is bounded accordingly. */
#define S3_DELETE_MAX_KEYS 1000
#define S3_DELETE_MAX_BODY (2u * 1024u * 1024u)
/* Its answer lists the keys again, each escaped: held up to this many bytes to be read. */
#define S3_DELETE_MAX_ANSWER (8u * 1024u * 1024u)

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
