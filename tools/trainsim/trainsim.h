/*
 * trainsim.h - the pieces of s3cached-trainsim, a PyTorch DataLoader emulator
 * that reads a synthetic dataset from any S3 endpoint:
 *
 *   cli.c      options, parsed and range-checked
 *   dataset.c  keys, sizes and bytes of the objects, and their verification (pure)
 *   order.c    the per-epoch order: own shuffle, or the gateway's manifest, and a
 *              rank's share of it (pure)
 *   barrier.c  the step barrier the ranks of one emulated job share (a mapped file)
 *   s3req.c    URLs and SigV4-signed headers of object requests
 *   admin.c    the gateway's admin API: stats, manifests, orders (blocking)
 *   pool.c     W concurrent transfers over one curl multi handle, with retries
 *   loader.c   one epoch: batches, prefetch window, the simulated GPU
 *   seed.c     seed mode: PUT every object
 *   progress.c the progress line on stderr
 *   report.c   per-epoch numbers, percentiles, the table, CSV and JSON
 *   main.c     the two modes end to end
 *
 * Everything is single-threaded: one event loop drives the transfers and the
 * simulated compute step.
 */
#ifndef TRAINSIM_H
#define TRAINSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <curl/curl.h>

#include "../../common/clock.h"
#include "../../common/sc_err.h"

#define TS_DEFAULT_PREFIX "trainsim/"
#define TS_HEADER_LEN     16           /* bytes 0..7 the object's index, 8..15 its size (LE) */
#define TS_MAX_OBJECTS    100000000u   /* keys are "%08u": eight digits */
#define TS_MAX_SIZE       (1ull << 30) /* largest object, fixed or drawn */
#define TS_MAX_KEY        1100         /* bytes of a key, NUL included */
#define TS_RETRIES        3        /* retries of a failed transfer (transport error, 5xx, 429) */
#define TS_MAX_WORLD      1000000u /* ranks of a job: the manifest API's limit on world_size */

/* Exit codes. */
enum {
    TS_EXIT_OK = 0,
    TS_EXIT_ERROR = 1,   /* setup failed: endpoint, manifest, output file */
    TS_EXIT_USAGE = 2,   /* bad command line */
    TS_EXIT_CORRUPT = 3, /* a body differed from the expected bytes */
    TS_EXIT_FAILED = 4,  /* a request failed after its retries */
};

/* ---- dataset.c ------------------------------------------------------------------------------ */

enum ts_size_dist { TS_SIZE_FIXED, TS_SIZE_LOGNORMAL };

/*
 * The dataset: objects 0..objects-1, named "<prefix>%08u.bin". Object i's size
 * and bytes are pure functions of (data_seed, i) and the size options.
 */
struct ts_dataset {
    const char *prefix; /* borrowed */
    uint32_t objects;
    uint64_t size; /* every object's size (fixed), or the mean (lognormal) */
    enum ts_size_dist dist;
    double sigma; /* lognormal: standard deviation of the size's logarithm */
    uint64_t data_seed;
};

/* @brief splitmix64: advances *state and returns the next output. Cannot fail. */
uint64_t ts_splitmix64(uint64_t *state);

/*
 * @brief Object i's size in bytes. Fixed: d->size. Lognormal: a draw with mean
 * d->size and log-sd d->sigma (Box-Muller on two splitmix64 outputs seeded from
 * (data_seed, i)), rounded to the nearest byte and clamped to 1..min(32 * size,
 * TS_MAX_SIZE).
 */
uint64_t ts_object_size(const struct ts_dataset *d, uint32_t i);

/* @brief Sum of every object's size. */
uint64_t ts_dataset_bytes(const struct ts_dataset *d);

/*
 * @brief Writes object i's key, "<prefix>%08u.bin", into out.
 * @return SC_OK, or SC_ETOOBIG if out_len is too small (out is then "").
 */
sc_code ts_object_key(const struct ts_dataset *d, uint32_t i, char *out, size_t out_len);

/*
 * @brief The index of key in d: "<prefix>" then exactly eight digits then ".bin",
 * below d->objects.
 * @return SC_OK, or SC_EINVAL for any other key.
 */
sc_code ts_key_index(const struct ts_dataset *d, const char *key, uint32_t *i);

/*
 * @brief Writes bytes [off, off + len) of object i (of size size) into buf.
 * Bytes 0..7 are i and 8..15 size, little-endian; from byte 16 on, the 8-byte
 * word w is splitmix64's output for the counter w of a stream seeded from
 * (data_seed, i), little-endian. Any offset can be produced on its own.
 */
