/*
 * upstream.c - the libcurl multi client to the upstream (see upstream.h).
 *
 * Threading: everything that touches curl runs on one thread, the loop in
 * upstream_thread(). Other threads talk to it only through a small command
 * queue (submit, resume, cancel) followed by curl_multi_wakeup().
 */
#include "upstream.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../common/uri.h"
#include "../proto/digest.h"
#include "../sigv4/sigv4.h"
#include "../common/histogram.h"
#include "gate.h"
#include "resume.h"
#include "upsock.h"

#define EMPTY_SHA256     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MAX_RESP_HEADERS 128
#define MAX_HEADER_BYTES (64 * 1024)
#define TAIL_WATCH_MS    20 /* how long a body with no digest (digest.h) is watched for excess */

enum cmd_kind { CMD_SUBMIT, CMD_RESUME, CMD_CANCEL };

struct cmd {
    enum cmd_kind kind;
    up_req *req;
    struct cmd *next;
};

struct upstream {
    struct up_config cfg;
    char *base_url;  /* scheme://authority */
    char *host;      /* authority, sent and signed as Host */
    char *base_path; /* path prefix of the base URL, "" if none */
    char *region;
    struct creds *creds; /* our copy; NULL: anonymous */
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t mu; /* guards cmds and stopping */
    struct cmd *cmds, *cmds_tail;
    bool stopping;
    up_req *waiting;  /* requests waiting to be retried (loop thread only) */
    up_req *live;     /* every started, unfinished request (loop thread only) */
    up_req *watching; /* held after their last byte, watched for excess (loop thread only) */
    atomic_long last_answer_ms;      /* when an upstream response head last arrived */
    atomic_long last_unreachable_ms; /* when a request last failed without any response */
    atomic_uint_fast64_t retries;    /* attempts scheduled again */
    atomic_uint_fast64_t failures;   /* requests that ended in an error (not canceled) */
    atomic_uint_fast64_t peer_attempts, peer_fallbacks, peer_resumes; /* see up_metrics */
    struct sc_hist head_latency; /* from an attempt's start to its response head */
    struct upsock_table socks;   /* every open upstream socket (loop thread only) */
    struct gates gates;          /* connections per destination, waiters in order (loop thread) */
    struct sc_hist gate_wait;    /* seconds an attempt waited for a connection slot */
};

struct up_req {
    upstream *up;
    atomic_int refs;
    /* The request, copied at submission. */
    char *method;
    char *path;  /* encoded path, as sent and signed */
    char *query; /* canonical query, as sent and signed; "" if none */
    struct http_header *fwd;
    size_t n_fwd;
    int64_t body_length;
    int64_t body_sent; /* request body bytes handed to curl in this attempt */
    bool body_short;   /* the request body ended before body_length: the transfer aborted */
    bool idempotent;
    bool exact_length;
    struct up_identity as;
    struct up_handler h;
    void *arg;
    /* Loop-thread state. */
    CURL *easy;
    struct curl_slist *send_headers;
    unsigned attempt;
    bool delivered; /* on_head has run: no more retries */
    bool discard;   /* this attempt's response is being thrown away for a retry */
    bool finished;  /* on_done has run */
    bool in_multi;
    struct gate_entry slot;        /* this attempt's connection slot, or its place in line */
    bool live;                     /* linked into upstream.live */
    bool paused;                   /* waiting on our side (client slow, or body not ready) */
    bool excess;                   /* the upstream sent more than its Content-Length */
    bool watch_tail;               /* no digest to check: hold the last byte, watch for excess */
    bool tail_held;                /* the last body bytes went to on_body; curl holds them paused */
    bool in_watch;                 /* linked into upstream.watching */
    long tail_until_ms;            /* when the watch ends */
    struct timespec attempt_start; /* for the head latency */
    curl_socket_t fd;              /* this attempt's connection, for exact_length over plain http */
    up_req *next_watching;
    int64_t body_expected; /* the final response's Content-Length, or -1 */
    int64_t body_seen;     /* body bytes handed to on_body */
    curl_off_t last_moved; /* bytes moved at the last progress check */
    long last_progress_ms; /* when bytes last moved, or the transfer was last paused */
    struct http_header resp[MAX_RESP_HEADERS];
    size_t n_resp;
    size_t resp_bytes;
    long retry_at_ms;
    up_req *next_waiting;
    up_req *prev_live, *next_live;
    /* The fleet peer asked first (upstream.h). */
    char *peer;         /* its base URL, or NULL */
    char *peer_path;    /* the path-style path it is sent ("/bucket/key", encoded) */
    bool at_peer;       /* this attempt goes to the peer */
    bool peer_only;     /* the peer alone: never the bucket (up_request.peer_only) */
    bool peer_bad;      /* this peer attempt's head says the peer failed (5xx, refused) */
    bool peer_told;     /* the peer's outcome went to the fleet */
    double peer_head_s; /* seconds from the peer attempt's start to its head */
    /* Resuming from the bucket after the peer died mid-body. */
    bool resumable;      /* the head handed over names a span and a version (span, etag) */
    struct up_span span; /* the bytes that head announced */
    char *etag;          /* its ETag */
    bool resuming;       /* this attempt is the resume: its head is checked, not handed over */
    bool resume_ok;      /* this attempt's head proved the rest of the span */
    bool resume_bad;     /* it did not: the transfer fails (SC_EMISMATCH) */
};

bool up_identity_same(const struct up_identity *a, const struct up_identity *b)
{
    return a->anonymous == b->anonymous && (a->anonymous || a->creds == b->creds);
}

sc_code up_identity_name(const struct up_identity *as, char *out, size_t cap)
{
    int n = as->anonymous       ? snprintf(out, cap, "anonymous")
            : as->creds == NULL ? snprintf(out, cap, "gateway")
                                : snprintf(out, cap, "key:%s", creds_access_key(as->creds));
    return n > 0 && (size_t)n < cap ? SC_OK : SC_EINVAL;
}

