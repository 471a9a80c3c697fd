/*
 * main.c - plan-bench: one large manifest, parsed and registered once, measured.
 *
 *   parse      plan_parse() of the body (a prefix plan: the body, then each listed key
 *              through plan_dataset_append() and plan_dataset_finish(), as the listing does)
 *   register   what mf_activate() (manifest/manifest.c, build.c) builds from a plan without
 *              ranges: the order (4 B per access), per item its state (1 B), size (8 B) and
 *              walk stamp (4 B), and the future (policy/future.c) from the key hashes
 *
 * Memory is counted two ways: bytes held, by allocation accounting (mallinfo2: every live
 * allocation with malloc's own overhead, jansson's included), before and after each step;
 * and the peak RSS over each step (VmHWM reset through /proc/self/clear_refs), less the
 * RSS when it began. The body is not counted (the caller of plan_parse holds it).
 *
 * One JSON line on stdout; bench/plans.sh runs the setups and takes medians.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/procmem.h"
#include "../../common/clock.h"
#include "../../manifest/plan.h"
#include "../../policy/future.h"
#include "planbench.h"

/* Starts a step: the peak RSS is reset to the RSS now (Linux >= 4.0). */
struct step {
    double t0;
    uint64_t rss0, live0;
};

static void step_begin(struct step *s)
{
    malloc_trim(0); /* what earlier steps freed goes back, so that the RSS is what is held */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f == NULL || fputs("5", f) < 0 || fclose(f) != 0)
        fprintf(stderr, "plan-bench: cannot reset the peak RSS: %s\n", strerror(errno));
    s->rss0 = procmem_status_bytes("VmRSS");
    s->live0 = procmem_heap_bytes();
    s->t0 = sc_now_seconds();
}

struct step_result {
    double seconds;
    uint64_t peak_rss; /* over the RSS at the start */
    int64_t held;      /* bytes allocated and still live */
};

static struct step_result step_end(const struct step *s)
{
    struct step_result r;
    r.seconds = sc_now_seconds() - s->t0;
    uint64_t hwm = procmem_status_bytes("VmHWM");
    r.peak_rss = hwm > s->rss0 ? hwm - s->rss0 : 0;
    r.held = (int64_t)procmem_heap_bytes() - (int64_t)s->live0;
    return r;
}

static sc_code list_keys(struct plan *p, uint32_t n, struct api_err *err)
{
    char key[PB_KEY_CAP];
    sc_code rc = SC_OK;
    for (uint32_t i = 0; i < n && rc == SC_OK; i++) {
        pb_key(i, n, key, sizeof(key));
        rc = plan_dataset_append(p, key, strlen(key), err);
    }
    return rc == SC_OK ? plan_dataset_finish(p, err) : rc;
}

static sc_code parse(const struct pb_opts *o, const struct sc_buf *body, struct plan **p,
                     struct api_err *err)
{
    struct plan_limits lim;
    plan_limits_default(&lim);
    if (body->len > lim.max_body)
        lim.max_body = body->len; /* the gateway's bound is 64 MiB; see bench/plans.sh */
    sc_code rc = plan_parse(body->data, body->len, &lim, p, err);
    if (rc == SC_OK && o->form == PB_PREFIX)
        rc = list_keys(*p, o->keys, err);
    return rc;
}

/* What a registered manifest keeps beside its plan (see the top). */
struct registered {
    uint32_t *order;
    uint8_t *obj;
    uint64_t *size;
    uint32_t *stamp;
    future *fut;
};

static sc_code state_arrays(const struct plan *p, struct registered *m)
{
    uint64_t n = plan_objects(p), acc = plan_accesses(p);
    struct plan_iter it;
    uint32_t idx;
    uint64_t pos;
    sc_code rc;
    m->order = malloc(acc * sizeof(*m->order));
    m->obj = calloc(n, sizeof(*m->obj));
    m->size = calloc(n, sizeof(*m->size));
    m->stamp = calloc(n, sizeof(*m->stamp));
    if (!m->order || !m->obj || !m->size || !m->stamp)
        return SC_ENOMEM;
    plan_iter_init(&it, p);
    while ((rc = plan_iter_next(&it, &idx, &pos)) == SC_OK)
        m->order[pos] = idx;
    plan_iter_free(&it);
    return rc == SC_ENOTFOUND ? SC_OK : rc;
}

static sc_code build_future(const struct plan *p, struct registered *m)
{
    uint64_t *hashes = NULL;
    sc_code rc = plan_key_hashes(p, &hashes);
    if (rc == SC_OK)
        rc = future_new(&m->fut);
    for (uint64_t pos = 0; rc == SC_OK && pos < plan_accesses(p); pos++)
        rc = future_append(m->fut, hashes[m->order[pos]]);
    free(hashes);
    return rc == SC_OK ? future_seal(m->fut) : rc;
}

