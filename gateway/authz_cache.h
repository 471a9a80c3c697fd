/*
 * authz_cache.h - remembered answers to "may this identity read this object?".
 *
 * With --identity client, and for anonymous requests, a cached object is served
 * to an identity only once the upstream has said that identity may read it (see
 * authz.c). The answers are kept here for a bounded time (--auth-cache-ttl) in a
 * bounded table (--auth-cache-size entries): two-way set-associative, indexed by
 * the SHA-256 of (identity, bucket, key), so memory never grows and no key or
 * identity is stored in the clear. A full set replaces its older entry. Answers
 * are not forgotten early when permissions change upstream: the TTL is the bound.
 *
 * Thread-safe (one mutex). Times are seconds of a monotonic clock, passed in.
 */
#ifndef GW_AUTHZ_CACHE_H
#define GW_AUTHZ_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

typedef struct authz_cache authz_cache;

enum authz_answer {
    AUTHZ_UNKNOWN, /* never asked, forgotten, or expired */
    AUTHZ_ALLOWED,
    AUTHZ_DENIED,
};

/*
 * @brief Creates a table of at most entries answers, each kept ttl seconds.
 * @param entries rounded up to an even number, at least 2.
 * @param ttl 0: nothing is remembered (every lookup is AUTHZ_UNKNOWN).
 * @param[out] out owned by the caller; release with authz_cache_free().
 * @return SC_OK, SC_EINVAL (entries 0), SC_ENOMEM.
 */
sc_code authz_cache_new(size_t entries, uint64_t ttl, authz_cache **out);

/* @brief Frees the table. NULL is a no-op. */
void authz_cache_free(authz_cache *c);

/*
 * @brief The remembered answer for identity ("" for anonymous) reading bucket/key.
 * @param now seconds of a monotonic clock.
 */
enum authz_answer authz_cache_get(authz_cache *c, const char *identity, const char *bucket,
                                  const char *key, int64_t now);

/* @brief Remembers an answer until now + ttl. */
void authz_cache_put(authz_cache *c, const char *identity, const char *bucket, const char *key,
                     bool allowed, int64_t now);

/* @brief How many answers are remembered and not expired at now (tests, stats). */
size_t authz_cache_count(authz_cache *c, int64_t now);

#endif
