/*
 * proxy.c - requests that are not cacheable reads go to the upstream as they are.
 *
 * The client's headers are forwarded minus the ones that belong to the
 * client's connection or to its signature; the upstream module re-signs with
 * the gateway's credentials, or the client's own (auth.h). Bodies stream both
 * ways through bounded buffers: an upload moves through a 256 KiB pipe (the
 * connection is suspended while the pipe is full, the transfer paused while it
 * is empty), and the response through a windowed relay. aws-chunked uploads are
 * decoded on the way, and sent upstream as a plain body of
 * x-amz-decoded-content-length bytes. The upstream never gets a body the client
 * is refused for: a body that fits the pipe is forwarded only once it is known
 * whole and well-formed (some stores, s3rver among them, keep what an aborted
 * PUT had sent), and a longer one streams but for its last byte, which waits
 * for the body's end (the final chunk and trailers): a bad end aborts the
 * transfer one byte short.
 *
 * What a write changes in the cache (its cached copies dropped before it goes, no fill of
 * them stored until it is over, the fleet's peers told) is proxy_write.c's; this file calls
 * it at the write's steps. A DeleteObjects answer is held until the keys it lists are
 * dropped too.
 *
 * A GET whose answer is an object's whole body (a version, other response
 * headers) is checked like a fill (digest.h): its last byte waits for the
 * verdict, and a body that fails reaches the client as a failed transfer.
 */
#include "proxy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "../proto/s3_delete.h"
#include "../proto/s3_post.h"
#include "deliver.h"
#include "proxy_int.h"
#include "req.h"
#include "respond.h"

#define PIPE_SIZE    (256 * 1024)
#define RELAY_WINDOW (1024 * 1024)
#define MAX_FWD      100

static const char *const dropped_request_headers[] = {
    "host",
    "authorization",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "content-length",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-security-token",
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    "x-amz-sdk-checksum-algorithm",
    FLEET_H_DATE, /* a peer request passed through: the fleet's own, never the bucket's */
    FLEET_H_IDENTITY,
    FLEET_H_SIGNATURE,
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, list[i]) == 0)
            return true;
    return false;
}

static void upload_unref(struct upload *u)
{
    if (u == NULL || atomic_fetch_sub(&u->refs, 1) != 1)
        return;
    proxy_write_end(u); /* a write never submitted */
    proxy_write_release(u);
    sc_buf_free(&u->answer);
    relay_unref(u->relay);
    up_req_release(u->req);
    body_check_release(&u->check);
    free(u->checked);
    digest_free(u->sum);
    free(u->tee);
    pthread_mutex_destroy(&u->mu);
    free(u->buf);
    free(u);
}

/* Wakes the connection waiting for pipe room (upload locked); returns it to resume unlocked. */
static struct gw_req *take_parked(struct upload *u)
{
    if (!u->conn_parked || u->q == NULL)
        return NULL;
    u->conn_parked = false;
    return u->q;
}

static void resume_conn(struct gw_req *q)
{
    if (q)
        q->waiter.wake(q->waiter.arg);
}

/* ---- upstream side (upstream thread) ----------------------------------------------- */

static void on_head(void *arg, const struct http_head *head)
{
    struct upload *u = arg;
    pthread_mutex_lock(&u->mu);
    u->status = head->status;
    pthread_mutex_unlock(&u->mu);
    /* Held whole (keep-all) when its length is known and bounded; else it streams unread. */
    u->holding = u->delete_objects && head->status == 200 && head->content_length >= 0 &&
                 (uint64_t)head->content_length <= S3_DELETE_MAX_ANSWER;
    bool small = head->content_length >= 0 && head->content_length <= 64 * 1024;
    if (u->checked) {
        body_check_start(&u->check, head);
        if (u->check.active)
            relay_hold_tail(u->relay);
    }
    relay_set_head(u->relay, head, small || u->holding);
}

