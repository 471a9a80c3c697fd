/*
 * histogram.h - a latency histogram with fixed bounds, updated lock-free, rendered in the
 * Prometheus text format (cumulative "le" buckets, _sum and _count).
 */
#ifndef GW_HISTOGRAM_H
#define GW_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define GW_HIST_BOUNDS 15

struct sc_hist {
    atomic_uint_fast64_t bucket[GW_HIST_BOUNDS + 1]; /* the last one is +Inf */
    atomic_uint_fast64_t sum_ns;
};

/* @brief Counts one observation of seconds (negative counts as 0). Any thread. */
void sc_hist_observe(struct sc_hist *h, double seconds);

/*
 * @brief Writes name's _bucket, _sum and _count lines; labels is "" or `key="value",...`
 * without braces. Writes nothing else (the caller writes # HELP and # TYPE once).
 */
void sc_hist_write(FILE *out, const char *name, const char *labels, struct sc_hist *h);

#endif
