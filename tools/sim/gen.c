/*
 * gen.c - the simulator's trace generators: shuffled epochs (the manifest
 * API's order), a Zipf working set with one-time scans, and importance
 * sampling with per-sample losses. All draw from splitmix64, so a seed
 * reproduces a trace exactly.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

#define ZIPF_ALPHA 0.9
#define LOG_SIGMA  1.5 /* spread of the log-normal importances */

/* splitmix64, as the manifest API defines it: state += golden gamma, then mix. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double next_unit(uint64_t *state)
{
    return (double)(next_u64(state) >> 11) * 0x1.0p-53;
}

static sc_code check_opts(const struct sim_gen_opts *o)
{
    if (o->objects == 0 || o->epochs == 0 || o->size_min > o->size_max)
        return SC_EINVAL;
    return SC_OK;
}

/* Adds n objects named prefix-<i>, sizes drawn from rng; the first index in first. */
static sc_code add_objects(struct sim_trace *t, const struct sim_gen_opts *o, const char *prefix,
                           uint32_t n, uint64_t *rng, uint32_t *first)
{
    char key[64];
    uint64_t span = o->size_max - o->size_min;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t size = o->size_min;
        if (span != 0)
            size += span == UINT64_MAX ? next_u64(rng) : next_u64(rng) % (span + 1);
        snprintf(key, sizeof(key), "%s-%08u", prefix, (unsigned)i);
        uint32_t idx = 0;
        sc_code rc = sim_trace_add_object(t, key, size, &idx);
        if (rc != SC_OK)
            return rc;
        if (i == 0)
            *first = idx;
    }
    return SC_OK;
}

sc_code sim_gen_epochs(const struct sim_gen_opts *o, struct sim_trace *t)
{
    uint64_t rng = o->seed ^ 0x5ee5;
    uint32_t first = 0, *perm = NULL;
    *t = (struct sim_trace){.planned = true};
    sc_code rc = check_opts(o);
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    perm = malloc((size_t)o->objects * sizeof(*perm));
    if (perm == NULL)
        goto out;
    rc = add_objects(t, o, "obj", o->objects, &rng, &first);
    for (uint32_t e = 0; e < o->epochs && rc == SC_OK; e++) {
        uint64_t state = o->seed + e;
        for (uint32_t i = 0; i < o->objects; i++)
            perm[i] = i;
        for (uint32_t i = o->objects - 1; i > 0; i--) {
            uint32_t j = (uint32_t)(next_u64(&state) % ((uint64_t)i + 1));
            uint32_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        for (uint32_t i = 0; i < o->objects && rc == SC_OK; i++)
            rc = sim_trace_add_access(t, first + perm[i], 0.0);
    }
out:
    free(perm);
    if (rc != SC_OK)
        sim_trace_free(t);
    return rc;
}

/* Cumulative Zipf weights over ranks 1..n, normalized to end at 1. */
static double *zipf_cdf(uint32_t n)
{
    double *cdf = malloc((size_t)n * sizeof(*cdf));
    if (cdf == NULL)
        return NULL;
    double sum = 0;
    for (uint32_t r = 0; r < n; r++)
        cdf[r] = sum += pow((double)r + 1.0, -ZIPF_ALPHA);
    for (uint32_t r = 0; r < n; r++)
        cdf[r] /= sum;
    return cdf;
}

/* The first index whose cumulative weight exceeds u. */
static uint32_t draw(const double *cdf, uint32_t n, double u)
{
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] <= u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

sc_code sim_gen_scan(const struct sim_gen_opts *o, struct sim_trace *t)
{
    uint64_t rng = o->seed ^ 0x5ca9;
    uint32_t hot = 0, cold = 0;
    double *cdf = NULL;
    *t = (struct sim_trace){.planned = false};
    sc_code rc = check_opts(o);
    if (rc != SC_OK)
        goto out;
    rc = SC_ETOOBIG;
    if ((uint64_t)o->objects * (o->epochs + 1u) >= UINT32_MAX)
        goto out;
    rc = SC_ENOMEM;
    cdf = zipf_cdf(o->objects);
    if (cdf == NULL)
        goto out;
    rc = add_objects(t, o, "obj", o->objects, &rng, &hot);
    if (rc == SC_OK)
        rc = add_objects(t, o, "scan", o->objects * o->epochs, &rng, &cold);
    uint32_t quarter = o->objects / 4 ? o->objects / 4 : 1, scanned = 0;
    for (uint32_t round = 0; round < o->epochs; round++) {
        for (uint32_t i = 0; i < o->objects && rc == SC_OK; i++) {
            rc = sim_trace_add_access(t, hot + draw(cdf, o->objects, next_unit(&rng)), 0.0);
            bool scan_now = (i + 1) % quarter == 0 || i + 1 == o->objects;
            for (uint32_t s = 0; scan_now && s < quarter && rc == SC_OK; s++)
                if (scanned < o->objects * (round + 1))
                    rc = sim_trace_add_access(t, cold + scanned++, 0.0);
        }
    }
out:
    free(cdf);
    if (rc != SC_OK)
        sim_trace_free(t);
    return rc;
}

/* A standard normal draw (Box-Muller). */
static double next_gauss(uint64_t *rng)
{
    double u = next_unit(rng), v = next_unit(rng);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

sc_code sim_gen_importance(const struct sim_gen_opts *o, struct sim_trace *t)
{
    uint64_t rng = o->seed ^ 0x1a40;
    uint32_t first = 0;
    double *weight = NULL, *cdf = NULL;
    *t = (struct sim_trace){.planned = false, .batch = o->batch ? o->batch : 32};
    sc_code rc = check_opts(o);
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    weight = malloc((size_t)o->objects * sizeof(*weight));
    cdf = malloc((size_t)o->objects * sizeof(*cdf));
    t->loss = malloc(sizeof(*t->loss)); /* marks the trace as one with losses */
    if (weight == NULL || cdf == NULL || t->loss == NULL)
        goto out;
    rc = add_objects(t, o, "obj", o->objects, &rng, &first);
    double sum = 0;
    for (uint32_t i = 0; i < o->objects; i++)
        cdf[i] = sum += weight[i] = exp(LOG_SIGMA * next_gauss(&rng));
    for (uint32_t i = 0; i < o->objects; i++)
        cdf[i] /= sum;
    uint64_t n = (uint64_t)o->objects * o->epochs;
    for (uint64_t k = 0; k < n && rc == SC_OK; k++) {
        uint32_t i = draw(cdf, o->objects, next_unit(&rng));
        rc = sim_trace_add_access(t, first + i, weight[i] * (0.5 + next_unit(&rng)));
    }
out:
    free(weight);
    free(cdf);
    if (rc != SC_OK)
        sim_trace_free(t);
    return rc;
}
