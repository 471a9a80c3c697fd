/*
 * gate.c - per-destination admission of upstream attempts, oldest first (see gate.h).
 */
#include "gate.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"

struct gate {
    struct gate *next;
    unsigned holding;               /* slots taken */
    struct gate_entry *head, *tail; /* waiters, oldest first */
    char dest[];
};

void gates_init(struct gates *gs, unsigned limit)
{
    gs->list = NULL;
    gs->limit = limit > 0 ? limit : 1;
    atomic_init(&gs->waiting, 0);
}

void gates_destroy(struct gates *gs)
{
    while (gs->list) {
        struct gate *g = gs->list;
        gs->list = g->next;
        free(g);
    }
}

static struct gate *gate_of(struct gates *gs, const char *dest)
{
    for (struct gate *g = gs->list; g; g = g->next)
        if (strcmp(g->dest, dest) == 0)
            return g;
    size_t len = strlen(dest);
    struct gate *g = calloc(1, sizeof(*g) + len + 1);
    if (g == NULL)
        return NULL;
    memcpy(g->dest, dest, len + 1);
    g->next = gs->list;
    gs->list = g;
    return g;
}

sc_code gates_wait(struct gates *gs, struct gate_entry *e, const char *dest, bool front)
{
    assert(e->gate == NULL);
    struct gate *g = gate_of(gs, dest);
    if (g == NULL)
        return SC_ENOMEM;
    e->gate = g;
    e->holding = false;
    e->since_ms = sc_now_ms();
    e->prev = front ? NULL : g->tail;
    e->next = front ? g->head : NULL;
    if (e->prev)
        e->prev->next = e;
    else
        g->head = e;
    if (e->next)
        e->next->prev = e;
    else
        g->tail = e;
    atomic_fetch_add_explicit(&gs->waiting, 1, memory_order_relaxed);
    return SC_OK;
}

static void unqueue(struct gates *gs, struct gate_entry *e)
{
    struct gate *g = e->gate;
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g->tail = e->prev;
    e->prev = e->next = NULL;
    atomic_fetch_sub_explicit(&gs->waiting, 1, memory_order_relaxed);
}

void gates_leave(struct gates *gs, struct gate_entry *e)
{
    if (e->gate == NULL)
        return;
    if (e->holding) {
        assert(e->gate->holding > 0);
        e->gate->holding--;
    } else {
        unqueue(gs, e);
    }
    e->gate = NULL;
    e->holding = false;
}

struct gate_entry *gates_admit(struct gates *gs)
{
    for (struct gate *g = gs->list; g; g = g->next) {
        if (g->head == NULL || g->holding >= gs->limit)
            continue;
        struct gate_entry *e = g->head;
        unqueue(gs, e);
        e->holding = true;
        g->holding++;
        return e;
    }
    return NULL;
}

long gates_waiting(struct gates *gs)
{
    return atomic_load_explicit(&gs->waiting, memory_order_relaxed);
}
