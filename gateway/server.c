/*
 * server.c - the HTTP front end (see server.h) and the dispatcher: the one place that
 * advances a request.
 *
 * libmicrohttpd calls gw_access() once when the headers are in, once per slice of body,
 * once more at the end, and again whenever a suspended connection is resumed. Each call
 * runs the steps of the table below from q->step (step.h), one function per step, until one
 * says to wait or that the request is answered. A step returns what comes next (struct
 * gw_next) and never calls another step; only run_steps() moves q->step and tells
 * libmicrohttpd MHD_YES or MHD_NO. The path of a request:
 *
 *   HEAD (framing check) ─┬─ no body ─ wait ─▶ GATE
 *                         └─ a body ─▶ PARSE ─▶ AUTHENTICATE ─▶ BODY ─ wait ─▶ GATE
 *   GATE (body bytes drained or collected; route.c) ─┬▶ PROBE                  probe.c
 *                                                    ├▶ UNAVAILABLE (draining)
 *                                                    ├▶ PARSE ─▶ AUTHENTICATE ─▶ ROUTE
 *                                                    └▶ ROUTE
 *   ROUTE (by kind; route.c) ─┬▶ ADMIN                                         admin/admin.c
 *                             ├▶ LOOKUP ─┬▶ hit                                serve.c
 *                             │          ├▶ BLOCKS (a large object)            blocks.c
 *                             │          ├▶ AUTHZ_ANSWER ─▶ LOOKUP | PROXY     authz.c
 *                             │          ├▶ REVAL_ANSWER ─▶ LOOKUP | MISS      revalidate.c
 *                             │          └▶ MISS ─┬▶ FILL_HEAD ─▶ answer | PROXY | BLOCKS
 *                             │                   ├▶ BLOCK_META (a range) ─▶ BLOCKS | MISS
 *                             │                   └▶ PROXY (a HEAD)
 *                             │   BLOCKS ─▶ answer | MISS (the object changed: once)
 *                             └▶ PROXY ─▶ [UPLOAD] ─▶ PASS_HEAD ─▶ answer      proxy.c
 *
 * PARSE turns the raw target into bucket, key and kind (s3_target.c); AUTHENTICATE
 * verifies the signature with --client-credentials (auth.c) and fixes, once, the identity
 * upstream requests are signed as (q->as); a request another gateway of the fleet sent is
 * verified by its fleet signature instead (a peer request, fleet.h). The peer listener
 * (--fleet-listen) runs the same steps, but answers no probe and refuses at HEAD whatever
 * carries no fleet signature. Every answer is built by respond.c; a body read
 * from a relay (a fill's, or a pass-through's) goes out through deliver.c; the request is
 * then RESPONDED, for good.
 *
 * libmicrohttpd's rules shape the steps: a response queued in the first call closes the
 * connection afterwards (so normal answers wait for the second call: HEAD waits), no
 * response can be queued while body bytes are still arriving (so a body that is not
 * forwarded is drained first, and a request refused outright is refused in the first
 * call), and an admin API body is collected whole before the admin step runs.
 * Waiting for the upstream never blocks a worker: the connection is suspended and
 * resumed by the upstream thread (see relay.h, ask.h), and the call after the resume
 * runs the step the waiting one named. Each step's state is a sub-struct of gw_req that
 * its file owns and cleans up (req.h): on_request_done() knows none of them.
 */
#include "server.h"

#include <assert.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../proto/s3_xml.h"
#include "addr.h"
#include "admin/admin.h"
#include "auth.h"
#include "blocks.h"
#include "authz.h"
#include "framing.h"
#include "probe.h"
#include "proxy.h"
#include "req.h"
#include "respond.h"
#include "revalidate.h"
#include "route.h"
#include "serve.h"
#include "config.h"
#include "conn_guard.h"
#include "zerocopy.h"

#define MAX_TARGET_LEN (8 * 1024)
/* Bounds the request line and headers; libmicrohttpd zeroes it for every request. */
#define CONN_MEMORY_LIMIT (32 * 1024)

static atomic_uint_fast64_t request_counter;

static struct gw_next respond_known_error(struct gw_req *q, enum s3_xml_error e)
{
    return GW_SENT(gw_respond_known_error(q, e, NULL));
}

/* ---- the steps of server.c -------------------------------------------------- */

/* The connection's entry in the slow-client guard (conn_guard.h), or NULL. HTTP threads only. */
static struct guard_conn *guard_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result note_upstream_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                            const char *value)
{
    bool *needs_upstream = cls;
    *needs_upstream = s3_target_header_needs_upstream(name, value);
    return *needs_upstream ? MHD_NO : MHD_YES;
}