sc_code up_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? SC_OK : SC_EIO;
}

void up_global_cleanup(void)
{
    curl_global_cleanup();
}

/* ---- request lifetime ------------------------------------------------- */

static void free_resp_headers(up_req *r)
{
    for (size_t i = 0; i < r->n_resp; i++) {
        free((char *)r->resp[i].name);
        free((char *)r->resp[i].value);
    }
    r->n_resp = 0;
    r->resp_bytes = 0;
}

static void req_free(up_req *r)
{
    if (r->easy)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->send_headers);
    free_resp_headers(r);
    http_headers_free(r->fwd, r->n_fwd);
    free(r->method);
    free(r->path);
    free(r->query);
    free(r->peer);
    free(r->peer_path);
    free(r->etag);
    free(r);
}

void up_req_release(up_req *r)
{
    if (r != NULL && atomic_fetch_sub(&r->refs, 1) == 1)
        req_free(r);
}

static void link_live(up_req *r)
{
    upstream *up = r->up;
    r->live = true;
    r->next_live = up->live;
    if (up->live)
        up->live->prev_live = r;
    up->live = r;
}

static void unlink_live(up_req *r)
{
    if (!r->live)
        return;
    r->live = false;
    if (r->prev_live)
        r->prev_live->next_live = r->next_live;
    else
        r->up->live = r->next_live;
    if (r->next_live)
        r->next_live->prev_live = r->prev_live;
    r->prev_live = r->next_live = NULL;
}

static void unlink_watching(upstream *up, up_req *r)
{
    for (up_req **pp = &up->watching; *pp; pp = &(*pp)->next_watching)
        if (*pp == r) {
            *pp = r->next_watching;
            r->in_watch = false;
            return;
        }
}

static void tell_fleet(up_req *r, bool failed);

static void req_finish(up_req *r, sc_code rc)
{
    if (r->finished)
        return;
    r->finished = true;
    if (r->at_peer && r->delivered)
        tell_fleet(r, rc != SC_OK && rc != SC_ECANCELED); /* canceled: the caller left */
    unlink_live(r);
    if (r->in_watch)
        unlink_watching(r->up, r);
    if (r->in_multi) {
        curl_multi_remove_handle(r->up->multi, r->easy);
        r->in_multi = false;
    }
    gates_leave(&r->up->gates, &r->slot);
    r->h.on_done(r->arg, rc);
    up_req_release(r); /* the loop's reference */
}

/* ---- building and signing one attempt --------------------------------- */

/*
 * Appends "name: value" to list. An empty value is sent as "name;", libcurl's spelling of
 * a header with no value: "name:" would tell it to send no such header at all.
 */
static sc_code add_header(struct curl_slist **list, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 3;
    char *line = malloc(len);
    if (line == NULL)
        return SC_ENOMEM;
    if (*value == '\0')
        snprintf(line, len, "%s;", name);
    else
        snprintf(line, len, "%s: %s", name, value);
    struct curl_slist *grown = curl_slist_append(*list, line);
    free(line);
    if (grown == NULL)
        return SC_ENOMEM;
    *list = grown;
    return SC_OK;
}

static bool header_is_signed(const char *name)
{
    return strncasecmp(name, "x-amz-", 6) == 0 || strcasecmp(name, "content-md5") == 0 ||
           strcasecmp(name, "content-type") == 0;
}

/* Appends "Expect:" with nothing after the colon: curl sends no Expect, so no 100-continue
 * round trip. */
static sc_code add_no_expect(struct curl_slist **list)
{
    struct curl_slist *grown = curl_slist_append(*list, "Expect:");
    if (grown == NULL)
        return SC_ENOMEM;
    *list = grown;
    return SC_OK;
}

/*
 * The header list of a peer attempt: the forwarded headers and the fleet's (fleet.h), signed
 * over exactly the path, query, Range and If-Match sent. No Host of ours (curl names the
 * peer's) and no SigV4: the peer signs its own request to the bucket, as the identity says.
 */
static sc_code build_peer_headers(up_req *r, struct curl_slist **list)
{
    char identity[160], date[24], sig[65];
    sc_code rc = up_identity_name(&r->as, identity, sizeof(identity));
    if (rc != SC_OK)
        return rc;
    int64_t now = (int64_t)time(NULL);
    snprintf(date, sizeof(date), "%lld", (long long)now);
    struct fleet_signed what = {
        .method = r->method,
        .path = r->peer_path,
        .query = r->query,
        .identity = identity,
        .range = http_header_get(r->fwd, r->n_fwd, "Range"),
        .if_match = http_header_get(r->fwd, r->n_fwd, "If-Match"),
        .date = now,
    };
    rc = fleet_sign(r->up->cfg.fleet, &what, sig);
    if (rc == SC_OK)
        rc = add_header(list, FLEET_H_DATE, date);
    if (rc == SC_OK)
        rc = add_header(list, FLEET_H_IDENTITY, identity);
    if (rc == SC_OK)
        rc = add_header(list, FLEET_H_SIGNATURE, sig);
    for (size_t i = 0; rc == SC_OK && i < r->n_fwd; i++)
        rc = add_header(list, r->fwd[i].name, r->fwd[i].value);
    if (rc == SC_OK)
        rc = add_no_expect(list);
    return rc;
}

/* The header list of a bucket attempt: forwarded headers plus date, payload hash and
 * signature. */
