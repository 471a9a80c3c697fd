/*
 * authz_cache.c - a bounded, expiring table of authorization answers (see authz_cache.h).
 *
 * Each set holds two entries; a lookup compares the 32-byte digest of (identity,
 * bucket, key) with both. An insert takes the matching entry, else an empty or
 * expired one, else the one that expires first.
 */
#include "authz_cache.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_LEN 32
#define WAYS       2

struct entry {
    unsigned char digest[DIGEST_LEN];
    int64_t expires; /* 0: empty */
    bool allowed;
};

struct authz_cache {
    pthread_mutex_t mu;
    struct entry *entries;
    size_t n_sets;
    uint64_t ttl;
};

sc_code authz_cache_new(size_t entries, uint64_t ttl, authz_cache **out)
{
    *out = NULL;
    if (entries == 0)
        return SC_EINVAL;
    authz_cache *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return SC_ENOMEM;
    c->n_sets = (entries + WAYS - 1) / WAYS;
    c->ttl = ttl;
    c->entries = calloc(c->n_sets * WAYS, sizeof(*c->entries));
    if (c->entries == NULL) {
        free(c);
        return SC_ENOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return SC_OK;
}

void authz_cache_free(authz_cache *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->entries);
    free(c);
}

/* SHA-256 over identity, NUL, bucket, NUL, key; false if the digest fails. */
static bool digest_of(const char *identity, const char *bucket, const char *key,
                      unsigned char out[DIGEST_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    bool ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, identity, strlen(identity) + 1) == 1 &&
              EVP_DigestUpdate(ctx, bucket, strlen(bucket) + 1) == 1 &&
              EVP_DigestUpdate(ctx, key, strlen(key)) == 1 &&
              EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == DIGEST_LEN;
    EVP_MD_CTX_free(ctx);
    return ok;
}

static struct entry *set_of(authz_cache *c, const unsigned char digest[DIGEST_LEN])
{
    uint64_t h;
    memcpy(&h, digest, sizeof(h));
    return &c->entries[(h % c->n_sets) * WAYS];
}

enum authz_answer authz_cache_get(authz_cache *c, const char *identity, const char *bucket,
                                  const char *key, int64_t now)
{
    unsigned char d[DIGEST_LEN];
    if (c->ttl == 0 || !digest_of(identity, bucket, key, d))
        return AUTHZ_UNKNOWN;
    enum authz_answer a = AUTHZ_UNKNOWN;
    pthread_mutex_lock(&c->mu);
    struct entry *set = set_of(c, d);
    for (size_t i = 0; i < WAYS; i++) {
        if (set[i].expires > now && memcmp(set[i].digest, d, DIGEST_LEN) == 0)
            a = set[i].allowed ? AUTHZ_ALLOWED : AUTHZ_DENIED;
    }
    pthread_mutex_unlock(&c->mu);
    return a;
}

/* The entry to (re)use in set for digest d. */
static struct entry *victim(struct entry *set, const unsigned char d[DIGEST_LEN], int64_t now)
{
    struct entry *pick = &set[0];
    for (size_t i = 0; i < WAYS; i++) {
        if (memcmp(set[i].digest, d, DIGEST_LEN) == 0 && set[i].expires > 0)
            return &set[i];
    }
    for (size_t i = 0; i < WAYS; i++) {
        if (set[i].expires <= now)
            return &set[i];
        if (set[i].expires < pick->expires)
            pick = &set[i];
    }
    return pick;
}

void authz_cache_put(authz_cache *c, const char *identity, const char *bucket, const char *key,
                     bool allowed, int64_t now)
{
    unsigned char d[DIGEST_LEN];
    if (c->ttl == 0 || !digest_of(identity, bucket, key, d))
        return;
    pthread_mutex_lock(&c->mu);
    struct entry *e = victim(set_of(c, d), d, now);
    memcpy(e->digest, d, DIGEST_LEN);
    e->expires = now + (int64_t)c->ttl;
    e->allowed = allowed;
    pthread_mutex_unlock(&c->mu);
}

size_t authz_cache_count(authz_cache *c, int64_t now)
{
    size_t n = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_sets * WAYS; i++)
        n += c->entries[i].expires > now;
    pthread_mutex_unlock(&c->mu);
    return n;
}
