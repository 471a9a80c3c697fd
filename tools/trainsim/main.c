/*
 * main.c - s3cached-trainsim: seed a synthetic dataset into a bucket, or train
 * over it for some epochs the way a PyTorch DataLoader reads, verifying every
 * byte and reporting data stall, throughput, latency and the gateway's hit
 * ratio per epoch. Usage and options: cli.c and docs/trainsim.md.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainsim.h"

/* Everything a train run holds. */
struct train {
    const struct ts_options *o;
    ts_pool *pool;
    ts_barrier *barrier; /* NULL without --step-barrier */
    struct ts_progress pr;
    char manifest_id[128];
    struct ts_epoch *epochs;
    uint32_t n_done;
};

static int run_seed(const struct ts_options *o, ts_pool *pool)
{
    struct ts_progress pr;
    struct ts_seed_result r;
    ts_progress_init(&pr, o->quiet);
    sc_code rc = ts_seed(pool, &o->ds, &pr, &r);
    if (rc != SC_OK) {
        fprintf(stderr, "s3cached-trainsim: seed: %s\n", sc_strerror(rc));
        return TS_EXIT_ERROR;
    }
    printf("seeded %" PRIu64 " of %u objects, %.1f MB in %.2f s (%.1f MB/s), %" PRIu64
           " retries, %" PRIu64 " failed\n",
           r.objects, o->ds.objects, (double)r.bytes / 1e6, r.wall_s,
           r.wall_s > 0 ? (double)r.bytes / 1e6 / r.wall_s : 0.0, r.retries, r.failed);
    return r.failed ? TS_EXIT_FAILED : TS_EXIT_OK;
}

/*
 * The order of epoch e (0-based): the gateway's (a manifest's order is its rank's
 * already), or this rank's share of the tool's own shuffle.
 */
static sc_code epoch_order(struct train *t, uint32_t e, uint32_t **order, uint32_t *len)
{
    const struct ts_options *o = t->o;
    uint32_t n = o->ds.objects;
    if (o->gateway_order)
        return ts_manifest_order(o->endpoint, t->manifest_id, e, &o->ds, order, len);
    uint32_t *perm = malloc((size_t)n * sizeof(*perm));
    *len = ts_split_len(n, &o->split);
    *order = malloc((size_t)*len * sizeof(**order));
    if (perm == NULL || *order == NULL) {
        free(perm);
        free(*order);
        *order = NULL;
        return SC_ENOMEM;
    }
    ts_order_shuffle(n, o->shuffle_seed, e, perm);
    ts_split_take(perm, n, &o->split, *order);
    free(perm);
    return SC_OK;
}

#define BARRIER_SYNC_MS 600000 /* how long a rank waits for the others between epochs */

/*
 * Reads the counters after an epoch of gets GETs. A reply's counters may be
 * added just after its last byte, so this waits (up to 2 s) until the
 * gateway has counted at least that many since before.
 */
static bool stats_after(const char *url, const struct ts_counters *before, uint64_t gets,
                        struct ts_counters *after)
{
    int64_t deadline = sc_now_ns() + 2000000000ll;
    for (;;) {
        if (ts_stats_fetch(url, after) != SC_OK)
            return false;
        uint64_t counted = (after->hits + after->misses + after->bypasses) -
                           (before->hits + before->misses + before->bypasses);
        if (counted >= gets || sc_now_ns() > deadline)
            return true;
        usleep(20 * 1000);
    }
}

static sc_code train_epoch(struct train *t, uint32_t e)
{
    const struct ts_options *o = t->o;
    uint32_t *order = NULL, len = 0;
    struct ts_counters before = {0}, after = {0};
    struct ts_epoch *ep = &t->epochs[e];
    memset(ep, 0, sizeof(*ep));
    ep->epoch = e + 1;
    sc_code rc = epoch_order(t, e, &order, &len);
    if (rc != SC_OK)
        goto out;
    ts_order_digest(&o->ds, order, len, ep->order_sha256);
    /* the ranks start each epoch together, as a job's ranks end the last one's final step */
    if (t->barrier && (rc = ts_barrier_sync(t->barrier, BARRIER_SYNC_MS)) != SC_OK) {
        fprintf(stderr, "s3cached-trainsim: the other ranks did not come to epoch %u\n", e + 1);
        goto out;
    }
    bool have = o->stats_url && ts_stats_fetch(o->stats_url, &before) == SC_OK;
    struct ts_loader l = {o->batch, o->prefetch, o->compute_ms, e + 1, o->epochs, t->barrier};
    rc = ts_load_epoch(t->pool, &l, order, len, &t->pr, ep);
    if (rc != SC_OK)
        goto out;
    if (have && stats_after(o->stats_url, &before, ep->objects + ep->corrupt, &after)) {
        ep->have_hits = true;
        ep->hits = after.hits - before.hits;
        ep->misses = after.misses - before.misses;
    }
    t->n_done++;
out:
    free(order);
    return rc;
}

