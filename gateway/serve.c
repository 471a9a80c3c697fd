/*
 * serve.c - GET and HEAD Object through the cache.
 *
 * A hit is answered from the store without copying the body: a response
 * pointing straight into LMDB's map (an iovec response holding the read view
 * until libmicrohttpd has sent it), or with --zero-copy, when the body is one
 * chunk, from the data file with sendfile (zerocopy.h). A miss joins or starts the object's fill
 * and streams it to the client as it arrives. A range on a miss is resolved
 * against the size the fill announces: near the front it is read from the fill;
 * further in, it is fetched on its own with an explicit range, so the client
 * never waits for the whole object. Conditional headers are evaluated before
 * Range, with S3's precedence. An identity the upstream judges on its own
 * (auth.h) is authorized before it gets a cached copy or another identity's
 * fill, and never gets another identity's upstream error.
 *
 * Steps (serve.h): LOOKUP (the cached copy; it may ask for authorization or
 * revalidation, whose answers come back here), MISS (the fill), FILL_HEAD (the
 * answer from the fill's head). A HEAD miss, and a fill of another identity that
 * was not answered 200, go on to PROXY.
 *
 * A peer request (auth.h) is answered from the cache as any request; on a miss, the gateway
 * that owns its name (fleet_owns) fills it as any miss (from the bucket: it is the owner),
 * and any other passes it through to the bucket, uncached. A peer's read starts no read-ahead
 * (blocks.c: the asker reads ahead for its reader), and the manifests see it only where the
 * name is owned (trainer_read).
 */
#include "serve.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/hash.h"
#include "../common/log.h"
#include "../fleet/fleet.h"
#include "../proto/answer.h"
#include "../proto/cond.h"
#include "../proto/hdrblob.h"
#include "../proto/range.h"
#include "authz.h"
#include "blocks.h"
#include "deliver.h"
#include "proxy.h"
#include "reply.h"
#include "req.h"
#include "respond.h"
#include "revalidate.h"
#include "zerocopy.h"
#include "config.h"
#include "../store/store.h"
#include "../manifest/manifest.h"
#include "../upstream/fill.h"

/* A range of a miss starting within this many bytes is read from the fill as it arrives. */
#define FILL_RANGE_SLACK (256 * 1024)

/* Counts an object read in its bucket's row; the gateway-wide counters are added beside. */
static void count_read(struct gw_req *q, enum gw_read_result result, uint64_t bytes)
{
    gw_buckets_count(&q->g->buckets, q->tgt.bucket, result, bytes);
}

/* ---- peer requests ------------------------------------------------------------------- */

/* The span of q's Range header; false without one (or one range_span does not take). */
static bool request_span(struct gw_req *q, uint64_t *first, uint64_t *last)
{
    const char *range = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Range");
    return range != NULL && range_span(range, first, last);
}

/*
 * The name a peer request asks for (fleet.h): for a range, the name of the block its first
 * byte lies in (a peer asks a large object block by block), else the object's.
 */
static uint64_t peer_request_name(struct gw_req *q)
{
    uint64_t khash = sc_key_hash(q->tgt.bucket, q->tgt.key);
    uint64_t first = 0, last = 0;
    if (!request_span(q, &first, &last))
        return khash;
    return fleet_range_name(khash, first, q->g->cfg->block_size);
}

/* A peer request for a name another gateway owns by this one's view (views differ for a
 * moment while peers come and go): the bucket is asked, and nothing is cached or asked of
 * another peer, so that a peer request is never forwarded (no loops). */
static bool peer_asks_a_name_not_ours(struct gw_req *q)
{
    return q->peer.from && !fleet_owns(q->g->fleet, peer_request_name(q));
}

static struct gw_next pass_for_peer(struct gw_req *q)
{
    atomic_fetch_add_explicit(&q->g->metrics.peer_passed, 1, memory_order_relaxed);
    q->x_cache = "BYPASS";
    return GW_NEXT(GW_STEP_PROXY);
}

/* Every block of a peer's range is cached in obj (a block object): it can be answered
 * without fetching any. */