void ts_object_fill(const struct ts_dataset *d, uint32_t i, uint64_t size, uint64_t off,
                    uint8_t *buf, size_t len);

/*
 * @brief Compares len received bytes at offset off of object i with the expected ones.
 * @param[out] bad the absolute offset of the first differing byte, when any.
 * @return true if all len bytes match.
 */
bool ts_object_check(const struct ts_dataset *d, uint32_t i, uint64_t size, uint64_t off,
                     const uint8_t *data, size_t len, uint64_t *bad);

/* ---- order.c -------------------------------------------------------------------------------- */

/*
 * @brief The tool's own order for an epoch (0-based): Fisher-Yates over 0..n-1
 * with splitmix64 seeded with seed + epoch, exactly the gateway's documented
 * shuffle (docs/manifests.md), so a manifest with the same seed plans the same
 * reads. perm holds n entries. Cannot fail.
 */
void ts_order_shuffle(uint32_t n, uint64_t seed, uint32_t epoch, uint32_t *perm);

/*
 * The distributed split of a run: this process is rank `rank` of `world_size`
 * trainers of one data-parallel job, as PyTorch's DistributedSampler(num_replicas=
 * world_size, rank=rank) without drop_last, and as a manifest's "world_size" and "rank".
 */
struct ts_split {
    uint32_t world_size; /* 1..TS_MAX_WORLD */
    uint32_t rank;       /* 0..world_size-1 */
    bool cache_aware;    /* the manifest asks the gateway to read each epoch's share cached
                            items first (docs/manifests.md, "Cache-aware order") */
};

/* @brief Samples each rank reads per epoch of n: ceil(n / world_size). Cannot fail. */
uint32_t ts_split_len(uint32_t n, const struct ts_split *s);

/*
 * @brief This rank's share of an epoch's permutation perm (n entries):
 * out[i] = perm[(rank + i * world_size) % n] for i < ts_split_len(n, s), which is
 * DistributedSampler's split with the permutation padded by repeating it from its
 * start (docs/manifests.md, "The deterministic order"). out holds ts_split_len(n, s)
 * entries and does not overlap perm. Cannot fail.
 */
void ts_split_take(const uint32_t *perm, uint32_t n, const struct ts_split *s, uint32_t *out);

/*
 * @brief Reads the "keys" of a GET .../order reply into dataset indices.
 * @param[out] order malloc'd array owned by the caller (free()), *len entries.
 * @param[out] why on SC_EINVAL, what is wrong (a key outside the dataset, ...).
 * @return SC_OK, SC_EINVAL (not JSON, no "keys" array, an empty order, a key
 *         that is not one of d's), SC_ENOMEM; *order is NULL on error.
 */
sc_code ts_order_parse(const struct ts_dataset *d, const char *json, uint32_t **order,
                       uint32_t *len, char *why, size_t why_len);

/*
 * @brief The body of POST /_s3cached/manifests that plans this run:
 * {"bucket","keys":[every key in index order],"num_epochs","seed","shuffle":true},
 * plus "world_size" and "rank" when split->world_size > 1.
 * @param[out] out malloc'd NUL-terminated string owned by the caller.
 * @return SC_OK, SC_ENOMEM, SC_EINVAL (seed above 2^63-1).
 */
sc_code ts_manifest_body(const struct ts_dataset *d, const char *bucket, uint32_t epochs,
                         uint64_t seed, const struct ts_split *split, char **out);

/*
 * @brief Lower-case hex SHA-256 of the order's keys, each followed by '\n': a
 * short fingerprint of which objects were read in which order.
 * @param[out] out 65 bytes; "" if the digest fails.
 */
void ts_order_digest(const struct ts_dataset *d, const uint32_t *order, uint32_t len, char out[65]);

/* ---- cli.c ---------------------------------------------------------------------------------- */

enum ts_mode { TS_MODE_SEED, TS_MODE_TRAIN };

