/*
 * creds.h - the gateway's upstream credentials, loaded the standard AWS way.
 *
 * Order, as in the AWS SDKs:
 *   1. the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, with
 *      AWS_SESSION_TOKEN when set;
 *   2. the shared credentials file: AWS_SHARED_CREDENTIALS_FILE, else
 *      $HOME/.aws/credentials (a leading "~/" is expanded with HOME), profile
 *      AWS_PROFILE or "default", keys aws_access_key_id,
 *      aws_secret_access_key and aws_session_token.
 * Empty variables count as unset. The file is INI: [profile] sections,
 * "key = value" lines, key names in any case, spaces around everything
 * ignored, lines ended by LF, CRLF or a lone CR (Python's universal newlines,
 * as botocore and the AWS CLI read the file), whole-line comments starting
 * with '#' or ';', and
 * inline comments that begin with whitespace then '#' or ';'. Within a
 * profile, a later line overrides an earlier one.
 */
#ifndef CREDS_H
#define CREDS_H

#include "../common/sc_err.h"
#include "sigv4.h"

/* Largest credentials file read; larger is refused with SC_ETOOBIG. */
#define CREDS_MAX_FILE (1024 * 1024)

/*
 * A key pair (and session token), opaque: the secret never leaves sigv4/. Requests are signed
 * with creds_authorization(); the access key is readable for logs. Release with creds_free(),
 * which wipes the strings.
 */
struct creds;

/* Looks up an environment variable; returns NULL when it is unset. */
typedef const char *(*creds_getenv_fn)(void *ctx, const char *name);

/*
 * @brief Loads credentials from the process environment, then the shared
 * credentials file (see above).
 * @param[out] out a new handle on SC_OK (release with creds_free()); NULL
 *             otherwise.
 * @return SC_OK, or one of:
 *  - SC_ENOTFOUND no credentials anywhere: no keys in the environment and no
 *    credentials file. The caller goes anonymous.
 *  - SC_EINVAL AWS_ACCESS_KEY_ID set without AWS_SECRET_ACCESS_KEY; or the
 *    file exists but lacks the profile, or the profile lacks a key or
 *    secret, or a line of the profile is neither a comment nor key = value.
 *  - SC_EIO the file exists but cannot be read.
 *  - SC_ETOOBIG the file is larger than CREDS_MAX_FILE.
 *  - SC_ENOMEM.
 * @note Never logs a key, secret or token.
 */
sc_code creds_load(struct creds **out);

/*
 * @brief creds_load() with the environment taken from getenv_fn(ctx, name)
 * instead of the process, for tests and embedders.
 */
sc_code creds_load_from(creds_getenv_fn getenv_fn, void *ctx, struct creds **out);

/* @brief A handle holding copies of the strings (token may be NULL). SC_ENOMEM. */
sc_code creds_new(const char *access_key, const char *secret_key, const char *token,
                  struct creds **out);

/* @brief A copy of c, released on its own. SC_ENOMEM. */
sc_code creds_copy(const struct creds *c, struct creds **out);

/* @brief Wipes the strings with OPENSSL_cleanse and frees c. NULL is a no-op. */
void creds_free(struct creds *c);

/* @brief The access key id, for logs and for filing answers by identity. */
const char *creds_access_key(const struct creds *c);

/* @brief The session token the requests must carry (x-amz-security-token), or NULL. */
const char *creds_session_token(const struct creds *c);

/*
 * @brief Signs req (S3 mode) with c for region at amz_date ("YYYYMMDDTHHMMSSZ").
 * @param[out] out the Authorization header's value, malloc'd, owned by the caller.
 * @return SC_OK, or sigv4_authorization()'s errors, SC_ENOMEM.
 */
sc_code creds_authorization(const struct creds *c, const struct sigv4_request *req,
                            const char *region, const char *amz_date, char **out);

#endif
