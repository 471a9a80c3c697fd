/*
 * client_keys.h - the key pairs clients sign their requests with
 * (--client-credentials FILE), and which buckets each may use.
 *
 * The file is JSON:
 *
 *   {"keys": [
 *     {"access_key": "trainer01", "secret_key": "...", "buckets": ["datasets", "ckpt"]},
 *     {"access_key": "notebook", "secret_key": "...", "buckets": ["*"],
 *      "comment": "anything, for people"}
 *   ]}
 *
 * access_key: 1-128 printable ASCII characters without '/', ',' or spaces (it travels in
 * the SigV4 credential scope), unique. secret_key: 1-256 printable ASCII characters.
 * buckets: optional; absent, or a list holding "*", means every bucket; otherwise the
 * key may only send requests naming one of these buckets (also as a copy source), and
 * no service-level request (ListBuckets). comment: optional string, ignored. Any other
 * field is refused, so that a misspelt "bucket" cannot silently grant every bucket.
 * At most CKEYS_MAX_KEYS keys, CKEYS_MAX_BUCKETS buckets a key, CKEYS_MAX_FILE bytes.
 *
 * Secrets: the file's bytes, jansson's copies while parsing, and the table's copies are
 * wiped (OPENSSL_cleanse) when released. Nothing here logs a secret.
 */
#ifndef GW_CLIENT_KEYS_H
#define GW_CLIENT_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/sc_err.h"
#include "creds.h"

#define CKEYS_MAX_FILE    (1024 * 1024)
#define CKEYS_MAX_KEYS    10000
#define CKEYS_MAX_BUCKETS 1000

/* One client key pair and its buckets (opaque; see ckey_access_key(), ckey_creds()). */
struct ckey;

typedef struct ckeys ckeys;

/*
 * @brief Reads and checks the key file at path.
 *
 * The file must be a regular file not writable by group or others (refused); one
 * readable by group or others is loaded with a warning in the log.
 * @param[out] out the table, owned by the caller; release with ckeys_free().
 * @param[out] err on failure, a message naming the problem (never a secret).
 * @return SC_OK, SC_EIO (cannot open or read, not a regular file, writable by others),
 *         SC_ETOOBIG (over CKEYS_MAX_FILE), SC_EINVAL (not the format above), SC_ENOMEM.
 * @note Not thread-safe: it swaps jansson's allocators while parsing. Call at start-up,
 *       before any other thread uses jansson.
 */
sc_code ckeys_load(const char *path, ckeys **out, char *err, size_t err_len);

/* @brief ckeys_load() on text[0..len) instead of a file (tests). Same ownership and errors. */
sc_code ckeys_parse(const char *text, size_t len, ckeys **out, char *err, size_t err_len);

/* @brief Wipes every secret and frees the table. NULL is a no-op. */
void ckeys_free(ckeys *t);

/* @brief The number of keys. */
size_t ckeys_count(const ckeys *t);

/*
 * @brief Finds the key pair of access_key (exact match).
 * @return the key, owned by t (valid until ckeys_free), or NULL.
 */
const struct ckey *ckeys_find(const ckeys *t, const char *access_key);

/* @brief True if k may send requests naming bucket ("" is a service-level request). */
bool ckey_allows_bucket(const struct ckey *k, const char *bucket);

/* @brief The key's access key id. */
const char *ckey_access_key(const struct ckey *k);

/* @brief The key pair, to sign the client's upstream requests with (--identity client). */
const struct creds *ckey_creds(const struct ckey *k);

#endif
