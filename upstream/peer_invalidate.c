/* peer_invalidate.c - a write's invalidation sent to the fleet's other gateways (see .h). */
#include "peer_invalidate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/uri.h"

/* The answer is not read: the status is logged when it is not 204. */
static void on_head(void *arg, const struct http_head *head)
{
    long *status = arg;
    *status = head->status;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    (void)arg, (void)p, (void)n;
    return true;
}

static size_t no_body(void *arg, char *buf, size_t cap)
{
    (void)arg, (void)buf, (void)cap;
    return 0;
}

static void on_done(void *arg, sc_code rc)
{
    long *status = arg;
    if (rc != SC_OK || *status != 204)
        sc_warn("fleet invalidation not taken by a peer (%s, status %ld): it may serve the "
                "old copy until it is revalidated",
                sc_strerror(rc), *status);
    free(status);
}

static const struct up_handler handler = {on_head, on_body, no_body, on_done};

/* "bucket=B[&key=K]", both percent-encoded ('/' too). */
static sc_code build_query(const char *bucket, const char *key, char **out)
{
    char *b = NULL, *k = NULL;
    sc_code rc = uri_encode(bucket, strlen(bucket), false, &b);
    if (rc == SC_OK && key != NULL)
        rc = uri_encode(key, strlen(key), false, &k);
    if (rc == SC_OK) {
        size_t len = strlen(b) + (k ? strlen(k) : 0) + sizeof("bucket=&key=");
        *out = malloc(len);
        if (*out == NULL)
            rc = SC_ENOMEM;
        else
            snprintf(*out, len, "bucket=%s%s%s", b, k ? "&key=" : "", k ? k : "");
    }
    free(b);
    free(k);
    return rc;
}

static sc_code send_one(upstream *up, const char *url, const char *query)
{
    long *status = calloc(1, sizeof(*status));
    if (status == NULL)
        return SC_ENOMEM;
    /* The peer path "/_s3cached/fleet/invalidate", spelled as bucket and key. */
    struct up_request req = {.method = "POST",
                             .bucket = "_s3cached",
                             .key = "fleet/invalidate",
                             .query = query,
                             .body_length = -1,
                             .peer = url,
                             .peer_only = true};
    sc_code rc = up_submit(up, &req, &handler, status, NULL);
    if (rc != SC_OK)
        free(status);
    return rc;
}

sc_code peer_invalidate(upstream *up, fleet *f, const char *bucket, const char *key)
{
    if (f == NULL)
        return SC_OK;
    struct fleet_peer_info *peers = calloc(FLEET_MAX_PEERS, sizeof(*peers));
    char *query = NULL;
    sc_code rc = peers == NULL ? SC_ENOMEM : build_query(bucket, key, &query);
    size_t n = rc == SC_OK ? fleet_peers(f, peers, FLEET_MAX_PEERS) : 0;
    for (size_t i = 0; i < n && i < FLEET_MAX_PEERS && rc == SC_OK; i++)
        if (!peers[i].self && peers[i].state == FLEET_UP)
            rc = send_one(up, peers[i].url, query);
    if (rc != SC_OK)
        sc_err("could not tell the fleet that %s/%s changed (%s): peers may serve the old copy",
               bucket, key ? key : "*", sc_strerror(rc));
    free(query);
    free(peers);
    return rc;
}
