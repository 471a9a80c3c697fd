/*
 * health.c - what requests to peers did: a failure puts a peer down for its backoff (the
 * first down_min_ms, doubling on each failure after it is back, up to down_max_ms), an answer
 * ends it and resets the backoff. The generation counts changes of the live set; a backoff
 * running out is one too, counted lazily (the first fleet_generation call after it), so no
 * timer is needed. Counters per peer for metrics and the status page.
 */
#include <string.h>

#include "../common/log.h"
#include "fleet_int.h"

static uint32_t next_backoff(const fleet *f, uint32_t last)
{
    uint64_t next = last ? 2 * (uint64_t)last : f->down_min_ms;
    return next > f->down_max_ms ? f->down_max_ms : (uint32_t)next;
}

/* m goes down unless it is already (concurrent failures of one request wave double once). */
static void mark_down(fleet *f, struct fleet_member *m)
{
    int64_t now = fleet_now_ms(f);
    int64_t until = atomic_load(&m->down_until_ms);
    for (;;) {
        if (until != 0 && now < until)
            return;
        uint32_t backoff = next_backoff(f, atomic_load(&m->backoff_ms));
        if (atomic_compare_exchange_weak(&m->down_until_ms, &until, now + backoff)) {
            atomic_store(&m->backoff_ms, backoff);
            atomic_fetch_add(&f->generation, 1);
            sc_warn("fleet: peer %s down for %u ms", m->url, backoff);
            return;
        }
    }
}

void fleet_peer_failed(fleet *f, const char *url)
{
    pthread_rwlock_rdlock(&f->lock);
    struct fleet_member *m = fleet_view_find(f->view, url);
    if (m != NULL && !m->self) {
        atomic_fetch_add(&m->requests, 1);
        atomic_fetch_add(&m->errors, 1);
        mark_down(f, m);
    }
    pthread_rwlock_unlock(&f->lock);
}

void fleet_peer_answered(fleet *f, const char *url, double seconds, uint64_t bytes)
{
    pthread_rwlock_rdlock(&f->lock);
    struct fleet_member *m = fleet_view_find(f->view, url);
    if (m != NULL && !m->self) {
        atomic_fetch_add(&m->requests, 1);
        atomic_fetch_add(&m->bytes, bytes);
        atomic_fetch_add(&m->micros, seconds > 0 ? (uint64_t)(seconds * 1e6) : 0);
        atomic_store(&m->backoff_ms, 0);
        if (atomic_exchange(&m->down_until_ms, 0) != 0) /* down, or back but not yet counted */
            atomic_fetch_add(&f->generation, 1);
    }
    pthread_rwlock_unlock(&f->lock);
}

uint64_t fleet_generation(fleet *f)
{
    int64_t now = fleet_now_ms(f);
    pthread_rwlock_rdlock(&f->lock);
    for (size_t i = 0; i < f->view->n; i++) {
        struct fleet_member *m = &f->view->m[i];
        int64_t until = atomic_load(&m->down_until_ms);
        if (until != 0 && now >= until &&
            atomic_compare_exchange_strong(&m->down_until_ms, &until, 0))
            atomic_fetch_add(&f->generation, 1);
    }
    uint64_t g = atomic_load(&f->generation);
    pthread_rwlock_unlock(&f->lock);
    return g;
}

static void info_of(const struct fleet_member *m, int64_t now, struct fleet_peer_info *out)
{
    memcpy(out->url, m->url, sizeof(out->url));
    out->self = m->self;
    out->state = fleet_member_down(m, now) ? FLEET_DOWN : FLEET_UP;
    out->requests = atomic_load(&m->requests);
    out->errors = atomic_load(&m->errors);
    out->bytes = atomic_load(&m->bytes);
    out->seconds = (double)atomic_load(&m->micros) / 1e6;
    out->down_for =
        out->state == FLEET_DOWN ? (double)(atomic_load(&m->down_until_ms) - now) / 1e3 : 0;
    if (out->down_for < 0)
        out->down_for = 0;
}

size_t fleet_peers(fleet *f, struct fleet_peer_info *out, size_t cap)
{
    int64_t now = fleet_now_ms(f);
    pthread_rwlock_rdlock(&f->lock);
    size_t n = f->view->n;
    for (size_t i = 0; i < n && i < cap; i++)
        info_of(&f->view->m[i], now, &out[i]);
    pthread_rwlock_unlock(&f->lock);
    return n;
}
