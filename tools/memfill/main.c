/*
 * main.c - s3cached-memfill: the memory a cached object costs beyond LMDB's map.
 *
 *   fill DIR N [SIZE]  fills a store in DIR with N objects of SIZE bytes (default 64) through
 *                      the store API (store_put, bucket "mem", keys "obj/%08u"), as a gateway
 *                      would after N misses; capacity large enough that nothing is evicted.
 *   open DIR POLICY    opens the filled store with POLICY (the warm-restart scan registers
 *                      every object with the policy, store/store_scan.c) and counts:
 *                        rss_anon  RssAnon (/proc/self/status) after the open less before it:
 *                                  anonymous memory only, so the map's resident pages
 *                                  (RssFile, the page cache) are not counted
 *                        heap      bytes malloc holds for live allocations (mallinfo2), after
 *                                  less before: the store's and the policy's structures
 *                      then reads every object once through a view (hits, counted by the policy)
 *                      and counts again.
 *   policy POLICY N    the policy alone: N on_insert() of whole objects (ids 1..N, as the store
 *                      numbers them) and N on_hit(), heap bytes per object (no LMDB at all).
 *
 * One JSON line on stdout per command; bench/memory.sh runs them for every policy.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/procmem.h"
#include "../../policy/policy.h"
#include "../../store/store.h"

#define BATCH 20000 /* puts queued before a store_flush() */

static int usage(void)
{
    fprintf(stderr,
            "usage: s3cached-memfill fill DIR N [SIZE] | open DIR POLICY | policy POLICY N\n");
    return 2;
}

static const struct policy_ops *find_policy(const char *name)
{
    const struct policy_ops *p = policy_find(name);
    if (p == NULL)
        fprintf(stderr, "s3cached-memfill: no policy %s (%s)\n", name, policy_names());
    return p;
}

static sc_code open_store(const char *dir, const struct policy_ops *pol, store **st)
{
    struct store_config cfg = {
        .dir = dir,
        .capacity_bytes = 64ull << 30, /* nothing is evicted */
        .verify_checksums = true,
        .policy = pol,
    };
    sc_code rc = store_open(&cfg, st);
    if (rc != SC_OK)
        fprintf(stderr, "s3cached-memfill: cannot open %s: %s\n", dir, sc_strerror(rc));
    return rc;
}

static int cmd_fill(const char *dir, unsigned long n, size_t size)
{
    store *st = NULL;
    unsigned char *body = malloc(size);
    if (body == NULL || open_store(dir, policy_find("lru"), &st) != SC_OK) {
        free(body);
        return 1;
    }
    memset(body, 'x', size);
    for (unsigned long i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "obj/%08lu", i);
        sc_code rc = store_put(st, "mem", key, NULL, 0, body, size, NULL, NULL);
        if (rc != SC_OK) {
            fprintf(stderr, "s3cached-memfill: put %lu: %s\n", i, sc_strerror(rc));
            break;
        }
        if ((i + 1) % BATCH == 0)
            store_flush(st);
    }
    store_flush(st);
    struct store_stats s;
    store_get_stats(st, &s);
    printf("{\"cmd\":\"fill\",\"objects\":%" PRIu64 ",\"used_bytes\":%" PRIu64 "}\n", s.objects,
           s.used_bytes);
    store_close(st);
    free(body);
    return s.objects == n ? 0 : 1;
}

/* Reads every object of the fill once: a hit for the policy. */
static uint64_t read_all(store *st, uint64_t n)
{
    uint64_t hits = 0;
    for (uint64_t i = 0; i < n; i++) {
        char key[32];
        store_obj *o = NULL;
        snprintf(key, sizeof(key), "obj/%08" PRIu64, i);
        if (store_obj_open(st, "mem", key, &o) == SC_OK)
            hits++;
        store_obj_close(o);
    }
    return hits;
}

static int cmd_open(const char *dir, const char *name)
{
    const struct policy_ops *pol = find_policy(name);
    store *st = NULL;
    if (pol == NULL)
        return 2;
    uint64_t anon0 = procmem_status_bytes("RssAnon"), heap0 = procmem_heap_bytes();
    if (open_store(dir, pol, &st) != SC_OK)
        return 1;
    struct store_stats s;
    store_get_stats(st, &s);
    uint64_t anon1 = procmem_status_bytes("RssAnon"), heap1 = procmem_heap_bytes();
    uint64_t hits = read_all(st, s.objects);
    store_flush(st); /* hits recorded but not yet given to the policy are given now */
    uint64_t anon2 = procmem_status_bytes("RssAnon"), heap2 = procmem_heap_bytes();
    double per = s.objects > 0 ? 1.0 / (double)s.objects : 0;
    printf("{\"cmd\":\"open\",\"policy\":\"%s\",\"objects\":%" PRIu64 ",\"hits\":%" PRIu64
           ",\"rss_anon_per_object\":%.1f,\"heap_per_object\":%.1f"
           ",\"rss_anon_per_object_after_hits\":%.1f,\"heap_per_object_after_hits\":%.1f"
           ",\"rss_file_mib\":%.1f}\n",
           name, s.objects, hits, (double)(anon1 - anon0) * per, (double)(heap1 - heap0) * per,
           (double)(anon2 - anon0) * per, (double)(heap2 - heap0) * per,
           (double)procmem_status_bytes("RssFile") / (1 << 20));
    store_close(st);
    return 0;
}

static int cmd_policy(const char *name, unsigned long n)
{
    const struct policy_ops *pol = find_policy(name);
    void *state = NULL;
    int ret = 1;
    if (pol == NULL)
        return 2;
    uint64_t heap0 = procmem_heap_bytes();
    if (pol->init(64ull << 30, &state) != SC_OK)
        return 1;
    for (unsigned long i = 1; i <= n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "obj/%08lu", i - 1);
        struct policy_obj obj = {.id = i, .size = 64, .bucket = "mem", .key = key};
        if (pol->on_insert(state, &obj) != SC_OK) {
            fprintf(stderr, "s3cached-memfill: on_insert %lu failed\n", i);
            goto out;
        }
    }
    uint64_t heap1 = procmem_heap_bytes();
    for (unsigned long i = 1; i <= n; i++)
        pol->on_hit(state, i);
    uint64_t heap2 = procmem_heap_bytes();
    printf("{\"cmd\":\"policy\",\"policy\":\"%s\",\"objects\":%lu,\"heap_per_object\":%.1f"
           ",\"heap_per_object_after_hits\":%.1f}\n",
           name, n, (double)(heap1 - heap0) / (double)n, (double)(heap2 - heap0) / (double)n);
    ret = 0;
out:
    pol->free(state);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "fill") == 0) {
        unsigned long n = strtoul(argv[3], NULL, 10);
        size_t size = argc >= 5 ? strtoul(argv[4], NULL, 10) : 64;
        return n > 0 && size > 0 ? cmd_fill(argv[2], n, size) : usage();
    }
    if (argc == 4 && strcmp(argv[1], "open") == 0)
        return cmd_open(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "policy") == 0) {
        unsigned long n = strtoul(argv[3], NULL, 10);
        return n > 0 ? cmd_policy(argv[2], n) : usage();
    }
    return usage();
}
