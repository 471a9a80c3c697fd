/*
 * probe.c - liveness and readiness for orchestrators: GET /healthz and GET /readyz.
 *
 * Kubernetes probes come from the node, not from loopback, and carry no token,
 * so these two answer anyone; they say nothing but "ok" and why not ready.
 * /healthz: the process serves requests. /readyz: the store is open and the
 * upstream's latest outcome was an answer (see up_reachable()).
 */
#include <string.h>

#include "gw.h"

static enum MHD_Result respond_plain(struct gw_req *q, int status, const char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    return gw_queue(q, status, resp);
}

bool gw_is_probe(const struct gw_req *q)
{
    if (strcmp(q->method, "GET") != 0 && strcmp(q->method, "HEAD") != 0)
        return false;
    return q->target != NULL &&
           (strcmp(q->target, "/healthz") == 0 || strcmp(q->target, "/readyz") == 0);
}

enum MHD_Result gw_probe(struct gw_req *q)
{
    if (strcmp(q->target, "/healthz") == 0)
        return respond_plain(q, 200, "ok\n");
    if (q->g->st == NULL)
        return respond_plain(q, 503, "not ready: the store is not open\n");
    if (q->g->up == NULL || !up_reachable(q->g->up))
        return respond_plain(q, 503, "not ready: the upstream did not answer the last request\n");
    return respond_plain(q, 200, "ok\n");
}
