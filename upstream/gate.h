/*
 * gate.h - admission of upstream attempts: at most `limit` at once per destination (the
 * bucket, each fleet peer); the others wait their turn in the order they came.
 *
 * Why not libcurl's own cap (CURLMOPT_MAX_HOST_CONNECTIONS): a handle over it waits in
 * curl's pending list, and when a connection frees, a handle added meanwhile may take it
 * first while the woken one goes back to the end of that list. Under a thousand clients
 * against a slow bucket the median miss waited 3.6 s and some waited over 60 s
 * (tests/integration/test_load.py). Here a freed slot always goes to the oldest waiter.
 *
 * Loop thread only, except gates_waiting(). The caller embeds a gate_entry in each request.
 */
#ifndef GW_GATE_H
#define GW_GATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/sc_err.h"

struct gate;

/* One request's place: zeroed, it is neither waiting nor holding a slot. */
struct gate_entry {
    struct gate *gate;              /* NULL: outside every gate */
    bool holding;                   /* holds a slot of gate (else waits in its queue) */
    struct gate_entry *prev, *next; /* in gate's queue while waiting */
    int64_t since_ms;               /* when it began to wait (sc_now_ms) */
};

struct gates {
    struct gate *list; /* one per destination seen, kept until gates_destroy() */
    unsigned limit;    /* slots per destination */
    atomic_long waiting;
};

/* @brief An empty set whose destinations each admit limit attempts at once (limit >= 1). */
void gates_init(struct gates *gs, unsigned limit);

/* @brief Frees the set. Every entry must have left. */
void gates_destroy(struct gates *gs);

/*
 * @brief Queues e (outside every gate) for destination dest, at the back; at the front when
 * front is set, for an attempt that continues a request already under way.
 * @return SC_OK, SC_ENOMEM (the first entry for dest could not make its gate).
 */
sc_code gates_wait(struct gates *gs, struct gate_entry *e, const char *dest, bool front);

/* @brief Takes e out of its queue, or gives its slot back. No-op when it is outside. */
void gates_leave(struct gates *gs, struct gate_entry *e);

/* @brief The oldest waiter of a destination with a free slot, now holding it; NULL if none. */
struct gate_entry *gates_admit(struct gates *gs);

/* @brief Entries waiting now, every destination. Any thread. */
long gates_waiting(struct gates *gs);

#endif
