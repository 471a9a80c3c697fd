/* stats_json.h - the counters (common/stats.h) as the admin API's JSON. */
#ifndef GW_ADMIN_STATS_JSON_H
#define GW_ADMIN_STATS_JSON_H

#include "../../common/stats.h"
#include "../../store/store.h"

struct gw;

/*
 * @brief Renders the counters, the store's, the policy's name and the fleet as one JSON
 * object. "fleet" is null without one, else {"self", "copy", "requests_received", "refused",
 * "passed", "peers": [{"url", "self", "state" ("up" or "down"), "requests", "errors", "bytes",
 * "seconds", "down_for"}]} (fleet.h's struct fleet_peer_info, in URL order).
 * @return a malloc'd NUL-terminated string owned by the caller, or NULL when out of memory.
 */
char *gw_stats_json(struct gw *g);

#endif