static void registered_free(struct registered *m)
{
    free(m->order);
    free(m->obj);
    free(m->size);
    free(m->stamp);
    future_unref(m->fut);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: plan-bench [--form keys|epochs|prefix] [--keys N] [--epochs E]\n"
                "                  [--world-size W] [--shuffle] [--seed S] [--unsorted]\n"
                "                  [--print-body]\n"
                "Parses and registers one manifest of N ImageNet-like keys (29 bytes) and prints\n"
                "times and memory as one JSON line (see bench/plans.sh). Defaults: keys, 1000000\n"
                "keys, 1 epoch, world size 1, not shuffled. --form keys lists the keys ascending\n"
                "as a listing returns them, or in a random order with --unsorted; --form epochs:\n"
                "E lists of the N keys, each shuffled; --form prefix: the keys through\n"
                "plan_dataset_append() as the listing feeds them. --print-body writes the POST\n"
                "body to stdout instead (bench/plans.sh sends it to a gateway).\n");
}

static bool parse_u32(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_form(const char *s, enum pb_form *out)
{
    static const char *const names[] = {
        [PB_KEYS] = "keys", [PB_EPOCHS] = "epochs", [PB_PREFIX] = "prefix"};
    for (int f = PB_KEYS; f <= PB_PREFIX; f++)
        if (strcmp(s, names[f]) == 0) {
            *out = (enum pb_form)f;
            return true;
        }
    return false;
}

static bool parse_opts(int argc, char **argv, struct pb_opts *o)
{
    static const struct option longs[] = {
        {"form", required_argument, NULL, 'f'},   {"keys", required_argument, NULL, 'k'},
        {"epochs", required_argument, NULL, 'e'}, {"world-size", required_argument, NULL, 'w'},
        {"shuffle", no_argument, NULL, 's'},      {"seed", required_argument, NULL, 'S'},
        {"unsorted", no_argument, NULL, 'u'},     {"print-body", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    *o = (struct pb_opts){.form = PB_KEYS, .keys = 1000000, .epochs = 1, .world_size = 1};
    int c;
    bool ok = true;
    while (ok && (c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'f')
            ok = parse_form(optarg, &o->form);
        else if (c == 'k')
            ok = parse_u32(optarg, &o->keys);
        else if (c == 'e')
            ok = parse_u32(optarg, &o->epochs);
        else if (c == 'w')
            ok = parse_u32(optarg, &o->world_size);
        else if (c == 's')
            o->shuffle = true;
        else if (c == 'u')
            o->unsorted = true;
        else if (c == 'p')
            o->print_body = true;
        else if (c == 'S')
            o->seed = strtoull(optarg, NULL, 10);
        else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else
            ok = false;
    }
    return ok && optind == argc;
}

static const char *form_name(enum pb_form f)
{
    return f == PB_KEYS ? "keys" : f == PB_EPOCHS ? "epochs" : "prefix";
}

static void report(const struct pb_opts *o, const struct plan *p, size_t body_len,
                   const struct step_result *parsed, const struct step_result *reg,
                   int64_t state_held)
{
    uint64_t n = plan_objects(p), acc = plan_accesses(p);
    int64_t kept = parsed->held + reg->held;
    printf("{\"form\":\"%s\",\"unsorted\":%s,\"keys\":%" PRIu64 ",\"epochs\":%" PRIu32
           ",\"world_size\":%" PRIu32 ",\"shuffle\":%s,\"accesses\":%" PRIu64 ",\"body_bytes\":%zu,"
           "\"parse_s\":%.3f,\"parse_peak_rss\":%" PRIu64 ",\"plan_bytes\":%" PRId64 ","
           "\"register_s\":%.3f,\"register_peak_rss\":%" PRIu64 ",\"state_bytes\":%" PRId64
           ",\"future_bytes\":%" PRId64 ",\"kept_bytes\":%" PRId64
           ",\"per_key\":%.1f,\"per_access\":%.1f}\n",
           form_name(o->form), o->unsorted ? "true" : "false", n, plan_epochs(p), o->world_size,
           o->shuffle ? "true" : "false", acc, body_len, parsed->seconds, parsed->peak_rss,
           parsed->held, reg->seconds, reg->peak_rss, state_held, reg->held - state_held, kept,
           (double)kept / (double)n, (double)kept / (double)acc);
}

int main(int argc, char **argv)
{
    struct pb_opts o;
    struct sc_buf body = SC_BUF_INIT;
    struct api_err err = {API_OK, ""};
    struct plan *p = NULL;
    struct registered m = {0};
    struct step s;
    struct step_result parsed, reg;
    int64_t state_held = 0;
    if (!parse_opts(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    if (pb_body(&o, &body) != SC_OK) {
        fprintf(stderr, "plan-bench: out of memory building the body\n");
        return 1;
    }
    if (o.print_body) {
        bool ok = fwrite(body.data, 1, body.len, stdout) == body.len && fflush(stdout) == 0;
        sc_buf_free(&body);
        return ok ? 0 : 1;
    }
    step_begin(&s);
    sc_code rc = parse(&o, &body, &p, &err);
    parsed = step_end(&s);
    size_t body_len = body.len;
    sc_buf_free(&body);
    if (rc == SC_OK) {
        step_begin(&s);
        rc = state_arrays(p, &m);
        state_held = (int64_t)procmem_heap_bytes() - (int64_t)s.live0;
        if (rc == SC_OK)
            rc = build_future(p, &m);
        reg = step_end(&s);
    }
    if (rc != SC_OK) {
        fprintf(stderr, "plan-bench: %s: %s\n", sc_strerror(rc), err.message);
        return 1;
    }
    report(&o, p, body_len, &parsed, &reg, state_held);
    registered_free(&m);
    plan_free(p);
    return 0;
}
