/*
 * readahead.h - which objects are being read sequentially, range after range.
 *
 * A reader that reads a large object as consecutive ranges (a mounted bucket, smart_open
 * after a seek, a loader reading a shard in 8 MiB steps) asks for the next range only once
 * the last one is in. The gateway notes where each answered range of a large object ended
 * and how many ranges in a row have each started where the one before ended. Once
 * GW_READAHEAD_RUN have, the reader is sequential and the blocks after its range are fetched
 * ahead (blocks.c), so the next range finds them cached or arriving. One range that happens
 * to start where another ended is not enough: random readers do that by chance (two in
 * every 512 ranges of a 256-block object), and each time a few blocks nobody reads would be
 * fetched in place of the ones they do. A small table of recent objects, by key hash: an
 * object pushed out by another only loses its read-ahead.
 */
#ifndef GW_READAHEAD_H
#define GW_READAHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define GW_READAHEAD_SLOTS   256
#define GW_READAHEAD_RUN     2    /* ranges in a row that make a reader sequential */
#define GW_READAHEAD_RUN_MAX 1000 /* where the count stops */

struct gw_readahead {
    pthread_mutex_t mu;
    struct {
        uint64_t khash; /* sc_key_hash(bucket, key); 0: empty */
        uint64_t end;   /* the offset after the last range answered */
        uint32_t run;   /* ranges in a row, the last included, that started where the one
                           before ended */
    } slots[GW_READAHEAD_SLOTS];
};

/* @brief Makes ra empty. */
void gw_readahead_init(struct gw_readahead *ra);

/* @brief Frees what gw_readahead_init() made. */
void gw_readahead_destroy(struct gw_readahead *ra);

/*
 * @brief Notes a range [start, end) of (bucket, key) being answered.
 * @return how many ranges in a row it ends: 0 when it does not start where the last range of
 *         that object ended, 1 when it does, 2 when that range had started where the one
 *         before it ended too, and so on up to GW_READAHEAD_RUN_MAX. A range from offset 0
 *         follows nothing.
 */
unsigned gw_readahead_note(struct gw_readahead *ra, const char *bucket, const char *key,
                           uint64_t start, uint64_t end);

#endif
