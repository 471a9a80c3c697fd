/* ghost.c - a fixed-size set of recently seen name hashes (see ghost.h). */
#include "ghost.h"

#include <pthread.h>
#include <stdlib.h>

#include "../common/hash.h"

struct ghost_entry {
    uint64_t name;
    double at; /* when last seen */
    bool used;
};

struct ghost_set {
    pthread_mutex_t mu;
    double window;
    size_t mask;                 /* sets - 1 */
    struct ghost_entry *entries; /* sets x GHOST_WAYS */
};

sc_code ghost_set_new(size_t capacity, double window, ghost_set **out)
{
    if (capacity == 0 || !(window > 0))
        return SC_EINVAL;
    size_t sets = 1;
    while (sets * GHOST_WAYS < capacity && sets < ((size_t)1 << 40))
        sets <<= 1;
    ghost_set *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return SC_ENOMEM;
    g->entries = calloc(sets * GHOST_WAYS, sizeof(*g->entries));
    if (g->entries == NULL) {
        free(g);
        return SC_ENOMEM;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->window = window;
    g->mask = sets - 1;
    *out = g;
    return SC_OK;
}

void ghost_set_free(ghost_set *g)
{
    if (g == NULL)
        return;
    pthread_mutex_destroy(&g->mu);
    free(g->entries);
    free(g);
}

/* The entry of name in its set, else the one to reuse: an empty one, or the oldest. */
static struct ghost_entry *slot_for(struct ghost_entry *set, uint64_t name, bool *found)
{
    struct ghost_entry *victim = &set[0];
    for (unsigned i = 0; i < GHOST_WAYS; i++) {
        if (set[i].used && set[i].name == name) {
            *found = true;
            return &set[i];
        }
        if (victim->used && (!set[i].used || set[i].at < victim->at))
            victim = &set[i];
    }
    *found = false;
    return victim;
}

bool ghost_seen(ghost_set *g, uint64_t name, double now)
{
    /* Mixed again: the caller's hashes may share low bits (block hashes of one object). */
    size_t set = (size_t)sc_hash_mix(name) & g->mask;
    bool found = false;
    pthread_mutex_lock(&g->mu);
    struct ghost_entry *e = slot_for(&g->entries[set * GHOST_WAYS], name, &found);
    bool seen = found && now - e->at <= g->window;
    *e = (struct ghost_entry){name, now, true};
    pthread_mutex_unlock(&g->mu);
    return seen;
}