static bool peer_range_cached(struct gw_req *q, store_obj *obj)
{
    uint64_t first = 0, last = 0, size = store_obj_size(obj);
    uint32_t bs = store_obj_block_size(obj);
    if (!request_span(q, &first, &last) || bs == 0 || first >= size)
        return false;
    if (last >= size)
        last = size - 1;
    uint32_t a = (uint32_t)(first / bs), b = (uint32_t)(last / bs);
    return store_obj_blocks_cached(obj, a, b) == (uint64_t)(b - a) + 1;
}

/* ---- hits ------------------------------------------------------------------------ */

/* The response body from the map, checked by store_obj_iov(); takes over obj. A body in one
 * chunk may be sent from the data file (--zero-copy, zerocopy.h: q holds obj until the client
 * has read it); any other as iovecs into the map (obj closed when the response is freed). */
static struct MHD_Response *hit_body(struct gw_req *q, store_obj *obj, const struct answer *a,
                                     sc_code *rc)
{
    uint32_t chunk = q->g->cfg->chunk_size;
    size_t max_iov = (size_t)(a->len / chunk) + 2;
    struct iovec *iov = calloc(max_iov, sizeof(*iov));
    size_t n = 0;
    struct MHD_Response *resp = NULL;
    *rc = iov ? store_obj_iov(obj, a->start, a->len, iov, max_iov, &n) : SC_ENOMEM;
    if (*rc == SC_OK && n == 1)
        resp = gw_zc_response(q, obj, iov[0].iov_base, iov[0].iov_len);
    if (*rc == SC_OK && resp == NULL) {
        resp = gw_reply_from_view(obj, iov, n);
        if (resp == NULL)
            *rc = SC_ENOMEM;
    }
    free(iov);
    return resp;
}

/* Answers from a cached object; SC_ECORRUPT (or another failure) means: treat as a miss.
 * A stale copy (revalidation failed) says so in its headers. */
static sc_code serve_hit(struct gw_req *q, store_obj *obj, bool stale, enum MHD_Result *ret)
{
    size_t hlen = 0;
    const char *hdrs = store_obj_headers(obj, &hlen);
    const char *etag = hdrblob_get(hdrs, hlen, "ETag");
    const char *lm = hdrblob_get(hdrs, hlen, "Last-Modified");
    uint64_t size = store_obj_size(obj);
    struct answer a = gw_reply_decide(q, etag, lm, size);
    q->x_cache = "HIT";
    if (a.status != 200 && a.status != 206) {
        sc_stat_add(q->g->stats.hits, 1);
        count_read(q, GW_READ_HIT, 0);
        *ret = gw_reply_bodiless(q, &a, size, etag, lm);
        store_obj_close(obj);
        return SC_OK;
    }
    bool head = q->tgt.kind == S3_REQ_HEAD_OBJECT;
    sc_code rc = SC_OK;
    struct MHD_Response *resp = head ? gw_respond_head(a.len) : hit_body(q, obj, &a, &rc);
    if (resp == NULL) {
        q->x_cache = NULL;
        store_obj_close(obj);
        return rc == SC_OK ? SC_ENOMEM : rc;
    }
    gw_reply_blob_headers(q, resp, hdrs, hlen, a.status);
    gw_reply_range_headers(resp, &a, size);
    if (stale) {
        MHD_add_response_header(resp, "Warning", "111 s3cached \"Revalidation Failed\"");
        MHD_add_response_header(resp, "x-s3cached-stale", "true");
    }
    if (head) {
        store_obj_close(obj); /* nothing to send from the map */
    } else {
        sc_stat_add(q->g->stats.bytes_from_cache, a.len);
        q->bytes_out = a.len;
    }
    sc_stat_add(q->g->stats.hits, 1);
    count_read(q, GW_READ_HIT, head ? 0 : a.len);
    *ret = gw_respond_queue(q, a.status, resp);
    return SC_OK;
}

/* ---- misses ------------------------------------------------------------------------ */

