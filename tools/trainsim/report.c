/*
 * report.c - what an epoch measured, and how it is shown: latency percentiles,
 * the hit ratio, the table on stdout, and the CSV and JSON files for plots.
 * MB are 10^6 bytes.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim.h"

uint32_t ts_percentile(const uint32_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    double rank = ceil(p / 100.0 * (double)n);
    size_t k = rank < 1 ? 0 : (size_t)rank - 1;
    return sorted[k < n ? k : n - 1];
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void ts_latency_summary(uint32_t *lat_us, size_t n, struct ts_epoch *e)
{
    qsort(lat_us, n, sizeof(*lat_us), cmp_u32);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += lat_us[i];
    e->lat_p50_ms = ts_percentile(lat_us, n, 50) / 1e3;
    e->lat_p99_ms = ts_percentile(lat_us, n, 99) / 1e3;
    e->lat_max_ms = n ? lat_us[n - 1] / 1e3 : 0;
    e->lat_mean_ms = n ? sum / (double)n / 1e3 : 0;
}

double ts_hit_ratio(const struct ts_epoch *e)
{
    if (!e->have_hits || e->hits + e->misses == 0)
        return -1;
    return (double)e->hits / (double)(e->hits + e->misses);
}

static double per_s(double v, double s)
{
    return s > 0 ? v / s : 0;
}

static double share(const struct ts_epoch *e)
{
    return e->wall_s > 0 ? e->stall_s / e->wall_s : 0;
}

void ts_report_table(FILE *out, const struct ts_options *o, const struct ts_epoch *ep, uint32_t n)
{
    fprintf(out,
            "%u objects (%s %" PRIu64 " B), batch %u, %u workers, prefetch %u batches,"
            " compute %u ms\n",
            o->ds.objects, o->ds.dist == TS_SIZE_FIXED ? "fixed" : "lognormal mean", o->ds.size,
            o->batch, o->workers, o->prefetch, o->compute_ms);
    fprintf(out, "%5s %9s %9s %7s %9s %9s %9s %9s %9s %6s\n", "epoch", "wall_s", "stall_s",
            "stall%", "obj/s", "MB/s", "p50_ms", "p99_ms", "hit_ratio", "errors");
    for (uint32_t i = 0; i < n; i++) {
        const struct ts_epoch *e = &ep[i];
        char hit[16] = "n/a";
        if (ts_hit_ratio(e) >= 0)
            snprintf(hit, sizeof(hit), "%.3f", ts_hit_ratio(e));
        fprintf(out, "%5u %9.3f %9.3f %6.1f%% %9.1f %9.2f %9.2f %9.2f %9s %6" PRIu64 "\n", e->epoch,
                e->wall_s, e->stall_s, 100.0 * share(e), per_s((double)e->objects, e->wall_s),
                per_s((double)e->bytes / 1e6, e->wall_s), e->lat_p50_ms, e->lat_p99_ms, hit,
                e->failed + e->corrupt);
    }
}

sc_code ts_report_csv(FILE *out, const struct ts_epoch *ep, uint32_t n)
{
    fprintf(out, "epoch,objects,bytes,wall_s,stall_s,stall_share,compute_s,objects_per_s,"
                 "mb_per_s,lat_p50_ms,lat_p99_ms,lat_max_ms,lat_mean_ms,hits,misses,hit_ratio,"
                 "retries,failed,corrupt\n");
    for (uint32_t i = 0; i < n; i++) {
        const struct ts_epoch *e = &ep[i];
        char hits[32] = "", misses[32] = "", ratio[32] = "n/a";
        if (e->have_hits) {
            snprintf(hits, sizeof(hits), "%" PRIu64, e->hits);
            snprintf(misses, sizeof(misses), "%" PRIu64, e->misses);
        }
        if (ts_hit_ratio(e) >= 0)
            snprintf(ratio, sizeof(ratio), "%.6f", ts_hit_ratio(e));
        fprintf(out,
                "%u,%" PRIu64 ",%" PRIu64 ",%.6f,%.6f,%.6f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%s,"
                "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                e->epoch, e->objects, e->bytes, e->wall_s, e->stall_s, share(e), e->compute_s,
                per_s((double)e->objects, e->wall_s), per_s((double)e->bytes / 1e6, e->wall_s),
                e->lat_p50_ms, e->lat_p99_ms, e->lat_max_ms, e->lat_mean_ms, hits, misses, ratio,
                e->retries, e->failed, e->corrupt);
    }
    return ferror(out) ? SC_EIO : SC_OK;
}

/* A JSON integer, or null when have is false. */
static json_t *maybe_int(bool have, uint64_t v)
{
    return have ? json_integer((json_int_t)v) : json_null();
}

