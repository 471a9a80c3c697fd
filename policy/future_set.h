/*
 * future_set.h - the node's future: the futures of several jobs, merged by their read rates.
 *
 * One node serves several jobs at once, each reading its own plan (future.h) at its own pace.
 * Their plans are not one sequence, so an object's next use is compared in time: job j, at
 * position p_j and reading rate_j accesses per second, reaches its position q in about
 * (q - p_j) / rate_j seconds. The set speaks in merged positions, so that the clairvoyant
 * policy keeps its arithmetic: the position is the sum of the jobs' positions, P, and an
 * access expected in d seconds is at P + d * R, where R is the sum of the rates (the merged
 * positions advance at R per second). With one job this is exactly that job's future.
 *
 * Rates are measured by whoever knows the reads (manifest/) and set at any time; a job whose
 * rate is not known yet counts at the mean of the known ones (all alike when none is known).
 * Estimates move with the rates: a policy must re-read next uses, as it already does for
 * consumption and skipping.
 *
 * Immutable but for the rates; thread-safe; shared by reference count.
 */
#ifndef POLICY_FUTURE_SET_H
#define POLICY_FUTURE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "future.h"

typedef struct future_set future_set;

/*
 * @brief A set of the n futures (n >= 1), each with a reference taken, rates unknown.
 * @param[out] out one reference, the caller's.
 * @return SC_OK, SC_EINVAL (n is 0), SC_ENOMEM.
 */
sc_code future_set_new(future *const *futs, size_t n, future_set **out);

void future_set_ref(future_set *s);
void future_set_unref(future_set *s); /* NULL is a no-op */

/* @brief The number of futures. */
size_t future_set_count(const future_set *s);

/* @brief The i-th future (i < count), as given. */
future *future_set_at(const future_set *s, size_t i);

/* @brief Sets future i's read rate in positions per second; 0 or less: unknown. */
void future_set_rate(future_set *s, size_t i, double per_second);

/* @brief The merged position: the sum of the futures' positions. */
uint64_t future_set_position(future_set *s);

/*
 * @brief The merged position of the next use of an entry (future_next_use_block in each
 * future), the earliest over the futures in time; FUTURE_NEVER when none plans it. A use at
 * or behind its future's position is due now: the merged position itself.
 */
uint64_t future_set_next_use_block(future_set *s, uint64_t khash, uint32_t block);

#endif
