/*
 * upstream.h - the HTTP client to the upstream S3 endpoint.
 *
 * One thread runs a libcurl multi handle: connections are reused across
 * requests, TLS is verified, connects time out, a transfer that moves no byte
 * for stall_timeout_s (not counting time paused by a slow client) is aborted, and
 * idempotent requests are retried with exponential backoff and full jitter
 * on connection errors and on 500/502/503/504 (SlowDown), as long as no byte
 * of the response has been handed to the caller yet. Every request is signed
 * with SigV4 using the gateway's credentials (or sent unsigned when it has
 * none), or, when the request says so (struct up_identity), with a client's
 * key pair or unsigned; the client's own Authorization never reaches this
 * module.
 *
 * A request may name a fleet peer to ask first (up_request.peer, fleet.h): that attempt goes
 * path-style to the peer, unsigned by SigV4 and signed with the fleet secret instead
 * (fleet_sign), under the short peer timeouts. Any failure of it before the response head
 * was handed to the caller (no connection, a timeout, a 5xx, a refused fleet signature)
 * marks the peer down (fleet_peer_failed) and the same request goes on to the bucket at once,
 * signed as it says, with no backoff: the caller sees one response. A peer that dies after
 * its head was handed over (mid-body) is resumed from the bucket with "Range: bytes=NEXT-LAST"
 * and "If-Match: ETAG" of the head already given, and the caller's body goes on; an answer
 * that is not exactly that range of that version fails the transfer (SC_EMISMATCH).
 * A peer-only request (up_request.peer_only) goes to the peer and nowhere else.
 *
 * Callbacks run on the upstream thread and must not block. Flow control
 * works both ways: on_body may refuse data (the transfer pauses) and
 * read_body may report that no data is ready yet; either side restarts the
 * transfer with up_req_resume() from any thread.
 */
#ifndef GW_UPSTREAM_H
#define GW_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/sc_err.h"
#include "../proto/http_header.h"
#include "../sigv4/creds.h"
#include "../common/histogram.h"
#include "../fleet/fleet.h"

typedef struct upstream upstream;
typedef struct up_req up_req;

struct up_config {
    const char *base_url; /* http(s)://host[:port], no trailing '/' */
    const char *region;
    const struct creds *creds; /* NULL: anonymous requests */
    unsigned retries;          /* extra attempts for idempotent requests */
    bool insecure_tls;         /* skip certificate verification */
    long connect_timeout_ms;
    long stall_timeout_s;         /* abort when no byte moves for this long */
    fleet *fleet;                 /* signs peer requests and learns their outcomes; NULL: no fleet,
                                     and requests naming a peer go to the bucket only. Borrowed: it
                                     must outlive the client */
    long peer_connect_timeout_ms; /* a peer attempt's connect timeout; 0: 50 */
    long peer_stall_timeout_ms;   /* a peer attempt moving no byte this long fails; 0: 2000 */
    unsigned max_connections;     /* connections at once to the bucket, and to each peer; more
                                     requests wait in arrival order (gate.h); 0: 256 */
};

#define UP_PEER_CONNECT_TIMEOUT_MS 50
#define UP_PEER_STALL_TIMEOUT_MS   2000
#define UP_MAX_CONNECTIONS         256

/* Whose credentials sign a request. Zeroed: the gateway's own. */
struct up_identity {
    const struct creds *creds; /* NULL: the gateway's (unsigned when it has none); else these,
                                  borrowed: they must outlive the request (retries sign again) */
    bool anonymous;            /* send the request unsigned, whatever the gateway has */
};

/* @brief Whose request it is, as a peer request carries it (FLEET_H_IDENTITY): "anonymous",
 * "gateway" (the gateway's own credentials), or "key:" and the access key id of as->creds.
 * @return SC_OK, SC_EINVAL (the text does not fit in cap bytes). */
sc_code up_identity_name(const struct up_identity *as, char *out, size_t cap);

/* @brief True when a and b sign the same way (same key pair, or both anonymous). */
bool up_identity_same(const struct up_identity *a, const struct up_identity *b);

