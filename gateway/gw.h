/*
 * gw.h - the gateway's shared context and the state of one request.
 *
 * struct gw is built once in main.c and passed to every part of the request
 * path; nothing in gateway/ keeps hidden globals. struct gw_req lives from
 * the moment libmicrohttpd reads a request line to the moment the response
 * is finished or the client is gone (server.c owns it).
 */
#ifndef GW_GW_H
#define GW_GW_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"
#include "auth.h"
#include "authz_cache.h"
#include "bucket_stats.h"
#include "../sigv4/client_keys.h"
#include "config.h"
#include "conn_guard.h"
#include "../upstream/fill.h"
#include "../manifest/manifest.h"
#include "metrics.h"
#include "../upstream/origin.h"
#include "../upstream/relay.h"
#include "revalidate.h"
#include "../proto/s3_target.h"
#include "../proto/s3_xml.h"
#include "../common/stats.h"
#include "../upstream/upstream.h"

struct gw {
    const struct gw_config *cfg;
    store *st;
    upstream *up;
    struct origin origin;
    fill_table *fills;
    mf_registry *manifests;
    struct sc_stats stats;
    struct gw_buckets buckets; /* object reads per bucket, for the status page */
    struct gw_metrics metrics;
    struct MHD_Daemon *daemon;
    conn_guard *guard;           /* ends slow clients (--header-timeout); NULL when off */
    ckeys *keys;                 /* --client-credentials; NULL: S3 requests are not verified */
    authz_cache *authz;          /* answers of authorization checks (auth.h); NULL without keys */
    bool listen_loopback;        /* the listener is on a loopback address */
    atomic_uint active_requests; /* started and not yet completed */
    atomic_bool draining;        /* shutting down: new requests are refused */
};

/* Where a request is in its life; the access handler resumes from here. */
enum gw_phase {
    GW_PHASE_NEW,        /* the request line and headers are in */
    GW_PHASE_ROUTE,      /* second call: decide and act (see server.c for why not the first) */
    GW_PHASE_UPLOAD,     /* pass-through: streaming the request body upstream */
    GW_PHASE_WAIT_HEAD,  /* waiting for the upstream's response head */
    GW_PHASE_REVALIDATE, /* waiting for the upstream to say whether a cached copy changed */
    GW_PHASE_AUTHZ,      /* waiting for the upstream to say whether this identity may read */
    GW_PHASE_RESPONDED,  /* a response is queued */
};

struct upload; /* proxy.c */

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
    /* Who sent it (auth.c); both unset when requests are not verified. */
    const struct ckey *client; /* the key that signed it, owned by g->keys */
    bool anonymous;            /* unsigned, admitted by --allow-anonymous */
    bool authorized;           /* the upstream says this identity may read the object */
    bool observed;             /* the read was reported to the manifests (once) */
    bool drain_body;           /* a request body that is read and dropped */
    enum gw_phase phase;
    const char *x_cache; /* HIT, MISS or BYPASS for object reads, else NULL */
    /* Reading a relay (a fill or a pass-through response). */
    fill *fill;
    relay *relay; /* the relay read: a fill's, or the pass-through's */
    struct relay_cursor cursor;
    struct relay_waiter waiter;
    uint64_t range_start, range_len;   /* the cursor's first position and bytes to send */
    bool ranged;                       /* a range of a miss fetched on its own, beside the fill */
    uint64_t want_start, want_len;     /* that range, in object offsets */
    struct upload *upload;             /* pass-through request body */
    struct gw_ask ask;                 /* a HEAD in flight: revalidation or authorization */
    char cached_etag[GW_ASK_ETAG_MAX]; /* revalidation: the ETag of the copy in question */
    /* An admin API request body, collected whole (bounded by GW_ADMIN_BODY_MAX). */
    char *body;
    size_t body_len, body_cap;
    bool body_too_big;
};

#define GW_ADMIN_BODY_MAX (64u * 1024u * 1024u)

/* Sends an S3 XML error and marks the request responded. Returns what the access handler returns.
 */
enum MHD_Result gw_respond_error(struct gw_req *q, int status, const char *code,
                                 const char *message);

/*
 * server.c: sends the S3 XML error of the gateway's error table (s3_xml.h) for e, with its
 * usual message, or message when one helps more. Every error the gateway answers itself
 * comes from the table.
 */