/* The object's own headers from a fill's head, for an answer with this status. */
static void add_object_headers(struct gw_req *q, struct MHD_Response *resp,
                               const struct relay_head *h, int status)
{
    for (size_t i = 0; i < h->n_headers; i++) {
        const char *name = h->headers[i].name;
        if (hdrblob_keeps(name) && gw_reply_sends_header(q, name, status))
            MHD_add_response_header(resp, name, h->headers[i].value);
    }
}

/*
 * A range far into an object that is still arriving is fetched on its own, so the client
 * does not wait for the fill to get there. The range sent upstream is explicit (bytes=a-b,
 * resolved here with S3's rules against the size the fill announced), and what comes back is
 * sliced to it, so an upstream that answers some range forms loosely cannot change the bytes.
 * It carries If-Match with the fill's ETag, so that it is of the version the fill serves.
 */
static sc_code fetch_range(struct gw_req *q, const struct answer *a, const char *etag)
{
    q->serve.want_start = a->start;
    q->serve.want_len = a->len;
    sc_code rc = gw_proxy_fetch_range(q, a->start, a->len, etag);
    if (rc == SC_OK)
        q->serve.ranged = true;
    return rc;
}

/*
 * The offset of the first body byte of a ranged answer, from its Content-Range, when its body
 * holds all of the range asked (q->serve.want_start, want_len) of an object of size bytes: a
 * 200 of the whole object, or a 206 whose Content-Range covers the range and whose length
 * matches.
 */
static bool range_offset(struct gw_req *q, const struct relay_head *h, uint64_t size,
                         uint64_t *offset)
{
    if (h->status == 200) {
        *offset = 0;
        return h->content_length >= 0 && (uint64_t)h->content_length == size;
    }
    const char *cr = http_header_get(h->headers, h->n_headers, "Content-Range");
    unsigned long long first, last, total;
    if (h->status != 206 || cr == NULL ||
        sscanf(cr, "bytes %llu-%llu/%llu", &first, &last, &total) != 3 || first > last ||
        total != size || h->content_length < 0 || (uint64_t)h->content_length != last - first + 1)
        return false;
    *offset = first;
    return first <= q->serve.want_start && last >= q->serve.want_start + q->serve.want_len - 1;
}

/* True when a ranged answer is of the version the fill serves: the same ETag. If-Match asked
 * the upstream to make sure; not every upstream does (s3rver ignores it). */
static bool same_version(const struct relay_head *fill_head, const struct relay_head *h)
{
    const char *want = http_header_get(fill_head->headers, fill_head->n_headers, "ETag");
    const char *got = http_header_get(h->headers, h->n_headers, "ETag");
    return want != NULL && got != NULL && strcmp(want, got) == 0;
}

/*
 * The range fetched beside the fill came back of another version (the object was overwritten
 * since the fill started: 412 to If-Match, or another ETag): it is read from the fill
 * instead, once the fill gets there. Its last byte then waits for the fill's verdict, because
 * a fill that overlapped an overwrite may itself be mixed (an upstream that rewrites objects
 * in place).
 */
static enum MHD_Result range_from_fill(struct gw_req *q, const struct relay_head *fill_head)
{
    sc_debug("range of %s/%s fetched beside its fill is of another version: read from the fill",
             q->tgt.bucket, q->tgt.key);
    gw_proxy_end(q); /* ends the ranged transfer */
    q->serve.ranged = false;
    gw_deliver_use(q, fill_relay(q->serve.fill));
    struct answer a = {206, q->serve.want_start, q->serve.want_len};
    struct MHD_Response *resp = gw_deliver_stream(q, a.start, a.len);
    if (resp == NULL)
        return MHD_NO;
    relay_hold_from(q->deliver.relay, &q->deliver.cursor, a.start + a.len - 1);
    add_object_headers(q, resp, fill_head, 206);
    gw_reply_range_headers(resp, &a, (uint64_t)fill_head->content_length);
    return gw_respond_queue(q, 206, resp);
}