/* An object read with a header a cached copy cannot honour (SSE-C, request payer...) is
 * forwarded, uncached. */
static void pass_if_headers_need_upstream(struct gw_req *q)
{
    bool needs_upstream = false;
    if (q->tgt.kind != S3_REQ_GET_OBJECT && q->tgt.kind != S3_REQ_HEAD_OBJECT)
        return;
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, note_upstream_header, &needs_upstream);
    if (needs_upstream)
        q->tgt.kind = S3_REQ_PASS;
}

/* GW_STEP_PARSE: the raw target into bucket, key and kind. */
static struct gw_next step_parse(struct gw_req *q)
{
    static const enum s3_xml_error fault_errors[] = {
        [S3_TARGET_FAULT_NONE] = S3_XML_INVALID_URI,
        [S3_TARGET_FAULT_URI] = S3_XML_INVALID_URI,
        [S3_TARGET_FAULT_BUCKET] = S3_XML_INVALID_BUCKET_NAME,
        [S3_TARGET_FAULT_KEY_TOO_LONG] = S3_XML_KEY_TOO_LONG,
        [S3_TARGET_FAULT_TOO_LONG] = S3_XML_INVALID_URI,
    };
    const char *host = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Host");
    enum s3_target_fault fault = S3_TARGET_FAULT_NONE;
    if (q->target == NULL)
        return respond_known_error(q, S3_XML_INVALID_URI);
    /* A peer request is path-style (fleet.h) whatever its Host: the fleet signature covers
     * the path, not the Host, and a peer's name may lie under --vhost-domain. */
    const char *vhost_domain =
        q->peer.listener || gw_auth_is_peer_request(q) ? NULL : q->g->cfg->vhost_domain;
    sc_code rc = s3_target_parse(q->method, q->target, host, vhost_domain, &q->tgt, &fault);
    if (rc == SC_ENOMEM)
        return GW_CLOSE;
    if (rc != SC_OK)
        return respond_known_error(q, fault_errors[fault]);
    q->have_target = true;
    /* Anything else would go upstream signed with the gateway's credentials; the admin API
     * answers its own methods, in its own JSON. */
    if (q->tgt.method == S3_METHOD_OTHER && q->tgt.kind != S3_REQ_ADMIN)
        return respond_known_error(q, S3_XML_METHOD_NOT_ALLOWED);
    pass_if_headers_need_upstream(q);
    return GW_NEXT(GW_STEP_AUTHENTICATE);
}

/* GW_STEP_AUTHENTICATE: who sent it (without --client-credentials, only the refusal of other
 * web sites). Run once: in the first call for a request with a body, so that a refusal does
 * not wait for the body, else in the second. */
static struct gw_next step_authenticate(struct gw_req *q)
{
    enum MHD_Result ret = gw_authenticate(q);
    if (ret != MHD_YES)
        return GW_CLOSE;
    if (q->status != 0)
        return GW_DONE; /* refused */
    return GW_NEXT(q->has_body ? GW_STEP_BODY : GW_STEP_ROUTE);
}

/* GW_STEP_HEAD, the first call: the request is counted, its kind of probe decided, its
 * framing checked (refused before any body byte is read, and the connection closed). */
static struct gw_next step_head(struct gw_req *q)
{
    atomic_fetch_add(&q->g->active_requests, 1); /* its headers are in: it is in flight */
    q->in_flight = true;
    sc_stat_add(q->g->stats.requests, 1);
    q->probe = !q->peer.listener && gw_is_probe(q); /* the peer listener answers no probe */
    char why[96];
    const char *fault = gw_framing_fault(q, why, sizeof(why));
    if (fault != NULL)
        return GW_SENT(gw_respond_known_error(q, S3_XML_INVALID_REQUEST, fault));
    /* The peer listener refuses what is not even signed before anything else is looked at. */
    if (q->peer.listener && !gw_auth_is_peer_request(q))
        return GW_SENT(gw_auth_refuse_peer(q, "this listener takes signed peer requests only"));
    q->has_body = gw_framing_has_body(q);
    /* With a body: refuse a bad target or signature now, not after reading the body. */
    return q->has_body ? GW_NEXT(GW_STEP_PARSE) : GW_WAIT(GW_STEP_GATE);
}