/* Keeps answer bytes from the client (upstream thread); false once too many to hold. */
static bool hold_answer(struct upload *u, const char *p, size_t n)
{
    return sc_buf_append(&u->answer, p, n) == SC_OK;
}

/* Lets the held answer go to the client; it is no longer held. */
static bool release_answer(struct upload *u)
{
    u->holding = false;
    return u->answer.len == 0 || relay_push(u->relay, u->answer.data, u->answer.len);
}

static bool on_body(void *arg, const char *p, size_t n)
{
    struct upload *u = arg;
    body_check_add(&u->check, p, n);
    if (u->holding && hold_answer(u, p, n))
        return true;
    if (u->holding && !release_answer(u)) /* too long to read: it streams, unread */
        return false;
    return relay_push(u->relay, p, n);
}

/*
 * Pipe bytes the upstream may have now (upload locked): all of them, but the body's last
 * byte only once the body is known whole and well-formed. Until then the upstream cannot
 * complete (and store) a body the client may yet be refused for.
 */
static size_t deliverable(const struct upload *u)
{
    bool holds_last = u->len > 0 && u->taken == u->announced;
    return holds_last && !u->eof ? u->len - 1 : u->len;
}

static size_t read_body(void *arg, char *out, size_t cap)
{
    struct upload *u = arg;
    pthread_mutex_lock(&u->mu);
    size_t ready = deliverable(u);
    size_t n = ready < cap ? ready : cap;
    if (n > 0) {
        memcpy(out, u->buf, n);
        memmove(u->buf, u->buf + n, u->len - n);
        u->len -= n;
    } else if (!u->eof) {
        u->up_paused = true;
        n = UP_READ_PAUSE;
    }
    struct gw_req *wake = u->len <= PIPE_SIZE / 2 ? take_parked(u) : NULL;
    pthread_mutex_unlock(&u->mu);
    resume_conn(wake);
    return n;
}

static void on_done(void *arg, sc_code rc)
{
    struct upload *u = arg;
    if (u->holding && rc == SC_OK) {
        proxy_write_drop_listed(u); /* then the answer may go */
        release_answer(u);
    }
    proxy_write_end(u); /* before the client can see the transfer end */
    pthread_mutex_lock(&u->mu);
    u->finished = true;
    struct gw_req *wake = take_parked(u);
    pthread_mutex_unlock(&u->mu);
    if (u->checked)
        rc = body_check_verdict(&u->check, rc, u->checked, u->checked + strlen(u->checked) + 1);
    relay_finish(u->relay, rc);
    resume_conn(wake);
    upload_unref(u); /* the transfer's reference */
}

static const struct up_handler proxy_handler = {on_head, on_body, read_body, on_done};

/* ---- request side (HTTP workers) ----------------------------------------------------- */

struct fwd_headers {
    struct http_header h[MAX_FWD];
    size_t n;
    char content_encoding[256];  /* every Content-Encoding line's codings but aws-chunked */
    bool content_encoding_empty; /* a Content-Encoding line with an empty value came */
    bool too_many;
};

static bool add_forwarded(struct fwd_headers *f, const char *name, const char *value)
{
    if (f->n == MAX_FWD) {
        f->too_many = true;
        return false;
    }
    f->h[f->n++] = (struct http_header){name, value};
    return true;
}

/*
 * Adds one Content-Encoding line's codings, but aws-chunked (ours to remove), to the one
 * joined value: several lines mean one list (RFC 9110), and each needs its own bytes.
 * Codings that do not fit count as too many headers rather than being cut.
 */