struct ts_options {
    enum ts_mode mode;
    const char *endpoint; /* "http://host:port", no path */
    const char *bucket;
    struct ts_dataset ds;
    uint32_t workers;    /* concurrent requests */
    uint32_t epochs;     /* train */
    uint32_t batch;      /* objects per batch */
    uint32_t prefetch;   /* batches in flight ahead of the consumer */
    uint32_t compute_ms; /* simulated compute per batch */
    uint64_t shuffle_seed;
    struct ts_split split;    /* --rank, --world-size: this trainer's share of each epoch */
    const char *step_barrier; /* --step-barrier: the file the ranks' step barrier lives in */
    bool gateway_order;       /* read in the order of a manifest (set by --manifest-id too) */
    const char *manifest_id;  /* an existing manifest, or NULL to register one */
    const char *stats_url;    /* NULL: none; default endpoint + "/_s3cached/stats" (owned) */
    char *stats_url_owned;
    const char *csv_path;  /* or NULL */
    const char *json_path; /* or NULL */
    bool quiet;
};

/*
 * @brief Parses argv (argv[1] is the mode) into o, reporting problems on err.
 * @return 0 to run, 1 after printing help on out, TS_EXIT_USAGE on a bad
 *         command line. Free o with ts_options_free in every case.
 */
int ts_options_parse(int argc, char **argv, struct ts_options *o, FILE *out, FILE *err);

/* @brief Frees what o owns. */
void ts_options_free(struct ts_options *o);

/*
 * @brief Parses a byte count with an optional binary suffix: "4096", "110K",
 * "1.5M", "2G" (K = 1024; "KiB" and "KB" are taken as K too).
 * @return SC_OK or SC_EINVAL.
 */
sc_code ts_parse_bytes(const char *s, uint64_t *out);

/* ---- s3req.c -------------------------------------------------------------------------------- */

/* Where and how object requests go. */
struct ts_s3 {
    char *base;   /* the endpoint without a trailing '/' */
    char *host;   /* the Host header: host, plus ":port" when the URL names one */
    char *bucket; /* copied */
    char *access_key, *secret_key, *session_token, *region; /* NULL keys: unsigned */
};

/*
 * @brief Parses endpoint ("http[s]://host[:port][/]") and reads the credentials
 * from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and the
 * region from AWS_REGION, AWS_DEFAULT_REGION, else "us-east-1".
 * @return SC_OK, SC_EINVAL (not an http(s) URL, a path, a query), SC_ENOMEM.
 *         Free s with ts_s3_free in every case.
 */
sc_code ts_s3_init(struct ts_s3 *s, const char *endpoint, const char *bucket);

/* @brief Frees what s owns; the secret is wiped first. */
void ts_s3_free(struct ts_s3 *s);

/*
 * @brief The URL and headers of one request on key: path-style, the key
 * percent-encoded, signed with SigV4 now when s has credentials (payload
 * UNSIGNED-PAYLOAD for a PUT, the empty hash otherwise).
 * @param[out] url malloc'd, owned by the caller.
 * @param[out] headers owned by the caller (curl_slist_free_all).
 * @return SC_OK, SC_ENOMEM, or the signer's SC_EINVAL/SC_ETOOBIG/SC_ECRYPTO;
 *         both outputs NULL on error.
 */
sc_code ts_s3_request(const struct ts_s3 *s, const char *method, const char *key, char **url,
                      struct curl_slist **headers);

/* ---- admin.c -------------------------------------------------------------------------------- */

/* The gateway counters that make the hit ratio. */
struct ts_counters {
    uint64_t hits, misses, bypasses;
};

/*
 * @brief Reads hits, misses and bypasses from a GET /_s3cached/stats body.
 * @return SC_OK, or SC_EINVAL if json is not an object with those integers.
 */
sc_code ts_stats_parse(const char *json, struct ts_counters *out);

/*
 * @brief GET url and parse it as stats.
 * @return SC_OK, SC_EUPSTREAM (no 200 answer), SC_EINVAL (not stats), SC_ENOMEM.
 */
sc_code ts_stats_fetch(const char *url, struct ts_counters *out);

/*
 * @brief Registers a manifest for this run (this rank's, of split) with the gateway at
 * endpoint; a large plan, answered 202 while the gateway parses it, is waited for (up to
 * 10 minutes) until it is registered.
 * @param[out] id the new manifest's id.
 * @return SC_OK, SC_EUPSTREAM (with the gateway's answer on stderr), SC_EINVAL, SC_ENOMEM,
 *         SC_ETIMEOUT (still parsing).
 */
sc_code ts_manifest_register(const char *endpoint, const struct ts_dataset *d, const char *bucket,
                             uint32_t epochs, uint64_t seed, const struct ts_split *split, char *id,
                             size_t id_len);

