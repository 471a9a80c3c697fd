/*
 * cli.c - the command line of s3cached-trainsim: both modes' options, parsed
 * and range-checked here and nowhere else.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trainsim.h"

#define MAX_WORKERS     4096
#define MAX_EPOCHS      100000
#define MAX_COMPUTE_MS  3600000
#define MAX_PREFIX      (1024 - 12) /* a key stays within S3's 1024 bytes */
#define MAX_GW_EPOCHS   1000        /* the manifest API's limit on num_epochs */
#define DEFAULT_SIZE    (110 * 1024)
#define DEFAULT_SIGMA   0.5
#define DEFAULT_WORKERS 16

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: s3cached-trainsim seed  --endpoint URL --bucket B --objects N [dataset options]\n"
        "                               [--workers W] [--quiet]\n"
        "       s3cached-trainsim train --endpoint URL --bucket B --objects N [dataset options]\n"
        "                               --epochs E [loader options] [output options]\n"
        "Emulates a PyTorch DataLoader reading a synthetic dataset from an S3 endpoint.\n\n"
        "dataset (seed and train must agree):\n"
        "  --prefix P            key prefix (default \"trainsim/\"); keys are P%%08u.bin\n"
        "  --objects N           objects in the dataset\n"
        "  --size S              object size, or the mean for lognormal (default 110K)\n"
        "  --size-dist D         fixed or lognormal (default fixed)\n"
        "  --sigma X             lognormal: sd of the log of the size (default 0.5)\n"
        "  --data-seed S         seed of sizes and contents (default 0)\n"
        "loader (train):\n"
        "  --epochs E            epochs to read\n"
        "  --batch-size B        objects per batch (default 32)\n"
        "  --workers W           concurrent requests (default 16; seed too)\n"
        "  --prefetch-batches P  batches loading ahead of the consumer (default 2)\n"
        "  --compute-ms T        simulated compute per batch (default 20)\n"
        "  --shuffle-seed S      seed of the per-epoch shuffle (default 0)\n"
        "  --gateway-order       register a manifest and read the gateway's order\n"
        "  --manifest-id ID      read the order of an existing manifest\n"
        "  --cache-aware         --gateway-order, the manifest cache-aware: each epoch\n"
        "                        reads what the gateway holds first\n"
        "  --world-size W        trainers of one data-parallel job (default 1)\n"
        "  --rank R              which of them this one is, 0..W-1 (default 0): it reads\n"
        "                        DistributedSampler's share R of each epoch\n"
        "  --step-barrier FILE   the ranks share FILE (new, or of this run) and every\n"
        "                        compute step waits for all of them, as DDP's all-reduce\n"
        "output (train):\n"
        "  --stats-url URL       the gateway's stats (default ENDPOINT/_s3cached/stats;\n"
        "                        \"none\" to skip)\n"
        "  --csv FILE            one row per epoch\n"
        "  --json FILE           the configuration and every epoch\n"
        "  --quiet               no progress line\n"
        "Requests are signed with SigV4 when AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
        "are set (region: AWS_REGION, default us-east-1).\n"
        "Exit: 0 ok, 1 setup error, 2 usage, 3 a corrupted byte, 4 a failed request.\n");
}

sc_code ts_parse_bytes(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (*s < '0' || *s > '9')
        return SC_EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s)
        return SC_EINVAL;
    static const char units[] = "KMGT";
    double mult = 1;
    if (*end != '\0') {
        const char *u = strchr(units, *end >= 'a' && *end <= 'z' ? *end - 32 : *end);
        if (u == NULL)
            return SC_EINVAL;
        mult = pow(1024.0, (double)(u - units) + 1);
        end++;
        if (strcmp(end, "iB") != 0 && strcmp(end, "B") != 0 && *end != '\0')
            return SC_EINVAL;
    }
    v *= mult;
    if (!(v >= 0) || v >= 18446744073709551616.0 || v != floor(v))
        return SC_EINVAL;
    *out = (uint64_t)v;
    return SC_OK;
}

