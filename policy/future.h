/*
 * future.h - the known order of coming accesses (a manifest's plan).
 *
 * A future is the sequence of objects a trainer will read, in order, named by
 * sc_key_hash(), or for a read of a byte range, by sc_block_key_hash() of each
 * block the range covers. It is built once (future_append, then future_seal) and
 * then shared: the gateway tells it what the trainer actually read
 * (future_consume), the clairvoyant policy asks when each object is needed
 * next (future_next_use), and the prefetcher walks it ahead of the trainer.
 *
 * Trainers do not read in exactly the planned order (several loader workers,
 * skipped samples), so the trainer's position is the furthest consumed
 * position, and an access consumes the key's earliest occurrence that is not
 * yet consumed and not more than the slack (FUTURE_SLACK unless set) behind the position.
 * Occurrences further behind count as skipped.
 *
 * After future_seal() every function is thread-safe. Shared by reference
 * count; the last future_unref() frees it.
 */
#ifndef POLICY_FUTURE_H
#define POLICY_FUTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/sc_err.h"

typedef struct future future;

#define FUTURE_NEVER      UINT64_MAX /* "not needed again" */
#define FUTURE_SLACK      4096u      /* positions an access may lag behind the trainer */
#define FUTURE_MAX_LENGTH UINT32_MAX /* accesses a plan may hold (positions are 32-bit inside) */

/* @brief A new, empty future with one reference. @return SC_OK or SC_ENOMEM. */
sc_code future_new(future **out);

/*
 * @brief Adds the next access (before future_seal only).
 * @return SC_OK, SC_ENOMEM, SC_ETOOBIG (the plan already holds FUTURE_MAX_LENGTH
 * accesses), or SC_EINVAL (already sealed).
 */
sc_code future_append(future *f, uint64_t khash);

/*
 * @brief How many positions an access may lag behind the position (before future_seal;
 * FUTURE_SLACK by default). A plan of n ranks advancing together interleaves their reads, so
 * it allows n times as much: each rank may lag FUTURE_SLACK of its own reads.
 */
void future_slack_to(future *f, uint64_t slack);

/*
 * @brief Starts the trainer's position at pos (at most the length): a plan resumed after a
 * restart, or rebuilt with another set of ranks. Occurrences further than the slack behind it
 * count as skipped; those within it may still be consumed.
 */
void future_start_at(future *f, uint64_t pos);

/*
 * @brief future_start_at(pos) for a plan built again (its ranks or an epoch's order changed)
 * while trainers read: each key keeps as many occurrences before pos consumed as old had
 * consumed or skipped (at most those before pos), so a read of an item already read is not
 * taken for its next one. Both sealed; old is not changed. Takes old's lock, then f's.
 */
void future_start_like(future *f, future *old, uint64_t pos);

/* @brief Ends building and indexes each key's occurrences. @return SC_OK or SC_ENOMEM. */
sc_code future_seal(future *f);

void future_ref(future *f);
void future_unref(future *f); /* NULL is a no-op */

/* @brief Number of accesses in the plan. */
uint64_t future_length(const future *f);

/* @brief The key planned at position pos (< future_length). */
uint64_t future_key_at(const future *f, uint64_t pos);

/*
 * @brief The trainer read khash: consumes its occurrence as described above
 * and moves the position forward if that occurrence lies beyond it.
 * @return true if khash is in the plan and an occurrence was consumed.
 */
bool future_consume(future *f, uint64_t khash);

/*
 * @brief future_consume() with bounds, for reads that may be parts of one access: only an
 * occurrence before position `limit` is taken (a read that continues an item takes what is
 * left of that occurrence, never the next epoch's), and with `once`, none when one of khash
 * was consumed within the last slack positions (the parts of one read of an object,
 * in any order).
 * @return the position of the occurrence consumed, or FUTURE_NEVER.
 */
uint64_t future_take(future *f, uint64_t khash, uint64_t limit, bool once);

/* @brief The trainer's position: one past the furthest consumed occurrence (0 at the start). */
uint64_t future_position(future *f);

/*
 * @brief The position of khash's next planned access: its earliest occurrence
 * neither consumed nor skipped. FUTURE_NEVER if none is left or khash is not
 * in the plan (see future_contains).
 */
uint64_t future_next_use(future *f, uint64_t khash);

/*
 * @brief The next use of a cache entry: the earlier of future_next_use(khash), its object
 * read whole, and future_next_use(sc_block_key_hash(khash, block)), a ranged read covering
 * its block. A whole object's entry passes block 0, where every range of an object stored
 * whole lies. FUTURE_NEVER if neither is planned again.
 */
uint64_t future_next_use_block(future *f, uint64_t khash, uint32_t block);

/* @brief Whether khash occurs anywhere in the plan. */
bool future_contains(const future *f, uint64_t khash);

#endif
