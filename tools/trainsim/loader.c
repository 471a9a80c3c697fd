/*
 * loader.c - one epoch as a PyTorch DataLoader runs it, in one event loop.
 *
 * The order is cut into batches of B. The loader fetches objects in order,
 * at most W at a time (the pool), never from a batch more than P batches
 * ahead of the consumer: while the consumer waits for batch k, batches
 * k..k+P-1 may load; while it computes on batch k, batches k+1..k+P. The
 * consumer (the GPU) takes batch k once all its objects arrived and computes
 * for T ms while loading goes on. Data stall is the time the consumer spent
 * waiting for a batch that was not complete. With a step barrier (the ranks of
 * one job), each compute step ends with an arrival and the consumer takes no
 * batch before every rank arrived, as DDP's all-reduce holds every rank until the
 * slowest is done; that wait is sync time, not stall. Times are taken from when a
 * batch's last object arrived and when a compute step ends, not from when the
 * loop noticed, so the loop's own wake-ups do not count as stall.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim.h"

#define PROGRESS_TICK_MS 200

struct epoch_run {
    const struct ts_loader *l;
    const uint32_t *order;
    uint32_t len;
    uint32_t n_batches;
    uint32_t *left;      /* objects of each batch still loading */
    int64_t *ready_ns;   /* when each batch's last object arrived */
    uint32_t next_pos;   /* next position of the order to fetch */
    uint32_t next_batch; /* the batch the consumer takes next */
    bool computing;
    bool syncing; /* the step ended; the consumer waits at the barrier */
    int64_t compute_end_ns;
    int64_t sync_ns;
    int64_t end_ns;        /* when the last step (and its barrier) ended */
    int64_t idle_since_ns; /* the consumer waits since then (when not computing) */
    int64_t stall_ns;
    uint32_t *lat_us; /* one per finished GET */
    uint32_t n_lat;
    struct ts_epoch *e;
};

/* Lets the consumer take every batch it can, up to now. */
static void consume(struct epoch_run *r, int64_t now)
{
    int64_t compute_ns = (int64_t)r->l->compute_ms * 1000000;
    for (;;) {
        if (r->computing) {
            if (now < r->compute_end_ns)
                return;
            r->computing = false;
            r->idle_since_ns = r->end_ns = r->compute_end_ns;
            if (r->l->barrier) {
                ts_barrier_arrive(r->l->barrier);
                r->syncing = true;
            }
        }
        if (r->syncing) {
            if (!ts_barrier_passed(r->l->barrier))
                return;
            r->syncing = false;
            r->sync_ns += now - r->idle_since_ns; /* now: when the loop saw it pass */
            r->idle_since_ns = r->end_ns = now;
        }
        if (r->next_batch == r->n_batches || r->left[r->next_batch] > 0)
            return;
        int64_t ready = r->ready_ns[r->next_batch];
        int64_t start = ready > r->idle_since_ns ? ready : r->idle_since_ns;
        r->stall_ns += start - r->idle_since_ns;
        r->computing = true;
        r->compute_end_ns = start + compute_ns;
        r->next_batch++;
    }
}

/* Starts fetches while there is room in the pool and in the prefetch window. */
static sc_code issue(struct epoch_run *r, ts_pool *p)
{
    uint64_t window_end = (uint64_t)r->next_batch + r->l->prefetch; /* first batch beyond it */
    while (r->next_pos < r->len && ts_pool_has_room(p) && r->next_pos / r->l->batch < window_end) {
        sc_code rc = ts_pool_start(p, TS_GET, r->order[r->next_pos], r->next_pos);
        if (rc != SC_OK)
            return rc;
        r->next_pos++;
    }
    return SC_OK;
}

