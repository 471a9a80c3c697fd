/* probe.h - GET /healthz, /readyz, /metrics for orchestrators and monitoring (probe.c). */
#ifndef GW_PROBE_H
#define GW_PROBE_H

#include <stdbool.h>

#include "gw.h"

/*
 * @brief True for a probe: GET or HEAD of /healthz, /readyz or /metrics, no query, not
 * addressed to a --vhost-domain bucket (then "/metrics" is that bucket's object). Needs
 * q->method and q->target; server.c asks once, in the first call, and keeps it in q->probe.
 */
bool gw_is_probe(const struct gw_req *q);

/* @brief GW_STEP_PROBE: answers the probe. Next: done. */
struct gw_next gw_probe(struct gw_req *q);

#endif
