/*
 * auth.c - the "authenticate" step of the request path: who sent an S3 request
 * (see auth.h for the rules, s3_auth.h for the signature checks).
 *
 * The request's headers are collected, s3_auth_verify() says which key signed
 * it (or that nobody did), and the key's bucket list is applied. Signature
 * parameters in the query (a presigned URL's, SigV4 or SigV2) are then dropped
 * from the parsed target of every request, which is parsed again without them:
 * the upstream request is signed anew, and a plain presigned GET becomes a
 * cacheable read. OPTIONS (a CORS preflight) is not verified and goes upstream
 * unsigned, as S3 answers preflights. Without client keys, browsers' requests from other
 * sites are refused (web_origin.c). Every refusal is one call to refuse().
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/uri.h"
#include "../fleet/fleet.h"
#include "../upstream/peer_invalidate.h"
#include "auth.h"
#include "gw.h"
#include "req.h"
#include "respond.h"
#include "../sigv4/s3_auth.h"
#include "web_origin.h"
#include "config.h"
#include "../sigv4/client_keys.h"

#define MAX_HEADERS 128

/* ---- start-up --------------------------------------------------------------------- */

sc_code gw_auth_check_listener(const struct gw *g)
{
    const struct gw_config *cfg = g->cfg;
    if (g->listen_loopback)
        return SC_OK;
    if (cfg->client_credentials == NULL) {
        sc_warn("listening on %s without --client-credentials: requests are not verified, and "
                "anyone who reaches the listener uses the gateway's credentials",
                cfg->listen_host);
        return SC_OK;
    }
    if (cfg->allow_anonymous && !cfg->allow_anonymous_on_network) {
        sc_err("--allow-anonymous on %s, which is not a loopback address, would serve unsigned "
               "requests from the network: add --allow-anonymous-on-network if that is meant",
               cfg->listen_host);
        return SC_EINVAL;
    }
    if (cfg->allow_anonymous)
        sc_warn("listening on %s with --allow-anonymous-on-network: unsigned requests from the "
                "network are served what the bucket gives anonymous users",
                cfg->listen_host);
    return SC_OK;
}

/* ---- the request -------------------------------------------------------------------- */

struct header_list {
    struct sigv4_header h[MAX_HEADERS];
    size_t n;
    bool too_many;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *name,
                               const char *value)
{
    struct header_list *l = cls;
    if (l->n == MAX_HEADERS) {
        l->too_many = true;
        return MHD_NO;
    }
    l->h[l->n++] = (struct sigv4_header){name, value ? value : ""};
    return MHD_YES;
}

/* Answers e from the error table, with message when it says more than the table's. */
static enum MHD_Result refuse(struct gw_req *q, enum s3_xml_error e, const char *message)
{
    sc_stat_add(q->g->stats.auth_refused, 1);
    sc_debug("%s %s refused by client authentication: %s (%s)", q->method, q->tgt.raw_path,
             s3_xml_error_info(e)->code, message ? message : s3_xml_error_info(e)->message);
    return gw_respond_known_error(q, e, message);
}

static enum MHD_Result access_denied(struct gw_req *q)
{
    return refuse(q, S3_XML_ACCESS_DENIED, NULL);
}

/* The bucket named by an x-amz-copy-source value ("/bucket/key" or "bucket/key", encoded). */
static char *copy_source_bucket(const char *v)
{
    char *bucket = NULL;
    if (*v == '/')
        v++;
    size_t len = strcspn(v, "/?");
    if (uri_decode(v, len, &bucket) != SC_OK)
        return NULL;
    return bucket;
}

/* The key's bucket list allows the request's bucket, and the bucket it copies from. */
static bool buckets_allowed(struct gw_req *q, const struct ckey *k)
{
    if (!ckey_allows_bucket(k, q->tgt.bucket))
        return false;
    const char *src = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "x-amz-copy-source");
    if (src == NULL)
        return true;
    char *bucket = copy_source_bucket(src);
    bool ok = bucket != NULL && ckey_allows_bucket(k, bucket);
    free(bucket);
    return ok;
}