/*
 * @brief The manifest's order for epoch (0-based) as dataset indices; waits up
 * to a minute while a prefix manifest is still listing.
 * @param[out] order malloc'd, owned by the caller; *len entries.
 * @return SC_OK, SC_EUPSTREAM (with the gateway's answer on stderr), SC_EINVAL, SC_ENOMEM.
 */
sc_code ts_manifest_order(const char *endpoint, const char *id, uint32_t epoch,
                          const struct ts_dataset *d, uint32_t **order, uint32_t *len);

/* ---- barrier.c ------------------------------------------------------------------------------ */

/*
 * The step barrier of the ranks of one emulated data-parallel job: as DDP's
 * all-reduce in every backward pass, no rank goes past its k-th arrival before
 * every rank has arrived k times. The ranks share a file of world_size 64-bit
 * counters (the arrivals of each rank), each mapped by every rank; a rank stores
 * its own and reads the others', so a loop can poll it while transfers go on.
 */
typedef struct ts_barrier ts_barrier;

#define TS_BARRIER_GONE UINT64_MAX /* a rank that ended: nobody waits for it */

/*
 * @brief Opens (creating it if need be) the barrier file at path for rank
 * split->rank of split->world_size. The file must be new, or hold world_size
 * counters with this rank's still 0 (a file of an earlier run is refused).
 * @return SC_OK, SC_EINVAL (a file of another size, or this rank's counter not 0),
 *         SC_EIO (open, resize or map failed), SC_ENOMEM; *out NULL on error.
 */
sc_code ts_barrier_open(const char *path, const struct ts_split *split, ts_barrier **out);

/* @brief Marks this rank gone (TS_BARRIER_GONE) and frees b. NULL is fine. */
void ts_barrier_close(ts_barrier *b);

/* @brief Records one more arrival of this rank. Cannot fail. */
void ts_barrier_arrive(ts_barrier *b);

/* @brief Whether every rank has arrived as often as this one (or is gone). */
bool ts_barrier_passed(const ts_barrier *b);

/*
 * @brief Arrives and waits (polling every millisecond) until the barrier passes.
 * @return SC_OK, or SC_ETIMEOUT after timeout_ms (the arrival stays recorded).
 */
sc_code ts_barrier_sync(ts_barrier *b, int64_t timeout_ms);

/* ---- pool.c --------------------------------------------------------------------------------- */

typedef struct ts_pool ts_pool;

enum ts_method { TS_GET, TS_PUT };

enum ts_outcome {
    TS_DONE_OK,
    TS_DONE_CORRUPT, /* the body differed; reported on stderr */
    TS_DONE_FAILED,  /* no success after TS_RETRIES retries; reported on stderr */
};

/* One finished transfer. */
struct ts_done {
    uint32_t obj; /* object index */
    uint32_t pos; /* the caller's position tag */
    enum ts_outcome outcome;
    uint64_t bytes;      /* body bytes moved by the last attempt */
    uint32_t latency_us; /* the last attempt, from its start to its last byte */
    uint32_t retries;    /* attempts beyond the first */
    bool responded;      /* the last attempt got an HTTP answer */
    int64_t at_ns;       /* when the loop saw it end */
};

/*
 * @brief A pool of workers transfers over one curl multi handle with keep-alive
 * connections. s3 and d are borrowed for the pool's lifetime.
 * @return SC_OK, SC_ENOMEM, SC_EUPSTREAM (curl refused to start); *out NULL on error.
 */
sc_code ts_pool_new(const struct ts_s3 *s3, const struct ts_dataset *d, uint32_t workers,
                    ts_pool **out);

/* @brief Ends every transfer and frees the pool. NULL is fine. */
void ts_pool_free(ts_pool *p);

/* @brief Transfers started and not yet handed back by ts_pool_next (retries included). */
uint32_t ts_pool_busy(const ts_pool *p);

/* @brief Whether a transfer can start now (fewer than workers busy). */
bool ts_pool_has_room(const ts_pool *p);

/*
 * @brief Starts a GET (verified as it arrives) or a PUT (generated as it is
 * sent) of object obj; pos is handed back in its ts_done.
 * @return SC_OK, SC_EBUSY (no room), SC_ENOMEM, SC_EUPSTREAM.
 */
sc_code ts_pool_start(ts_pool *p, enum ts_method m, uint32_t obj, uint32_t pos);

/*
 * @brief Moves transfers along; waits at most timeout_ms for something to
 * finish (returns at once when something already has).
 * @return SC_OK or SC_EUPSTREAM (curl's multi interface failed).
 */
