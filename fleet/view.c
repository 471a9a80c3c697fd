/*
 * view.c - the immutable member arrays fleet_owner_of reads: built from URLs, sorted by URL
 * (so a walk in order breaks score ties by URL), found by URL, and swapped in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "fleet_int.h"

static int by_url(const void *a, const void *b)
{
    return strcmp(((const struct fleet_member *)a)->url, ((const struct fleet_member *)b)->url);
}

static struct fleet_view *view_alloc(size_t n)
{
    struct fleet_view *v = calloc(1, sizeof(*v) + n * sizeof(v->m[0]));
    if (v != NULL)
        v->n = n;
    return v;
}

static void member_init(struct fleet_member *m, const char *url, bool self)
{
    snprintf(m->url, sizeof(m->url), "%s", url);
    m->hash = sc_bytes_hash(m->url, strlen(m->url));
    m->self = self;
}

struct fleet_view *fleet_view_new(const struct fleet_url *urls, const bool *self, size_t n)
{
    struct fleet_view *v = view_alloc(n);
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        member_init(&v->m[i], urls[i].url, self != NULL && self[i]);
    qsort(v->m, n, sizeof(v->m[0]), by_url);
    return v;
}

struct fleet_view *fleet_view_alone(const char *url)
{
    struct fleet_view *v = view_alloc(1);
    if (v != NULL)
        member_init(&v->m[0], url, true);
    return v;
}

struct fleet_member *fleet_view_find(struct fleet_view *v, const char *url)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(url, v->m[mid].url);
        if (c == 0)
            return &v->m[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static void carry_health(struct fleet_member *to, const struct fleet_member *from)
{
    atomic_store(&to->down_until_ms, atomic_load(&from->down_until_ms));
    atomic_store(&to->backoff_ms, atomic_load(&from->backoff_ms));
    atomic_store(&to->requests, atomic_load(&from->requests));
    atomic_store(&to->errors, atomic_load(&from->errors));
    atomic_store(&to->bytes, atomic_load(&from->bytes));
    atomic_store(&to->micros, atomic_load(&from->micros));
}

static bool same_members(const struct fleet_view *a, const struct fleet_view *b)
{
    if (a == NULL || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        if (a->m[i].self != b->m[i].self || strcmp(a->m[i].url, b->m[i].url) != 0)
            return false;
    }
    return true;
}

void fleet_view_install(fleet *f, struct fleet_view *v)
{
    pthread_rwlock_wrlock(&f->lock);
    struct fleet_view *old = f->view;
    bool changed = !same_members(old, v);
    for (size_t i = 0; old != NULL && i < v->n; i++) {
        const struct fleet_member *was = fleet_view_find(old, v->m[i].url);
        if (was != NULL && !v->m[i].self)
            carry_health(&v->m[i], was);
    }
    f->view = v;
    pthread_rwlock_unlock(&f->lock);
    if (changed)
        atomic_fetch_add(&f->generation, 1);
    free(old);
}