static void join_content_encoding(struct fwd_headers *f, const char *value)
{
    if (*value == '\0') {
        f->content_encoding_empty = true;
        return;
    }
    char copy[sizeof(f->content_encoding)];
    if ((size_t)snprintf(copy, sizeof(copy), "%s", value) >= sizeof(copy)) {
        f->too_many = true;
        return;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        if (strcasecmp(tok, "aws-chunked") == 0)
            continue;
        size_t used = strlen(f->content_encoding);
        size_t room = sizeof(f->content_encoding) - used;
        if ((size_t)snprintf(f->content_encoding + used, room, "%s%s", used ? "," : "", tok) >=
            room)
            f->too_many = true;
    }
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                      const char *value)
{
    struct fwd_headers *f = cls;
    if (value == NULL)
        value = ""; /* "Name:" with nothing after it: forwarded as sent, empty */
    if (in_list(name, dropped_request_headers,
                sizeof(dropped_request_headers) / sizeof(dropped_request_headers[0])))
        return MHD_YES;
    if (strcasecmp(name, "content-encoding") == 0) {
        join_content_encoding(f, value);
        return f->too_many ? MHD_NO : MHD_YES;
    }
    return add_forwarded(f, name, value) ? MHD_YES : MHD_NO;
}

/*
 * The request's headers to forward into *f: one Content-Encoding with every line's codings
 * (an empty one is forwarded as sent; none when aws-chunked was the one coding).
 */
static void collect_forwarded(struct gw_req *q, struct fwd_headers *f)
{
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, collect_header, f);
    if (f->too_many)
        return;
    if (f->content_encoding[0] != '\0')
        add_forwarded(f, "Content-Encoding", f->content_encoding);
    else if (f->content_encoding_empty)
        add_forwarded(f, "Content-Encoding", "");
}

