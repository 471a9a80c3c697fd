/*
 * bucket_stats.h - object reads counted per bucket, for the status page's "top buckets"
 * (GET /_s3cached/buckets).
 *
 * A fixed table: the first GW_BUCKETS_MAX distinct buckets read get a row each, every
 * bucket after that is added to one "other" row, so memory is bounded whatever the
 * clients ask for. Counting a read is lock-free once its bucket has a row (a hash, a
 * string compare and relaxed atomic adds); only the first read of a new bucket takes a
 * short lock to add its row. Rows are never removed.
 */
#ifndef GW_BUCKET_STATS_H
#define GW_BUCKET_STATS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define GW_BUCKETS_MAX     64  /* buckets with a row of their own */
#define GW_BUCKETS_SLOTS   128 /* hash slots: a power of two, at least twice GW_BUCKETS_MAX */
#define GW_BUCKET_NAME_MAX 63  /* longer (legacy) names count in "other" */

/* What one object read was, as X-Cache says. */
enum gw_read_result { GW_READ_HIT, GW_READ_MISS, GW_READ_BYPASS };

struct gw_bucket_counts {
    atomic_uint_fast64_t hits, misses, bypasses;
    atomic_uint_fast64_t bytes; /* object body bytes answered, from the cache or the upstream */
};

struct gw_bucket_slot {
    atomic_uint ready; /* 1 once name is written; then name never changes */
    char name[GW_BUCKET_NAME_MAX + 1];
    _Alignas(64) struct gw_bucket_counts n; /* its own cache line: name stays read-only */
};

struct gw_buckets {
    struct gw_bucket_slot slot[GW_BUCKETS_SLOTS];
    struct gw_bucket_counts other;
    pthread_mutex_t add_lock; /* held while a row is added */
    unsigned used;            /* rows added (under add_lock) */
    atomic_bool full;         /* used reached GW_BUCKETS_MAX: new buckets go to "other" */
};

/*
 * @brief Makes b an empty table.
 * @param[out] b the table, usually inside struct gw; release with gw_buckets_destroy().
 */
void gw_buckets_init(struct gw_buckets *b);

/* @brief Releases what gw_buckets_init() set up (the lock). */
void gw_buckets_destroy(struct gw_buckets *b);

/*
 * @brief Counts one object read of bucket. Any thread; cannot fail.
 * @param[in] bucket the bucket's name, NUL-terminated (NULL counts in "other").
 * @param[in] result hit, miss or bypass.
 * @param[in] bytes the body bytes answered (0 for HEAD, 304, errors).
 */
void gw_buckets_count(struct gw_buckets *b, const char *bucket, enum gw_read_result result,
                      uint64_t bytes);

/*
 * @brief Renders the table as JSON:
 *   {"buckets": [{"bucket", "hits", "misses", "bypasses", "bytes"}, ...],
 *    "other": {"hits", "misses", "bypasses", "bytes"}, "max_buckets": GW_BUCKETS_MAX}
 * with the buckets ordered by reads (hits + misses + bypasses), most first, then by name.
 * Any thread; counters are read one by one, so a row may be mid-update by a read.
 * @return a malloc'd NUL-terminated string owned by the caller, or NULL when out of memory.
 */
char *gw_buckets_json(struct gw_buckets *b);

#endif
