/*
 * metrics.h - per-request counters and latencies, and GET /metrics: everything the
 * gateway counts, in the Prometheus text format (version 0.0.4).
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/histogram.h"
#include "../proto/s3_target.h"

/* What a request was, as the metrics label it. */
enum gw_op {
    GW_OP_GET_OBJECT,
    GW_OP_HEAD_OBJECT,
    GW_OP_PUT,    /* PutObject, UploadPart, CopyObject, ... */
    GW_OP_POST,   /* multipart create/complete, DeleteObjects, ... */
    GW_OP_DELETE, /* DeleteObject, AbortMultipartUpload, ... */
    GW_OP_LIST,   /* other GET and HEAD: listings, bucket and service requests */
    GW_OP_ADMIN,  /* /_s3cached/ */
    GW_OP_PROBE,  /* /healthz, /readyz, /metrics */
    GW_OP_OTHER,  /* unparsable target or unknown method */
    GW_OP_N
};

#define GW_STATUS_MAX 600

struct gw_metrics {
    atomic_uint_fast64_t requests[GW_OP_N][GW_STATUS_MAX]; /* by operation and status */
    struct sc_hist duration[GW_OP_N];                      /* first byte in to last byte out */
    atomic_uint_fast64_t peer_requests_in;                 /* peer requests admitted (auth.h) */
    atomic_uint_fast64_t peer_refused;                     /* requests refused as peer requests */
    atomic_uint_fast64_t peer_passed; /* peer requests for names not ours: to the bucket */
};

/* @brief The operation label of a request; target may be NULL (not parsed). */
enum gw_op gw_metrics_op_of(const char *method, const struct s3_target *target);

/* @brief Counts one finished request. Any thread. */
void gw_metrics_request(struct gw_metrics *m, enum gw_op op, unsigned status, double seconds);

struct gw;

/*
 * @brief Renders every metric of g.
 * @param[out] len the text's length.
 * @return a malloc'd text owned by the caller, or NULL when out of memory.
 */
char *gw_metrics_text(struct gw *g, size_t *len);

#endif
