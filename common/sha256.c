/*
 * sha256.c - SHA-256 of NUL-separated strings with the digest fetched once (see sha256.h).
 */
#include "sha256.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
    sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
}

sc_code sc_sha256_fields(const char *const *fields, size_t n, unsigned char out[SC_SHA256_LEN])
{
    pthread_once(&sha256_once, fetch_sha256);
    EVP_MD_CTX *ctx = sha256 != NULL ? EVP_MD_CTX_new() : NULL;
    bool ok = ctx != NULL && EVP_DigestInit_ex(ctx, sha256, NULL) == 1;
    for (size_t i = 0; ok && i < n; i++) /* every field but the last with its '\0' */
        ok = EVP_DigestUpdate(ctx, fields[i], strlen(fields[i]) + (i + 1 < n)) == 1;
    unsigned int len = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == SC_SHA256_LEN;
    EVP_MD_CTX_free(ctx);
    return ok ? SC_OK : SC_ECRYPTO;
}
