/*
 * xcache.c - the X-Cache of an answer read by blocks (xcache.h).
 */
#include "xcache.h"

bool gw_xcache_block_counts(bool own, bool stored, bool arrived)
{
    return !own && (stored || arrived);
}

const char *gw_xcache_of(uint64_t counted, uint64_t all)
{
    if (counted == all)
        return "HIT";
    return counted > 0 ? "PARTIAL" : "MISS";
}