/* What a request is: filled by the caller, copied by up_submit(). */
struct up_request {
    const char *method;                /* GET, HEAD, PUT, POST, DELETE */
    const char *bucket;                /* "" for service-level requests */
    const char *key;                   /* decoded key, or NULL / "" */
    const char *query;                 /* raw query without '?', or NULL */
    const struct http_header *headers; /* forwarded as given, already filtered */
    size_t n_headers;
    int64_t body_length;   /* -1: no body; else bytes read_body will supply */
    bool idempotent;       /* may be retried */
    struct up_identity as; /* who signs it; zeroed: the gateway */
    bool exact_length;     /* fail the transfer if the upstream sends more bytes
                              than its Content-Length (cache fills); when neither
                              the ETag nor a checksum can check the body (digest.h),
                              the connection is watched a moment after the last byte */
    const char *peer;      /* a fleet peer's base URL ("http://host:port") to ask first, or
                              NULL; only for an idempotent GET or HEAD without a body, and
                              ignored when the client has no fleet (see above) */
    bool peer_only;        /* a request to the peer alone (any method, with or without a body):
                              failed if the peer fails, never sent to the bucket, never retried;
                              a head saying the peer failed (5xx, refused) is handed over as it
                              is. Needs peer and a fleet: without them up_submit answers
                              SC_EINVAL */
};

#define UP_READ_PAUSE ((size_t)-1)

struct up_handler {
    /* The final response head (after any retries); head and its headers are valid only
     * during the call: copy what is kept. */
    void (*on_head)(void *arg, const struct http_head *head);
    /* Body bytes: take all n and return true, or none and return false to pause. */
    bool (*on_body)(void *arg, const char *p, size_t n);
    /* Request body: write up to cap bytes; return the count, 0 at the end, or UP_READ_PAUSE.
     * It is never asked for more than body_length bytes in all; an end before that fails
     * the transfer with SC_EMISMATCH and closes its connection (never reused). */
    size_t (*read_body)(void *arg, char *buf, size_t cap);
    /* Last call for this request: SC_OK when the whole response arrived. */
    void (*on_done)(void *arg, sc_code result);
};

/*
 * @brief Starts the upstream thread.
 * @param[out] out the client, owned by the caller; release with upstream_free().
 * @return SC_OK, SC_EINVAL (bad base URL), SC_ENOMEM, SC_EUPSTREAM (curl init failed).
 */
sc_code upstream_start(const struct up_config *cfg, upstream **out);

/*
 * @brief Cancels every request (each gets on_done(SC_ECANCELED)) and joins the
 * thread. Afterwards up_submit() answers SC_ECANCELED and resume/cancel do
 * nothing, so HTTP workers still running may keep calling them safely.
 */
void upstream_stop(upstream *up);

/* @brief Stops (if needed) and frees the client. NULL is a no-op. */
void upstream_free(upstream *up);

/*
 * @brief Queues a request. The handler's callbacks start after this returns.
 * @param[out] out a reference to the request, owned by the caller and released
 *             with up_req_release() (also after on_done). May be NULL.
 * @return SC_OK, SC_ENOMEM, SC_ECANCELED (shutting down).
 */
sc_code up_submit(upstream *up, const struct up_request *req, const struct up_handler *h, void *arg,
                  up_req **out);

struct up_metrics {
    uint64_t retries;             /* attempts made again after a retryable failure */
    uint64_t failures;            /* requests that ended in an error, retries exhausted */
    uint64_t peer_attempts;       /* requests sent to a fleet peer first */
    uint64_t peer_fallbacks;      /* of those, the ones gone on to the bucket (peer failed) */
    uint64_t peer_resumes;        /* peers that failed mid-body, resumed from the bucket */
    struct sc_hist *head_latency; /* seconds from an attempt's start to its response head */
    long waiting;                 /* attempts waiting for a connection slot now */
    struct sc_hist *wait;         /* seconds each attempt waited for its slot */
};

/* @brief Reads the client's counters; head_latency points into up. Any thread. */
void up_get_metrics(upstream *up, struct up_metrics *m);

/*
 * @brief False when the latest upstream outcome was a request that got no response at all
 * (connection refused, DNS, TLS, timeout before the head); true otherwise, also before any
 * request. Any thread.
 */
bool up_reachable(upstream *up);

/* @brief Restarts a paused transfer (either direction). Any thread; no-op once done. */
void up_req_resume(up_req *r);

/* @brief Aborts the request; on_done(SC_ECANCELED) follows unless it already ran. Any thread. */
void up_req_cancel(up_req *r);

/* @brief Drops the caller's reference. NULL is a no-op. */
void up_req_release(up_req *r);

/* @brief Process-wide set-up of the HTTP client library, before any other up_ call, on
 * one thread; SC_EIO if it cannot be. up_global_cleanup() undoes it at exit. */
sc_code up_global_init(void);
void up_global_cleanup(void);

#endif
