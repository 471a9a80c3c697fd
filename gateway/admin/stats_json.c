/* stats_json.c - the JSON view of the gateway's counters (see stats_json.h). */
#include "stats_json.h"

#include <stdlib.h>

#include "../../fleet/fleet.h"
#include "../../store/store.h"
#include "../config.h"
#include "../gw.h"
#include "../zerocopy.h"

#include <jansson.h>

#define LOAD(field) ((json_int_t)atomic_load_explicit(&(field), memory_order_relaxed))

/* One peer of the fleet as the stats show it. */
static json_t *peer_json(const struct fleet_peer_info *p)
{
    return json_pack("{s:s, s:b, s:s, s:I, s:I, s:I, s:f, s:f}", "url", p->url, "self", p->self,
                     "state", p->state == FLEET_UP ? "up" : "down", "requests",
                     (json_int_t)p->requests, "errors", (json_int_t)p->errors, "bytes",
                     (json_int_t)p->bytes, "seconds", p->seconds, "down_for", p->down_for);
}

/* The fleet: who this gateway is, its peers and what it asked of them; null without one. */
static json_t *fleet_json(struct gw *g)
{
    if (g->fleet == NULL)
        return json_null();
    struct gw_metrics *m = &g->metrics;
    json_t *peers = json_array();
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "self", fleet_self(g->fleet), "copy",
                  g->cfg->fleet_copy, "requests_received", LOAD(m->peer_requests_in), "refused",
                  LOAD(m->peer_refused), "passed", LOAD(m->peer_passed), "peers", peers);
    struct fleet_peer_info *list = calloc(FLEET_MAX_PEERS, sizeof(*list));
    if (o == NULL || list == NULL) {
        free(list);
        json_decref(o);
        return NULL;
    }
    size_t n = fleet_peers(g->fleet, list, FLEET_MAX_PEERS);
    for (size_t i = 0; i < n && i < FLEET_MAX_PEERS; i++) {
        if (json_array_append_new(peers, peer_json(&list[i])) != 0) {
            free(list);
            json_decref(o);
            return NULL;
        }
    }
    free(list);
    return o;
}

char *gw_stats_json(struct gw *g)
{
    struct sc_stats *s = &g->stats;
    store *st = g->st;
    const char *policy = g->cfg->policy;
    struct store_stats ss;
    store_get_stats(st, &ss);
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:s}",
        "requests", LOAD(s->requests), "hits", LOAD(s->hits), "misses", LOAD(s->misses), "bypasses",
        LOAD(s->bypasses), "bytes_from_cache", LOAD(s->bytes_from_cache), "bytes_from_upstream",
        LOAD(s->bytes_from_upstream), "upstream_fetches", LOAD(s->upstream_fetches), "fills_stored",
        LOAD(s->fills_stored), "fills_failed", LOAD(s->fills_failed), "passthrough",
        LOAD(s->passthrough), "invalidations", LOAD(s->invalidations), "objects",
        (json_int_t)ss.objects, "used_bytes", (json_int_t)ss.used_bytes, "capacity_bytes",
        (json_int_t)ss.capacity_bytes, "evictions", (json_int_t)ss.evictions, "corrupt_chunks",
        (json_int_t)ss.corrupt, "prefetched_objects", LOAD(s->prefetched), "auth_refused",
        LOAD(s->auth_refused), "authz_checks", LOAD(s->authz_checks), "authz_denied",
        LOAD(s->authz_denied), "policy", policy);
    if (o == NULL)
        return NULL;
    json_t *blocks =
        json_pack("{s:I, s:I, s:I, s:I, s:o*}", "block_fetches", LOAD(s->block_fetches),
                  "blocks_stored", LOAD(s->blocks_stored), "blocks", (json_int_t)ss.blocks,
                  "block_objects", (json_int_t)ss.block_objects, "fleet", fleet_json(g));
    if (blocks == NULL || json_object_update(o, blocks) != 0) {
        json_decref(blocks);
        json_decref(o);
        return NULL;
    }
    json_decref(blocks);
    if (json_object_set_new(o, "prefetch_unstored_bytes",
                            json_integer(LOAD(s->prefetch_unstored))) != 0 ||
        json_object_set_new(o, "prefetch_unstored_peak_bytes",
                            json_integer(LOAD(s->prefetch_unstored_peak))) != 0) {
        json_decref(o);
        return NULL;
    }
    json_t *zc =
        json_pack("{s:I, s:I, s:I}", "hits_zero_copy", LOAD(s->hits_zero_copy), "bytes_zero_copy",
                  LOAD(s->bytes_zero_copy), "zero_copy_held", (json_int_t)gw_zc_held(g));
    if (zc == NULL || json_object_update(o, zc) != 0) {
        json_decref(zc);
        json_decref(o);
        return NULL;
    }
    json_decref(zc);
    json_t *checks =
        json_pack("{s:I, s:I, s:I, s:I}", "checksums", (json_int_t)ss.checks, "scrubbed",
                  (json_int_t)ss.scrubbed, "scrubbed_bytes", (json_int_t)ss.scrubbed_bytes,
                  "scrub_corrupt", (json_int_t)ss.scrub_corrupt);
    if (checks == NULL || json_object_update(o, checks) != 0) {
        json_decref(checks);
        json_decref(o);
        return NULL;
    }
    json_decref(checks);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}