static sc_code build_bucket_headers(up_req *r, struct curl_slist **out)
{
    upstream *up = r->up;
    struct curl_slist *list = NULL;
    char date[17];
    sigv4_amz_date(time(NULL), date);
    const char *payload = r->body_length < 0 ? EMPTY_SHA256 : "UNSIGNED-PAYLOAD";
    const struct creds *creds = r->as.anonymous ? NULL : r->as.creds ? r->as.creds : up->creds;
    bool sign = creds != NULL;
    struct sigv4_header signed_h[MAX_RESP_HEADERS];
    size_t n_signed = 0;
    sc_code rc = add_header(&list, "Host", up->host);

    signed_h[n_signed++] = (struct sigv4_header){"host", up->host};
    if (sign) {
        signed_h[n_signed++] = (struct sigv4_header){"x-amz-date", date};
        signed_h[n_signed++] = (struct sigv4_header){"x-amz-content-sha256", payload};
        if (creds_session_token(creds))
            signed_h[n_signed++] =
                (struct sigv4_header){"x-amz-security-token", creds_session_token(creds)};
        for (size_t i = 1; rc == SC_OK && i < n_signed; i++)
            rc = add_header(&list, signed_h[i].name, signed_h[i].value);
    }
    for (size_t i = 0; rc == SC_OK && i < r->n_fwd; i++) {
        rc = add_header(&list, r->fwd[i].name, r->fwd[i].value);
        if (sign && header_is_signed(r->fwd[i].name) && n_signed < SIGV4_MAX_HEADERS)
            signed_h[n_signed++] = (struct sigv4_header){r->fwd[i].name, r->fwd[i].value};
    }
    if (rc == SC_OK)
        rc = add_no_expect(&list);
    if (rc == SC_OK && sign) {
        char *auth = NULL;
        struct sigv4_request sr = {r->method, r->path, r->query, signed_h, n_signed, payload};
        rc = creds_authorization(creds, &sr, up->region, date, &auth);
        if (rc == SC_OK)
            rc = add_header(&list, "Authorization", auth);
        free(auth);
    }
    *out = list;
    return rc;
}

/* Builds the header list of one attempt, to the bucket or to a peer. */
static sc_code build_headers(up_req *r)
{
    struct curl_slist *list = NULL;
    sc_code rc = r->at_peer ? build_peer_headers(r, &list) : build_bucket_headers(r, &list);
    if (rc != SC_OK) {
        curl_slist_free_all(list);
        return rc;
    }
    curl_slist_free_all(r->send_headers);
    r->send_headers = list;
    return SC_OK;
}

static size_t on_curl_header(char *p, size_t size, size_t n, void *arg);
static size_t on_curl_write(char *p, size_t size, size_t n, void *arg);
static bool excess_pending(up_req *r);
static size_t on_curl_read(char *p, size_t size, size_t n, void *arg);

/*
 * Aborts a transfer that moved no byte for stall_timeout_s. libcurl's own low-speed check
 * averages over several seconds and counts time we paused the transfer ourselves.
 */
static int on_curl_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow)
{
    up_req *r = arg;
    long now = sc_now_ms();
    if (dlnow + ulnow != r->last_moved || r->paused) {
        r->last_moved = dlnow + ulnow;
        r->last_progress_ms = now;
        return 0;
    }
    long limit = r->at_peer ? r->up->cfg.peer_stall_timeout_ms : r->up->cfg.stall_timeout_s * 1000;
    return now - r->last_progress_ms > limit ? 1 : 0;
}

/* Learns which socket this attempt uses, just before the request goes out. */
static int on_curl_prereq(void *arg, char *primary_ip, char *local_ip, int primary_port,
                          int local_port)
{
    up_req *r = arg;
    r->fd = upsock_find(&r->up->socks, local_port);
    return CURL_PREREQFUNC_OK;
}

/* Bytes past Content-Length that arrive with the headers are reported only as an
 * informational line; a fill must fail (see also excess_pending()). */
static int on_curl_debug(CURL *e, curl_infotype type, char *text, size_t len, void *arg)
{
    up_req *r = arg;
    static const char excess[] = "Excess found";
    if (type == CURLINFO_TEXT && len >= sizeof(excess) - 1 &&
        memcmp(text, excess, sizeof(excess) - 1) == 0)
        r->excess = true;
    return 0;
}

static sc_code setup_easy(up_req *r)
{
    upstream *up = r->up;
    char *url = NULL;
    sc_code rc = build_headers(r);
    if (rc != SC_OK)
        return rc;
    const char *base = r->at_peer ? r->peer : up->base_url;
    const char *path = r->at_peer ? r->peer_path : r->path;
    bool plain_http = strncasecmp(base, "http://", 7) == 0;
    size_t len = strlen(base) + strlen(path) + strlen(r->query) + 2;
    url = malloc(len);
    if (url == NULL)
        return SC_ENOMEM;
    snprintf(url, len, "%s%s%s%s", base, path, *r->query ? "?" : "", r->query);
    if (r->easy == NULL)
        r->easy = curl_easy_init();
    else
        curl_easy_reset(r->easy);
    if (r->easy == NULL) {
        free(url);
        return SC_ENOMEM;
    }
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url); /* curl keeps its own copy */
    /* '.' and '..' are legal key segments: libcurl would remove them, and the upstream would
     * get another object than the one authorized, cached and signed (r->path). */
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->send_headers);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_curl_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_curl_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     r->at_peer ? up->cfg.peer_connect_timeout_ms : up->cfg.connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_curl_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, r);
    r->last_moved = 0;
    r->last_progress_ms = sc_now_ms();
    r->excess = false;
    r->tail_held = false;
    r->body_sent = 0;
    r->body_short = false;
    r->fd = CURL_SOCKET_BAD;
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, upsock_open);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &up->socks);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, upsock_close);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, &up->socks);
    if (r->exact_length && plain_http) {
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_curl_prereq);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
    }
    if (r->exact_length) {
        curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
        curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, on_curl_debug);
        curl_easy_setopt(e, CURLOPT_DEBUGDATA, r);
    }
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, up->cfg.insecure_tls ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, up->cfg.insecure_tls ? 0L : 2L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL); /* bytes exactly as stored upstream */
    if (strcmp(r->method, "HEAD") == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(r->method, "GET") != 0 || r->body_length >= 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method); /* CURLOPT_UPLOAD alone means PUT */
    if (r->body_length >= 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_length);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_curl_read);
        curl_easy_setopt(e, CURLOPT_READDATA, r);
    }
    return SC_OK;
}