static enum MHD_Result respond_from_range(struct gw_req *q, const struct relay_head *h)
{
    bool failed;
    const struct relay_head *fh = relay_head(fill_relay(q->serve.fill), &q->waiter, &failed);
    uint64_t offset = 0;
    bool answered = h->status == 200 || h->status == 206;
    if (fh != NULL && (h->status == 412 || (answered && !same_version(fh, h))))
        return range_from_fill(q, fh);
    if (fh == NULL || h->status >= 400)
        return gw_deliver_as_upstream(q, h); /* vanished, or refused */
    uint64_t size = (uint64_t)fh->content_length;
    if (!range_offset(q, h, size, &offset)) {
        /* Another range, a short body, a 304 or 204: an upstream that lies. */
        const char *cr = http_header_get(h->headers, h->n_headers, "Content-Range");
        sc_warn("upstream answered range %" PRIu64 "+%" PRIu64 " of %s/%s with status %ld and "
                "Content-Range %s: read from the fill instead",
                q->serve.want_start, q->serve.want_len, q->tgt.bucket, q->tgt.key, h->status,
                cr ? cr : "(none)");
        return range_from_fill(q, fh);
    }
    struct answer a = {206, q->serve.want_start, q->serve.want_len};
    struct MHD_Response *resp =
        gw_deliver_stream(q, q->serve.want_start - offset, q->serve.want_len);
    if (resp == NULL)
        return MHD_NO;
    add_object_headers(q, resp, fh, 206);
    gw_reply_range_headers(resp, &a, size);
    return gw_respond_queue(q, 206, resp);
}

/* Leaves the fill q reads, if any. */
static void leave_fill(void *arg)
{
    struct gw_req *q = arg;
    if (q->serve.fill)
        fill_leave(q->serve.fill);
    q->serve.fill = NULL;
}

/*
 * A fill another identity started got an answer other than 200: that answer was for that
 * identity, not this one. Leave the fill and ask the upstream as this identity, uncached.
 */
static struct gw_next ask_for_ourselves(struct gw_req *q)
{
    leave_fill(q);
    gw_deliver_drop(q);
    q->x_cache = NULL;
    return GW_NEXT(GW_STEP_PROXY);
}

/*
 * A fill is an unconditional whole-object GET: only a 200 is the object, and a 4xx or 5xx an
 * error to relay. Anything else (a 206 of some part, a 304, a 204) is an upstream that lies:
 * never stored (fill.c caches only a 200), and never relayed as if it answered the client.
 */
static bool fill_status_is_a_lie(long status)
{
    return status != 200 && status < 400;
}

/*
 * The fill's head says the object is large: it is read by blocks (the fill recorded its
 * metadata and goes on as the fetch of block 0, upstream/fill.h).
 */
static struct gw_next fill_to_blocks(struct gw_req *q, const struct relay_head *h, uint64_t size)
{
    sc_code rc = gw_blocks_take_head(q, h->headers, h->n_headers, size);
    leave_fill(q);
    gw_deliver_drop(q);
    q->x_cache = NULL;
    if (rc != SC_OK)
        return GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL));
    return GW_NEXT(GW_STEP_BLOCKS);
}

