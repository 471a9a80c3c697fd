/*
 * route.h - where a request goes, decided from values only (route.c): the pure part of
 * the dispatcher (server.c), tested in tests/unit/test_route.c.
 */
#ifndef GW_ROUTE_H
#define GW_ROUTE_H

#include <stdbool.h>

#include "../proto/s3_target.h"
#include "step.h"

/*
 * @brief After the body bytes of a call are taken (GW_STEP_GATE): a probe is answered
 * whatever else holds, then a gateway shutting down refuses, then a request not yet
 * parsed is parsed (and authenticated), and a parsed one is routed by its kind.
 */
enum gw_step gw_route_gate(bool probe, bool draining, bool have_target);

/* @brief GW_STEP_ROUTE: the step that takes a request of kind: the admin API, an object
 * read through the cache, or pass-through; GW_STEP_UNROUTABLE for anything else. */
enum gw_step gw_route_kind(enum s3_req_kind kind);

/* What becomes of a request body. */
enum gw_body_fate {
    GW_BODY_FORWARD, /* streamed upstream (a pass-through write) */
    GW_BODY_COLLECT, /* kept whole for the admin API */
    GW_BODY_DRAIN,   /* read and dropped (a body on GET or HEAD) */
};

/* @brief What becomes of the body of a request of kind, sent with method. */
enum gw_body_fate gw_route_body(enum s3_req_kind kind, const char *method);

#endif
