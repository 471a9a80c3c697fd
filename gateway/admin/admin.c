/*
 * admin.c - the gateway's own API under /_s3cached/ (bucket names cannot
 * start with '_', so it never shadows a bucket). JSON in and out; errors
 * are {"error": "<Code>", "message": "..."} with a 4xx status.
 *
 *   GET    /_s3cached/                              the status page for people (HTML)
 *   GET    /_s3cached/stats                         counters
 *   GET    /_s3cached/buckets                       object reads per bucket
 *   POST   /_s3cached/manifests                     register a manifest (201)
 *   GET    /_s3cached/manifests                     list them
 *   GET    /_s3cached/manifests/{id}                progress
 *   GET    /_s3cached/manifests/{id}/order?epoch=E[&rank=R]  the keys in the gateway's order
 *   DELETE /_s3cached/manifests/{id}                cancel
 *   POST   /_s3cached/importance                    a trainer's per-sample losses
 *   POST   /_s3cached/invalidate                    drop cached keys, or a prefix
 *   POST   /_s3cached/fleet/invalidate?bucket=B[&key=K]  a peer's invalidation (fleet-signed,
 *                                                   no admin token; peer_invalidate.h): 204
 *
 * A peer of the fleet (a fleet-signed request, auth.c) may call only its invalidation and the
 * manifest routes: it
 * forwards a registration (POST ?id=ID&sha256=HEX of the body: the signature covers the query,
 * not the body) or a withdrawal made on it, registered here as forwarded (never forwarded
 * again), and asks for progress (docs/fleet.md).
 *
 * Who may call it otherwise: with an admin token configured, whoever sends it as
 * "Authorization: Bearer <token>"; without one, anyone when the listener is
 * loopback, else loopback clients only. The status page obeys the same rule; when
 * the token is missing it is still sent, with 401, since it holds no data and is what
 * asks a person for the token (kept in the tab, sent as that header by its fetches).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <jansson.h>

#include "admin.h"

#include "../addr.h"
#include "../req.h"
#include "../respond.h"
#include "../auth.h"
#include "../web_origin.h"
#include "stats_json.h"
#include "../../manifest/score_keep.h"
#include "../../proto/invalidate_req.h"
#include "../config.h"
#include "../../store/store.h"
#include "../../manifest/manifest.h"
#include "../../upstream/fill.h"
#include "../../sigv4/sigv4.h"

#define PREFIX "/_s3cached/"
#define ID_MAX 23

/* Queues a JSON reply, taking ownership of text; location, if any, becomes the Location header. */
static enum MHD_Result respond_json_text(struct gw_req *q, int status, char *text,
                                         const char *location)
{
    struct MHD_Response *resp =
        gw_respond_buffer("application/json", text, strlen(text), MHD_RESPMEM_MUST_FREE);
    if (resp == NULL)
        return MHD_NO;
    if (status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", GW_ADMIN_CHALLENGE);
    if (location != NULL)
        MHD_add_response_header(resp, "Location", location);
    return gw_respond_queue(q, status, resp);
}

/* Sends o (taking it) with status; NULL means out of memory. */
static enum MHD_Result respond_json(struct gw_req *q, int status, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text == NULL)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    return respond_json_text(q, status, text, NULL);
}

static enum MHD_Result respond_api_err(struct gw_req *q, const struct api_err *e)
{
    char *text = api_err_json(e);
    if (text == NULL)
        return MHD_NO;
    return respond_json_text(q, (int)api_err_status(e->code), text, NULL);
}

static enum MHD_Result respond_problem(struct gw_req *q, enum api_err_code code, const char *msg)
{
    struct api_err e;
    api_err_set(&e, code, "%s", msg);
    return respond_api_err(q, &e);
}

static bool is(const struct gw_req *q, const char *method)
{
    return strcmp(q->method, method) == 0;
}

static enum MHD_Result not_allowed(struct gw_req *q)
{
    return respond_problem(q, API_METHOD_NOT_ALLOWED, "method not allowed on this endpoint");
}

/* A body over the bound was read and dropped: say so, whatever the endpoint. */
static bool body_refused(struct gw_req *q, enum MHD_Result *ret)
{
    if (q->admin.body.err == SC_OK)
        return false;
    *ret = respond_problem(q, API_TOO_LARGE, "the request body is larger than 64 MiB");
    return true;
}