/* A fill's head is in: answer the client's GET from it. */
static struct gw_next respond_from_fill(struct gw_req *q, const struct relay_head *h)
{
    if (fill_status_is_a_lie(h->status))
        return GW_SENT(gw_deliver_refuse_lie(q, "a fill", h->status));
    bool ours = up_identity_same(&q->as, fill_identity(q->serve.fill));
    if (ours && (h->status == 200 || h->status == 403))
        gw_authz_record(q, h->status == 200);
    if (h->status != 200 && !ours)
        return ask_for_ourselves(q);
    if (h->status != 200 || h->content_length < 0)
        return GW_SENT(gw_deliver_as_upstream(q, h));
    uint64_t size = (uint64_t)h->content_length;
    if (q->tgt.kind == S3_REQ_GET_OBJECT && gw_blocks_is_large(q, size) &&
        http_header_get(h->headers, h->n_headers, "ETag") != NULL)
        return fill_to_blocks(q, h, size);
    enum gw_read_result result = GW_READ_MISS;
    if (size > q->g->cfg->max_object_size) {
        q->x_cache = "BYPASS";
        sc_stat_add(q->g->stats.bypasses, 1);
        result = GW_READ_BYPASS;
    } else if (strcmp(q->x_cache, "HIT") == 0) {
        sc_stat_add(q->g->stats.hits, 1);
        result = GW_READ_HIT;
    } else {
        sc_stat_add(q->g->stats.misses, 1);
    }
    const char *etag = http_header_get(h->headers, h->n_headers, "ETag");
    const char *lm = http_header_get(h->headers, h->n_headers, "Last-Modified");
    struct answer a = gw_reply_decide(q, etag, lm, size);
    bool head = q->tgt.kind == S3_REQ_HEAD_OBJECT;
    bool sends = a.status == 200 || a.status == 206;
    count_read(q, result, sends && !head ? a.len : 0);
    if (!sends)
        return GW_SENT(gw_reply_bodiless(q, &a, size, etag, lm));
    if (result == GW_READ_HIT)
        sc_stat_add(q->g->stats.bytes_from_cache, a.len);
    /* Without an ETag a range fetched on its own could not be pinned to the fill's version:
     * it waits for the fill. */
    if (a.status == 206 && a.start > FILL_RANGE_SLACK && etag != NULL &&
        !relay_reached(q->deliver.relay, a.start) && fetch_range(q, &a, etag) == SC_OK)
        return GW_NEXT(GW_STEP_FILL_HEAD); /* now the range's head */
    struct MHD_Response *resp =
        head ? gw_respond_head(a.len) : gw_deliver_stream(q, a.start, a.len);
    if (resp == NULL)
        return GW_CLOSE;
    /* A range that ends near the end of the object waits for the fill's verdict before its
     * last byte, as the whole object does (relay_hold_tail): at most FILL_RANGE_SLACK more
     * bytes to wait for. One that ends further in is served as it arrives, unverified. */
    if (!head && a.status == 206 && size - (a.start + a.len) <= FILL_RANGE_SLACK)
        relay_hold_from(q->deliver.relay, &q->deliver.cursor, a.start + a.len - 1);
    add_object_headers(q, resp, h, a.status);
    gw_reply_range_headers(resp, &a, size);
    return GW_SENT(gw_respond_queue(q, a.status, resp));
}

struct gw_next gw_serve_fill_head(struct gw_req *q)
{
    bool failed = false;
    const struct relay_head *h = gw_deliver_head(q, &failed);
    if (h == NULL && !failed)
        return GW_WAIT(GW_STEP_FILL_HEAD); /* suspended: resumed when the head arrives */
    if (h == NULL) {
        sc_stat_add(q->g->stats.misses, 1); /* a fill's reader is counted once its fate is known */
        count_read(q, GW_READ_MISS, 0);
        return GW_SENT(gw_respond_known_error(q, S3_XML_BAD_GATEWAY, NULL));
    }
    if (q->serve.ranged)
        return GW_SENT(respond_from_range(q, h));
    return respond_from_fill(q, h);
}

/* ---- the miss ------------------------------------------------------------------------- */

static struct gw_next look_again(struct gw_req *q)
{
    q->serve.relooked = true;
    return GW_NEXT(GW_STEP_LOOKUP);
}

