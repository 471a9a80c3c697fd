/* readahead.c - sequential readers of large objects, range after range (see readahead.h). */
#include "readahead.h"

#include <string.h>

#include "../common/hash.h"

void gw_readahead_init(struct gw_readahead *ra)
{
    memset(ra->slots, 0, sizeof(ra->slots));
    pthread_mutex_init(&ra->mu, NULL);
}

void gw_readahead_destroy(struct gw_readahead *ra)
{
    pthread_mutex_destroy(&ra->mu);
}

unsigned gw_readahead_note(struct gw_readahead *ra, const char *bucket, const char *key,
                           uint64_t start, uint64_t end)
{
    uint64_t khash = sc_key_hash(bucket, key) | 1; /* never 0, the empty slot */
    unsigned s = (unsigned)(khash % GW_READAHEAD_SLOTS);
    pthread_mutex_lock(&ra->mu);
    bool follows = ra->slots[s].khash == khash && ra->slots[s].end == start && start > 0;
    unsigned run = follows ? ra->slots[s].run + 1 : 0;
    if (run > GW_READAHEAD_RUN_MAX)
        run = GW_READAHEAD_RUN_MAX;
    ra->slots[s].khash = khash;
    ra->slots[s].end = end;
    ra->slots[s].run = run;
    pthread_mutex_unlock(&ra->mu);
    return run;
}
