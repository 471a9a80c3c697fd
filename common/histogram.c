/* histogram.c - fixed-bound latency histograms (see histogram.h). */
#include "histogram.h"

/* Seconds: from a cached hit on loopback to a slow upstream on another continent. */
static const double bounds[GW_HIST_BOUNDS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

void sc_hist_observe(struct sc_hist *h, double seconds)
{
    if (!(seconds > 0))
        seconds = 0;
    int i = 0;
    while (i < GW_HIST_BOUNDS && seconds > bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint_fast64_t)(seconds * 1e9), memory_order_relaxed);
}

void sc_hist_write(FILE *out, const char *name, const char *labels, struct sc_hist *h)
{
    const char *sep = labels[0] ? "," : "";
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    uint64_t total = 0;
    for (int i = 0; i <= GW_HIST_BOUNDS; i++) {
        total += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < GW_HIST_BOUNDS)
            fprintf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
                    (unsigned long long)total);
        else
            fprintf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                    (unsigned long long)total);
    }
    double sum = (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9;
    fprintf(out, "%s_sum%s%s%s %.9f\n", name, open, labels, close, sum);
    fprintf(out, "%s_count%s%s%s %llu\n", name, open, labels, close, (unsigned long long)total);
}