static bool parse_length(const char *s, int64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

static enum MHD_Result note_aws_chunked(void *cls, enum MHD_ValueKind kind, const char *name,
                                        const char *value)
{
    bool *found = cls;
    if (strcasecmp(name, "Content-Encoding") == 0 && value != NULL &&
        strcasestr(value, "aws-chunked") != NULL)
        *found = true;
    return MHD_YES;
}

/* Whether any Content-Encoding line names aws-chunked: collect_header() removes it from
 * every line, so the body is decoded whichever line it came in. */
static bool content_encoding_aws_chunked(struct gw_req *q)
{
    bool found = false;
    MHD_get_connection_values(q->conn, MHD_HEADER_KIND, note_aws_chunked, &found);
    return found;
}

/*
 * The length of the body as sent upstream into *len (-1: no body), and whether it arrives
 * aws-chunked (then *len is x-amz-decoded-content-length). False if the request does not
 * tell the length (S3 requires one).
 */
static bool is_read(const struct gw_req *q)
{
    return strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0;
}

static bool upstream_length(struct gw_req *q, bool *aws_chunked, int64_t *len)
{
    *aws_chunked = false;
    *len = -1;
    if (is_read(q))
        return true; /* a read never carries a body upstream (server.c drained it) */
    const char *sha = gw_req_header(q, "x-amz-content-sha256");
    *aws_chunked = (sha && strncmp(sha, "STREAMING-", 10) == 0) || content_encoding_aws_chunked(q);
    const char *cl =
        gw_req_header(q, *aws_chunked ? "x-amz-decoded-content-length" : "Content-Length");
    if (parse_length(cl, len))
        return true;
    const char *te = gw_req_header(q, "Transfer-Encoding");
    return cl == NULL && te == NULL && !*aws_chunked; /* no body */
}

bool gw_proxy_length_known(struct gw_req *q)
{
    bool aws_chunked;
    int64_t len;
    return upstream_length(q, &aws_chunked, &len);
}

/* Works out the body's length upstream; false (with an error sent) if it cannot be known. */
static bool body_length(struct gw_req *q, struct upload *u, int64_t *len, enum MHD_Result *ret)
{
    if (!upstream_length(q, &u->chunked, len)) {
        *ret = gw_respond_known_error(q, S3_XML_MISSING_CONTENT_LENGTH, NULL);
        return false;
    }
    if (u->chunked && *len >= 0)
        awschunked_init(&u->dec, (uint64_t)*len);
    u->announced = *len;
    if (u->chunked) {
        u->trailer = gw_req_header(q, "x-amz-trailer");
        if (digest_for_checksum(u->trailer, &u->sum) != SC_OK) {
            *ret = MHD_NO;
            return false;
        }
    }
    return true;
}

/*
 * True for a GET whose 200 is the object's whole body: no Range, and no parameter but a
 * version or response header overrides (acl, tagging, partNumber, ... answer other bytes).
 */
static bool answers_whole_object(struct gw_req *q)
{
    static const char *const same_body[] = {
        "versionId",
        "x-id",
        "response-cache-control",
        "response-content-disposition",
        "response-content-encoding",
        "response-content-language",
        "response-content-type",
        "response-expires",
    };
    if (strcmp(q->method, "GET") != 0 || *q->tgt.bucket == '\0' || *q->tgt.key == '\0' ||
        gw_req_header(q, "Range") != NULL)
        return false;
    for (size_t i = 0; i < q->tgt.nparams; i++)
        if (!in_list(q->tgt.params[i].name, same_body, sizeof(same_body) / sizeof(same_body[0])))
            return false;
    return true;
}

/* Marks u's answer for checking (digest.h) when it is an object's whole body. */
static sc_code check_whole_object(struct gw_req *q, struct upload *u)
{
    if (!answers_whole_object(q))
        return SC_OK;
    size_t b = strlen(q->tgt.bucket) + 1, k = strlen(q->tgt.key) + 1;
    u->checked = malloc(b + k);
    if (u->checked == NULL)
        return SC_ENOMEM;
    memcpy(u->checked, q->tgt.bucket, b);
    memcpy(u->checked + b, q->tgt.key, k);
    return SC_OK;
}

static struct upload *upload_new(struct gw_req *q)
{
    struct upload *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return NULL;
    pthread_mutex_init(&u->mu, NULL);
    atomic_init(&u->refs, 1);
    u->q = q;
    sc_buf_init(&u->answer, S3_DELETE_MAX_ANSWER);
    u->relay = relay_new(RELAY_WINDOW);
    if (u->relay == NULL) {
        upload_unref(u);
        return NULL;
    }
    return u;
}

/* Submits req with u as its handler state; q's response then comes from u's relay. */
static sc_code submit(struct gw_req *q, struct upload *u, const struct up_request *req)
{
    atomic_fetch_add(&u->refs, 1); /* the transfer's reference */
    u->submitted = true;           /* set before the upstream thread can see u */
    sc_code rc = up_submit(q->g->up, req, &proxy_handler, u, &u->req);
    if (rc != SC_OK) {
        u->submitted = false; /* never forwarded: a write in it ends in no doubt */
        atomic_fetch_sub(&u->refs, 1);
        return rc;
    }
    relay_set_upstream(u->relay, u->req);
    gw_deliver_use(q, u->relay);
    return SC_OK;
}

/* Sends q's request upstream as it came (headers filtered), with q->upload's body. */
static sc_code forward(struct gw_req *q)
{
    struct fwd_headers fwd = {.n = 0};
    collect_forwarded(q, &fwd);
    if (fwd.too_many)
        return SC_EINVAL; /* start() refused these headers already */
    bool read = is_read(q);
    struct up_request req = {.method = q->method,
                             .bucket = q->tgt.bucket,
                             .key = q->tgt.key,
                             .query = q->tgt.raw_query,
                             .headers = fwd.h,
                             .n_headers = fwd.n,
                             .body_length = q->upload->announced,
                             .idempotent = read};
    req.as = q->as;
    return submit(q, q->upload, &req);
}

static enum MHD_Result respond_shutting_down(struct gw_req *q)
{
    return gw_respond_known_error(q, S3_XML_SERVICE_UNAVAILABLE, NULL);
}

static void cleanup_at_end(void *arg)
{
    gw_proxy_end(arg);
}

/* Makes u q's transfer, ended when q is finished (or by gw_proxy_end()). */
static void take_upload(struct gw_req *q, struct upload *u)
{
    q->upload = u;
    gw_req_cleanup_add(q, cleanup_at_end, q);
}

struct gw_next gw_proxy_start(struct gw_req *q)
{
    struct gw *g = q->g;
    enum MHD_Result ret = MHD_NO;
    struct fwd_headers fwd = {.n = 0};
    collect_forwarded(q, &fwd);
    if (fwd.too_many)
        return GW_SENT(gw_respond_known_error(q, S3_XML_HEADERS_TOO_LARGE, NULL));
    struct upload *u = upload_new(q);
    if (u == NULL)
        return GW_CLOSE;
    int64_t len = -1;
    if (!body_length(q, u, &len, &ret)) {
        upload_unref(u);
        return GW_SENT(ret);
    }
    if ((len >= 0 && (u->buf = malloc(PIPE_SIZE)) == NULL) || check_whole_object(q, u) != SC_OK) {
        upload_unref(u);
        return GW_CLOSE;
    }
    u->eof = len <= 0;
    u->tee_cap = len >= 0 ? proxy_write_tee_cap(q) : 0;
    if (u->tee_cap > 0 && (u->tee = malloc(u->tee_cap)) == NULL) {
        upload_unref(u);
        return GW_CLOSE;
    }
    if (proxy_write_begin(q, u, len >= 0) != SC_OK) {
        upload_unref(u);
        return GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL)); /* out of memory */
    }
    if (len < 0)
        proxy_write_keys_in_body(q, u); /* no body: nothing tells which keys */
    take_upload(q, u);
    if (len < 0 && forward(q) != SC_OK) /* a body, even an empty one, waits to be checked */
        return GW_SENT(respond_shutting_down(q)); /* the write ends with u */
    sc_stat_add(g->stats.passthrough, 1);
    bool read = is_read(q);
    if (q->x_cache == NULL && read && *q->tgt.key != '\0') {
        q->x_cache = "BYPASS"; /* versionId, partNumber, response-*: never from the cache */
        sc_stat_add(g->stats.bypasses, 1);
    }
    /* A body is forwarded once the pipe fills, or once it is all in and well-formed. */
    return len >= 0 ? GW_NEXT(GW_STEP_UPLOAD) : GW_NEXT(GW_STEP_PASS_HEAD);
}