/*
 * Puts the next attempt in line for a connection to where it goes (gate.h); the loop starts it
 * in admit_attempts(). An attempt that continues a request under way (the bucket after a
 * failed peer, a resume) goes to the front: its client has already waited its turn.
 */
static void queue_attempt(up_req *r, bool continuing)
{
    sc_code rc = gates_wait(&r->up->gates, &r->slot, r->at_peer ? r->peer : "", continuing);
    if (rc != SC_OK)
        req_finish(r, rc);
}

/* Starts an attempt that holds its connection slot. */
static void start_attempt(up_req *r)
{
    clock_gettime(CLOCK_MONOTONIC, &r->attempt_start);
    r->discard = false;
    r->peer_bad = false;
    r->resume_ok = false;
    r->resume_bad = false;
    free_resp_headers(r);
    sc_code rc = setup_easy(r);
    if (rc != SC_OK && r->at_peer &&
        !r->peer_only) { /* the peer attempt cannot be made (signing): the bucket */
        sc_warn("upstream %s %s: cannot ask the peer %s (%s): asking the bucket", r->method,
                r->path, r->peer, sc_strerror(rc));
        r->at_peer = false;
        atomic_fetch_add_explicit(&r->up->peer_fallbacks, 1, memory_order_relaxed);
        gates_leave(&r->up->gates, &r->slot); /* the slot was the peer's */
        queue_attempt(r, true);
        return;
    }
    if (rc == SC_OK && curl_multi_add_handle(r->up->multi, r->easy) != CURLM_OK)
        rc = SC_EUPSTREAM;
    if (rc != SC_OK) {
        req_finish(r, rc);
        return;
    }
    r->in_multi = true;
}

/* Starts every waiting attempt whose destination has a free connection slot, oldest first. */
static void admit_attempts(upstream *up)
{
    struct gate_entry *e;
    while ((e = gates_admit(&up->gates)) != NULL) {
        up_req *r = (up_req *)((char *)e - offsetof(up_req, slot));
        sc_hist_observe(&up->gate_wait, (double)(sc_now_ms() - e->since_ms) / 1000.0);
        start_attempt(r);
    }
}

/* ---- curl callbacks (loop thread) -------------------------------------- */

static bool status_is_retryable(long status)
{
    return status == 500 || status == 502 || status == 503 || status == 504;
}

/* Retries go to the bucket, before any head was handed over, or before a resume's head
 * answered (nothing of it handed over yet; an answer that is not the rest is final). */
static bool may_retry(const up_req *r)
{
    return r->idempotent && (!r->delivered || (r->resuming && !r->resume_ok && !r->resume_bad)) &&
           r->attempt < r->up->cfg.retries;
}

/* Whether a peer's head says the peer failed: its own 5xx (FLEET_H_FAILED) or a refused
 * signature. A 5xx without the mark is the bucket's, relayed by a healthy owner: the answer. */
static bool peer_head_failed(const up_req *r, long status)
{
    return (status >= 500 && http_header_get(r->resp, r->n_resp, FLEET_H_FAILED) != NULL) ||
           http_header_get(r->resp, r->n_resp, FLEET_H_REFUSED) != NULL;
}

/* Notes what a head handed over says for a resume: the span of its body and its version. */
static void note_resumable(up_req *r, const struct http_head *head)
{
    const char *etag = http_header_get(head->headers, head->n_headers, "ETag");
    const char *cr = http_header_get(head->headers, head->n_headers, "Content-Range");
    r->resumable = strcmp(r->method, "GET") == 0 && etag != NULL && *etag != '\0' &&
                   up_span_of_head(head->status, cr, head->content_length, &r->span) &&
                   (r->etag = strdup(etag)) != NULL;
}

static void deliver_head(up_req *r, long status)
{
    const char *cl = http_header_get(r->resp, r->n_resp, "content-length");
    int64_t length = -1;
    if (cl != NULL) {
        char *end;
        long long v = strtoll(cl, &end, 10);
        if (end != cl && *end == '\0' && v >= 0)
            length = v;
    }
    struct http_head head = {status, r->resp, r->n_resp, length};
    if (r->at_peer) {
        r->peer_head_s = sc_seconds_since(&r->attempt_start);
        note_resumable(r, &head);
    } else {
        atomic_store(&r->up->last_answer_ms, sc_now_ms());
        sc_hist_observe(&r->up->head_latency, sc_seconds_since(&r->attempt_start));
    }
    r->delivered = true;
    r->body_expected = length;
    r->body_seen = 0;
    r->watch_tail = r->exact_length && length > 0 && !digest_offered(r->resp, r->n_resp);
    r->h.on_head(r->arg, &head);
}

/*
 * A resume's head: exactly the rest of the span of the version handed over, or a retryable
 * status to try again; anything else (a 412: the object changed) fails the transfer.
 */
static bool check_resume_head(up_req *r, long status)
{
    if (status_is_retryable(status) && may_retry(r)) {
        r->discard = true;
        return true;
    }
    const char *cr = http_header_get(r->resp, r->n_resp, "Content-Range");
    const char *etag = http_header_get(r->resp, r->n_resp, "ETag");
    const char *cl = http_header_get(r->resp, r->n_resp, "Content-Length");
    int64_t length = cl != NULL ? strtoll(cl, NULL, 10) : -1;
    r->resume_ok =
        up_resume_proves(&r->span, (uint64_t)r->body_seen, r->etag, status, cr, length, etag);
    r->resume_bad = !r->resume_ok && status < 500; /* a 5xx left after retries: no verdict */
    if (r->resume_bad)
        sc_warn("upstream %s %s: resuming at byte %lld after the peer failed, the bucket "
                "answered status %ld that is not the rest of version %s",
                r->method, r->path, (long long)r->body_seen, status, r->etag);
    return r->resume_ok;
}