static json_t *epoch_json(const struct ts_epoch *e)
{
    double ratio = ts_hit_ratio(e);
    return json_pack(
        "{s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f,"
        " s:o, s:o, s:o, s:I, s:I, s:I, s:s, s:f}",
        "epoch", (json_int_t)e->epoch, "objects", (json_int_t)e->objects, "bytes",
        (json_int_t)e->bytes, "wall_s", e->wall_s, "stall_s", e->stall_s, "stall_share", share(e),
        "compute_s", e->compute_s, "objects_per_s", per_s((double)e->objects, e->wall_s),
        "mb_per_s", per_s((double)e->bytes / 1e6, e->wall_s), "lat_p50_ms", e->lat_p50_ms,
        "lat_p99_ms", e->lat_p99_ms, "lat_max_ms", e->lat_max_ms, "lat_mean_ms", e->lat_mean_ms,
        "hits", maybe_int(e->have_hits, e->hits), "misses", maybe_int(e->have_hits, e->misses),
        "hit_ratio", ratio >= 0 ? json_real(ratio) : json_null(), "retries", (json_int_t)e->retries,
        "failed", (json_int_t)e->failed, "corrupt", (json_int_t)e->corrupt, "order_sha256",
        e->order_sha256, "sync_s", e->sync_s);
}

static json_t *config_json(const struct ts_options *o, const char *manifest_id)
{
    const struct ts_dataset *d = &o->ds;
    return json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:o,"
        " s:o, s:I, s:I, s:o}",
        "endpoint", o->endpoint, "bucket", o->bucket, "prefix", d->prefix, "objects",
        (json_int_t)d->objects, "size", (json_int_t)d->size, "size_dist",
        d->dist == TS_SIZE_FIXED ? "fixed" : "lognormal", "sigma", d->sigma, "data_seed",
        (json_int_t)d->data_seed, "dataset_bytes", (json_int_t)ts_dataset_bytes(d), "epochs",
        (json_int_t)o->epochs, "batch_size", (json_int_t)o->batch, "workers",
        (json_int_t)o->workers, "prefetch_batches", (json_int_t)o->prefetch, "compute_ms",
        (json_int_t)o->compute_ms, "shuffle_seed", (json_int_t)o->shuffle_seed, "order",
        o->gateway_order ? "gateway" : "shuffle", "manifest_id",
        manifest_id ? json_string(manifest_id) : json_null(), "stats_url",
        o->stats_url ? json_string(o->stats_url) : json_null(), "world_size",
        (json_int_t)o->split.world_size, "rank", (json_int_t)o->split.rank, "step_barrier",
        o->step_barrier ? json_string(o->step_barrier) : json_null());
}

sc_code ts_report_json(FILE *out, const struct ts_options *o, const char *manifest_id,
                       const char *status, const struct ts_epoch *ep, uint32_t n)
{
    sc_code rc = SC_ENOMEM;
    json_t *epochs = json_array();
    json_t *config = config_json(o, manifest_id);
    json_t *root = NULL;
    if (epochs == NULL || config == NULL)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        if (json_array_append_new(epochs, epoch_json(&ep[i])) != 0)
            goto out;
    root = json_pack("{s:s, s:s, s:O, s:O}", "tool", "s3cached-trainsim", "status", status,
                     "config", config, "epochs", epochs);
    if (root == NULL)
        goto out;
    rc = json_dumpf(root, out, JSON_INDENT(2)) == 0 && fputc('\n', out) != EOF ? SC_OK : SC_EIO;
out:
    json_decref(root);
    json_decref(config);
    json_decref(epochs);
    return rc;
}