sc_code gw_proxy_fetch_range(struct gw_req *q, uint64_t start, uint64_t len, const char *etag)
{
    char range[64];
    snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)start,
             (unsigned long long)(start + len - 1));
    struct http_header h[] = {{"Range", range}, {"If-Match", etag}};
    struct up_request req = {.method = "GET",
                             .bucket = q->tgt.bucket,
                             .key = q->tgt.key,
                             .headers = h,
                             .n_headers = 2,
                             .body_length = -1,
                             .idempotent = true};
    req.as = q->as;
    struct upload *u = upload_new(q);
    if (u == NULL)
        return SC_ENOMEM;
    u->eof = true;
    sc_code rc = submit(q, u, &req);
    if (rc != SC_OK) {
        upload_unref(u);
        return rc;
    }
    take_upload(q, u);
    return SC_OK;
}

static size_t decode_into_pipe(struct upload *u, const char *data, size_t n);

/* Keeps the first tee_cap body bytes, which tell which keys the request changes (upload locked). */
static void tee_body(struct upload *u, const char *p, size_t n)
{
    if (u->tee == NULL)
        return;
    size_t room = u->tee_cap - u->tee_len;
    if (n > room) {
        u->tee_overflow = true;
        n = room;
    }
    memcpy(u->tee + u->tee_len, p, n);
    u->tee_len += n;
}

/* Moves client body bytes into the pipe (upload locked); returns input bytes used. */
static size_t fill_pipe(struct upload *u, const char *data, size_t n)
{
    size_t before = u->len;
    size_t used = decode_into_pipe(u, data, n);
    tee_body(u, u->buf + before, u->len - before);
    return used;
}