/* Parses the target again without the presigned-URL parameters. */
static sc_code drop_signature_params(struct gw_req *q)
{
    char *query = NULL, *target = NULL;
    struct s3_target t;
    sc_code rc = s3_auth_strip_query(q->tgt.raw_query, &query);
    if (rc != SC_OK)
        return rc;
    size_t len = strlen(q->tgt.raw_path) + (query ? strlen(query) + 1 : 0) + 1;
    target = malloc(len);
    if (target == NULL) {
        free(query);
        return SC_ENOMEM;
    }
    snprintf(target, len, "%s%s%s", q->tgt.raw_path, query ? "?" : "", query ? query : "");
    const char *host = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Host");
    rc = s3_target_parse(q->method, target, host, q->g->cfg->vhost_domain, &t, NULL);
    if (rc == SC_OK) {
        s3_target_free(&q->tgt);
        q->tgt = t;
    }
    free(query);
    free(target);
    return rc;
}

/* The target holds presigned-URL parameters (SigV4 or SigV2), in any spelling. */
static bool has_signature_params(const struct s3_target *t)
{
    for (size_t i = 0; i < t->nparams; i++) {
        if (s3_auth_is_query_param(t->params[i].name))
            return true;
    }
    return false;
}

/*
 * A CORS preflight: S3 answers OPTIONS without authentication (the CORS rules, or 400
 * without an Origin), and a browser sends it with the query of the URL it will request,
 * a presigned URL's signature included, which does not sign an OPTIONS.
 */
static bool is_preflight(const struct gw_req *q)
{
    return strcmp(q->method, "OPTIONS") == 0;
}

/*
 * The client's own signature parameters never go upstream, whoever sent the request: the
 * upstream request is signed anew (or sent unsigned), and S3 refuses a request that carries
 * two authentications. Without them a plain presigned GET is a cacheable read.
 */
static enum MHD_Result drop_client_signature(struct gw_req *q)
{
    if (!has_signature_params(&q->tgt))
        return MHD_YES;
    sc_code rc = drop_signature_params(q);
    if (rc == SC_OK)
        return MHD_YES;
    return gw_respond_known_error(q, rc == SC_ENOMEM ? S3_XML_SLOW_DOWN : S3_XML_INVALID_URI, NULL);
}

static enum MHD_Result admit_key(struct gw_req *q, const struct s3_auth_result *r)
{
    if (!buckets_allowed(q, r->key))
        return access_denied(q);
    q->client = r->key;
    return drop_client_signature(q);
}

/*
 * Without client keys nothing is verified and every request is signed with the gateway's own
 * credentials: only programs that reach the listener may use them, not a web page in a browser
 * that does. A browser's request from another site (or, on a loopback listener, to a name a
 * DNS-rebinding page can take) is refused, preflights included, as for the admin API.
 */
static enum MHD_Result admit_unverified(struct gw_req *q)
{
    const char *why = NULL;
    if (gw_from_other_site(q, q->g->listen_loopback, &why))
        return refuse(q, S3_XML_ACCESS_DENIED, why);
    return drop_client_signature(q);
}

/* ---- peer requests ------------------------------------------------------------------ */

bool gw_auth_is_peer_request(const struct gw_req *q)
{
    return gw_req_header(q, FLEET_H_SIGNATURE) != NULL ||
           gw_req_header(q, FLEET_H_IDENTITY) != NULL || gw_req_header(q, FLEET_H_DATE) != NULL;
}

enum MHD_Result gw_auth_refuse_peer(struct gw_req *q, const char *why)
{
    q->peer.refused = true; /* respond.c says so in the answer's headers */
    sc_stat_add(q->g->stats.auth_refused, 1);
    atomic_fetch_add_explicit(&q->g->metrics.peer_refused, 1, memory_order_relaxed);
    sc_debug("%s %s refused as a peer request: %s", q->method, q->target ? q->target : "", why);
    return gw_respond_known_error(q, S3_XML_ACCESS_DENIED, why);
}

/* The fleet date header: whole seconds since the epoch, digits only. */
static bool parse_fleet_date(const char *v, int64_t *out)
{
    if (v == NULL || *v == '\0' || strlen(v) > 18 || strspn(v, "0123456789") != strlen(v))
        return false;
    *out = (int64_t)strtoll(v, NULL, 10);
    return true;
}

/* q's fleet signature is good: over its method, its target as received, and the fields of
 * struct fleet_signed, with the fleet's secret, within FLEET_MAX_SKEW of now. */