/* The final head of an attempt: thrown away (a peer failure, a status to retry), checked (a
 * resume), or handed over. False aborts the transfer. */
static bool on_final_head(up_req *r, long status)
{
    if (r->at_peer && peer_head_failed(r, status) && !r->peer_only) {
        r->peer_bad = true;
        r->discard = true;
        return true;
    }
    if (r->resuming)
        return check_resume_head(r, status);
    /* at a peer, a 5xx not its own is the bucket's after the owner's retries: handed over */
    if (status_is_retryable(status) && may_retry(r) && !r->at_peer) {
        r->discard = true;
        return true;
    }
    deliver_head(r, status);
    return true;
}

/* Collects one header line; at the blank line after a final status, hands the head over. */
static size_t on_curl_header(char *p, size_t size, size_t n, void *arg)
{
    up_req *r = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        free_resp_headers(r);
        return len;
    }
    if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200)
            return len; /* interim response: the final one follows */
        return on_final_head(r, status) ? len : 0;
    }
    const char *colon = memchr(p, ':', len);
    if (colon == NULL)
        return len; /* not a header: ignore */
    r->resp_bytes += len;
    if (r->n_resp == MAX_RESP_HEADERS || r->resp_bytes > MAX_HEADER_BYTES)
        return 0; /* abort: a hostile or broken upstream */
    const char *v = colon + 1, *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    char *name = strndup(p, (size_t)(colon - p));
    char *value = strndup(v, (size_t)(end - v));
    if (name == NULL || value == NULL) {
        free(name);
        free(value);
        return 0;
    }
    r->resp[r->n_resp++] = (struct http_header){name, value};
    return len;
}

/*
 * Keeps the connection of a transfer whose last byte has arrived, for TAIL_WATCH_MS: an
 * upstream that announced less than it sends may still be sending, and without an MD5
 * ETag or full-object checksum (digest.h) nothing else would tell. The bytes were delivered;
 * pausing makes curl hold them (and the connection) until watch_tails() lets go.
 */
static size_t hold_tail(up_req *r)
{
    r->tail_held = true;
    r->in_watch = true;
    r->tail_until_ms = sc_now_ms() + TAIL_WATCH_MS;
    r->next_watching = r->up->watching;
    r->up->watching = r;
    return CURL_WRITEFUNC_PAUSE;
}

static size_t on_curl_write(char *p, size_t size, size_t n, void *arg)
{
    up_req *r = arg;
    size_t len = size * n;
    if (r->discard || r->tail_held)
        return len; /* thrown away, or the held last bytes handed back by curl_easy_pause */
    if (!r->delivered || (r->resuming && !r->resume_ok))
        return 0; /* body before a head: impossible with HTTP, refuse */
    if (r->h.on_body(r->arg, p, len)) {
        r->body_seen += (int64_t)len;
        /* Probe for excess while the connection is still this transfer's: once the
         * transfer is done libcurl may hand the connection to the next request. */
        if (r->exact_length && r->body_seen == r->body_expected) {
            if (excess_pending(r))
                r->excess = true;
            else if (r->watch_tail)
                return hold_tail(r);
        }
        return len;
    }
    r->paused = true;
    return CURL_WRITEFUNC_PAUSE;
}

/*
 * Hands curl at most the body bytes still due under the announced length. A body that
 * ends short aborts the transfer, which closes the connection: the upstream would
 * otherwise take the start of the next request on it as the rest of this body.
 */
static size_t on_curl_read(char *p, size_t size, size_t n, void *arg)
{
    up_req *r = arg;
    size_t cap = size * n;
    if ((uint64_t)cap > (uint64_t)(r->body_length - r->body_sent))
        cap = (size_t)(r->body_length - r->body_sent);
    if (cap == 0)
        return 0; /* all announced bytes are sent */
    size_t got = r->h.read_body(r->arg, p, cap);
    if (got == UP_READ_PAUSE) {
        r->paused = true;
        return CURL_READFUNC_PAUSE;
    }
    if (got == 0) {
        r->body_short = true;
        return CURL_READFUNC_ABORT;
    }
    r->body_sent += (int64_t)got;
    return got;
}

/* ---- the loop ----------------------------------------------------------- */

static void schedule_retry(up_req *r)
{
    upstream *up = r->up;
    unsigned cap = 50u << (r->attempt < 5 ? r->attempt : 5); /* 50 ms .. 1.6 s */
    r->attempt++;
    r->retry_at_ms = sc_now_ms() + (long)(cap / 2 + (unsigned)rand() % (cap / 2 + 1));
    r->next_waiting = up->waiting;
    up->waiting = r;
}

static sc_code translate_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_OK:
        return SC_OK;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_ABORTED_BY_CALLBACK: /* the stall check in on_curl_progress() */
        return SC_ETIMEOUT;
    case CURLE_OUT_OF_MEMORY:
        return SC_ENOMEM;
    default:
        return SC_EUPSTREAM;
    }
}

/*
 * True if bytes beyond the response wait on its connection: the upstream sent more than its
 * Content-Length. libcurl reads no further than the announced length, so this looks at the
 * socket itself (best effort: excess still in flight is not seen).
 */
