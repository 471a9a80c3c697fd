/*
 * main.c - s3cached-sim: replays an access trace (a file or a generated one)
 * through every policy in the table at one capacity and prints each policy's
 * hits beside the offline optimum. Options are parsed and range-checked here;
 * the work is in trace.c, gen.c, replay.c and belady.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct options {
    const char *trace_path; /* or NULL with gen */
    const char *gen;        /* epochs, scan, importance */
    const char *policies;   /* comma-separated subset, or NULL for all */
    struct sim_gen_opts g;
    uint64_t capacity;   /* bytes, when capacity_pct < 0 */
    double capacity_pct; /* percent of the dataset, or -1 */
    int plan;            /* 1 plan, 0 do not, -1 the trace's default */
    bool csv;
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: s3cached-sim (--trace FILE | --gen epochs|scan|importance) [options]\n"
            "Replays an access trace through each eviction policy and the offline optimum.\n\n"
            "  --trace FILE      one access per line: \"key\" or \"key size\" (\"-\" is stdin)\n"
            "  --gen KIND        epochs: the dataset in E shuffled epochs (planned)\n"
            "                    scan: a Zipf working set with one-time scans mixed in\n"
            "                    importance: samples drawn by importance, losses as hints\n"
            "  --objects N       objects in the dataset or working set (default 10000)\n"
            "  --epochs E        epochs, or rounds of scan (default 3)\n"
            "  --seed S          generator seed (default 42)\n"
            "  --size S[-M]      object size in bytes, or uniform in S..M (default 1M);\n"
            "                    for --trace, the size of keys listed without one\n"
            "  --capacity C      cache bytes (K, M, G, T suffixes) or P%% of the dataset\n"
            "                    (default 50%%)\n"
            "  --batch B         minibatch length for importance hints (default 32)\n"
            "  --policy A[,B]    only these policies (default every one: %s)\n"
            "  --plan, --no-plan hand the trace to the policies as their future or not\n"
            "                    (default: planned for epochs and --trace)\n"
            "  --csv             comma-separated output\n"
            "  --help            this text\n",
            policy_names());
}

