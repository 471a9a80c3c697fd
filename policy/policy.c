/* policy.c - the table of eviction policies (see policy.h). */
#include "policy.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct policy_ops policy_lru;
extern const struct policy_ops policy_s3fifo;
extern const struct policy_ops policy_fixed;
extern const struct policy_ops policy_importance;
extern const struct policy_ops policy_clairvoyant;

/* The first entry is the default (see gateway/config.c). */
static const struct policy_ops *const policies[] = {
    &policy_s3fifo, &policy_lru, &policy_fixed, &policy_importance, &policy_clairvoyant,
};

#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

size_t policy_count(void)
{
    return N_POLICIES;
}

const struct policy_ops *policy_at(size_t i)
{
    return i < N_POLICIES ? policies[i] : NULL;
}

const struct policy_ops *policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}

struct ranked {
    double loss;
    size_t at; /* index in the caller's arrays */
};

/* Ascending loss; NaN first, so that a broken loss never counts as important. */
static int by_loss(const void *a, const void *b)
{
    double x = ((const struct ranked *)a)->loss, y = ((const struct ranked *)b)->loss;
    if (isnan(x) || isnan(y))
        return isnan(y) - isnan(x);
    return (x > y) - (x < y);
}

sc_code policy_rank_scores(const double *losses, size_t n, double *scores)
{
    struct ranked *r = malloc((n ? n : 1) * sizeof(*r));
    if (r == NULL)
        return SC_ENOMEM;
    for (size_t i = 0; i < n; i++)
        r[i] = (struct ranked){.loss = losses[i], .at = i};
    qsort(r, n, sizeof(*r), by_loss);
    size_t rank = 1;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && by_loss(&r[i - 1], &r[i]) != 0)
            rank = i + 1;
        scores[r[i].at] = log((double)rank + 10.0);
    }
    free(r);
    return SC_OK;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
    size_t used = 0;
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        int n =
            snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", policies[i]->name);
        if (n < 0 || (size_t)n >= sizeof(names) - used)
            break; /* cannot happen with the table's short names; keep what fits */
        used += (size_t)n;
    }
}

const char *policy_names(void)
{
    pthread_once(&names_once, build_names);
    return names;
}
