/*
 * belady.c - the offline optimum, computed from the whole trace and nothing
 * of policy/: Belady's MIN with bypass. A backward pass gives every access
 * the position of its object's next access; cached objects sit in an indexed
 * max-heap on that position; a miss that does not fit compares the new
 * object's next access with the heap's top and evicts the later of the two.
 */
#include "sim.h"

#include <stdlib.h>

#define NEVER  UINT64_MAX
#define NOT_IN UINT32_MAX

struct min_state {
    const struct sim_trace *t;
    uint64_t *next; /* per access: position of the same object's next access, or NEVER */
    uint64_t *due;  /* per object: next access while cached */
    uint32_t *slot; /* per object: index in heap, or NOT_IN */
    uint32_t *heap; /* cached objects, the furthest due first */
    uint32_t n;     /* objects in heap */
    uint64_t used;
    uint64_t cap;
};

static void put(struct min_state *m, uint32_t i, uint32_t o)
{
    m->heap[i] = o;
    m->slot[o] = i;
}

static void up(struct min_state *m, uint32_t i)
{
    uint32_t o = m->heap[i];
    while (i > 0 && m->due[m->heap[(i - 1) / 2]] < m->due[o]) {
        put(m, i, m->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(m, i, o);
}

static void down(struct min_state *m, uint32_t i)
{
    uint32_t o = m->heap[i];
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= m->n)
            break;
        if (k + 1 < m->n && m->due[m->heap[k + 1]] > m->due[m->heap[k]])
            k++;
        if (m->due[m->heap[k]] <= m->due[o])
            break;
        put(m, i, m->heap[k]);
        i = k;
    }
    put(m, i, o);
}

/* Removes the top (the object due furthest ahead). */
static void pop(struct min_state *m)
{
    uint32_t top = m->heap[0];
    m->slot[top] = NOT_IN;
    m->used -= m->t->objs[top].size;
    if (--m->n > 0) {
        put(m, 0, m->heap[m->n]);
        down(m, 0);
    }
}

/* Access i misses on object o: cache it unless it is the one due furthest ahead. */
static void admit(struct min_state *m, uint64_t i, uint32_t o)
{
    uint64_t size = m->t->objs[o].size;
    if (size > m->cap)
        return;
    while (m->used + size > m->cap) {
        if (m->n == 0 || m->next[i] >= m->due[m->heap[0]])
            return; /* bypass: nothing cached is needed later than this object */
        pop(m);
    }
    m->due[o] = m->next[i];
    put(m, m->n, o);
    up(m, m->n++);
    m->used += size;
}

/* next[i] for every access, by one backward pass; last is per-object scratch. */
static void fill_next(struct min_state *m, uint64_t *last)
{
    const struct sim_trace *t = m->t;
    for (uint32_t o = 0; o < t->n_objs; o++)
        last[o] = NEVER;
    for (uint64_t i = t->n_acc; i-- > 0;) {
        m->next[i] = last[t->acc[i]];
        last[t->acc[i]] = i;
    }
}

sc_code sim_belady(const struct sim_trace *t, uint64_t capacity, struct sim_result *out)
{
    sc_code rc = SC_ENOMEM;
    size_t n_objs = t->n_objs ? t->n_objs : 1;
    struct min_state m = {.t = t, .cap = capacity};
    *out = (struct sim_result){0};
    m.next = malloc((t->n_acc ? t->n_acc : 1) * sizeof(*m.next));
    m.due = malloc(n_objs * sizeof(*m.due));
    m.slot = malloc(n_objs * sizeof(*m.slot));
    m.heap = malloc(n_objs * sizeof(*m.heap));
    if (m.next == NULL || m.due == NULL || m.slot == NULL || m.heap == NULL)
        goto out;
    fill_next(&m, m.due);
    for (uint32_t o = 0; o < t->n_objs; o++)
        m.slot[o] = NOT_IN;
    for (uint64_t i = 0; i < t->n_acc; i++) {
        uint32_t o = t->acc[i];
        out->accesses++;
        out->bytes += t->objs[o].size;
        if (m.slot[o] == NOT_IN) {
            admit(&m, i, o);
        } else {
            out->hits++;
            out->hit_bytes += t->objs[o].size;
            m.due[o] = m.next[i]; /* only ever later: move towards the top */
            up(&m, m.slot[o]);
        }
        if (m.used > out->max_used)
            out->max_used = m.used;
    }
    rc = SC_OK;
out:
    free(m.next);
    free(m.due);
    free(m.slot);
    free(m.heap);
    return rc;
}