/*
 * Runs body bytes the upstream no longer takes through the aws-chunked decoder, dropping
 * the payload (upload locked): whether the body is well-formed still decides the answer,
 * the upstream's (it may answer early, say 403) or 400 for a malformed body.
 */
static void check_drained_framing(struct upload *u, const char *data, size_t n)
{
    char dropped[4096];
    while (u->chunked && n > 0 && u->error == SC_OK) {
        size_t used = 0, made = 0;
        u->error = awschunked_feed(&u->dec, data, n, &used, dropped, sizeof(dropped), &made);
        data += used;
        n -= used;
    }
}

/* Copies or decodes client body bytes into the pipe (upload locked); returns input used. */
static size_t decode_into_pipe(struct upload *u, const char *data, size_t n)
{
    if (u->finished) {
        check_drained_framing(u, data, n); /* the upstream stopped listening: drain */
        return n;
    }
    if (u->error != SC_OK)
        return n;
    size_t room = PIPE_SIZE - u->len;
    if (!u->chunked) {
        size_t take = n < room ? n : room;
        if ((uint64_t)take > (uint64_t)(u->announced - u->taken)) {
            u->error = SC_EMISMATCH; /* more than announced upstream: none of it goes */
            return n;
        }
        memcpy(u->buf + u->len, data, take);
        u->len += take;
        u->taken += (int64_t)take;
        return take;
    }
    size_t used = 0, made = 0;
    sc_code rc = awschunked_feed(&u->dec, data, n, &used, u->buf + u->len, room, &made);
    if (u->sum != NULL)
        digest_update(u->sum, u->buf + u->len, made); /* a failure fails its verdict */
    u->len += made;
    u->taken += (int64_t)made;
    if (rc != SC_OK) {
        u->error = rc;
        return n;
    }
    return used;
}

/*
 * Forwards a body longer than the pipe, which streams; its connection waits, parked, until
 * the upstream takes some. If the upstream request cannot be made, the connection resumes
 * to drain the body, and end_body() answers.
 */
static void forward_streaming(struct gw_req *q)
{
    struct upload *u = q->upload;
    if (forward(q) == SC_OK)
        return;
    pthread_mutex_lock(&u->mu);
    u->unforwarded = u->finished = true;
    struct gw_req *wake = take_parked(u);
    pthread_mutex_unlock(&u->mu);
    resume_conn(wake);
}

static struct gw_next take_body(struct gw_req *q, const char *data, size_t *size)
{
    struct upload *u = q->upload;
    pthread_mutex_lock(&u->mu);
    size_t used = fill_pipe(u, data, *size);
    *size -= used;
    bool resume_up = u->up_paused && deliverable(u) > 0;
    if (resume_up)
        u->up_paused = false;
    bool full = *size > 0;
    if (full) {
        /* Pipe full: wait (suspended) until the upstream has taken some. */
        u->conn_parked = true;
        q->waiter.park(q->waiter.arg);
    }
    pthread_mutex_unlock(&u->mu);
    if (resume_up)
        up_req_resume(u->req);
    if (full && u->req == NULL)
        forward_streaming(q);
    return GW_WAIT(GW_STEP_UPLOAD);
}

/* False if a whole aws-chunked body's trailer names a checksum its payload does not have. */
static bool trailer_checksum_ok(struct upload *u)
{
    if (!u->chunked || u->sum == NULL)
        return true;
    return digest_matches_value(u->sum, awschunked_trailer(&u->dec, u->trailer));
}

static enum MHD_Result refuse_body(struct gw_req *q, enum s3_xml_error e, const char *message)
{
    if (q->upload->req != NULL)
        up_req_cancel(q->upload->req); /* it still waits for the body's last byte */
    return gw_respond_known_error(q, e, message);
}