static sc_code verify_peer_signature(struct gw_req *q)
{
    const char *target = q->target, *sig = gw_req_header(q, FLEET_H_SIGNATURE);
    int64_t date = 0;
    if (sig == NULL || target == NULL || !parse_fleet_date(gw_req_header(q, FLEET_H_DATE), &date))
        return SC_EACCES;
    size_t path_len = strcspn(target, "?");
    char *path = strndup(target, path_len);
    if (path == NULL)
        return SC_ENOMEM;
    struct fleet_signed what = {
        .method = q->method,
        .path = path,
        .query = target[path_len] == '?' ? target + path_len + 1 : "",
        .identity = gw_req_header(q, FLEET_H_IDENTITY),
        .range = gw_req_header(q, "Range"),
        .if_match = gw_req_header(q, "If-Match"),
        .date = date,
    };
    sc_code rc = fleet_verify(q->g->fleet, &what, sig, (int64_t)time(NULL));
    free(path);
    return rc;
}

/*
 * Whose request a peer carries: the gateway's, anonymous, or a client key this gateway knows
 * too (so that --identity client signs, and authorizes, as that client here). An identity this
 * gateway would not hold to the bucket's rights is refused (a peer configured otherwise): an
 * anonymous one where nothing checks what anonymous requests may read of the cache (neither
 * --allow-anonymous nor --identity client), a key where upstream requests are not signed as
 * their client's (--identity gateway would read with the gateway's credentials).
 */
static enum MHD_Result admit_peer_identity(struct gw_req *q, const char *identity)
{
    if (identity == NULL)
        return gw_auth_refuse_peer(q, "the peer request names no identity");
    if (strcmp(identity, "gateway") == 0)
        return MHD_YES;
    if (strcmp(identity, "anonymous") == 0) {
        if (q->g->authz == NULL)
            return gw_auth_refuse_peer(q, "this gateway does not check what anonymous requests "
                                          "may read");
        q->anonymous = true;
        return MHD_YES;
    }
    const struct ckey *k = NULL;
    if (strncmp(identity, "key:", 4) == 0 && q->g->keys != NULL && q->g->cfg->identity_client)
        k = ckeys_find(q->g->keys, identity + 4);
    if (k == NULL)
        return gw_auth_refuse_peer(q, "the peer request carries an identity this gateway does "
                                      "not sign as (--client-credentials, --identity client)");
    if (!buckets_allowed(q, k))
        return gw_auth_refuse_peer(q, "the peer request's key may not read this bucket");
    q->client = k;
    return MHD_YES;
}

bool gw_auth_is_peer_invalidation(const struct gw_req *q)
{
    return strcmp(q->method, "POST") == 0 && q->tgt.kind == S3_REQ_ADMIN &&
           strcmp(q->tgt.raw_path, PEER_INVALIDATE_PATH) == 0;
}

/* A peer's invalidation (peer_invalidate.h), already verified: sent as the gateway, with no
 * body; the admin step carries it out (it needs no admin token: the fleet signature is its). */
static enum MHD_Result admit_peer_invalidation(struct gw_req *q)
{
    const char *identity = gw_req_header(q, FLEET_H_IDENTITY);
    if (identity == NULL || strcmp(identity, "gateway") != 0)
        return gw_auth_refuse_peer(q, "a peer invalidation is sent as the gateway");
    if (q->has_body)
        return gw_auth_refuse_peer(q, "a peer invalidation has no body");
    q->peer.from = true;
    atomic_fetch_add_explicit(&q->g->metrics.peer_requests_in, 1, memory_order_relaxed);
    return MHD_YES;
}

/* The admin routes a peer may call (docs/fleet.md, "Manifests on a fleet"): registering a
 * manifest forwarded to it, withdrawing one, asking for one's progress. */
static bool peer_admin_route(const struct gw_req *q)
{
    static const char manifests[] = "/_s3cached/manifests";
    const char *path = q->tgt.raw_path;
    if (q->tgt.kind != S3_REQ_ADMIN || path == NULL ||
        strncmp(path, manifests, sizeof(manifests) - 1) != 0)
        return false;
    const char *rest = path + sizeof(manifests) - 1;
    if (*rest == '\0')
        return strcmp(q->method, "POST") == 0;
    bool one = rest[0] == '/' && rest[1] != '\0' && strchr(rest + 1, '/') == NULL;
    return one && (strcmp(q->method, "GET") == 0 || strcmp(q->method, "DELETE") == 0);
}

