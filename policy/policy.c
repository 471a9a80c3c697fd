/* policy.c - the table of eviction policies (see policy.h). */
#include "policy.h"

#include <string.h>

extern const struct policy_ops policy_lru;

static const struct policy_ops *const policies[] = {
    &policy_lru,
};

const struct policy_ops *policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}

const char *policy_names(void)
{
    return "lru";
}