static struct gw_next end_body(struct gw_req *q)
{
    struct upload *u = q->upload;
    pthread_mutex_lock(&u->mu);
    /* A transfer that already ended took no more body bytes: they were drained (and their
     * aws-chunked framing checked; the upstream's answer stands, it never had them all). */
    bool bad = u->error != SC_OK || (u->chunked && !awschunked_done(&u->dec)) ||
               (!u->finished && u->taken != u->announced);
    bool bad_sum = !bad && !u->finished && !trailer_checksum_ok(u);
    u->eof = !bad && !bad_sum; /* else the transfer is canceled one byte short */
    bool resume_up = u->up_paused;
    u->up_paused = false;
    pthread_mutex_unlock(&u->mu);
    if (u->unforwarded)
        return GW_SENT(respond_shutting_down(q));
    if (bad)
        return GW_SENT(refuse_body(q, S3_XML_INCOMPLETE_BODY,
                                   "The request body is malformed, or not as long as announced"));
    if (bad_sum)
        return GW_SENT(
            refuse_body(q, S3_XML_BAD_DIGEST,
                        "The checksum in the aws-chunked trailer does not match the body"));
    /* The whole body is in hand, and the client can have no answer before this point (the
     * upstream may just have committed: a read meanwhile is concurrent with the write). */
    proxy_write_keys_in_body(q, u);
    if (u->req == NULL && forward(q) != SC_OK) /* a body that fits the pipe goes now */
        return GW_SENT(respond_shutting_down(q));
    if (resume_up)
        up_req_resume(u->req);
    return GW_NEXT(GW_STEP_PASS_HEAD);
}

struct gw_next gw_proxy_upload(struct gw_req *q)
{
    if (*q->in_size > 0)
        return take_body(q, q->in_data, q->in_size);
    return end_body(q);
}

/* After the upstream's head, drop cached copies the request changed. */
static void after_head(struct gw_req *q, long status)
{
    if (q->upload == NULL)
        return;
    proxy_write_end(q->upload); /* answered: before the client can see it */
    if (q->upload->writes != S3_INVALIDATE_NONE && status >= 200 && status < 300)
        sc_stat_add(q->g->stats.invalidations, 1);
}

/*
 * True when the upstream's answer to a plain GET or HEAD Object forwarded for the client
 * cannot be one to what was asked: a 206 without a Range, a 304 without a condition that
 * allows it, any other 1xx or 2xx than 200.
 */
static bool read_status_is_a_lie(struct gw_req *q, long status)
{
    if (q->tgt.kind != S3_REQ_GET_OBJECT && q->tgt.kind != S3_REQ_HEAD_OBJECT)
        return false;
    if (status == 206)
        return gw_req_header(q, "Range") == NULL;
    if (status == 304)
        return gw_req_header(q, "If-None-Match") == NULL &&
               gw_req_header(q, "If-Modified-Since") == NULL;
    return status != 200 && status < 300;
}

struct gw_next gw_proxy_pass_head(struct gw_req *q)
{
    bool failed = false;
    const struct relay_head *h = gw_deliver_head(q, &failed);
    if (h == NULL && !failed)
        return GW_WAIT(GW_STEP_PASS_HEAD); /* suspended: resumed when the head arrives */
    if (h == NULL)
        return GW_SENT(gw_respond_known_error(q, S3_XML_BAD_GATEWAY, NULL));
    if (read_status_is_a_lie(q, h->status))
        return GW_SENT(gw_deliver_refuse_lie(q, "a forwarded read", h->status));
    after_head(q, h->status);
    return GW_SENT(gw_deliver_as_upstream(q, h));
}

void gw_proxy_end(struct gw_req *q)
{
    struct upload *u = q->upload;
    if (u == NULL)
        return;
    pthread_mutex_lock(&u->mu);
    u->q = NULL;
    u->conn_parked = false;
    bool running = u->req != NULL && !u->finished;
    pthread_mutex_unlock(&u->mu);
    if (running)
        up_req_cancel(u->req);
    proxy_write_end(u);
    q->upload = NULL;
    upload_unref(u); /* the relay stays while the client reads it (deliver.h) */
}