/* A decimal integer in min..max. */
static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    if (!parse_u64(s, min, max, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

enum {
    OPT_ENDPOINT = 256,
    OPT_BUCKET,
    OPT_PREFIX,
    OPT_OBJECTS,
    OPT_SIZE,
    OPT_SIZE_DIST,
    OPT_SIGMA,
    OPT_DATA_SEED,
    OPT_WORKERS,
    OPT_QUIET,
    OPT_HELP,
    OPT_TRAIN_ONLY, /* the options below apply to train only */
    OPT_EPOCHS = OPT_TRAIN_ONLY,
    OPT_BATCH,
    OPT_PREFETCH,
    OPT_COMPUTE,
    OPT_SHUFFLE_SEED,
    OPT_GATEWAY_ORDER,
    OPT_MANIFEST_ID,
    OPT_CACHE_AWARE,
    OPT_WORLD_SIZE,
    OPT_RANK,
    OPT_STEP_BARRIER,
    OPT_STATS_URL,
    OPT_CSV,
    OPT_JSON,
};

static const struct option longs[] = {
    {"endpoint", required_argument, NULL, OPT_ENDPOINT},
    {"bucket", required_argument, NULL, OPT_BUCKET},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"objects", required_argument, NULL, OPT_OBJECTS},
    {"size", required_argument, NULL, OPT_SIZE},
    {"size-dist", required_argument, NULL, OPT_SIZE_DIST},
    {"sigma", required_argument, NULL, OPT_SIGMA},
    {"data-seed", required_argument, NULL, OPT_DATA_SEED},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, OPT_HELP},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"batch-size", required_argument, NULL, OPT_BATCH},
    {"prefetch-batches", required_argument, NULL, OPT_PREFETCH},
    {"compute-ms", required_argument, NULL, OPT_COMPUTE},
    {"shuffle-seed", required_argument, NULL, OPT_SHUFFLE_SEED},
    {"gateway-order", no_argument, NULL, OPT_GATEWAY_ORDER},
    {"manifest-id", required_argument, NULL, OPT_MANIFEST_ID},
    {"cache-aware", no_argument, NULL, OPT_CACHE_AWARE},
    {"world-size", required_argument, NULL, OPT_WORLD_SIZE},
    {"rank", required_argument, NULL, OPT_RANK},
    {"step-barrier", required_argument, NULL, OPT_STEP_BARRIER},
    {"stats-url", required_argument, NULL, OPT_STATS_URL},
    {"csv", required_argument, NULL, OPT_CSV},
    {"json", required_argument, NULL, OPT_JSON},
    {NULL, 0, NULL, 0},
};

static const char *option_name(int c)
{
    for (const struct option *l = longs; l->name; l++)
        if (l->val == c)
            return l->name;
    return "?";
}

static void defaults(struct ts_options *o)
{
    memset(o, 0, sizeof(*o));
    o->ds.prefix = TS_DEFAULT_PREFIX;
    o->ds.size = DEFAULT_SIZE;
    o->ds.dist = TS_SIZE_FIXED;
    o->ds.sigma = DEFAULT_SIGMA;
    o->workers = DEFAULT_WORKERS;
    o->batch = 32;
    o->prefetch = 2;
    o->compute_ms = 20;
    o->split.world_size = 1;
    o->stats_url = "";
}

/* Applies one dataset or common option; false if its value is bad. */
static bool apply_common(struct ts_options *o, int c, const char *v)
{
    double sigma = 0;
    char *end = NULL;
    switch (c) {
    case OPT_ENDPOINT:
        o->endpoint = v;
        return *v != '\0';
    case OPT_BUCKET:
        o->bucket = v;
        return *v != '\0' && strchr(v, '/') == NULL;
    case OPT_PREFIX:
        o->ds.prefix = v;
        return strlen(v) <= MAX_PREFIX;
    case OPT_OBJECTS:
        return parse_u32(v, 1, TS_MAX_OBJECTS, &o->ds.objects);
    case OPT_SIZE:
        return ts_parse_bytes(v, &o->ds.size) == SC_OK && o->ds.size >= 1 &&
               o->ds.size <= TS_MAX_SIZE;
    case OPT_SIZE_DIST:
        o->ds.dist = strcmp(v, "lognormal") == 0 ? TS_SIZE_LOGNORMAL : TS_SIZE_FIXED;
        return strcmp(v, "fixed") == 0 || strcmp(v, "lognormal") == 0;
    case OPT_SIGMA:
        errno = 0;
        sigma = strtod(v, &end);
        o->ds.sigma = sigma;
        return errno == 0 && end != v && *end == '\0' && sigma >= 0 && sigma <= 4;
    case OPT_DATA_SEED:
        return parse_u64(v, 0, INT64_MAX, &o->ds.data_seed);
    case OPT_WORKERS:
        return parse_u32(v, 1, MAX_WORKERS, &o->workers);
    case OPT_QUIET:
        o->quiet = true;
        return true;
    }
    return false;
}