enum MHD_Result gw_respond_known_error(struct gw_req *q, enum s3_xml_error e, const char *message);

/* server.c: true for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. NULL is not loopback. */
bool gw_addr_is_loopback(const struct sockaddr *sa);

/* server.c: sa as text into out (INET6_ADDRSTRLEN bytes), an IPv4-mapped address as IPv4. */
void gw_addr_string(const struct sockaddr *sa, char *out, size_t len);

/*
 * server.c: a response of the len bytes at body, of content_type, that no client caches
 * (the gateway's own API and probes). With MHD_RESPMEM_MUST_FREE the response owns body,
 * also when it cannot be made (NULL: out of memory).
 */
struct MHD_Response *gw_buffer_response(const char *content_type, void *body, size_t len,
                                        enum MHD_ResponseMemoryMode mode);

/* What a 401 from the admin API asks for, in its WWW-Authenticate header. */
#define GW_ADMIN_CHALLENGE "Bearer realm=\"s3cached admin API\""

/* server.c: the client's address, or NULL if libmicrohttpd does not say. */
const struct sockaddr *gw_client_addr(struct gw_req *q);

/* Adds the headers every response carries: the request id (x-amz-request-id, x-amz-id-2), or,
 * when resp already has the upstream's, x-s3cached-request-id beside them. */
void gw_add_common_headers(struct gw_req *q, struct MHD_Response *resp);

/* Queues resp with status, adds common headers, destroys the caller's reference. */
enum MHD_Result gw_queue(struct gw_req *q, int status, struct MHD_Response *resp);

/* The relay_waiter callbacks that suspend and resume q's connection. */
void gw_waiter_init(struct gw_req *q);

/* Request paths (one file each). Each returns what the access handler returns. */
enum MHD_Result gw_serve_object(struct gw_req *q);      /* serve.c: GET/HEAD through the cache */
enum MHD_Result gw_serve_relay(struct gw_req *q);       /* serve.c: answer from a relay's head */
enum MHD_Result gw_serve_revalidated(struct gw_req *q); /* serve.c: after gw_reval_start() */
enum MHD_Result gw_proxy(struct gw_req *q, const char *upload_data, size_t *upload_size);
enum MHD_Result gw_admin(struct gw_req *q); /* admin.c: /_s3cached/... */
/* status_page.c: the status page's HTML with status (200, or 401: the page asks for the token) */
enum MHD_Result gw_status_page(struct gw_req *q, int status);
/*
 * web_origin.c: true (with the reason) if a browser sent q from another site (Sec-Fetch-Site,
 * an Origin not the gateway's own, Origin: null), or, with check_host, addressed it to a name
 * other than localhost, an IP address or the --vhost-domain (DNS rebinding). Guards the admin
 * API without a token, and S3 requests without --client-credentials.
 */
bool gw_from_other_site(struct gw_req *q, bool check_host, const char **why);
/* probe.c: GET /healthz, /readyz, /metrics, no query, not addressed to a --vhost-domain bucket */
bool gw_is_probe(const struct gw_req *q);
enum MHD_Result gw_probe(struct gw_req *q); /* probe.c */

/*
 * proxy.c: fetches bytes [start, start + len) of the request's object with an explicit
 * ranged GET, If-Match: etag (the version the fill serves), into a fresh windowed relay that
 * becomes q->relay (q->fill is kept).
 */
sc_code gw_proxy_fetch_range(struct gw_req *q, uint64_t start, uint64_t len, const char *etag);
/*
 * proxy.c: false if q's body would go upstream but q does not say how long it is
 * (Transfer-Encoding: chunked without a Content-Length, or aws-chunked without
 * x-amz-decoded-content-length). Needs q's target; reads only its headers.
 */
bool gw_proxy_length_known(struct gw_req *q);
/* proxy.c: after the upstream's head, drop cached copies the request changed. */
void gw_proxy_after_head(struct gw_req *q, long status);
/* proxy.c: ends the pass-through transfer of a request that is going away. */
void gw_proxy_cleanup(struct gw_req *q);
/* proxy.c: false for hop-by-hop and per-hop upstream response headers. */
bool proxy_passes_response_header(const char *name);

#endif
