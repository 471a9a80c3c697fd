/*
 * ghost.h - a small fixed-size set of name hashes seen lately (the --fleet-copy hot rule,
 * origin.h): whether a name was seen before, within a window of seconds. Set-associative:
 * a name that meets GHOST_WAYS younger names of its set is forgotten (the oldest goes), so
 * the memory is fixed whatever the traffic; forgetting only stores a copy later.
 * Safe from any thread.
 */
#ifndef GW_GHOST_H
#define GW_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"

#define GHOST_WAYS 4

typedef struct ghost_set ghost_set;

/*
 * @brief A set remembering about capacity names (rounded up to a power of two sets of
 * GHOST_WAYS) for window seconds each.
 * @param[out] out release with ghost_set_free().
 * @return SC_OK, SC_EINVAL (capacity 0, window not positive), SC_ENOMEM.
 */
sc_code ghost_set_new(size_t capacity, double window, ghost_set **out);

/* @brief Frees the set. NULL is a no-op. */
void ghost_set_free(ghost_set *g);

/*
 * @brief Records name as seen at now (seconds, any monotonic clock) and tells whether it had
 * been seen before, no longer than the window ago.
 */
bool ghost_seen(ghost_set *g, uint64_t name, double now);

#endif
