/*
 * call.h - one request, waited for: a page of a listing (list.c) and the gateways' own
 * exchanges with a fleet peer alone (up_request.peer_only) about manifests (docs/fleet.md,
 * "Manifests on a fleet").
 *
 * These block until the answer is whole or the request failed, so only a thread of the
 * gateway's own (the manifests' threads) may call them, never an HTTP worker.
 */
#ifndef UP_CALL_H
#define UP_CALL_H

#include "../common/buf.h"
#include "upstream.h"

/* What is sent: method, "/<bucket>/<key>" (key may hold '/'), a query, a body. */
struct up_peer_call {
    const char *peer;   /* the peer's base URL (fleet_peers) */
    const char *method; /* GET, POST, DELETE */
    const char *bucket; /* the first path segment (for the admin API: "_s3cached") */
    const char *key;    /* the rest of the path, decoded */
    const char *query;  /* raw, without '?', or NULL; it is signed with the rest */
    const char *body;   /* body_len bytes, borrowed until the call returns; NULL: no body */
    size_t body_len;
};

/*
 * @brief Submits req (up_submit) and waits for its answer.
 * @param body req->body_length bytes to send when it is >= 0, borrowed until the call returns.
 * @param[out] status the answer's HTTP status (0 when there was none).
 * @param[out] answer the answer's body, appended (bounded by answer->max, see sc_buf); the
 *             caller initializes and frees it. Past the bound the rest is dropped and the call
 *             answers SC_ETOOBIG.
 * @return SC_OK (see *status), SC_ETOOBIG, SC_ENOMEM, or the transfer's failure.
 */
sc_code up_call(upstream *up, const struct up_request *req, const char *body, long *status,
                struct sc_buf *answer);

/*
 * @brief Sends the call, fleet-signed, to the peer alone and waits for its answer.
 * @param[out] status the answer's HTTP status (0 when there was none).
 * @param[out] answer the answer's body, appended (bounded by answer->max, see sc_buf); the
 *             caller initializes and frees it.
 * @return SC_OK (see *status), SC_EINVAL (no fleet), SC_EUPSTREAM or another code of the
 *         transfer (no answer), SC_ECANCELED (shutting down), SC_ENOMEM.
 */
sc_code up_peer_call(upstream *up, const struct up_peer_call *c, long *status,
                     struct sc_buf *answer);

#endif
