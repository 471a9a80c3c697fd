/*
 * sigv4_int.h - sigv4/'s private types: a key pair and a client key. Nothing outside sigv4/
 * (and its unit tests) includes it, so secrets are read only here.
 *
 *   sigv4.c        signing: canonical request, string to sign, signing key, Authorization
 *   creds.c        the gateway's credentials: loading, copies, signing with a handle
 *   client_keys.c  the client key table (--client-credentials)
 *   s3_auth.c      verifying a client's signature
 */
#ifndef SIGV4_INT_H
#define SIGV4_INT_H

#include <stddef.h>

#include "client_keys.h"
#include "creds.h"

struct creds {
    char *access_key;
    char *secret_key;
    char *session_token; /* NULL if none */
};

struct ckey {
    struct creds creds; /* access_key and secret_key; session_token is always NULL */
    char **buckets;     /* the buckets it may use, sorted; NULL: every bucket */
    size_t n_buckets;
};

/* Wipes and frees the strings of c, leaving it zeroed (c itself is not freed). */
void creds_clear(struct creds *c);

#endif
