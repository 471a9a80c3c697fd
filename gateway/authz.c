/*
 * authz.c - before a cached copy, or a fill another identity started, is handed to
 * an identity that the upstream judges on its own (--identity client keys, and
 * anonymous requests), ask the upstream with a HEAD signed as that identity, and
 * remember the answer (authz_cache.h). See auth.h for the rules.
 *
 * The question is asked the way revalidate.c asks its own: the connection is
 * suspended before the HEAD is submitted, and the HEAD's last callback resumes
 * it; the access handler then runs gw_authz_resume() in phase GW_PHASE_AUTHZ.
 */
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "gw.h"

static int64_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* The identity as the answers are filed: the access key, or "" for anonymous. */
static const char *who(const struct gw_req *q)
{
    return q->anonymous ? "" : q->client->creds.access_key;
}

bool gw_authz_needed(const struct gw_req *q)
{
    return q->g->authz != NULL &&
           (q->anonymous || (q->client != NULL && q->g->cfg->identity_client));
}

void gw_authz_record(struct gw_req *q, bool allowed)
{
    if (!gw_authz_needed(q))
        return;
    authz_cache_put(q->g->authz, who(q), q->tgt.bucket, q->tgt.key, allowed, now_s());
    if (allowed)
        q->authorized = true;
}

static enum MHD_Result deny(struct gw_req *q)
{
    gw_stat_add(q->g->stats.authz_denied, 1);
    sc_debug("%s %s/%s: the upstream refuses %s, so the cached copy is not served", q->method,
             q->tgt.bucket, q->tgt.key, q->anonymous ? "anonymous" : q->client->creds.access_key);
    return gw_respond_error(q, 403, "AccessDenied", "Access Denied");
}

/* ---- the upstream side (upstream thread) ---------------------------------------- */

static void on_head(void *arg, const struct up_head *head)
{
    struct gw_req *q = arg;
    q->authz.status = head->status;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    return true; /* a HEAD has none; an error body is dropped */
}

static void on_done(void *arg, sc_code result)
{
    struct gw_req *q = arg;
    q->authz.result = result;
    MHD_resume_connection(q->conn); /* the access handler runs gw_authz_resume() */
}

static const struct up_handler authz_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_done,
};

/* ---- the request side ------------------------------------------------------------ */

static enum MHD_Result ask(struct gw_req *q)
{
    struct up_request req = {
        .method = "HEAD",
        .bucket = q->tgt.bucket,
        .key = q->tgt.key,
        .body_length = -1,
        .idempotent = true,
    };
    gw_sign_as(q, &req.as);
    q->authz = (struct gw_authz){0};
    q->phase = GW_PHASE_AUTHZ;
    gw_stat_add(q->g->stats.authz_checks, 1);
    /* Suspended before the request exists, so that its answer can never resume too early. */
    MHD_suspend_connection(q->conn);
    sc_code rc = up_submit(q->g->up, &req, &authz_handler, q, &q->authz.req);
    if (rc != SC_OK) {
        q->authz.result = rc;
        MHD_resume_connection(q->conn);
    }
    return MHD_YES;
}

bool gw_authz_admit(struct gw_req *q, enum MHD_Result *ret)
{
    if (!gw_authz_needed(q) || q->authorized)
        return true;
    switch (authz_cache_get(q->g->authz, who(q), q->tgt.bucket, q->tgt.key, now_s())) {
    case AUTHZ_ALLOWED:
        q->authorized = true;
        return true;
    case AUTHZ_DENIED:
        *ret = deny(q);
        return false;
    case AUTHZ_UNKNOWN:
        break;
    }
    *ret = ask(q);
    return false;
}

enum MHD_Result gw_authz_resume(struct gw_req *q)
{
    long status = q->authz.status;
    sc_code rc = q->authz.result;
    gw_authz_cleanup(&q->authz);
    q->phase = GW_PHASE_ROUTE;
    if (rc == SC_OK && status >= 200 && status < 300) {
        gw_authz_record(q, true);
        return gw_serve_object(q);
    }
    if (rc == SC_OK && (status == 401 || status == 403)) {
        gw_authz_record(q, false);
        return deny(q);
    }
    /* No clear answer (404, a redirect, 5xx, unreachable): the request itself goes upstream,
     * as this identity, and bypasses the cache; the upstream's answer is the client's. */
    sc_debug("%s %s/%s: authorization check answered %ld (%s): forwarding the request", q->method,
             q->tgt.bucket, q->tgt.key, status, sc_strerror(rc));
    q->x_cache = NULL;
    size_t zero = 0;
    return gw_proxy(q, NULL, &zero);
}

void gw_authz_cleanup(struct gw_authz *a)
{
    if (a->req == NULL)
        return;
    up_req_cancel(a->req);
    up_req_release(a->req);
    a->req = NULL;
}
