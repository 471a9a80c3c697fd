/*
 * stats.h - the gateway's counters, updated lock-free from every thread (HTTP workers,
 * the upstream thread, the prefetcher); rendered by gateway/admin/stats_json.c and metrics.c.
 */
#ifndef SC_STATS_H
#define SC_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct sc_stats {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t hits;
    atomic_uint_fast64_t misses;
    atomic_uint_fast64_t bypasses;
    atomic_uint_fast64_t bytes_from_cache;
    atomic_uint_fast64_t bytes_from_upstream;
    atomic_uint_fast64_t hits_zero_copy;   /* hits (whole or block) sent from the data file */
    atomic_uint_fast64_t bytes_zero_copy;  /* their bytes (also in bytes_from_cache) */
    atomic_uint_fast64_t upstream_fetches; /* cache fills started */
    atomic_uint_fast64_t fills_stored;
    atomic_uint_fast64_t fills_failed;   /* failed, truncated or mismatched: not stored */
    atomic_uint_fast64_t fill_checks[8]; /* fills whose body passed its check, by the check
                                            made (index: proto/digest.h's enum digest_check) */
    atomic_uint_fast64_t block_fetches;  /* blocks of large objects fetched (ranged GETs) */
    atomic_uint_fast64_t blocks_stored;  /* of those, stored in the cache */
    atomic_uint_fast64_t passthrough;
    atomic_uint_fast64_t invalidations;
    atomic_uint_fast64_t prefetched;             /* objects stored by the prefetcher */
    atomic_uint_fast64_t prefetch_unstored;      /* bytes of prefetched bodies arrived, their
                                                    slots freed, waiting for the store (gauge) */
    atomic_uint_fast64_t prefetch_unstored_peak; /* the most it has been since the start */
    atomic_uint_fast64_t auth_refused;           /* S3 requests refused by client authentication */
    atomic_uint_fast64_t authz_checks; /* upstream HEADs asking whether a client may read */
    atomic_uint_fast64_t authz_denied; /* cached or running objects refused to a client */
};

#define sc_stat_add(field, n) atomic_fetch_add_explicit(&(field), (n), memory_order_relaxed)

#endif