/* Frees the collected body when the request is finished. */
static void free_body(void *arg)
{
    struct gw_req *q = arg;
    sc_buf_free(&q->admin.body);
}

void gw_admin_collect(struct gw_req *q, const char *data, size_t n)
{
    if (q->admin.body.data == NULL && q->admin.body.err == SC_OK) {
        sc_buf_init(&q->admin.body, GW_ADMIN_BODY_MAX);
        gw_req_cleanup_add(q, free_body, q);
    }
    /* Past the bound (or out of memory) the rest is read and dropped, and refused as too
     * large rather than crash (body_refused). */
    sc_buf_append(&q->admin.body, data, n);
}

/* ---- endpoints --------------------------------------------------------------- */

static const char *query_arg(struct gw_req *q, const char *name)
{
    return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A peer's forwarded registration: the body must be the one whose hash the signed query
 * names. */
static sc_code create_forwarded(struct gw_req *q, const char *body, json_t **reply,
                                struct api_err *err)
{
    const char *id = query_arg(q, "id"), *sha = query_arg(q, "sha256");
    char got[65];
    sigv4_sha256_hex(body, q->admin.body.len, got);
    if (id == NULL || sha == NULL || strcmp(sha, got) != 0) {
        api_err_set(err, API_INVALID_FIELD,
                    "a forwarded manifest needs ?id= and the sha256= "
                    "of its body");
        return SC_EINVAL;
    }
    return mf_create_forwarded(q->g->manifests, id, body, q->admin.body.len, reply, err);
}

static enum MHD_Result create_manifest(struct gw_req *q)
{
    struct api_err err = {0};
    json_t *reply = NULL;
    const char *body = q->admin.body.data ? q->admin.body.data : "";
    sc_code rc = q->peer.from ? create_forwarded(q, body, &reply, &err)
                              : mf_create(q->g->manifests, body, q->admin.body.len, &reply, &err);
    if (rc == SC_ENOMEM && reply == NULL && err.code == API_OK)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    if (rc != SC_OK)
        return respond_api_err(q, &err);
    char *text = json_dumps(reply, JSON_COMPACT);
    const char *id = json_string_value(json_object_get(reply, "id"));
    const char *state = json_string_value(json_object_get(reply, "state"));
    bool parsing = state != NULL && strcmp(state, "parsing") == 0; /* a large body, later */
    char location[64];
    snprintf(location, sizeof(location), PREFIX "manifests/%s", id ? id : "");
    json_decref(reply);
    if (text == NULL)
        return MHD_NO;
    return respond_json_text(q, parsing ? 202 : 201, text, location);
}

static enum MHD_Result post_importance(struct gw_req *q)
{
    struct importance_req ir;
    struct api_err err = {0};
    sc_code rc = importance_req_parse(q->admin.body.data ? q->admin.body.data : "",
                                      q->admin.body.len, NULL, &ir, &err);
    if (rc == SC_ENOMEM)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    if (rc != SC_OK)
        return respond_api_err(q, &err);
    size_t scored = score_keep_post(q->g->scores, &ir);
    importance_req_free(&ir);
    return respond_json(q, 200, json_pack("{s:I}", "scored", (json_int_t)scored));
}

/* The number asked for in ?name=N (def when absent); false if it is not one below max. */
static bool number_param(struct gw_req *q, const char *name, uint32_t def, uint32_t max,
                         uint32_t *out)
{
    const char *v = MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, name);
    *out = def;
    if (v == NULL)
        return true;
    char *end = NULL;
    unsigned long n = strtoul(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || n >= max)
        return false;
    *out = (uint32_t)n;
    return true;
}

static enum MHD_Result order(struct gw_req *q, const char *id)
{
    uint32_t e, rank;
    if (!number_param(q, "epoch", 0, UINT32_MAX, &e))
        return respond_problem(q, API_INVALID_FIELD, "epoch must be a non-negative integer");
    if (!number_param(q, "rank", MF_RANK_OWN, MF_RANK_OWN, &rank))
        return respond_problem(q, API_INVALID_FIELD, "rank must be a non-negative integer");
    struct api_err err = {0};
    json_t *o = mf_order(q->g->manifests, id, e, rank, &err);
    if (o == NULL && err.code != API_OK)
        return respond_api_err(q, &err);
    return respond_json(q, 200, o);
}