/* GW_STEP_BODY, still the first call: the body's fate; S3 needs a forwarded one's length. */
static struct gw_next step_body(struct gw_req *q)
{
    enum gw_body_fate fate = gw_route_body(q->tgt.kind, q->method);
    if (fate == GW_BODY_FORWARD && !gw_proxy_length_known(q))
        return respond_known_error(q, S3_XML_MISSING_CONTENT_LENGTH);
    q->drain_body = fate == GW_BODY_DRAIN;
    return GW_WAIT(GW_STEP_GATE);
}

/* GW_STEP_GATE, each later call: a body on GET or HEAD is read and dropped, an admin
 * body collected; once it is all in (or to be forwarded), where the request goes. */
static struct gw_next step_gate(struct gw_req *q)
{
    size_t *size = q->in_size;
    if (q->drain_body && *size > 0) {
        *size = 0;
        return GW_WAIT(GW_STEP_GATE);
    }
    if (*size > 0 && q->have_target && q->tgt.kind == S3_REQ_ADMIN) {
        gw_admin_collect(q, q->in_data, *size);
        *size = 0;
        return GW_WAIT(GW_STEP_GATE);
    }
    return GW_NEXT(gw_route_gate(q->probe, atomic_load(&q->g->draining), q->have_target));
}

/* GW_STEP_ROUTE: admin API, object read through the cache, or pass-through. */
static struct gw_next step_route(struct gw_req *q)
{
    return GW_NEXT(gw_route_kind(q->tgt.kind));
}

static struct gw_next step_unavailable(struct gw_req *q)
{
    return GW_SENT(gw_respond_known_error(q, S3_XML_SERVICE_UNAVAILABLE, NULL));
}

static struct gw_next step_unroutable(struct gw_req *q)
{
    return respond_known_error(q, S3_XML_INTERNAL_ERROR);
}

static struct gw_next step_admin(struct gw_req *q)
{
    return GW_SENT(gw_admin(q));
}

/* GW_STEP_RESPONDED: whatever still arrives is dropped. */
static struct gw_next step_responded(struct gw_req *q)
{
    *q->in_size = 0;
    return GW_WAIT(GW_STEP_RESPONDED);
}

/* ---- the dispatcher ---------------------------------------------------------- */

struct step_def {
    struct gw_next (*run)(struct gw_req *q);
    bool resumes;     /* a call may start here (GW_WAIT may name it) */
    bool drops_input; /* a call that starts here drops its body bytes (none are expected) */
};

static const struct step_def steps[GW_STEP_COUNT] = {
    [GW_STEP_HEAD] = {step_head, false, false},
    [GW_STEP_PARSE] = {step_parse, false, false},
    [GW_STEP_AUTHENTICATE] = {step_authenticate, false, false},
    [GW_STEP_BODY] = {step_body, false, false},
    [GW_STEP_GATE] = {step_gate, true, false},
    [GW_STEP_ROUTE] = {step_route, false, false},
    [GW_STEP_UNAVAILABLE] = {step_unavailable, false, false},
    [GW_STEP_UNROUTABLE] = {step_unroutable, false, false},
    [GW_STEP_PROBE] = {gw_probe, false, false},
    [GW_STEP_ADMIN] = {step_admin, false, false},
    [GW_STEP_LOOKUP] = {gw_serve_lookup, false, false},
    [GW_STEP_AUTHZ_ANSWER] = {gw_authz_answer, true, true},
    [GW_STEP_REVAL_ANSWER] = {gw_reval_answer, true, true},
    [GW_STEP_MISS] = {gw_serve_miss, false, false},
    [GW_STEP_FILL_HEAD] = {gw_serve_fill_head, true, true},
    [GW_STEP_BLOCK_META] = {gw_blocks_meta_answer, true, true},
    [GW_STEP_BLOCKS] = {gw_blocks_serve, true, true},
    [GW_STEP_PROXY] = {gw_proxy_start, false, false},
    [GW_STEP_UPLOAD] = {gw_proxy_upload, true, false},
    [GW_STEP_PASS_HEAD] = {gw_proxy_pass_head, true, true},
    [GW_STEP_RESPONDED] = {step_responded, true, true},
};

static bool valid_step(enum gw_step s)
{
    return (unsigned)s < GW_STEP_COUNT && steps[s].run != NULL;
}