static bool excess_pending(up_req *r)
{
    char probe;
    return r->fd != CURL_SOCKET_BAD && recv(r->fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/* Tells the fleet how the peer attempt went, once. */
static void tell_fleet(up_req *r, bool failed)
{
    if (r->peer_told)
        return;
    r->peer_told = true;
    if (failed)
        fleet_peer_failed(r->up->cfg.fleet, r->peer);
    else
        fleet_peer_answered(r->up->cfg.fleet, r->peer, r->peer_head_s, (uint64_t)r->body_seen);
}

/* Replaces the forwarded Range and If-Match (and the checksum mode, which a range does not
 * answer) with the resume's: the rest of the span, of the version handed over. */
static sc_code resume_headers(up_req *r)
{
    char range[UP_RESUME_RANGE_LEN];
    if (!up_resume_range(&r->span, (uint64_t)r->body_seen, range, sizeof(range)))
        return SC_EINVAL;
    struct http_header kept[r->n_fwd + 2];
    size_t n = 0;
    for (size_t i = 0; i < r->n_fwd; i++)
        if (strcasecmp(r->fwd[i].name, "Range") != 0 &&
            strcasecmp(r->fwd[i].name, "If-Match") != 0 &&
            strcasecmp(r->fwd[i].name, DIGEST_MODE_HEADER) != 0)
            kept[n++] = r->fwd[i];
    kept[n++] = (struct http_header){"Range", range};
    kept[n++] = (struct http_header){"If-Match", r->etag};
    struct http_header *fwd = NULL;
    size_t n_fwd = 0;
    sc_code rc = http_headers_copy(kept, n, &fwd, &n_fwd);
    if (rc != SC_OK)
        return rc;
    http_headers_free(r->fwd, r->n_fwd);
    r->fwd = fwd;
    r->n_fwd = n_fwd;
    return SC_OK;
}

/*
 * A peer attempt ended in a failure (cc, or a head that says the peer failed). Before a head
 * was handed over, the request goes on to the bucket at once; after, a resumable body is
 * resumed from the bucket where it stopped. True when a bucket attempt was queued.
 */
static bool leave_peer(up_req *r, CURLcode cc)
{
    upstream *up = r->up;
    tell_fleet(r, true);
    if (r->peer_only)
        return false; /* the peer alone: its failure is the request's */
    r->at_peer = false;
    if (!r->delivered) {
        sc_debug("upstream %s %s: the peer %s failed (%s), asking the bucket", r->method, r->path,
                 r->peer, r->peer_bad ? "its answer" : curl_easy_strerror(cc));
        atomic_fetch_add_explicit(&up->peer_fallbacks, 1, memory_order_relaxed);
        queue_attempt(r, true);
        return true;
    }
    if (!r->resumable || r->excess || resume_headers(r) != SC_OK)
        return false;
    sc_info("upstream %s %s: the peer %s failed at byte %lld (%s), resuming from the bucket",
            r->method, r->path, r->peer, (long long)r->body_seen, curl_easy_strerror(cc));
    atomic_fetch_add_explicit(&up->peer_resumes, 1, memory_order_relaxed);
    r->resuming = true;
    queue_attempt(r, true);
    return true;
}

static void on_transfer_done(up_req *r, CURLcode cc)
{
    curl_multi_remove_handle(r->up->multi, r->easy);
    r->in_multi = false;
    gates_leave(&r->up->gates, &r->slot);
    bool failed = cc != CURLE_OK || r->discard;
    if (r->at_peer && failed && leave_peer(r, cc))
        return;
    if (failed && may_retry(r)) {
        sc_debug("upstream %s %s: attempt %u failed (%s), retrying", r->method, r->path,
                 r->attempt + 1, r->discard ? "retryable status" : curl_easy_strerror(cc));
        atomic_fetch_add_explicit(&r->up->retries, 1, memory_order_relaxed);
        schedule_retry(r);
        return;
    }
    if (cc == CURLE_OK && !r->delivered && (!r->at_peer || r->peer_only)) {
        /* The retried status (or a peer-only request's failing one) was the last word: hand it
         * over as is. */
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        deliver_head(r, status);
    }
    if (cc != CURLE_OK)
        sc_warn("upstream %s %s failed: %s", r->method, r->path, curl_easy_strerror(cc));
    sc_code rc = translate_curl(cc);
    if (r->resuming && !r->resume_ok) /* the bucket's answer was not the rest of the body */
        rc = r->resume_bad ? SC_EMISMATCH : rc == SC_OK ? SC_EUPSTREAM : rc;
    if (rc != SC_OK && !r->delivered)
        atomic_store(&r->up->last_unreachable_ms, sc_now_ms());
    if (rc != SC_OK || r->excess)
        atomic_fetch_add_explicit(&r->up->failures, 1, memory_order_relaxed);
    if (r->body_short) {
        sc_warn("upstream %s %s: the request body ended short of its length", r->method, r->path);
        rc = SC_EMISMATCH;
    }
    if (rc == SC_OK && r->excess) {
        sc_warn("upstream %s %s sent more bytes than its Content-Length", r->method, r->path);
        rc = SC_EMISMATCH;
    }
    req_finish(r, rc);
}

/* Ends the watches that are due or that saw excess; lowers *timeout to the next end. */
static void watch_tails(upstream *up, long *timeout)
{
    long now = sc_now_ms();
    up_req **pp = &up->watching;
    while (*pp) {
        up_req *r = *pp;
        if (excess_pending(r))
            r->excess = true;
        if (r->excess || r->tail_until_ms <= now) {
            *pp = r->next_watching;
            r->in_watch = false;
            curl_easy_pause(r->easy, CURLPAUSE_CONT); /* curl hands back the held bytes */
            continue;
        }
        if (r->tail_until_ms - now < *timeout)
            *timeout = r->tail_until_ms - now;
        pp = &r->next_watching;
    }
}

static void run_due_retries(upstream *up, long *timeout)
{
    long now = sc_now_ms();
    up_req **pp = &up->waiting;
    while (*pp) {
        up_req *r = *pp;
        if (r->retry_at_ms <= now) {
            *pp = r->next_waiting;
            queue_attempt(r, false);
            continue;
        }
        if (r->retry_at_ms - now < *timeout)
            *timeout = r->retry_at_ms - now;
        pp = &r->next_waiting;
    }
}

static void unlink_waiting(upstream *up, up_req *r)
{
    for (up_req **pp = &up->waiting; *pp; pp = &(*pp)->next_waiting)
        if (*pp == r) {
            *pp = r->next_waiting;
            return;
        }
}

static void run_command(upstream *up, struct cmd *c)
{
    up_req *r = c->req;
    switch (c->kind) {
    case CMD_SUBMIT:
        link_live(r);
        queue_attempt(r, false);
        break;
    case CMD_RESUME:
        if (!r->finished && r->in_multi && !r->in_watch) {
            r->paused = false;
            r->last_progress_ms = sc_now_ms();
            curl_easy_pause(r->easy, CURLPAUSE_CONT);
        }
        break;
    case CMD_CANCEL:
        if (!r->finished) {
            unlink_waiting(up, r);
            req_finish(r, SC_ECANCELED);
        }
        break;
    }
}

/* Runs queued commands; returns false once stopping. */
static bool run_commands(upstream *up)
{
    pthread_mutex_lock(&up->mu);
    struct cmd *list = up->cmds;
    up->cmds = up->cmds_tail = NULL;
    bool stopping = up->stopping;
    pthread_mutex_unlock(&up->mu);
    while (list) {
        struct cmd *c = list;
        list = c->next;
        if (stopping && c->kind == CMD_SUBMIT)
            c->kind = CMD_CANCEL;
        run_command(up, c);
        up_req_release(c->req);
        free(c);
    }
    return !stopping;
}

static void cancel_everything(upstream *up)
{
    up->waiting = NULL;
    up->watching = NULL;
    while (up->live)
        req_finish(up->live, SC_ECANCELED);
}

static void *upstream_thread(void *arg)
{
    upstream *up = arg;
    for (;;) {
        if (!run_commands(up))
            break;
        admit_attempts(up);
        int running = 0;
        curl_multi_perform(up->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(up->multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            up_req *r = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            on_transfer_done(r, msg->data.result);
        }
        long timeout = 1000;
        run_due_retries(up, &timeout); /* after the transfers above may have scheduled some */
        admit_attempts(up);            /* into the slots the finished transfers freed */
        watch_tails(up, &timeout);
        long curl_timeout = -1;
        curl_multi_timeout(up->multi, &curl_timeout);
        if (curl_timeout >= 0 && curl_timeout < timeout)
            timeout = curl_timeout;
        curl_multi_poll(up->multi, NULL, 0, (int)timeout, NULL);
    }
    cancel_everything(up);
    return NULL;
}

/* ---- public API ----------------------------------------------------------- */

void up_get_metrics(upstream *up, struct up_metrics *m)
{
    m->retries = atomic_load_explicit(&up->retries, memory_order_relaxed);
    m->failures = atomic_load_explicit(&up->failures, memory_order_relaxed);
    m->peer_attempts = atomic_load_explicit(&up->peer_attempts, memory_order_relaxed);
    m->peer_fallbacks = atomic_load_explicit(&up->peer_fallbacks, memory_order_relaxed);
    m->peer_resumes = atomic_load_explicit(&up->peer_resumes, memory_order_relaxed);
    m->head_latency = &up->head_latency;
    m->waiting = gates_waiting(&up->gates);
    m->wait = &up->gate_wait;
}

bool up_reachable(upstream *up)
{
    return atomic_load(&up->last_unreachable_ms) <= atomic_load(&up->last_answer_ms);
}

static sc_code queue_cmd(upstream *up, enum cmd_kind kind, up_req *r)
{
    struct cmd *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return SC_ENOMEM;
    c->kind = kind;
    c->req = r;
    pthread_mutex_lock(&up->mu);
    if (up->stopping) {
        /* After upstream_stop() every request has finished: nothing to resume or cancel. */
        pthread_mutex_unlock(&up->mu);
        free(c);
        return kind == CMD_SUBMIT ? SC_ECANCELED : SC_OK;
    }
    atomic_fetch_add(&r->refs, 1);
    if (up->cmds_tail)
        up->cmds_tail->next = c;
    else
        up->cmds = c;
    up->cmds_tail = c;
    pthread_mutex_unlock(&up->mu);
    curl_multi_wakeup(up->multi);
    return SC_OK;
}

void up_req_resume(up_req *r)
{
    if (queue_cmd(r->up, CMD_RESUME, r) != SC_OK)
        sc_err("upstream: out of memory queueing a resume");
}

void up_req_cancel(up_req *r)
{
    if (queue_cmd(r->up, CMD_CANCEL, r) != SC_OK)
        sc_err("upstream: out of memory queueing a cancel");
}

/* The wire path: base path, then the bucket and key percent-encoded as S3 canonicalizes them. */
static sc_code build_path(const char *base_path, const struct up_request *q, char **out)
{
    char *bucket = NULL, *key = NULL;
    sc_code rc = uri_encode(q->bucket, strlen(q->bucket), false, &bucket);
    if (rc == SC_OK && q->key && *q->key)
        rc = uri_encode(q->key, strlen(q->key), true, &key);
    if (rc == SC_OK) {
        size_t len = strlen(base_path) + strlen(bucket) + (key ? strlen(key) : 0) + 3;
        *out = malloc(len);
        if (*out == NULL)
            rc = SC_ENOMEM;
        else if (*bucket)
            snprintf(*out, len, "%s/%s%s%s", base_path, bucket, key ? "/" : "", key ? key : "");
        else
            snprintf(*out, len, "%s/", base_path);
    }
    free(bucket);
    free(key);
    return rc;
}

/* The fleet peer to ask first, path-style on its base URL: only a GET or HEAD without a body
 * of a named bucket, and only with a fleet to sign it; a peer_only request, anything. */
static sc_code copy_peer(up_req *r, const struct up_request *q)
{
    bool has_peer = q->peer != NULL && *q->peer != '\0' && r->up->cfg.fleet != NULL;
    if (q->peer_only && !has_peer)
        return SC_EINVAL;
    bool askable = has_peer && q->body_length < 0 && *q->bucket != '\0' &&
                   (strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0);
    r->peer_only = q->peer_only;
    if (!askable && !q->peer_only)
        return SC_OK;
    r->peer = strdup(q->peer);
    if (r->peer == NULL)
        return SC_ENOMEM;
    r->at_peer = true;
    return build_path("", q, &r->peer_path);
}

static sc_code copy_request(up_req *r, const struct up_request *q)
{
    sc_code rc = build_path(r->up->base_path, q, &r->path);
    if (rc == SC_OK)
        rc = copy_peer(r, q);
    if (rc != SC_OK)
        return rc;
    rc = sigv4_forwarded_query(q->query ? q->query : "", &r->query);
    if (rc != SC_OK)
        return rc;
    r->method = strdup(q->method);
    if (r->method == NULL)
        return SC_ENOMEM;
    rc = http_headers_copy(q->headers, q->n_headers, &r->fwd, &r->n_fwd);
    if (rc != SC_OK)
        return rc;
    r->body_length = q->body_length;
    r->idempotent = q->idempotent && q->body_length < 0 && !q->peer_only;
    r->exact_length = q->exact_length;
    r->as = q->as;
    return SC_OK;
}

sc_code up_submit(upstream *up, const struct up_request *q, const struct up_handler *h, void *arg,
                  up_req **out)
{
    up_req *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return SC_ENOMEM;
    r->up = up;
    atomic_init(&r->refs, 1);
    r->h = *h;
    r->arg = arg;
    sc_code rc = copy_request(r, q);
    if (rc != SC_OK) {
        req_free(r);
        return rc;
    }
    if (out) {
        atomic_fetch_add(&r->refs, 1);
        *out = r;
    }
    bool at_peer = r->at_peer; /* r may be gone once queued, if the caller keeps no reference */
    rc = queue_cmd(up, CMD_SUBMIT, r);
    if (rc == SC_OK && at_peer)
        atomic_fetch_add_explicit(&up->peer_attempts, 1, memory_order_relaxed);
    if (rc != SC_OK) {
        if (out) {
            *out = NULL;
            up_req_release(r);
        }
        up_req_release(r);
    }
    return rc;
}

/* Splits base_url into scheme://authority and a path prefix. */
static sc_code parse_base(upstream *up, const char *url)
{
    const char *auth = strstr(url, "://");
    if (auth == NULL)
        return SC_EINVAL;
    auth += 3;
    const char *slash = strchr(auth, '/');
    size_t auth_len = slash ? (size_t)(slash - auth) : strlen(auth);
    if (auth_len == 0 || memchr(auth, '@', auth_len))
        return SC_EINVAL;
    up->base_url = strndup(url, (size_t)(auth - url) + auth_len);
    up->host = strndup(auth, auth_len);
    up->base_path = strdup(slash ? slash : "");
    if (!up->base_url || !up->host || !up->base_path)
        return SC_ENOMEM;
    size_t n = strlen(up->base_path);
    while (n > 0 && up->base_path[n - 1] == '/')
        up->base_path[--n] = '\0';
    return SC_OK;
}

static sc_code copy_creds(upstream *up, const struct creds *c)
{
    return c == NULL ? SC_OK : creds_copy(c, &up->creds);
}

static void upstream_destroy(upstream *up)
{
    if (up->multi)
        curl_multi_cleanup(up->multi); /* closes the sockets, through upsock_close() */
    upsock_table_free(&up->socks);
    gates_destroy(&up->gates);
    creds_free(up->creds);
    free(up->base_url);
    free(up->host);
    free(up->base_path);
    free(up->region);
    pthread_mutex_destroy(&up->mu);
    free(up);
}

sc_code upstream_start(const struct up_config *cfg, upstream **out)
{
    upstream *up = calloc(1, sizeof(*up));
    if (up == NULL)
        return SC_ENOMEM;
    pthread_mutex_init(&up->mu, NULL);
    up->cfg = *cfg;
    sc_code rc = parse_base(up, cfg->base_url);
    if (rc == SC_OK)
        rc = copy_creds(up, cfg->creds);
    if (rc == SC_OK && (up->region = strdup(cfg->region)) == NULL)
        rc = SC_ENOMEM;
    if (rc == SC_OK && (up->multi = curl_multi_init()) == NULL)
        rc = SC_EUPSTREAM;
    if (rc == SC_OK) {
        up->cfg.base_url = up->base_url;
        up->cfg.region = up->region;
        up->cfg.creds = NULL;
        if (up->cfg.peer_connect_timeout_ms <= 0)
            up->cfg.peer_connect_timeout_ms = UP_PEER_CONNECT_TIMEOUT_MS;
        if (up->cfg.peer_stall_timeout_ms <= 0)
            up->cfg.peer_stall_timeout_ms = UP_PEER_STALL_TIMEOUT_MS;
        if (up->cfg.max_connections == 0)
            up->cfg.max_connections = UP_MAX_CONNECTIONS;
        gates_init(&up->gates, up->cfg.max_connections);
        /* The gates keep each destination at max_connections; curl's cap only backs them up. */
        curl_multi_setopt(up->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)up->cfg.max_connections);
        curl_multi_setopt(up->multi, CURLMOPT_MAXCONNECTS, (long)up->cfg.max_connections);
        if (pthread_create(&up->thread, NULL, upstream_thread, up) != 0)
            rc = SC_ENOMEM;
    }
    if (rc != SC_OK) {
        upstream_destroy(up);
        return rc;
    }
    *out = up;
    return SC_OK;
}

void upstream_stop(upstream *up)
{
    if (up == NULL)
        return;
    pthread_mutex_lock(&up->mu);
    bool running = !up->stopping;
    up->stopping = true;
    pthread_mutex_unlock(&up->mu);
    if (!running)
        return;
    curl_multi_wakeup(up->multi);
    pthread_join(up->thread, NULL);
    run_commands(up); /* release what was queued during the last round */
}

void upstream_free(upstream *up)
{
    if (up == NULL)
        return;
    upstream_stop(up);
    upstream_destroy(up);
}
