/*
 * metrics.c - request metrics and the Prometheus text view of the whole gateway
 * (see metrics.h). Names follow the Prometheus conventions: counters end in _total,
 * durations are in _seconds, sizes in _bytes.
 */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw.h"
#include "config.h"
#include "../store/store.h"
#include "../manifest/manifest.h"
#include "conn_guard.h"
#include "zerocopy.h"
#include "../fleet/fleet.h"
#include "../proto/digest.h"

static const char *const op_names[GW_OP_N] = {
    [GW_OP_GET_OBJECT] = "GetObject",
    [GW_OP_HEAD_OBJECT] = "HeadObject",
    [GW_OP_PUT] = "Put",
    [GW_OP_POST] = "Post",
    [GW_OP_DELETE] = "Delete",
    [GW_OP_LIST] = "ListOrOther",
    [GW_OP_ADMIN] = "Admin",
    [GW_OP_PROBE] = "Probe",
    [GW_OP_OTHER] = "Other",
};

enum gw_op gw_metrics_op_of(const char *method, const struct s3_target *target)
{
    if (target == NULL || method == NULL)
        return GW_OP_OTHER;
    switch (target->kind) {
    case S3_REQ_GET_OBJECT:
        return GW_OP_GET_OBJECT;
    case S3_REQ_HEAD_OBJECT:
        return GW_OP_HEAD_OBJECT;
    case S3_REQ_ADMIN:
        return GW_OP_ADMIN;
    case S3_REQ_PASS:
        break;
    }
    if (strcmp(method, "PUT") == 0)
        return GW_OP_PUT;
    if (strcmp(method, "POST") == 0)
        return GW_OP_POST;
    if (strcmp(method, "DELETE") == 0)
        return GW_OP_DELETE;
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return GW_OP_LIST;
    return GW_OP_OTHER;
}

void gw_metrics_request(struct gw_metrics *m, enum gw_op op, unsigned status, double seconds)
{
    if (op >= GW_OP_N)
        op = GW_OP_OTHER;
    atomic_fetch_add_explicit(&m->requests[op][status < GW_STATUS_MAX ? status : 0], 1,
                              memory_order_relaxed);
    sc_hist_observe(&m->duration[op], seconds);
}

#define LOAD(field) ((unsigned long long)atomic_load_explicit(&(field), memory_order_relaxed))

static void header(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(FILE *out, const char *name, const char *type, const char *help,
                unsigned long long v)
{
    header(out, name, type, help);
    fprintf(out, "%s %llu\n", name, v);
}

static void write_requests(FILE *out, struct gw_metrics *m)
{
    header(out, "s3cached_requests_total", "counter",
           "Requests answered, by operation and HTTP status (0: none sent).");
    for (int op = 0; op < GW_OP_N; op++)
        for (int st = 0; st < GW_STATUS_MAX; st++) {
            unsigned long long n = LOAD(m->requests[op][st]);
            if (n > 0)
                fprintf(out, "s3cached_requests_total{operation=\"%s\",status=\"%d\"} %llu\n",
                        op_names[op], st, n);
        }
    header(out, "s3cached_request_duration_seconds", "histogram",
           "Time from a request's arrival to its last byte sent, by operation.");
    for (int op = 0; op < GW_OP_N; op++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "operation=\"%s\"", op_names[op]);
        sc_hist_write(out, "s3cached_request_duration_seconds", labels, &m->duration[op]);
    }
}

