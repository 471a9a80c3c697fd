/*
 * gw.h - the gateway's types: the shared context, the state of one request, and the
 * steps a request walks. Types only: each file's functions are declared in its own
 * header (respond.h, serve.h, proxy.h, ...).
 *
 * struct gw is built once in main.c and passed to every part of the request
 * path; nothing in gateway/ keeps hidden globals. struct gw_req lives from
 * the moment libmicrohttpd reads a request line to the moment the response
 * is finished or the client is gone (server.c owns it). Each step's own state
 * is a sub-struct of it, owned by that step's file, which registers its own
 * cleanup (req.h).
 */
#ifndef GW_GW_H
#define GW_GW_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/stats.h"
#include "../proto/s3_target.h"
#include "../upstream/origin.h"
#include "../upstream/relay.h"
#include "../upstream/upstream.h"
#include "../upstream/verify.h"
#include "ask.h"
#include "bucket_stats.h"
#include "metrics.h"
#include "readahead.h"
#include "step.h"

/* Held by pointer only: each file that calls into one includes its header. */
typedef struct store store;
typedef struct fill_table fill_table;
typedef struct fill fill;
typedef struct block_table block_table;
typedef struct mf_registry mf_registry;
typedef struct score_keep score_keep;
typedef struct ckeys ckeys;
typedef struct authz_cache authz_cache;
typedef struct conn_guard conn_guard;
typedef struct fleet fleet;
struct gw_zc;
struct gw_zc_held;
struct ckey;
struct gw_config;
struct guard_conn;

struct gw {
    const struct gw_config *cfg;
    store *st;
    upstream *up;
    struct origin origin;
    fill_table *fills;
    verifier *verify;              /* fills' MD5s, off the upstream thread (verify.h) */
    block_table *block_fetches;    /* blocks of large objects being fetched (block_fetch.h) */
    struct gw_readahead readahead; /* large objects read range after range (readahead.h) */
    mf_registry *manifests;
    score_keep *scores; /* importance scores, kept across restarts (score_keep.h) */
    struct sc_stats stats;
    struct gw_buckets buckets; /* object reads per bucket, for the status page */
    struct gw_metrics metrics;
    struct MHD_Daemon *daemon;
    struct MHD_Daemon *fleet_daemon; /* --fleet-listen: signed peer requests only; or NULL */
    fleet *fleet;                    /* the fleet (fleet.h), or NULL: this gateway alone */
    conn_guard *guard;               /* ends slow clients (--header-timeout); NULL when off */
    struct gw_zc *zc;                /* zero-copy hits' drain (zerocopy.h); NULL when off */
    ckeys *keys;                     /* --client-credentials; NULL: S3 requests are not verified */
    authz_cache *authz;          /* answers of authorization checks (auth.h); NULL without keys */
    bool listen_loopback;        /* the listener is on a loopback address */
    atomic_uint active_requests; /* started and not yet completed */
    atomic_bool draining;        /* shutting down: new requests are refused */
};

/* A cleanup a step registers for its state (req.h), run when the request is finished. */
struct gw_cleanup {
    void (*fn)(void *arg);
    void *arg;
};
#define GW_CLEANUPS_MAX 10

struct upload;    /* proxy.c */
struct gw_blocks; /* blocks.c */

struct gw_req {
    struct gw *g;
    struct MHD_Connection *conn;
    struct guard_conn *guard; /* the connection in g->guard (conn_guard.h), or NULL */
    char *target;             /* the raw request target, as received */
    char request_id[17];
    struct timespec arrived; /* when the request line came in */
    unsigned status;         /* the status queued, 0 before */
    uint64_t bytes_out;      /* object body bytes handed to libmicrohttpd */
    bool in_flight;          /* counted in gw.active_requests */
    const char *method;      /* owned by libmicrohttpd, valid during the request */
    struct s3_target tgt;
    bool have_target;
    bool probe;        /* a probe (probe.h), decided once in the first call */
    bool has_body;     /* the client announced a body */
    bool drain_body;   /* a request body that is read and dropped */
    enum gw_step step; /* where the next call resumes; written by server.c only */
    /* The current call's body bytes (server.c sets them; a step takes what it uses). */
    const char *in_data;
    size_t *in_size;
    /* Who sent it (auth.c, once); the identity upstream requests are signed as. */
    const struct ckey *client; /* the key that signed it, owned by g->keys */
    bool anonymous;            /* unsigned, admitted by --allow-anonymous */
    struct up_identity as;     /* how upstream requests are signed (auth.h) */
    bool authorized;           /* the upstream says this identity may read the object (authz.c) */
    const char *x_cache;       /* HIT, PARTIAL, MISS or BYPASS for object reads, else NULL */
    /* A request from another gateway of the fleet (auth.c, fleet.h). */
    struct {
        bool listener; /* it came in on --fleet-listen, which takes signed peer requests only */
        bool from;     /* its fleet signature was verified: a peer sent it */
        bool refused;  /* refused as a peer request: the answer carries FLEET_H_REFUSED */
        bool failed;   /* the gateway's own 5xx (not the bucket's): the answer to a peer
                          carries FLEET_H_FAILED */
    } peer;
    struct relay_waiter waiter; /* suspends and resumes the connection (req.h) */
    /* Reading a relay to the client (deliver.c). */
    struct {
        relay *relay; /* a reference: a fill's relay, or the pass-through's */
        struct relay_cursor cursor;
        uint64_t start, len; /* the cursor's first position and bytes to send */
    } deliver;
    /* An object read through the cache (serve.c). */
    struct {
        bool observed;                 /* the read was reported to the manifests (once) */
        bool looked_empty;             /* the last lookup found no copy (a miss, not a
                                          copy that could not be used) */
        bool relooked;                 /* the store was asked again before a new fill */
        fill *fill;                    /* the fill read, a reader's reference */
        bool ranged;                   /* a range of a miss fetched on its own, beside the fill */
        uint64_t want_start, want_len; /* that range, in object offsets */
    } serve;
    /* Revalidation of the cached copy (revalidate.c). */
    struct {
        char cached_etag[GW_ASK_ETAG_MAX]; /* the ETag of the copy in question */
        bool answered; /* for the next lookup only: the copy is not revalidated again */
        bool stale;    /* for the next lookup only: no answer came, the copy is served stale */
    } reval;
    struct gw_ask ask;        /* a HEAD in flight: revalidation or authorization (ask.c) */
    struct upload *upload;    /* the pass-through transfer (proxy.c) */
    struct gw_blocks *blocks; /* a large object read by blocks (blocks.c), or NULL */
    struct gw_zc_held *zc;    /* the view of a hit sent from the data file (zerocopy.c), or NULL */
    /* An admin API request body, collected whole (bounded by GW_ADMIN_BODY_MAX; admin.c). */
    struct {
        struct sc_buf body; /* its err is SC_ETOOBIG (or SC_ENOMEM) once it could not keep all */
    } admin;
    struct gw_cleanup cleanups[GW_CLEANUPS_MAX]; /* run in reverse order (req.h) */
    unsigned n_cleanups;
};

#endif