struct gw_next gw_serve_miss(struct gw_req *q)
{
    struct gw *g = q->g;
    bool started = false;
    fill *f = NULL;
    struct gw_next next;
    if (peer_asks_a_name_not_ours(q))
        return pass_for_peer(q);
    q->x_cache = "MISS";
    /* The lookup found nothing, but a fill may have been stored since (fill_join): then the
     * store is asked again, once. Not after a copy the lookup could not use: it is still
     * there, and the lookup would send it back here. */
    bool recheck = q->serve.looked_empty && !q->serve.relooked;
    sc_code rc = fill_join_running(g->fills, q->tgt.bucket, q->tgt.key, recheck, &f);
    if (rc == SC_EEXIST)
        return look_again(q);
    bool running = rc == SC_OK;
    if (q->tgt.kind == S3_REQ_HEAD_OBJECT) {
        /* A fill complete in memory answers like a hit; anything else asks the upstream. */
        if (running && !relay_has_all(fill_relay(f))) {
            fill_leave(f);
            f = NULL;
        }
        if (f == NULL) {
            sc_stat_add(g->stats.misses, 1);
            count_read(q, GW_READ_MISS, 0);
            return GW_NEXT(GW_STEP_PROXY);
        }
    } else if (running) {
        /* joined: the fill's head tells whether the object is large */
    } else if (gw_blocks_ask_size(q, &next)) {
        return next; /* a range: only the blocks it covers are fetched if the object is large */
    } else if ((rc = fill_join(g->fills, q->tgt.bucket, q->tgt.key, &q->as, recheck, &f,
                               &started)) == SC_EEXIST) {
        return look_again(q); /* stored while the range's opening was asked, say */
    } else if (rc != SC_OK) {
        return GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL));
    }
    /* Another identity's fill: this one must be allowed to read the object first. */
    if (!started && !up_identity_same(&q->as, fill_identity(f)) && !gw_authz_admit(q, &next)) {
        fill_leave(f);
        return next;
    }
    q->serve.fill = f;
    gw_req_cleanup_add(q, leave_fill, q);
    gw_deliver_use(q, fill_relay(f));
    if (!started && relay_has_all(q->deliver.relay))
        q->x_cache = "HIT"; /* complete in memory, being stored: no upstream work for this one */
    return GW_NEXT(GW_STEP_FILL_HEAD);
}

/* A copy without an ETag (stored by an earlier version, which cached such objects) cannot
 * answer conditionals or be revalidated; it is never cached now (fill.c). */
static bool stored_without_etag(store_obj *obj)
{
    size_t hlen = 0;
    const char *hdrs = store_obj_headers(obj, &hlen);
    return hdrblob_get(hdrs, hlen, "ETag") == NULL;
}

/*
 * A peer's If-Match that the cached copy fails: the peer saw another version (a block fetch
 * of a large object that changed at the bucket), most likely a newer one, so this copy may be
 * stale. It is dropped and the request answered as a miss, from the bucket, rather than 412
 * from the copy (after which the peer would reopen the object here and get the old version).
 */
static bool peer_holds_another_version(struct gw_req *q, store_obj *obj)
{
    const char *if_match = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "If-Match");
    if (!q->peer.from || if_match == NULL)
        return false;
    size_t hlen = 0;
    const char *hdrs = store_obj_headers(obj, &hlen);
    struct cond_headers ch = {.if_match = if_match};
    return cond_evaluate(&ch, hdrblob_get(hdrs, hlen, "ETag"), 0, true) == COND_PRECONDITION_FAILED;
}

/* A cached block object: its metadata goes to the blocks step (blocks.h); the view closes. */
static struct gw_next read_by_blocks(struct gw_req *q, store_obj *obj, bool stale)
{
    size_t hlen = 0;
    const char *hdrs = store_obj_headers(obj, &hlen);
    struct gw_blocks_meta m = {.etag = hdrblob_get(hdrs, hlen, "ETag"),
                               .hdrs = hdrs,
                               .hdrs_len = hlen,
                               .size = store_obj_size(obj),
                               .block_size = store_obj_block_size(obj),
                               .from_cache = true,
                               .stale = stale};
    sc_code rc = gw_blocks_take_meta(q, &m);
    store_obj_close(obj);
    if (rc != SC_OK)
        return GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL));
    return GW_NEXT(GW_STEP_BLOCKS);
}

/*
 * Serves the cached copy if there is a usable one, into *next: answered, refused, or asked
 * (authorization or revalidation). Otherwise leaves *next alone (the miss).
 */