/*
 * A request that carries a fleet header, or came in on the peer listener: a peer's read of an
 * object, its invalidation of a changed object, or its call of a manifest route of the admin
 * API, signed with the fleet secret, or nothing. Anything else is refused, so that a client
 * cannot pass itself off as a peer (and take its identity) without the secret.
 */
static enum MHD_Result authenticate_peer(struct gw_req *q)
{
    if (q->g->fleet == NULL)
        return gw_auth_refuse_peer(q, "this gateway is in no fleet");
    sc_code rc = verify_peer_signature(q);
    if (rc == SC_ENOMEM)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    if (rc != SC_OK)
        return gw_auth_refuse_peer(q, "the fleet signature is missing, wrong or out of date");
    if (gw_auth_is_peer_invalidation(q))
        return admit_peer_invalidation(q);
    if (peer_admin_route(q)) { /* the signature is the admin API's authentication (admin.c) */
        q->peer.from = true;
        atomic_fetch_add_explicit(&q->g->metrics.peer_requests_in, 1, memory_order_relaxed);
        return MHD_YES;
    }
    bool reads = strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0;
    if (!reads || (q->tgt.kind != S3_REQ_GET_OBJECT && q->tgt.kind != S3_REQ_HEAD_OBJECT))
        return gw_auth_refuse_peer(q,
                                   "peers may only read objects (GET or HEAD), send "
                                   "invalidations and call the manifest routes of the admin API");
    enum MHD_Result ret = admit_peer_identity(q, gw_req_header(q, FLEET_H_IDENTITY));
    if (ret != MHD_YES || q->status != 0)
        return ret;
    q->peer.from = true;
    atomic_fetch_add_explicit(&q->g->metrics.peer_requests_in, 1, memory_order_relaxed);
    return drop_client_signature(q);
}

/* ---- the request, continued ----------------------------------------------------------- */

static enum MHD_Result authenticate(struct gw_req *q)
{
    const struct gw *g = q->g;
    if (q->peer.listener || gw_auth_is_peer_request(q))
        return authenticate_peer(q);
    if (q->tgt.kind == S3_REQ_ADMIN || q->probe)
        return MHD_YES;
    if (g->keys == NULL)
        return admit_unverified(q);
    if (is_preflight(q)) {
        q->anonymous = true; /* nothing to verify; a preflight goes upstream unsigned */
        return drop_client_signature(q);
    }
    struct header_list l = {.n = 0};
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, collect, &l);
    if (l.too_many)
        return gw_respond_known_error(q, S3_XML_HEADERS_TOO_LARGE, NULL);
    struct s3_auth_input in = {
        .method = q->method,
        .raw_path = q->tgt.raw_path,
        .raw_query = q->tgt.raw_query,
        .headers = l.h,
        .n_headers = l.n,
        .keys = g->keys,
        .region = g->cfg->region,
        .now = time(NULL),
    };
    struct s3_auth_result r;
    sc_code rc = s3_auth_verify(&in, &r);
    if (rc == SC_EINVAL)
        return refuse(q, s3_auth_fault_error(r.fault), r.message);
    if (rc != SC_OK)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    if (r.kind != S3_AUTH_ANONYMOUS)
        return admit_key(q, &r);
    if (!g->cfg->allow_anonymous)
        return refuse(q, S3_XML_ACCESS_DENIED,
                      "Anonymous access is not allowed here: sign the request with a key pair "
                      "the gateway knows");
    q->anonymous = true;
    return drop_client_signature(q);
}

/* How q's upstream requests are signed (see the table in auth.h). */
static struct up_identity identity_of(const struct gw_req *q)
{
    struct up_identity as = {0};
    if (q->anonymous)
        as.anonymous = true;
    else if (q->client != NULL && q->g->cfg->identity_client)
        as.creds = ckey_creds(q->client);
    return as;
}

enum MHD_Result gw_authenticate(struct gw_req *q)
{
    enum MHD_Result ret = authenticate(q);
    if (ret == MHD_YES && q->status == 0)
        q->as = identity_of(q); /* once: every upstream request of q reads it */
    return ret;
}

const char *gw_auth_identity_name(const struct gw_req *q)
{
    if (q->anonymous)
        return "anonymous";
    return q->client ? ckey_access_key(q->client) : NULL;
}
