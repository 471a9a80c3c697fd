/*
 * api.c - calling the gateway's admin API (see ctl.h): one request under
 * /_s3cached/, a JSON object back, and for a failure one message that says
 * what happened and, where it helps, what to check.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/uri.h"
#include "ctl.h"

#define API_PREFIX "/_s3cached/"

sc_code ctl_api_call(struct ctl_ctx *c, const char *method, const char *path, const char *body,
                     size_t len, json_t **reply, struct ctl_api_error *e)
{
    struct ctl_http_reply r = {0};
    json_error_t je;
    sc_code rc = SC_ENOMEM;
    size_t full_len = strlen(API_PREFIX) + strlen(path) + 1;
    char *full = malloc(full_len);
    memset(e, 0, sizeof(*e));
    *reply = NULL;
    if (full == NULL)
        goto out;
    snprintf(full, full_len, API_PREFIX "%s", path);
    rc = ctl_http_request(c->http, method, full, body, len, &r, e->message, sizeof(e->message));
    if (rc != SC_OK)
        goto out;
    e->status = r.status;
    if (r.status < 200 || r.status > 299) {
        ctl_reply_message(r.status, r.body, r.len, e->message, sizeof(e->message), &e->s3_xml);
        rc = SC_EINVAL;
        goto out;
    }
    json_t *o = json_loadb(r.body, r.len, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(e->message, sizeof(e->message), "HTTP %ld with %s", r.status,
                 r.len == 0 ? "an empty body" : "a body that is not a JSON object");
        rc = SC_EMISMATCH;
        goto out;
    }
    *reply = o;
    rc = SC_OK;
out:
    if (rc == SC_ENOMEM && e->message[0] == '\0')
        snprintf(e->message, sizeof(e->message), "out of memory");
    ctl_http_reply_free(&r);
    free(full);
    return rc;
}

static void report_refusal(struct ctl_ctx *c, const struct ctl_api_error *e)
{
    const struct ctl_endpoint *ep = c->endpoint;
    fprintf(c->err, "s3cachectl: the gateway answered HTTP %ld: %s\n", e->status, e->message);
    if (e->s3_xml)
        fprintf(c->err,
                "hint: %s (from %s) answered like a plain S3 server, not an s3cached gateway; "
                "check the endpoint\n",
                ep->url, ep->source);
    else if (e->status == 401 || e->status == 403)
        fprintf(c->err, "hint: give the admin token with --admin-token or S3CACHED_ADMIN_TOKEN\n");
}

void ctl_api_report(struct ctl_ctx *c, sc_code rc, const struct ctl_api_error *e)
{
    const struct ctl_endpoint *ep = c->endpoint;
    switch (rc) {
    case SC_OK:
        return;
    case SC_EUPSTREAM:
        fprintf(c->err,
                "s3cachectl: cannot reach the gateway at %s (endpoint from %s): %s\n"
                "hint: is s3cached running and listening there? Choose the endpoint with "
                "--endpoint-url, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL\n",
                ep->url, ep->source, e->message);
        return;
    case SC_ETIMEOUT:
        fprintf(c->err,
                "s3cachectl: no reply from the gateway at %s in time: %s\n"
                "hint: raise --timeout (default 60 s), or check that the endpoint (from %s) is an "
                "s3cached gateway\n",
                ep->url, e->message, ep->source);
        return;
    case SC_EINVAL:
        report_refusal(c, e);
        return;
    case SC_EMISMATCH:
        fprintf(c->err,
                "s3cachectl: unexpected reply from %s: %s\nhint: is it an s3cached gateway?\n",
                ep->url, e->message);
        return;
    case SC_ECANCELED:
        fprintf(c->err, "s3cachectl: interrupted\n");
        return;
    case SC_ETOOBIG:
        fprintf(c->err, "s3cachectl: the reply from %s is too large\n", ep->url);
        return;
    default:
        fprintf(c->err, "s3cachectl: the request to %s failed: %s (%s)\n", ep->url,
                e->message[0] ? e->message : "-", sc_strerror(rc));
        return;
    }
}

sc_code ctl_api(struct ctl_ctx *c, const char *method, const char *path, const char *body,
                size_t len, json_t **reply)
{
    struct ctl_api_error e;
    sc_code rc = ctl_api_call(c, method, path, body, len, reply, &e);
    ctl_api_report(c, rc, &e);
    return rc;
}

enum ctl_exit ctl_api_exit(sc_code rc)
{
    switch (rc) {
    case SC_OK:
        return CTL_EXIT_OK;
    case SC_EUPSTREAM:
    case SC_ETIMEOUT:
        return CTL_EXIT_UNREACHABLE;
    case SC_ECANCELED:
        return CTL_EXIT_INTERRUPTED;
    default:
        return CTL_EXIT_ERROR;
    }
}

sc_code ctl_manifest_path(const char *id, const char *suffix, char **out)
{
    char *enc = NULL;
    *out = NULL;
    sc_code rc = uri_encode(id, strlen(id), false, &enc);
    if (rc != SC_OK)
        return rc;
    size_t n = strlen("manifests/") + strlen(enc) + strlen(suffix) + 1;
    *out = malloc(n);
    if (*out != NULL)
        snprintf(*out, n, "manifests/%s%s", enc, suffix);
    free(enc);
    return *out ? SC_OK : SC_ENOMEM;
}

sc_code ctl_print_json(struct ctl_ctx *c, const json_t *o)
{
    char *text = json_dumps(o, JSON_INDENT(2));
    if (text == NULL) {
        fprintf(c->err, "s3cachectl: out of memory\n");
        return SC_ENOMEM;
    }
    fprintf(c->out, "%s\n", text);
    free(text);
    return SC_OK;
}