/* Runs q's steps until one waits or ends the request: the only writer of q->step. */
static enum MHD_Result run_steps(struct gw_req *q)
{
    for (;;) {
        enum gw_step at = q->step;
        assert(valid_step(at));
        struct gw_next next = steps[at].run(q);
        assert(valid_step(next.step));
        /* RESPONDED is terminal. */
        assert(at != GW_STEP_RESPONDED ||
               (next.verdict == GW_VERDICT_WAIT && next.step == GW_STEP_RESPONDED));
        switch (next.verdict) {
        case GW_VERDICT_GO:
            assert(q->status == 0); /* a step that answered says so */
            q->step = next.step;
            continue;
        case GW_VERDICT_WAIT:
            assert(steps[next.step].resumes); /* a call (body bytes, a resume) comes back */
            assert(q->status == 0 || next.step == GW_STEP_RESPONDED);
            q->step = next.step;
            return MHD_YES;
        case GW_VERDICT_DONE:
            assert(q->status != 0); /* a response is queued */
            q->step = GW_STEP_RESPONDED;
            return MHD_YES;
        case GW_VERDICT_CLOSE:
            q->step = GW_STEP_RESPONDED;
            return MHD_NO;
        }
        assert(!"a step result names no verdict");
        return MHD_NO;
    }
}

/* Tells the slow-client guard that the request's head is in, or (a call without data) its body. */
static void guard_request(struct gw_req *q, size_t upload_size)
{
    if (q->step == GW_STEP_HEAD)
        conn_guard_head_in(q->g->guard, q->guard, gw_framing_has_body(q));
    else if (upload_size == 0)
        conn_guard_body_in(q->g->guard, q->guard);
}

/*
 * libmicrohttpd calls this once when the headers are in, once per slice of body, and once
 * more at the end (see the head of this file for how its rules shape the steps).
 */
static enum MHD_Result gw_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_size, void **con_cls)
{
    struct gw_req *q = *con_cls;
    if (q == NULL)
        return MHD_NO;
    guard_request(q, *upload_size);
    if (q->step == GW_STEP_HEAD) {
        q->conn = conn;
        q->method = method;
    }
    if (steps[q->step].drops_input)
        *upload_size = 0;
    q->in_data = upload_data;
    q->in_size = upload_size;
    enum MHD_Result ret = run_steps(q);
    q->in_data = NULL;
    q->in_size = NULL;
    return ret;
}

/* Called by libmicrohttpd with the raw request target, before anything else. */
static void *on_request_start(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct gw *g = cls;
    struct gw_req *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->g = g;
    q->conn = conn;
    q->guard = guard_of(conn);
    q->target = strndup(uri, MAX_TARGET_LEN + 1);
    clock_gettime(CLOCK_MONOTONIC, &q->arrived);
    uint64_t n = atomic_fetch_add(&request_counter, 1);
    snprintf(q->request_id, sizeof(q->request_id), "%08X%08X", (unsigned)(uintptr_t)g ^ 0x5ca1ab1e,
             (unsigned)n);
    gw_req_waiter_init(q);
    return q;
}

/* on_request_start() for the peer listener (--fleet-listen). */
static void *on_peer_request_start(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct gw_req *q = on_request_start(cls, uri, conn);
    if (q != NULL)
        q->peer.listener = true;
    return q;
}

/* Adds a finished request, seconds after it arrived, to the metrics. */
static void count_request(struct gw_req *q, double seconds)
{
    enum gw_op op =
        q->probe ? GW_OP_PROBE : gw_metrics_op_of(q->method, q->have_target ? &q->tgt : NULL);
    gw_metrics_request(&q->g->metrics, op, q->status, seconds);
}

static void log_access(struct gw_req *q, double seconds)
{
    char client[INET6_ADDRSTRLEN] = "";
    gw_addr_string(gw_client_addr(q), client, sizeof(client));
    struct sc_access a = {
        .request_id = q->request_id,
        .client = client,
        .method = q->method,
        .bucket = q->have_target ? q->tgt.bucket : NULL,
        .key = q->have_target ? q->tgt.key : NULL,
        .status = q->status,
        .bytes = q->bytes_out,
        .cache = q->x_cache,
        .identity = gw_auth_identity_name(q),
        .seconds = seconds,
    };
    sc_log_access(&a);
}

static void on_request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    struct gw *g = cls;
    conn_guard_request_done(g->guard, guard_of(conn)); /* keep-alive: the next head is timed */
    struct gw_req *q = *con_cls;
    if (q == NULL)
        return;
    double seconds = sc_seconds_since(&q->arrived);
    count_request(q, seconds);
    if (q->g->cfg->access_log)
        log_access(q, seconds);
    gw_req_cleanup_run(q); /* each step's own state (req.h) */
    if (q->have_target)
        s3_target_free(&q->tgt);
    if (q->in_flight)
        atomic_fetch_sub(&q->g->active_requests, 1);
    free(q->target);
    free(q);
    *con_cls = NULL;
}