/* /_s3cached/manifests/{id}[/order] */
static enum MHD_Result one_manifest(struct gw_req *q, const char *rest)
{
    char id[ID_MAX + 1];
    size_t n = strcspn(rest, "/");
    if (n == 0 || n > ID_MAX)
        return respond_problem(q, API_NOT_FOUND, "no such manifest");
    memcpy(id, rest, n);
    id[n] = '\0';
    const char *sub = rest + n;
    if (strcmp(sub, "/order") == 0)
        return is(q, "GET") ? order(q, id) : not_allowed(q);
    if (*sub != '\0')
        return respond_problem(q, API_NOT_FOUND, "no such admin endpoint");
    json_t *o = NULL;
    if (is(q, "GET"))
        o = mf_progress(q->g->manifests, id);
    else if (is(q, "DELETE"))
        o = q->peer.from ? mf_cancel_forwarded(q->g->manifests, id)
                         : mf_cancel(q->g->manifests, id);
    else
        return not_allowed(q);
    /* A GET finds every listed id; NULL for one is out of memory, and peers read 404 as
     * "withdrawn". (A DELETE of a registration withdrawn already is a 404.) */
    if (o == NULL && is(q, "GET") && mf_known(q->g->manifests, id))
        return respond_problem(q, API_BUSY, "cannot answer for this manifest now; retry");
    if (o == NULL)
        return respond_problem(q, API_NOT_FOUND, "no such manifest");
    return respond_json(q, 200, o);
}

/* Drops what r names from in-flight fills (none of them is stored) and from the store. */
static sc_code drop_named(struct gw *g, const struct invalidate_req *r, uint64_t *removed)
{
    sc_code rc = SC_OK;
    if (r->prefix != NULL) {
        fill_invalidate_bucket(g->fills, r->bucket);
        return store_remove_prefix(g->st, r->bucket, r->prefix, removed);
    }
    for (size_t i = 0; i < r->n_keys && rc == SC_OK; i++) {
        fill_invalidate(g->fills, r->bucket, r->keys[i]);
        rc = store_remove(g->st, r->bucket, r->keys[i]);
        (*removed)++;
    }
    return rc;
}

/* Drops what the body names from in-flight fills and from the store; replies {"removed": n}. */
static enum MHD_Result post_invalidate(struct gw_req *q)
{
    struct invalidate_req r;
    struct api_err err = {0};
    sc_code rc =
        invalidate_parse(q->admin.body.data ? q->admin.body.data : "", q->admin.body.len, &r, &err);
    if (rc == SC_ENOMEM && err.code == API_OK)
        return gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL);
    if (rc != SC_OK)
        return respond_api_err(q, &err);
    uint64_t removed = 0;
    rc = drop_named(q->g, &r, &removed);
    invalidate_req_free(&r);
    if (rc != SC_OK)
        return gw_respond_known_error(q, S3_XML_SERVICE_UNAVAILABLE,
                                      "The cache could not drop the keys");
    sc_stat_add(q->g->stats.invalidations, removed);
    return respond_json(q, 200, json_pack("{s:I}", "removed", (json_int_t)removed));
}

/*
 * A peer's invalidation (peer_invalidate.h), its fleet signature verified (auth.c):
 * "bucket=B&key=K" drops K, "bucket=B" the whole bucket, as the admin invalidation does;
 * 204 once done. Nothing else in the query.
 */
static enum MHD_Result peer_invalidate_here(struct gw_req *q)
{
    const struct s3_param *bucket = s3_target_param(&q->tgt, "bucket");
    const struct s3_param *key = s3_target_param(&q->tgt, "key");
    size_t expected = 1 + (key != NULL);
    if (bucket == NULL || bucket->value == NULL || *bucket->value == '\0' ||
        (key != NULL && (key->value == NULL || *key->value == '\0')) || q->tgt.nparams != expected)
        return gw_respond_known_error(q, S3_XML_INVALID_ARGUMENT,
                                      "a fleet invalidation names a bucket and at most one key");
    char *keys[1] = {key != NULL ? key->value : NULL};
    struct invalidate_req r = {.bucket = bucket->value,
                               .prefix = key != NULL ? NULL : "",
                               .keys = keys,
                               .n_keys = key != NULL ? 1 : 0};
    uint64_t removed = 0;
    if (drop_named(q->g, &r, &removed) != SC_OK)
        return gw_respond_known_error(q, S3_XML_SERVICE_UNAVAILABLE,
                                      "The cache could not drop the keys");
    sc_stat_add(q->g->stats.invalidations, removed);
    return gw_respond_queue(q, 204, gw_respond_empty());
}

