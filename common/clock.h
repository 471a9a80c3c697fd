/*
 * clock.h - time measured on the monotonic clock (CLOCK_MONOTONIC), for durations, rates,
 * deadlines and expiry: it never jumps when the wall clock is set. Its values mean nothing
 * across processes or reboots; never store or send them.
 */
#ifndef SC_CLOCK_H
#define SC_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* @brief Seconds from start (taken with clock_gettime(CLOCK_MONOTONIC)) to now. */
double sc_seconds_since(const struct timespec *start);

/* @brief Now, in seconds (with the fraction). */
double sc_now_seconds(void);

/* @brief Now, in whole milliseconds. */
int64_t sc_now_ms(void);

/* @brief Now, in nanoseconds. */
int64_t sc_now_ns(void);

/*
 * @brief The moment ns nanoseconds from now (0 <= ns < 1e9), for pthread_cond_timedwait() on a
 * condition variable set to CLOCK_MONOTONIC (pthread_condattr_setclock).
 */
struct timespec sc_deadline_in_ns(long ns);

/* @brief The moment ms milliseconds from now (ms >= 0), for the same kind of wait. */
struct timespec sc_deadline_in_ms(int64_t ms);

/* @brief Initializes *c to wait on CLOCK_MONOTONIC, the clock of the deadlines above.
 * @return 0 or pthread_cond_init()'s error. */
int sc_cond_init_monotonic(pthread_cond_t *c);

#endif