/* Accounts for the transfers that ended. */
static void take_done(struct epoch_run *r, ts_pool *p)
{
    struct ts_done d;
    while (ts_pool_next(p, &d)) {
        uint32_t b = d.pos / r->l->batch;
        r->e->retries += d.retries;
        if (d.outcome == TS_DONE_OK) {
            r->e->objects++;
            r->e->bytes += d.bytes;
            r->lat_us[r->n_lat++] = d.latency_us;
        } else if (d.outcome == TS_DONE_CORRUPT) {
            r->e->corrupt++;
        } else {
            r->e->failed++;
        }
        if (--r->left[b] == 0)
            r->ready_ns[b] = d.at_ns;
    }
}

static void show_progress(struct epoch_run *r, struct ts_progress *pr, int64_t start, bool force)
{
    double s = (double)(sc_now_ns() - start) / 1e9;
    double stall = (double)r->stall_ns / 1e9;
    ts_progress_show(
        pr, force,
        "epoch %u/%u  batch %u/%u  %" PRIu64 "/%u objects  %.0f obj/s  %.1f MB/s"
        "  stall %.1f s (%.0f%%)%s",
        r->l->epoch, r->l->epochs, r->next_batch, r->n_batches, r->e->objects, r->len,
        s > 0 ? (double)r->e->objects / s : 0.0, s > 0 ? (double)r->e->bytes / s / 1e6 : 0.0, stall,
        s > 0 ? 100.0 * stall / s : 0.0, r->e->corrupt + r->e->failed ? "  ERRORS" : "");
}

#define BARRIER_POLL_MS 1

/* How long the loop may sleep: until the compute step ends, the next look at the
 * barrier, or a progress tick. */
static int wait_ms(const struct epoch_run *r, int64_t now)
{
    if (r->syncing)
        return BARRIER_POLL_MS;
    if (!r->computing)
        return PROGRESS_TICK_MS;
    int64_t ms = (r->compute_end_ns - now + 999999) / 1000000;
    return ms < 0 ? 0 : ms > PROGRESS_TICK_MS ? PROGRESS_TICK_MS : (int)ms;
}

static sc_code run(struct epoch_run *r, ts_pool *p, struct ts_progress *pr, int64_t start)
{
    sc_code rc = SC_OK;
    r->idle_since_ns = start;
    for (;;) {
        int64_t now = sc_now_ns();
        consume(r, now);
        if (r->next_batch == r->n_batches && !r->computing && !r->syncing)
            return SC_OK;
        rc = issue(r, p);
        if (rc != SC_OK)
            return rc;
        show_progress(r, pr, start, false);
        rc = ts_pool_run(p, wait_ms(r, now));
        if (rc != SC_OK)
            return rc;
        take_done(r, p);
    }
}

sc_code ts_load_epoch(ts_pool *p, const struct ts_loader *l, const uint32_t *order, uint32_t len,
                      struct ts_progress *pr, struct ts_epoch *e)
{
    struct epoch_run r = {.l = l, .order = order, .len = len, .e = e};
    sc_code rc = SC_ENOMEM;
    r.n_batches = (uint32_t)(((uint64_t)len + l->batch - 1) / l->batch);
    r.left = calloc(r.n_batches, sizeof(*r.left));
    r.ready_ns = calloc(r.n_batches, sizeof(*r.ready_ns));
    r.lat_us = calloc(len, sizeof(*r.lat_us));
    if (r.left == NULL || r.ready_ns == NULL || r.lat_us == NULL)
        goto out;
    for (uint32_t pos = 0; pos < len; pos++)
        r.left[pos / l->batch]++;
    int64_t start = sc_now_ns();
    rc = run(&r, p, pr, start);
    if (rc != SC_OK)
        goto out;
    int64_t end = r.end_ns > start ? r.end_ns : sc_now_ns();
    show_progress(&r, pr, start, true);
    ts_progress_done(pr);
    e->wall_s = (double)(end - start) / 1e9;
    e->stall_s = (double)r.stall_ns / 1e9;
    e->sync_s = (double)r.sync_ns / 1e9;
    e->compute_s = (double)r.n_batches * l->compute_ms / 1e3;
    ts_latency_summary(r.lat_us, r.n_lat, e);
out:
    free(r.left);
    free(r.ready_ns);
    free(r.lat_us);
    return rc;
}