/* True if the request carries the admin token; compared in constant time. */
static bool has_token(struct gw_req *q, const char *token)
{
    const char *auth = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Authorization");
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    const char *given = auth + 7;
    size_t n = strlen(token);
    return strlen(given) == n && CRYPTO_memcmp(given, token, n) == 0;
}

static bool client_is_loopback(struct gw_req *q)
{
    return gw_addr_is_loopback(gw_client_addr(q));
}

/* The status page's paths: /_s3cached, /_s3cached/ and /_s3cached/index.html. */
static bool is_page(const char *path)
{
    return strcmp(path, "/_s3cached") == 0 || strcmp(path, PREFIX) == 0 ||
           strcmp(path, PREFIX "index.html") == 0;
}

/* Answers 401 or 403 and returns false when this client may not use the admin API. */
static bool admin_allowed(struct gw_req *q, enum MHD_Result *ret)
{
    if (q->peer.from)
        return true; /* fleet-signed, and only for the manifest routes here (auth.c) */
    const char *token = q->g->cfg->admin_token;
    const char *why = NULL;
    if (gw_from_other_site(q, token == NULL, &why)) {
        *ret = respond_problem(q, API_FORBIDDEN, why);
        return false;
    }
    if (token != NULL) {
        if (has_token(q, token))
            return true;
        if (is_page(q->tgt.raw_path) && (is(q, "GET") || is(q, "HEAD")))
            *ret = gw_status_page(q, 401); /* a browser cannot send the token: the page asks */
        else
            *ret = respond_problem(q, API_UNAUTHORIZED,
                                   "the admin API needs \"Authorization: Bearer <admin token>\"");
        return false;
    }
    if (q->g->listen_loopback || client_is_loopback(q))
        return true;
    *ret = respond_problem(q, API_FORBIDDEN,
                           "the admin API answers loopback clients only; start the gateway "
                           "with --admin-token to open it to others");
    return false;
}

enum MHD_Result gw_admin(struct gw_req *q)
{
    const char *path = q->tgt.raw_path;
    enum MHD_Result ret;
    if (q->peer.from && gw_auth_is_peer_invalidation(q))
        return peer_invalidate_here(q); /* else a manifest route: auth.c admits no other */
    if (!admin_allowed(q, &ret))
        return ret;
    if (body_refused(q, &ret))
        return ret;
    if (is_page(path))
        return is(q, "GET") || is(q, "HEAD") ? gw_status_page(q, 200) : not_allowed(q);
    if (strncmp(path, PREFIX, strlen(PREFIX)) != 0)
        return respond_problem(q, API_NOT_FOUND, "no such admin endpoint");
    const char *what = path + strlen(PREFIX);
    if (strcmp(what, "stats") == 0) {
        if (!is(q, "GET"))
            return not_allowed(q);
        char *text = gw_stats_json(q->g);
        return text ? respond_json_text(q, 200, text, NULL) : MHD_NO;
    }
    if (strcmp(what, "buckets") == 0) {
        if (!is(q, "GET"))
            return not_allowed(q);
        char *text = gw_buckets_json(&q->g->buckets);
        return text ? respond_json_text(q, 200, text, NULL) : MHD_NO;
    }
    if (strcmp(what, "manifests") == 0) {
        if (is(q, "POST"))
            return create_manifest(q);
        return is(q, "GET") ? respond_json(q, 200, mf_list(q->g->manifests)) : not_allowed(q);
    }
    if (strncmp(what, "manifests/", 10) == 0)
        return one_manifest(q, what + 10);
    if (strcmp(what, "importance") == 0)
        return is(q, "POST") ? post_importance(q) : not_allowed(q);
    if (strcmp(what, "invalidate") == 0)
        return is(q, "POST") ? post_invalidate(q) : not_allowed(q);
    return respond_problem(q, API_NOT_FOUND, "no such admin endpoint");
}