static void serve_cached(struct gw_req *q, bool may_revalidate, bool stale, struct gw_next *next)
{
    store_obj *obj = NULL;
    sc_code rc = store_obj_open(q->g->st, q->tgt.bucket, q->tgt.key, &obj);
    q->serve.looked_empty = rc == SC_ENOTFOUND;
    if (rc != SC_OK) {
        if (rc != SC_ENOTFOUND)
            sc_warn("store lookup of %s/%s failed: %s", q->tgt.bucket, q->tgt.key, sc_strerror(rc));
        return;
    }
    if (stored_without_etag(obj)) {
        store_obj_close(obj);
        sc_warn("cached %s/%s has no ETag: dropped, fetching again", q->tgt.bucket, q->tgt.key);
        store_remove(q->g->st, q->tgt.bucket, q->tgt.key);
        return;
    }
    if (peer_holds_another_version(q, obj)) {
        store_obj_close(obj);
        sc_info("a peer asked for %s/%s at a version other than the cached one: dropped, "
                "asking the bucket",
                q->tgt.bucket, q->tgt.key);
        fill_invalidate(q->g->fills, q->tgt.bucket, q->tgt.key);
        store_remove(q->g->st, q->tgt.bucket, q->tgt.key);
        return; /* the miss: the bucket answers the peer's If-Match */
    }
    if (!gw_authz_admit(q, next)) {
        store_obj_close(obj); /* refused, or asked: the answer comes back to the lookup */
        return;
    }
    if (may_revalidate && gw_reval_due(q, store_obj_stored_at(obj))) {
        size_t hlen = 0;
        const char *hdrs = store_obj_headers(obj, &hlen);
        const char *cached_etag = hdrblob_get(hdrs, hlen, "ETag");
        char etag[GW_ASK_ETAG_MAX];
        snprintf(etag, sizeof(etag), "%s", cached_etag ? cached_etag : "");
        store_obj_close(obj); /* the ETag lived in the map */
        *next = gw_reval_start(q, etag);
        return;
    }
    if (store_obj_is_blocks(obj)) {
        if (peer_asks_a_name_not_ours(q) && !peer_range_cached(q, obj)) {
            store_obj_close(obj); /* its blocks would be fetched, perhaps from another peer */
            *next = pass_for_peer(q);
            return;
        }
        *next = read_by_blocks(q, obj, stale);
        return;
    }
    enum MHD_Result ret = MHD_NO;
    rc = serve_hit(q, obj, stale, &ret);
    if (rc == SC_OK) {
        *next = GW_SENT(ret);
        return;
    }
    sc_warn("cached %s/%s unusable (%s): fetching again", q->tgt.bucket, q->tgt.key,
            sc_strerror(rc));
}

/*
 * Whether the manifests see q as a trainer's read. On a fleet each gateway plans for the names
 * it owns (manifest.h), and a trainer on another node reads them through a peer request: so a
 * peer's read is its trainer's here when this gateway owns the name, and nobody's otherwise
 * (the asking gateway saw it already, and plans for it if it is its own).
 */
static bool trainer_read(struct gw_req *q)
{
    return !q->peer.from || !peer_asks_a_name_not_ours(q);
}

/* Tells the manifests what the trainer reads: the object, or the bytes its Range names. */
static void observe(struct gw_req *q)
{
    const char *range = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Range");
    struct mf_read span;
    bool ranged = range_span(range, &span.first, &span.last);
    mf_observe(q->g->manifests, q->tgt.bucket, q->tgt.key, ranged ? &span : NULL);
}

struct gw_next gw_serve_lookup(struct gw_req *q)
{
    /* The trainer's position moves before the store counts the read, so that a policy
     * planning by a manifest sees the object's (or block's) next use, not this one. */
    if (q->tgt.kind == S3_REQ_GET_OBJECT && !q->serve.observed && trainer_read(q))
        observe(q);
    q->serve.observed = true; /* an authorization's answer comes back here */
    /* Right after a revalidation the copy is served as its answer said, once. */
    bool revalidated = q->reval.answered, stale = q->reval.stale;
    q->reval.answered = q->reval.stale = false;
    struct gw_next next = GW_NEXT(GW_STEP_MISS);
    serve_cached(q, !revalidated, stale, &next);
    return next;
}
