/*
 * stats.h - the gateway's counters, updated lock-free from every thread.
 */
#ifndef GW_STATS_H
#define GW_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "../store/store.h"

struct gw_stats {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t hits;
    atomic_uint_fast64_t misses;
    atomic_uint_fast64_t bypasses;
    atomic_uint_fast64_t bytes_from_cache;
    atomic_uint_fast64_t bytes_from_upstream;
    atomic_uint_fast64_t upstream_fetches; /* cache fills started */
    atomic_uint_fast64_t fills_stored;
    atomic_uint_fast64_t fills_failed; /* failed, truncated or mismatched: not stored */
    atomic_uint_fast64_t passthrough;
    atomic_uint_fast64_t invalidations;
    atomic_uint_fast64_t prefetched;   /* objects stored by the prefetcher */
    atomic_uint_fast64_t auth_refused; /* S3 requests refused by client authentication */
    atomic_uint_fast64_t authz_checks; /* upstream HEADs asking whether a client may read */
    atomic_uint_fast64_t authz_denied; /* cached or running objects refused to a client */
};

#define gw_stat_add(field, n) atomic_fetch_add_explicit(&(field), (n), memory_order_relaxed)

/*
 * @brief Renders the counters, the store's and the policy's name as one JSON object.
 * @return a malloc'd NUL-terminated string owned by the caller, or NULL when out of memory.
 */
char *gw_stats_json(struct gw_stats *s, store *st, const char *policy);

#endif
