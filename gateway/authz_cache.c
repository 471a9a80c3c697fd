/*
 * authz_cache.c - a bounded, expiring table of authorization answers (see authz_cache.h).
 *
 * Each set holds two entries; a lookup compares the 32-byte digest of (identity,
 * bucket, key) with both. An insert takes the matching entry, else an empty or
 * expired one, else the one that expires first.
 *
 * Every authenticated request looks here, on every HTTP thread: the sets are locked in
 * STRIPES stripes (set index modulo STRIPES), each a read-write lock, so lookups share and
 * threads reading other keys do not meet; the digest is common/sha256.h's, whose SHA-256 is
 * fetched from OpenSSL once.
 */
#include "authz_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sha256.h"

#define DIGEST_LEN SC_SHA256_LEN
#define WAYS       2
#define STRIPES    64

struct entry {
    unsigned char digest[DIGEST_LEN];
    int64_t expires; /* 0: empty */
    bool allowed;
};

struct authz_cache {
    pthread_rwlock_t stripe[STRIPES]; /* stripe[i] guards the sets whose index is i mod STRIPES */
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
    for (size_t i = 0; i < STRIPES; i++)
        pthread_rwlock_init(&c->stripe[i], NULL);
    *out = c;
    return SC_OK;
}

void authz_cache_free(authz_cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < STRIPES; i++)
        pthread_rwlock_destroy(&c->stripe[i]);
    free(c->entries);
    free(c);
}

/* SHA-256 over identity, NUL, bucket, NUL, key; false if the digest fails. */
static bool digest_of(const char *identity, const char *bucket, const char *key,
                      unsigned char out[DIGEST_LEN])
{
    const char *fields[] = {identity, bucket, key};
    return sc_sha256_fields(fields, 3, out) == SC_OK;
}

/* The index of digest's set. */
static size_t set_index(const authz_cache *c, const unsigned char digest[DIGEST_LEN])
{
    uint64_t h;
    memcpy(&h, digest, sizeof(h));
    return (size_t)(h % c->n_sets);
}

enum authz_answer authz_cache_get(authz_cache *c, const char *identity, const char *bucket,
                                  const char *key, int64_t now)
{
    unsigned char d[DIGEST_LEN];
    if (c->ttl == 0 || !digest_of(identity, bucket, key, d))
        return AUTHZ_UNKNOWN;
    enum authz_answer a = AUTHZ_UNKNOWN;
    size_t s = set_index(c, d);
    const struct entry *set = &c->entries[s * WAYS];
    pthread_rwlock_rdlock(&c->stripe[s % STRIPES]);
    for (size_t i = 0; i < WAYS; i++) {
        if (set[i].expires > now && memcmp(set[i].digest, d, DIGEST_LEN) == 0)
            a = set[i].allowed ? AUTHZ_ALLOWED : AUTHZ_DENIED;
    }
    pthread_rwlock_unlock(&c->stripe[s % STRIPES]);
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
    size_t s = set_index(c, d);
    pthread_rwlock_wrlock(&c->stripe[s % STRIPES]);
    struct entry *e = victim(&c->entries[s * WAYS], d, now);
    memcpy(e->digest, d, DIGEST_LEN);
    e->expires = now + (int64_t)c->ttl;
    e->allowed = allowed;
    pthread_rwlock_unlock(&c->stripe[s % STRIPES]);
}

size_t authz_cache_count(authz_cache *c, int64_t now)
{
    size_t n = 0;
    for (size_t s = 0; s < c->n_sets; s++) {
        pthread_rwlock_rdlock(&c->stripe[s % STRIPES]);
        for (size_t i = 0; i < WAYS; i++)
            n += c->entries[s * WAYS + i].expires > now;
        pthread_rwlock_unlock(&c->stripe[s % STRIPES]);
    }
    return n;
}
