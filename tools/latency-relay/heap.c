/*
 * heap.c - a binary min-heap of timers, keyed by the time each is due. Every timer
 * knows its own position, so moving or removing one is O(log n). Pure.
 */
#include <stdlib.h>

#include "lrelay.h"

void lr_heap_init(struct lr_heap *h)
{
    h->v = NULL;
    h->n = 0;
    h->cap = 0;
}

void lr_heap_free(struct lr_heap *h)
{
    for (size_t i = 0; i < h->n; i++)
        h->v[i]->pos = 0;
    free(h->v);
    lr_heap_init(h);
}

static void place(struct lr_heap *h, size_t i, struct lr_timer *t)
{
    h->v[i] = t;
    t->pos = i + 1;
}

static void sift_up(struct lr_heap *h, size_t i)
{
    struct lr_timer *t = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->v[parent]->at_ns <= t->at_ns)
            break;
        place(h, i, h->v[parent]);
        i = parent;
    }
    place(h, i, t);
}

static void sift_down(struct lr_heap *h, size_t i)
{
    struct lr_timer *t = h->v[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && h->v[child + 1]->at_ns < h->v[child]->at_ns)
            child++;
        if (t->at_ns <= h->v[child]->at_ns)
            break;
        place(h, i, h->v[child]);
        i = child;
    }
    place(h, i, t);
}

sc_code lr_heap_set(struct lr_heap *h, struct lr_timer *t, int64_t at_ns)
{
    if (t->pos != 0) {
        size_t i = t->pos - 1;
        int64_t old = t->at_ns;
        t->at_ns = at_ns;
        if (at_ns < old)
            sift_up(h, i);
        else
            sift_down(h, i);
        return SC_OK;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct lr_timer **v = realloc(h->v, cap * sizeof(*v));
        if (v == NULL)
            return SC_ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    t->at_ns = at_ns;
    place(h, h->n, t);
    h->n++;
    sift_up(h, h->n - 1);
    return SC_OK;
}

void lr_heap_remove(struct lr_heap *h, struct lr_timer *t)
{
    if (t->pos == 0)
        return;
    size_t i = t->pos - 1;
    t->pos = 0;
    h->n--;
    if (i == h->n)
        return;
    struct lr_timer *last = h->v[h->n];
    place(h, i, last);
    if (i > 0 && h->v[(i - 1) / 2]->at_ns > last->at_ns)
        sift_up(h, i);
    else
        sift_down(h, i);
}

struct lr_timer *lr_heap_min(const struct lr_heap *h)
{
    return h->n > 0 ? h->v[0] : NULL;
}
