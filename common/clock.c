/* clock.c - time measured on the monotonic clock (see clock.h). */
#include "clock.h"

static struct timespec now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}

double sc_seconds_since(const struct timespec *start)
{
    struct timespec t = now();
    return (double)(t.tv_sec - start->tv_sec) + (double)(t.tv_nsec - start->tv_nsec) / 1e9;
}

double sc_now_seconds(void)
{
    struct timespec t = now();
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int64_t sc_now_ms(void)
{
    struct timespec t = now();
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int64_t sc_now_ns(void)
{
    struct timespec t = now();
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

struct timespec sc_deadline_in_ns(long ns)
{
    struct timespec t = now();
    t.tv_nsec += ns;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

struct timespec sc_deadline_in_ms(int64_t ms)
{
    struct timespec t = sc_deadline_in_ns((long)(ms % 1000) * 1000000L);
    t.tv_sec += (time_t)(ms / 1000);
    return t;
}

int sc_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    int e = pthread_condattr_init(&ca);
    if (e != 0)
        return e;
    e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (e == 0)
        e = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return e;
}
