/* stats.c - the JSON view of the gateway's counters (see stats_json.h). */
#include "stats_json.h"
#include "../../store/store.h"

#include <jansson.h>

#define LOAD(field) ((json_int_t)atomic_load_explicit(&(field), memory_order_relaxed))

char *gw_stats_json(struct sc_stats *s, store *st, const char *policy)
{
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
        json_pack("{s:I, s:I, s:I, s:I}", "block_fetches", LOAD(s->block_fetches), "blocks_stored",
                  LOAD(s->blocks_stored), "blocks", (json_int_t)ss.blocks, "block_objects",
                  (json_int_t)ss.block_objects);
    if (blocks == NULL || json_object_update(o, blocks) != 0) {
        json_decref(blocks);
        json_decref(o);
        return NULL;
    }
    json_decref(blocks);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}