static void write_cache(FILE *out, struct gw *g)
{
    struct sc_stats *s = &g->stats;
    struct store_stats ss;
    store_get_stats(g->st, &ss);
    header(
        out, "s3cached_cache_requests_total", "counter",
        "Object GETs and HEADs by cache result: hit, miss (filled), bypass (streamed uncached).");
    fprintf(out, "s3cached_cache_requests_total{result=\"hit\"} %llu\n", LOAD(s->hits));
    fprintf(out, "s3cached_cache_requests_total{result=\"miss\"} %llu\n", LOAD(s->misses));
    fprintf(out, "s3cached_cache_requests_total{result=\"bypass\"} %llu\n", LOAD(s->bypasses));
    header(out, "s3cached_served_bytes_total", "counter",
           "Object bytes sent, by where they came from.");
    fprintf(out, "s3cached_served_bytes_total{source=\"cache\"} %llu\n", LOAD(s->bytes_from_cache));
    fprintf(out, "s3cached_served_bytes_total{source=\"upstream\"} %llu\n",
            LOAD(s->bytes_from_upstream));
    one(out, "s3cached_zero_copy_hits_total", "counter",
        "Hits sent from the cache file with sendfile (their body in one chunk or block).",
        LOAD(s->hits_zero_copy));
    one(out, "s3cached_zero_copy_bytes_total", "counter",
        "Object bytes sent with sendfile (also counted as served from the cache).",
        LOAD(s->bytes_zero_copy));
    one(out, "s3cached_zero_copy_held", "gauge",
        "Read views held for zero-copy hits whose client has not read every byte yet.",
        gw_zc_held(g));
    one(out, "s3cached_cached_objects", "gauge", "Objects in the cache.", ss.objects);
    one(out, "s3cached_cached_bytes", "gauge", "Object bytes in the cache.", ss.used_bytes);
    one(out, "s3cached_capacity_bytes", "gauge", "Most object bytes the cache keeps.",
        ss.capacity_bytes);
    header(out, "s3cached_evictions_total", "counter", "Objects evicted, by policy.");
    fprintf(out, "s3cached_evictions_total{policy=\"%s\"} %llu\n", g->cfg->policy,
            (unsigned long long)ss.evictions);
    header(
        out, "s3cached_fills_total", "counter",
        "Cache fills by outcome: stored, or failed (error, truncated, mismatched; never stored).");
    fprintf(out, "s3cached_fills_total{result=\"stored\"} %llu\n", LOAD(s->fills_stored));
    fprintf(out, "s3cached_fills_total{result=\"failed\"} %llu\n", LOAD(s->fills_failed));
    header(out, "s3cached_fill_checks_total", "counter",
           "Fills whose body passed its check, by the check made: the full-object CRC or SHA "
           "(crc64nvme, crc32c, crc32, sha256, sha1), the ETag's md5, or its length alone.");
    for (int c = 0; c < DIGEST_CHECKS; c++)
        fprintf(out, "s3cached_fill_checks_total{check=\"%s\"} %llu\n", digest_check_label(c),
                LOAD(s->fill_checks[c]));
    one(out, "s3cached_block_fetches_total", "counter",
        "Blocks of large objects fetched from the upstream (a ranged GET each; block 0 of a "
        "cold whole GET is that GET's).",
        LOAD(s->block_fetches));
    one(out, "s3cached_blocks_stored_total", "counter", "Fetched blocks stored in the cache.",
        LOAD(s->blocks_stored));
    one(out, "s3cached_cached_blocks", "gauge", "Blocks of large objects in the cache.",
        (unsigned long long)ss.blocks);
    one(out, "s3cached_corrupt_chunks_total", "counter",
        "Stored chunks or blocks that failed their CRC32C check, when read or scrubbed (the "
        "object, or the block, was dropped).",
        (unsigned long long)ss.corrupt);
    one(out, "s3cached_checksums_total", "counter",
        "Stored chunks or blocks whose CRC32C a read computed: the first read since the start, "
        "or since some page of it left the page cache.",
        (unsigned long long)ss.checks);
    one(out, "s3cached_scrubbed_total", "counter",
        "Stored chunks or blocks the background scrubber checked (--scrub-rate).",
        (unsigned long long)ss.scrubbed);
    one(out, "s3cached_scrubbed_bytes_total", "counter", "Bytes the scrubber checked.",
        (unsigned long long)ss.scrubbed_bytes);
    one(out, "s3cached_scrub_corrupt_total", "counter",
        "Of s3cached_corrupt_chunks_total, those the scrubber found.",
        (unsigned long long)ss.scrub_corrupt);
    one(out, "s3cached_invalidations_total", "counter",
        "Cached objects dropped because a write went through the gateway.", LOAD(s->invalidations));
    one(out, "s3cached_auth_refused_total", "counter",
        "S3 requests refused by client authentication (bad or missing signature, key, bucket).",
        LOAD(s->auth_refused));
    one(out, "s3cached_authz_checks_total", "counter",
        "Upstream HEADs asking whether a client identity may read an object the cache holds.",
        LOAD(s->authz_checks));
    one(out, "s3cached_authz_denied_total", "counter",
        "Cached or in-flight objects refused to a client identity the upstream refuses.",
        LOAD(s->authz_denied));
    header(out, "s3cached_slow_clients_closed_total", "counter",
           "Connections closed for moving a request or response too slowly (--header-timeout, "
           "--min-body-rate).");
    fprintf(out, "s3cached_slow_clients_closed_total{phase=\"head\"} %llu\n",
            (unsigned long long)conn_guard_count(g->guard, GUARD_SLOW_HEAD));
    fprintf(out, "s3cached_slow_clients_closed_total{phase=\"body\"} %llu\n",
            (unsigned long long)conn_guard_count(g->guard, GUARD_SLOW_BODY));
    fprintf(out, "s3cached_slow_clients_closed_total{phase=\"response\"} %llu\n",
            (unsigned long long)conn_guard_count(g->guard, GUARD_SLOW_READER));
}