/* Applies one train option; false if its value is bad. */
static bool apply_train(struct ts_options *o, int c, const char *v)
{
    switch (c) {
    case OPT_EPOCHS:
        return parse_u32(v, 1, MAX_EPOCHS, &o->epochs);
    case OPT_BATCH:
        return parse_u32(v, 1, TS_MAX_OBJECTS, &o->batch);
    case OPT_PREFETCH:
        return parse_u32(v, 1, 1000000, &o->prefetch);
    case OPT_COMPUTE:
        return parse_u32(v, 0, MAX_COMPUTE_MS, &o->compute_ms);
    case OPT_SHUFFLE_SEED:
        return parse_u64(v, 0, INT64_MAX, &o->shuffle_seed);
    case OPT_GATEWAY_ORDER:
        o->gateway_order = true;
        return true;
    case OPT_CACHE_AWARE:
        o->gateway_order = o->split.cache_aware = true;
        return true;
    case OPT_MANIFEST_ID:
        o->manifest_id = v;
        o->gateway_order = true;
        return *v != '\0' && strcspn(v, "/?#% ") == strlen(v);
    case OPT_WORLD_SIZE:
        return parse_u32(v, 1, TS_MAX_WORLD, &o->split.world_size);
    case OPT_RANK:
        return parse_u32(v, 0, TS_MAX_WORLD - 1, &o->split.rank);
    case OPT_STEP_BARRIER:
        o->step_barrier = v;
        return *v != '\0';
    case OPT_STATS_URL:
        o->stats_url = strcmp(v, "none") == 0 ? NULL : v;
        return *v != '\0';
    case OPT_CSV:
        o->csv_path = v;
        return *v != '\0';
    case OPT_JSON:
        o->json_path = v;
        return *v != '\0';
    }
    return false;
}

/* Checks what no single option can: required ones and combinations. */
static bool check_whole(struct ts_options *o, FILE *err)
{
    const char *missing = o->endpoint == NULL                          ? "--endpoint"
                          : o->bucket == NULL                          ? "--bucket"
                          : o->ds.objects == 0                         ? "--objects"
                          : o->mode == TS_MODE_TRAIN && o->epochs == 0 ? "--epochs"
                                                                       : NULL;
    if (missing) {
        fprintf(err, "s3cached-trainsim: %s is required\n", missing);
        return false;
    }
    if (strncmp(o->endpoint, "http://", 7) != 0 && strncmp(o->endpoint, "https://", 8) != 0) {
        fprintf(err, "s3cached-trainsim: --endpoint must be an http:// or https:// URL\n");
        return false;
    }
    if (o->split.rank >= o->split.world_size) {
        fprintf(err, "s3cached-trainsim: --rank must be below --world-size (%u)\n",
                o->split.world_size);
        return false;
    }
    if (o->gateway_order && o->manifest_id == NULL && o->epochs > MAX_GW_EPOCHS) {
        fprintf(err, "s3cached-trainsim: --gateway-order plans at most %d epochs\n", MAX_GW_EPOCHS);
        return false;
    }
    if (o->stats_url && *o->stats_url == '\0') {
        size_t len = strlen(o->endpoint);
        while (len > 0 && o->endpoint[len - 1] == '/')
            len--;
        size_t need = len + sizeof("/_s3cached/stats");
        o->stats_url_owned = malloc(need);
        if (o->stats_url_owned == NULL) {
            fprintf(err, "s3cached-trainsim: out of memory\n");
            return false;
        }
        snprintf(o->stats_url_owned, need, "%.*s/_s3cached/stats", (int)len, o->endpoint);
        o->stats_url = o->stats_url_owned;
    }
    return true;
}

int ts_options_parse(int argc, char **argv, struct ts_options *o, FILE *out, FILE *err)
{
    defaults(o);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(out);
        return 1;
    }
    if (argc < 2 || (strcmp(argv[1], "seed") != 0 && strcmp(argv[1], "train") != 0)) {
        usage(err);
        return TS_EXIT_USAGE;
    }
    o->mode = strcmp(argv[1], "seed") == 0 ? TS_MODE_SEED : TS_MODE_TRAIN;
    char **av = argv + 1; /* the mode stands where getopt expects the program's name */
    int ac = argc - 1;
    optind = 0; /* glibc: start over, as a unit test parses many command lines */
    opterr = 0;
    int c;
    while ((c = getopt_long(ac, av, "", longs, NULL)) != -1) {
        if (c == OPT_HELP) {
            usage(out);
            return 1;
        }
        if (c == '?') {
            fprintf(err, "s3cached-trainsim: unknown option or missing value: %s\n",
                    av[optind - 1]);
            return TS_EXIT_USAGE;
        }
        if (c >= OPT_TRAIN_ONLY && o->mode == TS_MODE_SEED) {
            fprintf(err, "s3cached-trainsim: --%s applies to train only\n", option_name(c));
            return TS_EXIT_USAGE;
        }
        bool ok = c >= OPT_TRAIN_ONLY ? apply_train(o, c, optarg) : apply_common(o, c, optarg);
        if (!ok) {
            fprintf(err, "s3cached-trainsim: bad value for --%s: %s\n", option_name(c),
                    optarg ? optarg : "");
            return TS_EXIT_USAGE;
        }
    }
    if (optind < ac) {
        fprintf(err, "s3cached-trainsim: unexpected argument: %s\n", av[optind]);
        return TS_EXIT_USAGE;
    }
    return check_whole(o, err) ? 0 : TS_EXIT_USAGE;
}

void ts_options_free(struct ts_options *o)
{
    free(o->stats_url_owned);
    o->stats_url_owned = NULL;
}