static int write_file(const char *path, struct train *t, const char *status, bool json)
{
    FILE *f = fopen(path, "w");
    sc_code rc = SC_EIO;
    if (f) {
        rc = json ? ts_report_json(f, t->o, t->o->gateway_order ? t->manifest_id : NULL, status,
                                   t->epochs, t->n_done)
                  : ts_report_csv(f, t->epochs, t->n_done);
        if (fclose(f) != 0 && rc == SC_OK)
            rc = SC_EIO;
    }
    if (rc != SC_OK)
        fprintf(stderr, "s3cached-trainsim: cannot write %s: %s\n", path, sc_strerror(rc));
    return rc == SC_OK ? 0 : TS_EXIT_ERROR;
}

/* The table, the files and the exit code once the epochs ran (or stopped). */
static int finish_train(struct train *t, sc_code rc)
{
    uint64_t corrupt = 0, failed = 0;
    for (uint32_t i = 0; i < t->n_done; i++) {
        corrupt += t->epochs[i].corrupt;
        failed += t->epochs[i].failed;
    }
    int code = corrupt ? TS_EXIT_CORRUPT : failed ? TS_EXIT_FAILED : rc ? TS_EXIT_ERROR : 0;
    const char *status = corrupt ? "corrupt" : failed ? "failed" : rc ? "error" : "ok";
    ts_report_table(stdout, t->o, t->epochs, t->n_done);
    if (corrupt || failed)
        fprintf(stderr,
                "s3cached-trainsim: %" PRIu64 " corrupted and %" PRIu64
                " failed objects (see above); stopped after epoch %u\n",
                corrupt, failed, t->n_done);
    int werr = 0;
    if (t->o->csv_path)
        werr |= write_file(t->o->csv_path, t, status, false);
    if (t->o->json_path)
        werr |= write_file(t->o->json_path, t, status, true);
    return code ? code : werr;
}

/* The --step-barrier's barrier, or NULL without one; reports a failure. */
static sc_code open_barrier(const struct ts_options *o, ts_barrier **b)
{
    *b = NULL;
    if (o->step_barrier == NULL)
        return SC_OK;
    sc_code rc = ts_barrier_open(o->step_barrier, &o->split, b);
    if (rc != SC_OK)
        fprintf(stderr, "s3cached-trainsim: --step-barrier %s: %s\n", o->step_barrier,
                rc == SC_EINVAL ? "not this run's (delete it between runs)" : sc_strerror(rc));
    return rc;
}

static int run_train(const struct ts_options *o, ts_pool *pool)
{
    struct train t = {.o = o, .pool = pool};
    sc_code rc = SC_ENOMEM;
    ts_progress_init(&t.pr, o->quiet);
    t.epochs = calloc(o->epochs, sizeof(*t.epochs));
    if (t.epochs == NULL)
        goto out;
    rc = open_barrier(o, &t.barrier);
    if (rc == SC_OK && o->manifest_id)
        snprintf(t.manifest_id, sizeof(t.manifest_id), "%s", o->manifest_id);
    else if (rc == SC_OK && o->gateway_order)
        rc = ts_manifest_register(o->endpoint, &o->ds, o->bucket, o->epochs, o->shuffle_seed,
                                  &o->split, t.manifest_id, sizeof(t.manifest_id));
    if (rc == SC_OK && o->gateway_order && !o->quiet)
        fprintf(stderr, "s3cached-trainsim: reading in the order of manifest %s\n", t.manifest_id);
    /* an epoch with a corrupted or failed object is the last one */
    for (uint32_t e = 0; rc == SC_OK && e < o->epochs; e++) {
        rc = train_epoch(&t, e);
        if (rc == SC_OK && (t.epochs[e].corrupt || t.epochs[e].failed))
            break;
    }
    if (rc != SC_OK)
        fprintf(stderr, "s3cached-trainsim: train: %s\n", sc_strerror(rc));
out:;
    ts_barrier_close(t.barrier); /* the other ranks wait no more for this one */
    int code = t.epochs ? finish_train(&t, rc) : TS_EXIT_ERROR;
    free(t.epochs);
    return code;
}

int main(int argc, char **argv)
{
    struct ts_options o;
    struct ts_s3 s3 = {0};
    ts_pool *pool = NULL;
    int code = ts_options_parse(argc, argv, &o, stdout, stderr);
    if (code != 0) {
        ts_options_free(&o);
        return code == 1 ? 0 : code;
    }
    code = TS_EXIT_ERROR;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "s3cached-trainsim: libcurl failed to start\n");
        goto out;
    }
    sc_code rc = ts_s3_init(&s3, o.endpoint, o.bucket);
    if (rc == SC_EINVAL) {
        fprintf(stderr, "s3cached-trainsim: --endpoint %s: want http[s]://host[:port]\n",
                o.endpoint);
        code = TS_EXIT_USAGE;
        goto out;
    }
    if (rc == SC_OK)
        rc = ts_pool_new(&s3, &o.ds, o.workers, &pool);
    if (rc != SC_OK) {
        fprintf(stderr, "s3cached-trainsim: %s\n", sc_strerror(rc));
        goto out;
    }
    code = o.mode == TS_MODE_SEED ? run_seed(&o, pool) : run_train(&o, pool);
out:
    ts_pool_free(pool);
    ts_s3_free(&s3);
    curl_global_cleanup();
    ts_options_free(&o);
    return code;
}