/* ---- daemon ----------------------------------------------------------------- */

static sc_code resolve_listen(const char *host, unsigned port_number, struct sockaddr_storage *ss,
                              bool *ipv6)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", port_number);
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
        return SC_EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *ipv6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return SC_OK;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct gw *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? conn_guard_open(g->guard, ci->connect_fd) : NULL;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_guard_close(g->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    sc_debug("http: %s", line);
}

/* What libmicrohttpd calls with a request's raw target: makes its gw_req. */
typedef void *(*request_start_fn)(void *cls, const char *uri, struct MHD_Connection *conn);

/* A daemon on ss running the steps for every request; start makes each request's gw_req. */
static struct MHD_Daemon *start_daemon(struct gw *g, const struct sockaddr_storage *ss, bool ipv6,
                                       request_start_fn start)
{
    const struct gw_config *cfg = g->cfg;
    /* An IPv6 listener takes IPv4 too ([::] is every address of both families). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_DUAL_STACK : 0);
    return MHD_start_daemon(
        flags, 0, NULL, NULL, gw_access, g, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, g,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss, MHD_OPTION_THREAD_POOL_SIZE, cfg->threads,
        MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        cfg->conn_timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
        MHD_OPTION_URI_LOG_CALLBACK, start, g, MHD_OPTION_NOTIFY_COMPLETED, on_request_done, g,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, g, MHD_OPTION_END);
}

/* --fleet-listen: the listener that takes signed peer requests only. */
static sc_code start_peer_listener(struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    struct sockaddr_storage ss;
    bool ipv6 = false;
    if (cfg->fleet_listen_host == NULL)
        return SC_OK;
    if (g->fleet == NULL) {
        sc_err("--fleet-listen without a fleet");
        return SC_EINVAL;
    }
    if (resolve_listen(cfg->fleet_listen_host, cfg->fleet_listen_port, &ss, &ipv6) != SC_OK) {
        sc_err("cannot resolve --fleet-listen address %s", cfg->fleet_listen_host);
        return SC_EINVAL;
    }
    g->fleet_daemon = start_daemon(g, &ss, ipv6, on_peer_request_start);
    if (g->fleet_daemon == NULL) {
        sc_err("cannot listen for peers on %s:%u", cfg->fleet_listen_host, cfg->fleet_listen_port);
        return SC_EIO;
    }
    sc_info("listening for peer requests on %s:%u", cfg->fleet_listen_host, cfg->fleet_listen_port);
    return SC_OK;
}

sc_code server_start(struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    struct sockaddr_storage ss;
    bool ipv6 = false;
    if (resolve_listen(cfg->listen_host, cfg->listen_port, &ss, &ipv6) != SC_OK) {
        sc_err("cannot resolve listen address %s", cfg->listen_host);
        return SC_EINVAL;
    }
    g->listen_loopback = gw_addr_is_loopback((struct sockaddr *)&ss);
    if (gw_auth_check_listener(g) != SC_OK)
        return SC_EINVAL;
    if (!g->listen_loopback && cfg->admin_token == NULL)
        sc_warn("listening on %s without an admin token: the admin API answers loopback clients "
                "only (see --admin-token)",
                cfg->listen_host);
    if (conn_guard_start(cfg->header_timeout, cfg->min_body_rate, cfg->conn_timeout, &g->guard) !=
        SC_OK) {
        sc_err("cannot start the slow-client watchdog");
        return SC_EIO;
    }
    if (gw_zc_start(g) != SC_OK) {
        sc_err("cannot start the zero-copy drain");
        server_stop(g);
        return SC_EIO;
    }
    g->daemon = start_daemon(g, &ss, ipv6, on_request_start);
    if (g->daemon == NULL)
        sc_err("cannot listen on %s:%u", cfg->listen_host, cfg->listen_port);
    if (g->daemon == NULL || start_peer_listener(g) != SC_OK) {
        server_stop(g);
        return SC_EIO;
    }
    return SC_OK;
}

void server_stop(struct gw *g)
{
    if (g->fleet_daemon) {
        MHD_stop_daemon(g->fleet_daemon);
        g->fleet_daemon = NULL;
    }
    if (g->daemon) {
        MHD_stop_daemon(g->daemon);
        g->daemon = NULL;
    }
    conn_guard_stop(g->guard); /* after the daemon: its CLOSED notifications use the guard */
    g->guard = NULL;
    gw_zc_stop(g); /* after the daemons: their requests' cleanups hand views to the drain */
}
