/* stats_json.h - the counters (common/stats.h) as the admin API's JSON. */
#ifndef GW_ADMIN_STATS_JSON_H
#define GW_ADMIN_STATS_JSON_H

#include "../../common/stats.h"
#include "../../store/store.h"

/*
 * @brief Renders the counters, the store's and the policy's name as one JSON object.
 * @return a malloc'd NUL-terminated string owned by the caller, or NULL when out of memory.
 */
char *gw_stats_json(struct sc_stats *s, store *st, const char *policy);

#endif