/* Parses a decimal count with an optional binary K/M/G/T suffix. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (*s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return false;
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, *end == 'k' ? 'K' : *end) : NULL;
    if (*end && (u == NULL || end[1] != '\0'))
        return false;
    for (int shift = u ? (int)(u - units) + 1 : 0; shift > 0; shift--) {
        if (v > UINT64_MAX / 1024)
            return false;
        v *= 1024;
    }
    *out = v;
    return true;
}

static bool parse_u32(const char *s, uint32_t *out, uint32_t min)
{
    uint64_t v = 0;
    if (!parse_bytes(s, &v) || v < min || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_size(const char *s, struct sim_gen_opts *g)
{
    char buf[64];
    const char *dash = strchr(s, '-');
    if (dash == NULL)
        return parse_bytes(s, &g->size_min) && parse_bytes(s, &g->size_max);
    if ((size_t)(dash - s) >= sizeof(buf))
        return false;
    memcpy(buf, s, (size_t)(dash - s));
    buf[dash - s] = '\0';
    return parse_bytes(buf, &g->size_min) && parse_bytes(dash + 1, &g->size_max) &&
           g->size_min <= g->size_max;
}

static bool parse_capacity(const char *s, struct options *o)
{
    size_t len = strlen(s);
    if (len > 1 && s[len - 1] == '%') {
        char *end = NULL;
        errno = 0;
        double p = strtod(s, &end);
        o->capacity_pct = p;
        return errno == 0 && end == s + len - 1 && p > 0 && p <= 100;
    }
    o->capacity_pct = -1;
    return parse_bytes(s, &o->capacity);
}

enum { OPT_PLAN = 256, OPT_NO_PLAN, OPT_CSV, OPT_HELP };

/* Returns 0 to run, 1 after --help, 2 on a bad option (reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"trace", required_argument, NULL, 't'},     {"gen", required_argument, NULL, 'g'},
        {"objects", required_argument, NULL, 'n'},   {"epochs", required_argument, NULL, 'e'},
        {"seed", required_argument, NULL, 's'},      {"size", required_argument, NULL, 'z'},
        {"capacity", required_argument, NULL, 'c'},  {"batch", required_argument, NULL, 'b'},
        {"policy", required_argument, NULL, 'p'},    {"plan", no_argument, NULL, OPT_PLAN},
        {"no-plan", no_argument, NULL, OPT_NO_PLAN}, {"csv", no_argument, NULL, OPT_CSV},
        {"help", no_argument, NULL, OPT_HELP},       {NULL, 0, NULL, 0}};
    int c, idx = 0;
    bool ok = true;
    while (ok && (c = getopt_long(argc, argv, "", longs, &idx)) != -1) {
        switch (c) {
        case 't':
            o->trace_path = optarg;
            break;
        case 'g':
            o->gen = optarg;
            break;
        case 'n':
            ok = parse_u32(optarg, &o->g.objects, 1);
            break;
        case 'e':
            ok = parse_u32(optarg, &o->g.epochs, 1);
            break;
        case 's':
            ok = parse_bytes(optarg, &o->g.seed);
            break;
        case 'z':
            ok = parse_size(optarg, &o->g);
            break;
        case 'c':
            ok = parse_capacity(optarg, o);
            break;
        case 'b':
            ok = parse_u32(optarg, &o->g.batch, 1);
            break;
        case 'p':
            o->policies = optarg;
            break;
        case OPT_PLAN:
            o->plan = 1;
            break;
        case OPT_NO_PLAN:
            o->plan = 0;
            break;
        case OPT_CSV:
            o->csv = true;
            break;
        case OPT_HELP:
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 2;
        }
        if (!ok)
            fprintf(stderr, "s3cached-sim: bad value for --%s: %s\n", longs[idx].name, optarg);
    }
    if (ok && optind < argc) {
        fprintf(stderr, "s3cached-sim: unexpected argument: %s\n", argv[optind]);
        ok = false;
    }
    if (ok && o->gen != NULL && strcmp(o->gen, "epochs") != 0 && strcmp(o->gen, "scan") != 0 &&
        strcmp(o->gen, "importance") != 0) {
        fprintf(stderr, "s3cached-sim: unknown generator: %s\n", o->gen);
        ok = false;
    }
    if (ok && (o->trace_path == NULL) == (o->gen == NULL)) {
        fprintf(stderr, "s3cached-sim: give exactly one of --trace and --gen\n");
        ok = false;
    }
    return ok ? 0 : 2;
}

static sc_code load_trace(const struct options *o, struct sim_trace *t)
{
    if (o->gen != NULL) {
        if (strcmp(o->gen, "epochs") == 0)
            return sim_gen_epochs(&o->g, t);
        if (strcmp(o->gen, "scan") == 0)
            return sim_gen_scan(&o->g, t);
        return sim_gen_importance(&o->g, t); /* parse_args admits no other */
    }
    FILE *in = strcmp(o->trace_path, "-") == 0 ? stdin : fopen(o->trace_path, "r");
    if (in == NULL) {
        fprintf(stderr, "s3cached-sim: %s: %s\n", o->trace_path, strerror(errno));
        return SC_EINVAL;
    }
    uint64_t line = 0;
    sc_code rc = sim_trace_read(in, o->g.size_min, t, &line);
    if (rc == SC_EINVAL)
        fprintf(stderr, "s3cached-sim: %s:%" PRIu64 ": malformed line\n", o->trace_path, line);
    if (in != stdin)
        fclose(in);
    return rc;
}

/* Whether name is selected by the comma-separated list (NULL selects all). */
static bool selected(const char *list, const char *name)
{
    if (list == NULL)
        return true;
    size_t len = strlen(name);
    for (const char *p = list; p != NULL; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return true;
    }
    return false;
}

