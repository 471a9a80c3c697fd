/*
 * gen_order_vectors.c - prints the orders the gateway's own plan code (plan_parse and
 * plan_epoch_order, manifest/plan_order.c) computes for many shapes, as JSON.
 * gen_order_vectors.sh builds it against build/obj and writes order_vectors.json, which
 * test_order.py compares s3cached.order with.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "manifest/plan.h"
#include "proto/api_err.h"

static int first = 1;
static void one(uint32_t n, int shuffle, uint64_t seed, uint32_t ws, uint32_t rank, int drop, uint32_t epochs)
{
    size_t cap = 256 + (size_t)n * 16;
    char *body = malloc(cap);
    size_t len = (size_t)snprintf(body, cap, "{\"bucket\":\"vec\",\"num_epochs\":%u,\"shuffle\":%s,\"seed\":%" PRIu64
                                  ",\"world_size\":%u,\"rank\":%u,\"drop_last\":%s,\"keys\":[",
                                  epochs, shuffle ? "true" : "false", seed, ws, rank, drop ? "true" : "false");
    for (uint32_t i = 0; i < n; i++)
        len += (size_t)snprintf(body + len, cap - len, "%s\"k%u\"", i ? "," : "", i);
    len += (size_t)snprintf(body + len, cap - len, "]}");
    struct plan *p = NULL;
    struct api_err err = {0};
    if (plan_parse(body, len, NULL, &p, &err) != 0) {
        fprintf(stderr, "refused n=%u ws=%u drop=%d: %s\n", n, ws, drop, err.message);
        free(body);
        return;
    }
    printf("%s\n {\"n\": %u, \"shuffle\": %s, \"seed\": %" PRIu64 ", \"world_size\": %u, \"rank\": %u, \"drop_last\": %s, \"orders\": [",
           first ? "" : ",", n, shuffle ? "true" : "false", seed, ws, rank, drop ? "true" : "false");
    first = 0;
    for (uint32_t e = 0; e < epochs; e++) {
        uint32_t *o; uint64_t m;
        plan_epoch_order(p, e, &o, &m);
        printf("%s[", e ? ", " : "");
        for (uint64_t i = 0; i < m; i++) printf("%s%u", i ? ", " : "", o[i]);
        printf("]");
        free(o);
    }
    printf("]}");
    plan_free(p);
    free(body);
}

int main(void)
{
    static const uint32_t ns[] = {1, 2, 3, 10, 17, 100, 257};
    static const uint32_t wss[] = {1, 2, 3, 4, 8};
    static const uint64_t seeds[] = {0, 42, 9223372036854775807ull};
    printf("[");
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof wss / sizeof *wss; b++)
            for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++)
                for (int drop = 0; drop < 2; drop++)
                    for (uint32_t r = 0; r < wss[b]; r++) {
                        if (drop && ns[a] < wss[b]) continue;
                        if (wss[b] == 8 && r % 3) continue;
                        one(ns[a], 1, seeds[s], wss[b], r, drop, 3);
                    }
    one(10, 0, 0, 3, 1, 0, 1);
    one(10, 0, 0, 3, 2, 1, 1);
    one(2, 0, 0, 5, 4, 0, 1);
    one(50, 0, 5, 1, 0, 0, 2);
    printf("\n]\n");
    return 0;
}
