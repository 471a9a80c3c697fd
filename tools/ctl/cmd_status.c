/*
 * cmd_status.c - "s3cachectl status": the gateway's counters
 * (GET /_s3cached/stats) as a two-column table: a summary of the cache and
 * the hit ratio first, then each counter, then any field this version does
 * not know, as the gateway sent it.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

enum kind { COUNT, BYTES };

static const struct {
    const char *field;
    const char *label;
    enum kind kind;
} counters[] = {
    {"bytes_from_cache", "bytes served from cache", BYTES},
    {"bytes_from_upstream", "bytes from upstream", BYTES},
    {"requests", "requests", COUNT},
    {"upstream_fetches", "upstream fetches", COUNT},
    {"fills_stored", "fills stored", COUNT},
    {"fills_failed", "fills failed", COUNT},
    {"prefetched_objects", "prefetched objects", COUNT},
    {"evictions", "evictions", COUNT},
    {"invalidations", "invalidations", COUNT},
    {"passthrough", "passed through", COUNT},
    {"corrupt_chunks", "corrupt chunks", COUNT},
    {"checksums", "checksums on reads", COUNT},
    {"scrubbed", "scrubbed", COUNT},
    {"scrubbed_bytes", "bytes scrubbed", BYTES},
    {"scrub_corrupt", "corrupt found scrubbing", COUNT},
};

/* Fields shown in the summary rows rather than on their own. */
static const char *const summarized[] = {"policy", "used_bytes", "capacity_bytes", "objects",
                                         "hits",   "misses",     "bypasses"};

#define N_COUNTERS   (sizeof(counters) / sizeof(counters[0]))
#define N_SUMMARIZED (sizeof(summarized) / sizeof(summarized[0]))

static bool known(const char *field)
{
    for (size_t i = 0; i < N_COUNTERS; i++)
        if (strcmp(field, counters[i].field) == 0)
            return true;
    for (size_t i = 0; i < N_SUMMARIZED; i++)
        if (strcmp(field, summarized[i]) == 0)
            return true;
    return false;
}

static sc_code row(struct ctl_table *t, const char *label, const char *value)
{
    const char *cells[] = {label, value};
    return ctl_table_add(t, cells);
}

/* "1.5 MiB of 64.0 MiB (2%), 50 objects" */
static sc_code cache_row(struct ctl_table *t, const json_t *st)
{
    char used[PROG_FIELD_MAX], cap[PROG_FIELD_MAX], objs[PROG_FIELD_MAX], v[PROG_LINE_MAX];
    uint64_t u = 0, c = 0, n = 0;
    bool have_used = ctl_juint(st, "used_bytes", &u);
    bool have_cap = ctl_juint(st, "capacity_bytes", &c);
    bool have_objs = ctl_juint(st, "objects", &n);
    snprintf(v, sizeof(v), "%s used of %s (%.0f%%), %s objects",
             have_used ? prog_bytes(used, sizeof(used), u) : "?",
             have_cap ? prog_bytes(cap, sizeof(cap), c) : "?",
             have_cap && c > 0 ? 100.0 * (double)u / (double)c : 0.0,
             have_objs ? prog_count(objs, sizeof(objs), n) : "?");
    return row(t, "cache", v);
}

/* Hits among the reads that could be cached: "50.0% (50 hits, 50 misses; 0 bypasses)". */
static sc_code hit_row(struct ctl_table *t, const json_t *st)
{
    char pct[PROG_FIELD_MAX] = "-", h[PROG_FIELD_MAX], m[PROG_FIELD_MAX], b[PROG_FIELD_MAX],
         v[PROG_LINE_MAX];
    uint64_t hits = 0, misses = 0, bypasses = 0;
    ctl_juint(st, "hits", &hits);
    ctl_juint(st, "misses", &misses);
    ctl_juint(st, "bypasses", &bypasses);
    double reads = (double)hits + (double)misses;
    if (reads > 0)
        snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * (double)hits / reads);
    snprintf(v, sizeof(v), "%s (%s hits, %s misses; %s bypasses)", pct,
             prog_count(h, sizeof(h), hits), prog_count(m, sizeof(m), misses),
             prog_count(b, sizeof(b), bypasses));
    return row(t, "hit ratio", v);
}

static sc_code counter_rows(struct ctl_table *t, const json_t *st)
{
    char v[PROG_FIELD_MAX];
    sc_code rc = SC_OK;
    for (size_t i = 0; rc == SC_OK && i < N_COUNTERS; i++) {
        uint64_t n;
        if (!ctl_juint(st, counters[i].field, &n))
            continue;
        if (counters[i].kind == BYTES)
            prog_bytes(v, sizeof(v), n);
        else
            prog_count(v, sizeof(v), n);
        rc = row(t, counters[i].label, v);
    }
    return rc;
}

/* Fields a newer gateway may add: shown as it sent them. */
static sc_code other_rows(struct ctl_table *t, json_t *st)
{
    const char *field;
    json_t *v;
    sc_code rc = SC_OK;
    json_object_foreach(st, field, v)
    {
        if (known(field))
            continue;
        char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        rc = row(t, field, json_is_string(v) ? json_string_value(v) : text ? text : "?");
        free(text);
        if (rc != SC_OK)
            break;
    }
    return rc;
}

enum ctl_exit ctl_cmd_status(struct ctl_ctx *c)
{
    json_t *st = NULL;
    struct ctl_table t;
    sc_code rc = ctl_api(c, "GET", "stats", NULL, 0, &st);
    if (rc != SC_OK)
        return ctl_api_exit(rc);
    if (c->args->json) {
        rc = ctl_print_json(c, st);
        json_decref(st);
        return rc == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
    }
    ctl_table_init(&t, 2, "ll");
    rc = row(&t, "endpoint", c->endpoint->url);
    if (rc == SC_OK)
        rc = row(&t, "policy", ctl_jstr(st, "policy"));
    if (rc == SC_OK)
        rc = cache_row(&t, st);
    if (rc == SC_OK)
        rc = hit_row(&t, st);
    if (rc == SC_OK)
        rc = counter_rows(&t, st);
    if (rc == SC_OK)
        rc = other_rows(&t, st);
    if (rc == SC_OK)
        ctl_table_print(&t, c->out);
    else
        fprintf(c->err, "s3cachectl: out of memory\n");
    ctl_table_free(&t);
    json_decref(st);
    return rc == SC_OK ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}
