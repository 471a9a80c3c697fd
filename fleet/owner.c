/*
 * owner.c - rendezvous ownership: the owner of a name is the live member with the highest
 * sc_hash_mix(name ^ hash of its URL); this gateway is always live. Members are sorted by URL
 * and only a strictly higher score wins, so a tie goes to the smaller URL on every gateway.
 * Runs on every miss: one clock read and one mix per member under the read lock, no allocation.
 */
#include <string.h>

#include "../common/hash.h"
#include "fleet_int.h"

/* The winner in v at now; v holds this gateway, which is never down, so never NULL. */
static const struct fleet_member *winner(const struct fleet_view *v, uint64_t name, int64_t now)
{
    const struct fleet_member *best = NULL;
    uint64_t best_score = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct fleet_member *m = &v->m[i];
        if (!m->self && fleet_member_down(m, now))
            continue;
        uint64_t score = sc_hash_mix(name ^ m->hash);
        if (best == NULL || score > best_score) {
            best = m;
            best_score = score;
        }
    }
    return best;
}

void fleet_owner_of(fleet *f, uint64_t name, struct fleet_owner *out)
{
    int64_t now = fleet_now_ms(f);
    pthread_rwlock_rdlock(&f->lock);
    const struct fleet_member *m = winner(f->view, name, now);
    out->self = m->self;
    memcpy(out->url, m->url, sizeof(out->url));
    pthread_rwlock_unlock(&f->lock);
}

bool fleet_owns(fleet *f, uint64_t name)
{
    int64_t now = fleet_now_ms(f);
    pthread_rwlock_rdlock(&f->lock);
    bool self = winner(f->view, name, now)->self;
    pthread_rwlock_unlock(&f->lock);
    return self;
}

uint64_t fleet_range_name(uint64_t khash, uint64_t first, uint32_t block_size)
{
    if (block_size == 0 || first / block_size > UINT32_MAX)
        return khash;
    return sc_block_key_hash(khash, (uint32_t)(first / block_size));
}