sc_code ts_pool_run(ts_pool *p, int timeout_ms);

/* @brief Hands back one finished transfer; false when none is waiting. */
bool ts_pool_next(ts_pool *p, struct ts_done *out);

/* ---- progress.c ----------------------------------------------------------------------------- */

/* The progress line: rewritten with '\r' on a terminal, a plain line every 10 s otherwise. */
struct ts_progress {
    bool quiet;
    bool tty;
    int64_t last_ns; /* when it was last printed */
    size_t last_len; /* length of the last line on a terminal */
};

void ts_progress_init(struct ts_progress *p, bool quiet);

/* @brief Prints the line if it is due (force: now); printf-style. */
void ts_progress_show(struct ts_progress *p, bool force, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* @brief Ends a line rewritten in place, so that other output starts on a fresh line. */
void ts_progress_done(struct ts_progress *p);

/* ---- report.c ------------------------------------------------------------------------------- */

/* The numbers of one epoch. */
struct ts_epoch {
    uint32_t epoch; /* 1-based */
    uint64_t objects, bytes;
    double wall_s, stall_s, compute_s;
    double sync_s; /* time waiting for the other ranks at the step barrier */
    double lat_p50_ms, lat_p99_ms, lat_max_ms, lat_mean_ms;
    bool have_hits; /* the gateway's stats were read before and after */
    uint64_t hits, misses;
    uint64_t retries, failed, corrupt;
    char order_sha256[65];
};

/*
 * @brief The nearest-rank percentile p (0 < p <= 100) of n sorted values: the
 * smallest value with at least p% of the values at or below it; 0 for n == 0.
 */
uint32_t ts_percentile(const uint32_t *sorted, size_t n, double p);

/* @brief Sorts lat_us (n latencies in microseconds) and fills e's latency fields. */
void ts_latency_summary(uint32_t *lat_us, size_t n, struct ts_epoch *e);

/* @brief hits / (hits + misses), or a negative value when unavailable or no GET counted. */
double ts_hit_ratio(const struct ts_epoch *e);

/* @brief The per-epoch table (stdout). */
void ts_report_table(FILE *out, const struct ts_options *o, const struct ts_epoch *ep, uint32_t n);

/*
 * @brief CSV: a header line, then one row per epoch.
 * @return SC_OK or SC_EIO (a write failed).
 */
sc_code ts_report_csv(FILE *out, const struct ts_epoch *ep, uint32_t n);

/*
 * @brief JSON: {"tool", "status", "config": {...}, "epochs": [...]}.
 * @param[in] manifest_id the manifest read, or NULL.
 * @return SC_OK, SC_ENOMEM, SC_EIO.
 */
sc_code ts_report_json(FILE *out, const struct ts_options *o, const char *manifest_id,
                       const char *status, const struct ts_epoch *ep, uint32_t n);

/* ---- loader.c, seed.c ----------------------------------------------------------------------- */

/* How one epoch is loaded and consumed. */
struct ts_loader {
    uint32_t batch;    /* objects per batch */
    uint32_t prefetch; /* batches in flight ahead of the consumer */
    uint32_t compute_ms;
    uint32_t epoch, epochs; /* for the progress line: 1-based, and the total */
    ts_barrier *barrier;    /* borrowed; NULL: a single trainer. Else every compute step
                               ends with an arrival, and the next waits for the others */
};

/*
 * @brief Runs one epoch over order (len dataset indices) with the pool.
 * @param[out] e objects, bytes, wall, stall, sync and compute times, latencies,
 *             retries, failures and corruptions (e->epoch is the caller's).
 * @return SC_OK (failures and corruptions are counted in e, not returned),
 *         SC_ENOMEM, SC_EUPSTREAM (curl's multi interface failed).
 */
sc_code ts_load_epoch(ts_pool *p, const struct ts_loader *l, const uint32_t *order, uint32_t len,
                      struct ts_progress *pr, struct ts_epoch *e);

/* The outcome of seed mode. */
struct ts_seed_result {
    uint64_t objects, bytes, retries, failed;
    double wall_s;
};

/* @brief PUTs objects 0..d->objects-1 with the pool. @return SC_OK, SC_ENOMEM, SC_EUPSTREAM. */
sc_code ts_seed(ts_pool *p, const struct ts_dataset *d, struct ts_progress *pr,
                struct ts_seed_result *r);

#endif