static void write_manifests(FILE *out, struct gw *g)
{
    struct mf_totals t = {0};
    if (g->manifests)
        mf_get_totals(g->manifests, &t);
    one(out, "s3cached_prefetched_objects_total", "counter",
        "Objects stored by the manifest prefetcher.", LOAD(g->stats.prefetched));
    one(out, "s3cached_prefetch_inflight", "gauge", "Prefetches running now (all manifests).",
        (unsigned long long)t.prefetch_inflight);
    one(out, "s3cached_prefetch_unstored_bytes", "gauge",
        "Bytes of prefetched objects arrived and waiting for the store (--prefetch-buffer).",
        LOAD(g->stats.prefetch_unstored));
    one(out, "s3cached_manifests_active", "gauge", "Manifests listing, warming, warm or planned.",
        t.active);
    header(out, "s3cached_manifest_objects", "gauge",
           "Objects of the active manifests, by state (total counts each once per manifest).");
    fprintf(out, "s3cached_manifest_objects{state=\"total\"} %llu\n",
            (unsigned long long)t.objects);
    fprintf(out, "s3cached_manifest_objects{state=\"cached\"} %llu\n",
            (unsigned long long)t.cached);
    fprintf(out, "s3cached_manifest_objects{state=\"inflight\"} %llu\n",
            (unsigned long long)t.inflight);
    fprintf(out, "s3cached_manifest_objects{state=\"failed\"} %llu\n",
            (unsigned long long)t.failed);
    header(out, "s3cached_manifest_registrations_total", "counter",
           "Manifest registrations: posted here by a client (registered), or forwarded by a "
           "peer of the fleet (arrived, registered or refused).");
    fprintf(out, "s3cached_manifest_registrations_total{from=\"client\"} %llu\n",
            (unsigned long long)t.registered_client);
    fprintf(out, "s3cached_manifest_registrations_total{from=\"peer\"} %llu\n",
            (unsigned long long)t.registered_peer);
}

