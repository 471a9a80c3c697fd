/*
 * authz.c - before a cached copy, or a fill another identity started, is handed to
 * an identity that the upstream judges on its own (--identity client keys, and
 * anonymous requests), ask the upstream with a HEAD signed as that identity, and
 * remember the answer (authz_cache.h). See auth.h for the rules.
 *
 * The question is a HEAD asked while the connection waits (ask.h); the dispatcher
 * then runs step GW_STEP_AUTHZ_ANSWER (gw_authz_answer).
 */
#include "authz.h"

#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "respond.h"
#include "config.h"
#include "../sigv4/client_keys.h"
#include "authz_cache.h"

/* The identity as the answers are filed: the access key, or "" for anonymous. */
static const char *who(const struct gw_req *q)
{
    return q->anonymous ? "" : ckey_access_key(q->client);
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
    authz_cache_put(q->g->authz, who(q), q->tgt.bucket, q->tgt.key, allowed,
                    (int64_t)sc_now_seconds());
    if (allowed)
        q->authorized = true;
}

static enum MHD_Result deny(struct gw_req *q)
{
    sc_stat_add(q->g->stats.authz_denied, 1);
    sc_debug("%s %s/%s: the upstream refuses %s, so the cached copy is not served", q->method,
             q->tgt.bucket, q->tgt.key, q->anonymous ? "anonymous" : ckey_access_key(q->client));
    return gw_respond_known_error(q, S3_XML_ACCESS_DENIED, NULL);
}

/* ---- the request side ------------------------------------------------------------ */

static struct gw_next ask(struct gw_req *q)
{
    sc_stat_add(q->g->stats.authz_checks, 1);
    gw_ask_head(q, &q->ask, NULL, false);
    return GW_WAIT(GW_STEP_AUTHZ_ANSWER);
}

bool gw_authz_admit(struct gw_req *q, struct gw_next *next)
{
    if (!gw_authz_needed(q) || q->authorized)
        return true;
    switch (authz_cache_get(q->g->authz, who(q), q->tgt.bucket, q->tgt.key,
                            (int64_t)sc_now_seconds())) {
    case AUTHZ_ALLOWED:
        q->authorized = true;
        return true;
    case AUTHZ_DENIED:
        *next = GW_SENT(deny(q));
        return false;
    case AUTHZ_UNKNOWN:
        break;
    }
    *next = ask(q);
    return false;
}

struct gw_next gw_authz_answer(struct gw_req *q)
{
    long status = q->ask.status;
    sc_code rc = q->ask.result;
    gw_ask_release(&q->ask);
    /* Only a 200 admits: a 204 or 206 to a HEAD Object is an upstream that lies. */
    if (rc == SC_OK && status == 200) {
        gw_authz_record(q, true);
        return GW_NEXT(GW_STEP_LOOKUP);
    }
    if (rc == SC_OK && (status == 401 || status == 403)) {
        gw_authz_record(q, false);
        return GW_SENT(deny(q));
    }
    /* No clear answer (404, a redirect, another 2xx, 5xx, unreachable): the request itself goes
     * upstream, as this identity, and bypasses the cache; the upstream's answer is the client's. */
    sc_debug("%s %s/%s: authorization check answered %ld (%s): forwarding the request", q->method,
             q->tgt.bucket, q->tgt.key, status, sc_strerror(rc));
    q->x_cache = NULL;
    return GW_NEXT(GW_STEP_PROXY);
}
