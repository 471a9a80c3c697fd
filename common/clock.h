/*
 * clock.h - time measured on the monotonic clock, for durations and rates.
 */
#ifndef SC_CLOCK_H
#define SC_CLOCK_H

#include <time.h>

/* @brief Seconds from start (taken with clock_gettime(CLOCK_MONOTONIC)) to now. */
double sc_seconds_since(const struct timespec *start);

#endif