static void print_row(const struct options *o, const char *name, const struct sim_result *r)
{
    double ratio = r->accesses ? (double)r->hits / (double)r->accesses : 0;
    double bratio = r->bytes ? (double)r->hit_bytes / (double)r->bytes : 0;
    if (o->csv)
        printf("%s,%" PRIu64 ",%" PRIu64 ",%.6f,%.6f\n", name, r->hits, r->accesses, ratio, bratio);
    else
        printf("%-14s %12" PRIu64 " %12" PRIu64 " %9.2f%% %9.2f%%\n", name, r->hits, r->accesses,
               100 * ratio, 100 * bratio);
}

static void print_header(const struct options *o, const struct sim_trace *t, uint64_t capacity)
{
    uint64_t dataset = sim_trace_bytes(t);
    if (o->csv) {
        printf("policy,hits,accesses,hit_ratio,byte_hit_ratio\n");
        return;
    }
    printf("trace: %s, %" PRIu32 " objects, %" PRIu64 " accesses, %s\n",
           o->gen ? o->gen : o->trace_path, t->n_objs, t->n_acc,
           t->planned ? "planned (future given)" : "not planned");
    printf("capacity: %" PRIu64 " bytes (%.1f%% of the %" PRIu64 "-byte dataset)\n\n", capacity,
           dataset ? 100.0 * (double)capacity / (double)dataset : 0.0, dataset);
    printf("%-14s %12s %12s %10s %10s\n", "policy", "hits", "accesses", "hit ratio", "byte ratio");
}

static int run(const struct options *o, struct sim_trace *t)
{
    uint64_t capacity = o->capacity;
    if (o->capacity_pct >= 0)
        capacity = (uint64_t)((double)sim_trace_bytes(t) * o->capacity_pct / 100.0);
    if (o->plan >= 0)
        t->planned = o->plan == 1;
    print_header(o, t, capacity);
    struct sim_result r;
    for (size_t i = 0; i < policy_count(); i++) {
        const struct policy_ops *ops = policy_at(i);
        if (!selected(o->policies, ops->name))
            continue;
        sc_code rc = sim_replay(t, ops, capacity, &r);
        if (rc != SC_OK) {
            fprintf(stderr, "s3cached-sim: %s: %s\n", ops->name, sc_strerror(rc));
            return 1;
        }
        print_row(o, ops->name, &r);
    }
    if (sim_belady(t, capacity, &r) != SC_OK) {
        fprintf(stderr, "s3cached-sim: optimum: out of memory\n");
        return 1;
    }
    print_row(o, sim_trace_equal_sizes(t) ? "optimum" : "min-by-reuse", &r);
    return 0;
}

/* Whether every name in the comma-separated list is in the table; reports the first that is not. */
static bool policies_known(const char *list)
{
    for (const char *p = list; p != NULL && *p;) {
        size_t len = strcspn(p, ",");
        bool known = false;
        for (size_t i = 0; i < policy_count(); i++)
            known |= strlen(policy_at(i)->name) == len && strncmp(policy_at(i)->name, p, len) == 0;
        if (!known) {
            fprintf(stderr, "s3cached-sim: unknown policy: %.*s (known: %s)\n", (int)len, p,
                    policy_names());
            return false;
        }
        p += len + (p[len] == ',');
    }
    return true;
}

int main(int argc, char **argv)
{
    struct options o = {
        .g = {.objects = 10000,
              .epochs = 3,
              .seed = 42,
              .size_min = 1u << 20,
              .size_max = 1u << 20,
              .batch = 32},
        .capacity_pct = 50,
        .plan = -1,
    };
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (!policies_known(o.policies))
        return 2;
    struct sim_trace t;
    sc_code lrc = load_trace(&o, &t);
    if (lrc != SC_OK) {
        fprintf(stderr, "s3cached-sim: no trace: %s\n", sc_strerror(lrc));
        return 1;
    }
    rc = run(&o, &t);
    sim_trace_free(&t);
    return rc;
}
