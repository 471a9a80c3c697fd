/*
 * seed.c - seed mode: PUT objects 0..N-1 of the dataset, at most W at a time,
 * each body generated as it is sent.
 */
#include <inttypes.h>

#include "trainsim.h"

static void show(struct ts_progress *pr, const struct ts_seed_result *r, uint32_t total,
                 int64_t start, bool force)
{
    double s = (double)(sc_now_ns() - start) / 1e9;
    ts_progress_show(pr, force, "seed  %" PRIu64 "/%u objects  %.1f MB  %.0f obj/s  %.1f MB/s%s",
                     r->objects, total, (double)r->bytes / 1e6,
                     s > 0 ? (double)r->objects / s : 0.0, s > 0 ? (double)r->bytes / s / 1e6 : 0.0,
                     r->failed ? "  ERRORS" : "");
}

sc_code ts_seed(ts_pool *p, const struct ts_dataset *d, struct ts_progress *pr,
                struct ts_seed_result *r)
{
    int64_t start = sc_now_ns();
    uint32_t next = 0;
    struct ts_done done;
    *r = (struct ts_seed_result){0};
    while (next < d->objects || ts_pool_busy(p) > 0) {
        while (next < d->objects && ts_pool_has_room(p)) {
            sc_code rc = ts_pool_start(p, TS_PUT, next, next);
            if (rc != SC_OK)
                return rc;
            next++;
        }
        sc_code rc = ts_pool_run(p, 200);
        if (rc != SC_OK)
            return rc;
        while (ts_pool_next(p, &done)) {
            r->retries += done.retries;
            if (done.outcome == TS_DONE_OK) {
                r->objects++;
                r->bytes += done.bytes;
            } else {
                r->failed++;
            }
        }
        show(pr, r, d->objects, start, false);
    }
    show(pr, r, d->objects, start, true);
    ts_progress_done(pr);
    r->wall_s = (double)(sc_now_ns() - start) / 1e9;
    return SC_OK;
}
