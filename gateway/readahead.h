/*
 * readahead.h - which objects are being read sequentially, range after range.
 *
 * A reader that reads a large object as consecutive ranges (a mounted bucket, smart_open
 * after a seek, a loader reading a shard in 8 MiB steps) asks for the next range only once
 * the last one is in. The gateway notes where each answered range of a large object ended;
 * a range starting exactly there is sequential, and the blocks after it are fetched ahead
 * (blocks.c), so the next range finds them cached or arriving. A small table of recent
 * objects, by key hash: an object pushed out by another only loses its read-ahead.
 */
#ifndef GW_READAHEAD_H
#define GW_READAHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define GW_READAHEAD_SLOTS 256

struct gw_readahead {
    pthread_mutex_t mu;
    struct {
        uint64_t khash; /* sc_key_hash(bucket, key); 0: empty */
        uint64_t end;   /* the offset after the last range answered */
    } slots[GW_READAHEAD_SLOTS];
};

/* @brief Makes ra empty. */
void gw_readahead_init(struct gw_readahead *ra);

/* @brief Frees what gw_readahead_init() made. */
void gw_readahead_destroy(struct gw_readahead *ra);

/*
 * @brief Notes a range [start, end) of (bucket, key) being answered.
 * @return true when it starts where the last range of that object ended (sequential).
 */
bool gw_readahead_note(struct gw_readahead *ra, const char *bucket, const char *key, uint64_t start,
                       uint64_t end);

#endif