static void write_upstream(FILE *out, struct gw *g)
{
    struct up_metrics um;
    up_get_metrics(g->up, &um);
    one(out, "s3cached_upstream_retries_total", "counter",
        "Upstream attempts made again after a connection error or a 5xx.",
        (unsigned long long)um.retries);
    one(out, "s3cached_upstream_errors_total", "counter",
        "Upstream requests that failed after their retries.", (unsigned long long)um.failures);
    one(out, "s3cached_upstream_peer_attempts_total", "counter",
        "Misses asked of the fleet peer that owns the name before the bucket.",
        (unsigned long long)um.peer_attempts);
    one(out, "s3cached_upstream_peer_fallbacks_total", "counter",
        "Of those, the ones that went on to the bucket because the peer failed before its head.",
        (unsigned long long)um.peer_fallbacks);
    one(out, "s3cached_upstream_peer_resumes_total", "counter",
        "Peer bodies cut short and resumed from the bucket at the next byte (Range, If-Match).",
        (unsigned long long)um.peer_resumes);
    one(out, "s3cached_upstream_reachable", "gauge",
        "1 unless the upstream's latest request got no answer at all.",
        up_reachable(g->up) ? 1ull : 0ull);
    header(out, "s3cached_upstream_response_seconds", "histogram",
           "Time from sending an upstream request to its response head.");
    sc_hist_write(out, "s3cached_upstream_response_seconds", "", um.head_latency);
    one(out, "s3cached_upstream_waiting", "gauge",
        "Upstream requests waiting for a connection (--upstream-connections are all busy).",
        (unsigned long long)um.waiting);
    header(out, "s3cached_upstream_wait_seconds", "histogram",
           "Time each upstream attempt waited for a connection, oldest first.");
    sc_hist_write(out, "s3cached_upstream_wait_seconds", "", um.wait);
}

/* A label value as Prometheus's text format escapes it. */
static void write_label_value(FILE *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(out, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
    }
}

/* One line of a per-peer metric: name{peer="URL"} value. */
static void peer_line(FILE *out, const char *name, const struct fleet_peer_info *p, double v)
{
    fprintf(out, "%s{peer=\"", name);
    write_label_value(out, p->url);
    fprintf(out, "\"} %.17g\n", v);
}

/* The fleet's peers: what this gateway asked each of them, and whether each is up now. The
 * peer requests this gateway answered are counted beside them. */
static void write_fleet(FILE *out, struct gw *g)
{
    struct gw_metrics *m = &g->metrics;
    one(out, "s3cached_peer_requests_received_total", "counter",
        "Peer requests (signed by another gateway of the fleet) admitted here.",
        LOAD(m->peer_requests_in));
    one(out, "s3cached_peer_requests_refused_total", "counter",
        "Requests refused as peer requests (no fleet, a missing, wrong or stale signature, not "
        "an object read, an unknown identity).",
        LOAD(m->peer_refused));
    one(out, "s3cached_peer_requests_passed_total", "counter",
        "Peer requests for names another gateway owns by this one's view, passed to the bucket.",
        LOAD(m->peer_passed));
    if (g->fleet == NULL)
        return;
    struct fleet_peer_info *peers = calloc(FLEET_MAX_PEERS, sizeof(*peers));
    if (peers == NULL)
        return;
    size_t n = fleet_peers(g->fleet, peers, FLEET_MAX_PEERS);
    if (n > FLEET_MAX_PEERS)
        n = FLEET_MAX_PEERS;
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        {"s3cached_peer_requests_total", "counter", "Requests this gateway sent the peer."},
        {"s3cached_peer_errors_total", "counter",
         "Requests to the peer that failed (no answer, a 5xx, a refused signature)."},
        {"s3cached_peer_bytes_total", "counter", "Body bytes the peer sent this gateway."},
        {"s3cached_peer_seconds_total", "counter",
         "Sum of seconds from a request to the peer to its response head, over answered ones."},
        {"s3cached_peer_up", "gauge", "1 while the peer is up, 0 while it is down (backoff)."},
    };
    for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
        header(out, series[s].name, series[s].type, series[s].help);
        for (size_t i = 0; i < n; i++) {
            const struct fleet_peer_info *p = &peers[i];
            if (p->self)
                continue; /* this gateway asks itself nothing */
            double v[] = {(double)p->requests, (double)p->errors, (double)p->bytes, p->seconds,
                          p->state == FLEET_UP ? 1.0 : 0.0};
            peer_line(out, series[s].name, p, v[s]);
        }
    }
    free(peers);
}

char *gw_metrics_text(struct gw *g, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    if (out == NULL)
        return NULL;
    write_requests(out, &g->metrics);
    write_cache(out, g);
    write_manifests(out, g);
    write_upstream(out, g);
    write_fleet(out, g);
    if (ferror(out)) {
        fclose(out);
        free(text);
        return NULL;
    }
    fclose(out);
    return text;
}
