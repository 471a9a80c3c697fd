/*
 * probe.c - what orchestrators and monitoring ask: GET /healthz, GET /readyz, GET /metrics.
 *
 * Kubernetes probes and Prometheus scrapes come from elsewhere on the network and
 * carry no token, so these answer anyone: "ok" or why not ready, and counters.
 * /healthz: the process serves requests. /readyz: the store is open and the
 * upstream's latest outcome was an answer (see up_reachable()).
 */
#include "probe.h"

#include <string.h>

#include "respond.h"
#include "config.h"

static enum MHD_Result respond_plain(struct gw_req *q, int status, const char *text)
{
    struct MHD_Response *resp = gw_respond_buffer("text/plain; charset=utf-8", (void *)text,
                                                  strlen(text), MHD_RESPMEM_PERSISTENT);
    return resp ? gw_respond_queue(q, status, resp) : MHD_NO;
}

/*
 * True when Host names a bucket under --vhost-domain: "/metrics" is then that bucket's
 * object "metrics", which a probe's answer must not replace.
 */
static bool host_names_a_bucket(const struct gw_req *q)
{
    const char *domain = q->g->cfg->vhost_domain;
    if (domain == NULL || domain[0] == '\0')
        return false;
    const char *host = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Host");
    struct s3_target t;
    if (s3_target_parse(q->method, q->target, host, domain, &t, NULL) != SC_OK)
        return false;
    bool vhost = t.virtual_host;
    s3_target_free(&t);
    return vhost;
}

bool gw_is_probe(const struct gw_req *q)
{
    if (q->method == NULL) /* refused before the access handler ran (oversized headers) */
        return false;
    if (strcmp(q->method, "GET") != 0 && strcmp(q->method, "HEAD") != 0)
        return false;
    bool probe_path = q->target != NULL &&
                      (strcmp(q->target, "/healthz") == 0 || strcmp(q->target, "/readyz") == 0 ||
                       strcmp(q->target, "/metrics") == 0);
    return probe_path && !host_names_a_bucket(q);
}

static enum MHD_Result respond_metrics(struct gw_req *q)
{
    size_t len = 0;
    char *text = gw_metrics_text(q->g, &len);
    if (text == NULL)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    struct MHD_Response *resp = gw_respond_buffer("text/plain; version=0.0.4; charset=utf-8", text,
                                                  len, MHD_RESPMEM_MUST_FREE);
    return resp ? gw_respond_queue(q, 200, resp) : MHD_NO;
}

static enum MHD_Result answer(struct gw_req *q)
{
    if (strcmp(q->target, "/metrics") == 0)
        return respond_metrics(q);
    if (strcmp(q->target, "/healthz") == 0)
        return respond_plain(q, 200, "ok\n");
    if (atomic_load(&q->g->draining))
        return respond_plain(q, 503, "not ready: shutting down\n");
    if (q->g->st == NULL)
        return respond_plain(q, 503, "not ready: the store is not open\n");
    if (q->g->up == NULL || !up_reachable(q->g->up))
        return respond_plain(q, 503, "not ready: the upstream did not answer the last request\n");
    return respond_plain(q, 200, "ok\n");
}

struct gw_next gw_probe(struct gw_req *q)
{
    return GW_SENT(answer(q));
}
