/*
 * blocks.c - GET and HEAD of a large object, block by block (see blocks.h).
 *
 * The body is a libmicrohttpd callback response that walks the answer's blocks in order.
 * For each block it holds one source: a read view of the store on that block (copied
 * out), or a reader's reference to the block's fetch, read through a relay cursor that
 * parks the connection while the bytes are on their way. Fetches of the next blocks are
 * started (or joined) ahead of the reader, up to --fetch-parallelism in all, and handed
 * over when the reader gets there.
 */
#include "blocks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../proto/hdrblob.h"
#include "../proto/range.h"
#include "../store/store.h"
#include "../upstream/block_fetch.h"
#include "../upstream/fill.h"
#include "ask.h"
#include "config.h"
#include "reply.h"
#include "req.h"
#include "respond.h"
#include "xcache.h"
#include "zerocopy.h"

/* An answer needing at most 1/BLOCKS_PART_SHARE of a block nobody has fetches its span of it
 * on its own (source_from_part). */
#define BLOCKS_PART_SHARE 4
#define NO_BLOCK          UINT32_MAX

/* Answers over more blocks than this judge X-Cache by the store alone. */
#define JUDGE_BLOCKS_MAX 1024

/* Bytes libmicrohttpd asks for at a time. */
#define BLOCKS_READ_CHUNK (256 * 1024)

/* An answer over at most this many blocks, all cached, is sent from the store's map without
 * a copy (body_from_store); their checksums are verified before the first byte, so longer
 * answers are streamed block by block instead. */
#define BLOCKS_IOVEC_MAX 4

struct ahead {
    uint32_t idx;
    block_fetch *fetch;
};

struct gw_blocks {
    /* the object, of one ETag */
    char *etag;
    char *hdrs;
    size_t hdrs_len;
    uint64_t size;
    uint32_t block_size;
    bool from_cache;      /* the metadata was cached: a HEAD or a bodiless answer is a hit */
    bool stale;           /* served although its revalidation failed */
    bool asked;           /* its size was asked, by an opening or a HEAD (once per request) */
    uint64_t epoch;       /* where writes to it stood when it was asked (fill.h) */
    block_fetch *opening; /* the GET that asked it with the range's first block
                             (block_fetch_open), until that block is being sent */
    bool restarted;       /* it changed under this request once: fetched afresh */
    uint32_t own_block;   /* the block this request's own GET fetched (its fill's, which goes
                             on as block 0's fetch, or its opening's): its miss, however soon
                             it arrived; NO_BLOCK if none */
    /* the answer */
    bool answered;
    struct answer a;
    uint32_t last;       /* its last block */
    uint32_t ahead_last; /* the last block fetched ahead: last, or beyond for a sequential
                            reader (readahead.h) */
    /* the block being sent */
    bool have;
    uint32_t cur;
    store_obj *view; /* from the store ... */
    const unsigned char *data;
    uint32_t data_len;
    block_fetch *fetch; /* ... or from its fetch */
    bool part;          /* that fetch is the reader's own span of the block (source_from_part) */
    struct relay_cursor cursor;
    /* fetches started ahead of the reader */
    block_fetch *proof; /* one of them whose head must prove the version first (begin) */
    struct ahead ahead[GW_FETCH_PARALLELISM_MAX];
    unsigned n_ahead;
    uint32_t next_ahead; /* the next block to consider */
};

/* ---- state ------------------------------------------------------------------------- */

static void release_source(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    store_obj_close(b->view);
    b->view = NULL;
    b->data = NULL;
    if (b->fetch) {
        relay *r = block_fetch_relay(b->fetch);
        relay_unpark(r, &q->waiter);
        relay_detach(r, &b->cursor);
        block_fetch_leave(b->fetch);
        b->fetch = NULL;
    }
    b->part = false;
    b->have = false;
}

static void release_ahead(struct gw_blocks *b)
{
    for (unsigned i = 0; i < b->n_ahead; i++)
        block_fetch_leave(b->ahead[i].fetch);
    b->n_ahead = 0;
}

/* Lets go of every block and forgets the answer (the metadata stays). */
static void release_blocks(struct gw_req *q)
{
    if (q->blocks->proof != NULL)
        relay_unpark(block_fetch_relay(q->blocks->proof), &q->waiter);
    q->blocks->proof = NULL;
    release_source(q);
    release_ahead(q->blocks);
    q->blocks->answered = false;
    q->blocks->next_ahead = 0;
}

static void forget_meta(struct gw_blocks *b)
{
    free(b->etag);
    free(b->hdrs);
    b->etag = b->hdrs = NULL;
    b->hdrs_len = 0;
}

static void release_opening(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    if (b->opening == NULL)
        return;
    relay_unpark(block_fetch_relay(b->opening), &q->waiter);
    block_fetch_leave(b->opening);
    b->opening = NULL;
}

static void free_state(void *arg)
{
    struct gw_req *q = arg;
    if (q->blocks == NULL)
        return;
    release_opening(q);
    release_blocks(q);
    forget_meta(q->blocks);
    free(q->blocks);
    q->blocks = NULL;
}

/* q's state, made (with its cleanup) on first use; NULL when out of memory. */
static struct gw_blocks *state(struct gw_req *q)
{
    if (q->blocks == NULL) {
        q->blocks = calloc(1, sizeof(*q->blocks));
        if (q->blocks != NULL)
            gw_req_cleanup_add(q, free_state, q);
    }
    return q->blocks;
}

sc_code gw_blocks_take_meta(struct gw_req *q, const struct gw_blocks_meta *m)
{
    struct gw_blocks *b = state(q);
    if (b == NULL)
        return SC_ENOMEM;
    if (m->etag == NULL || m->block_size == 0)
        return SC_EINVAL;
    release_blocks(q);
    forget_meta(b);
    b->etag = strdup(m->etag);
    b->hdrs = malloc(m->hdrs_len ? m->hdrs_len : 1);
    if (b->etag == NULL || b->hdrs == NULL) {
        forget_meta(b);
        return SC_ENOMEM;
    }
    memcpy(b->hdrs, m->hdrs, m->hdrs_len);
    b->hdrs_len = m->hdrs_len;
    b->size = m->size;
    b->block_size = m->block_size;
    b->from_cache = m->from_cache;
    b->stale = m->stale;
    b->own_block = NO_BLOCK; /* gw_blocks_take_head and opening_answer say otherwise */
    return SC_OK;
}

/* The metadata from the head of a GET of the object (a fill's, or an opening's). */
static sc_code take_head(struct gw_req *q, const struct http_header *headers, size_t n,
                         uint64_t size)
{
    char *blob = NULL;
    size_t len = 0;
    if (hdrblob_encode(headers, n, &blob, &len) != SC_OK)
        return SC_ENOMEM;
    struct gw_blocks_meta m = {.etag = hdrblob_get(blob, len, "ETag"),
                               .hdrs = blob,
                               .hdrs_len = len,
                               .size = size,
                               .block_size = q->g->cfg->block_size};
    sc_code rc = gw_blocks_take_meta(q, &m);
    free(blob);
    return rc;
}

sc_code gw_blocks_take_head(struct gw_req *q, const struct http_header *headers, size_t n,
                            uint64_t size)
{
    sc_code rc = take_head(q, headers, n, size);
    if (rc == SC_OK)
        q->blocks->own_block = 0;
    return rc;
}

static bool blocks_fit(const struct gw_config *cfg, uint64_t size)
{
    uint32_t bs = cfg->block_size;
    return size > bs && size <= cfg->max_object_size &&
           size / bs < STORE_BLOCKS_MAX; /* a size no store could hold in blocks is a lie */
}

bool gw_blocks_is_large(const struct gw_req *q, uint64_t size)
{
    return blocks_fit(q->g->cfg, size);
}

/* ---- the blocks' sources ------------------------------------------------------------- */

static struct block_ref ref_of(struct gw_req *q, uint32_t idx)
{
    struct gw_blocks *b = q->blocks;
    return (struct block_ref){q->tgt.bucket, q->tgt.key, b->etag, b->size, b->block_size, idx};
}

static uint32_t block_len(struct gw_req *q, uint32_t idx)
{
    struct block_ref ref = ref_of(q, idx);
    return block_ref_len(&ref);
}

/* A read view of the store's copy when it is this version of the object, else NULL. */
static store_obj *view_of_version(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    store_obj *obj = NULL;
    if (store_obj_open(q->g->st, q->tgt.bucket, q->tgt.key, &obj) != SC_OK)
        return NULL;
    if (!store_obj_is_version(obj, b->etag, b->size, b->block_size)) {
        store_obj_close(obj);
        return NULL;
    }
    return obj;
}

/* The fetch of block idx started ahead of the reader, taken over; NULL if none. */
static block_fetch *take_ahead(struct gw_blocks *b, uint32_t idx)
{
    for (unsigned i = 0; i < b->n_ahead; i++) {
        if (b->ahead[i].idx != idx)
            continue;
        block_fetch *f = b->ahead[i].fetch;
        b->ahead[i] = b->ahead[--b->n_ahead];
        return f;
    }
    return NULL;
}

/* Starts (or joins) the fetch of block idx for the reader to take over when it gets there
 * (take_ahead). False when it could not. */
static bool fetch_ahead(struct gw_req *q, uint32_t idx)
{
    struct gw_blocks *b = q->blocks;
    struct block_ref ref = ref_of(q, idx);
    block_fetch *f = NULL;
    if (b->n_ahead >= GW_FETCH_PARALLELISM_MAX ||
        block_fetch_join(q->g->block_fetches, &ref, &q->as, &f, NULL) != SC_OK)
        return false;
    b->ahead[b->n_ahead++] = (struct ahead){idx, f};
    return true;
}

/* Block idx from the store, if it holds it at this version. */
static bool source_from_store(struct gw_req *q, uint32_t idx)
{
    struct gw_blocks *b = q->blocks;
    store_obj *obj = view_of_version(q);
    if (obj == NULL)
        return false;
    const void *data = NULL;
    uint32_t len = 0;
    sc_code rc = store_obj_block(obj, idx, &data, &len);
    if (rc != SC_OK) {
        if (rc != SC_ENOTFOUND)
            sc_warn("cached block %" PRIu32 " of %s/%s unusable (%s): fetching it again", idx,
                    q->tgt.bucket, q->tgt.key, sc_strerror(rc));
        store_obj_close(obj);
        return false;
    }
    b->view = obj;
    b->data = data;
    b->data_len = len;
    return true;
}

/* Reads block idx from the block's fetch f (a reader's reference, taken over) from offset in. */
static void read_fetch_of_block(struct gw_req *q, block_fetch *f, uint32_t idx, uint64_t in)
{
    struct gw_blocks *b = q->blocks;
    b->fetch = f;
    relay_attach(block_fetch_relay(f), &b->cursor, in);
    /* An answer that ends inside this block waits for the block's version check before its
     * last byte, as one that ends with the block does (block_fetch.h). */
    uint64_t end = b->a.start + b->a.len - (uint64_t)idx * b->block_size;
    if (end < block_len(q, idx))
        relay_hold_from(block_fetch_relay(f), &b->cursor, end - 1);
}

/* Makes block idx the one being sent, its first byte to send at offset `in` of it. */
static sc_code open_source(struct gw_req *q, uint32_t idx, uint64_t in)
{
    struct gw_blocks *b = q->blocks;
    release_source(q);
    block_fetch *f = take_ahead(b, idx);
    if (f == NULL && !source_from_store(q, idx)) {
        struct block_ref ref = ref_of(q, idx);
        sc_code rc = block_fetch_join(q->g->block_fetches, &ref, &q->as, &f, NULL);
        if (rc != SC_OK)
            return rc;
    }
    if (f != NULL)
        read_fetch_of_block(q, f, idx, in);
    b->cur = idx;
    b->have = true;
    return SC_OK;
}

/*
 * The answer's first block from the opening that learned the object's version (block 'idx',
 * from offset `in`): its whole block's fetch, or the reader's own span of it, and then the
 * whole block is fetched beside it for the cache, as for source_from_part. False when the
 * answer does not start where the opening does (a condition turned it into another answer).
 */
static bool source_from_opening(struct gw_req *q, uint32_t idx, uint64_t in)
{
    struct gw_blocks *b = q->blocks;
    block_fetch *f = b->opening;
    struct block_opened o;
    b->opening = NULL;
    if (!block_fetch_opened(f, &o) || o.idx != idx || strcmp(o.etag, b->etag) != 0 ||
        o.size != b->size || in < o.block_from || in >= o.block_from + o.len) {
        block_fetch_leave(f);
        return false;
    }
    release_source(q);
    if (o.whole) {
        read_fetch_of_block(q, f, idx, in);
    } else {
        /* The reader's span, or a whole block another fetch of that version stores: either
         * way the answer's last byte waits for the version check, as a block's does. */
        struct block_ref ref = ref_of(q, idx);
        (void)block_fetch_prefetch(q->g->block_fetches, &ref, &q->as, NULL, NULL);
        b->fetch = f;
        b->part = true;
        relay_attach(block_fetch_relay(f), &b->cursor, in - o.block_from);
        uint64_t end = b->a.start + b->a.len - (uint64_t)idx * b->block_size - o.block_from;
        if (end < o.len)
            relay_hold_from(block_fetch_relay(f), &b->cursor, end - 1);
    }
    b->cur = idx;
    b->have = true;
    return true;
}

/*
 * The answer's first block, when the answer needs only a small piece of it (at most
 * BLOCKS_PART_SHARE of it) and nobody has it: that span is fetched for this reader alone, so
 * its bytes wait neither for the block's front nor for the block's version check, and the
 * whole block is fetched beside it for the cache (a small range costs its span and one block
 * upstream). An answer that needs most of the block waits for the block.
 */
static bool source_from_part(struct gw_req *q, uint32_t idx, uint64_t in)
{
    struct gw_blocks *b = q->blocks;
    struct block_ref ref = ref_of(q, idx);
    uint64_t to = b->a.start + b->a.len - (uint64_t)idx * b->block_size;
    if (to > block_len(q, idx))
        to = block_len(q, idx);
    if ((to - in) * BLOCKS_PART_SHARE > block_len(q, idx) ||
        block_fetch_arrived(q->g->block_fetches, &ref))
        return false;
    store_obj *obj = view_of_version(q);
    bool cached = obj != NULL && store_obj_blocks_cached(obj, idx, idx) == 1;
    store_obj_close(obj);
    if (cached)
        return false;
    block_fetch *f = NULL;
    if (block_fetch_part(q->g->block_fetches, &ref, (uint32_t)in, (uint32_t)to, &q->as, &f) !=
        SC_OK)
        return false;
    (void)block_fetch_prefetch(q->g->block_fetches, &ref, &q->as, NULL, NULL);
    release_source(q);
    b->fetch = f;
    b->part = true;
    relay_attach(block_fetch_relay(f), &b->cursor, 0);
    b->cur = idx;
    b->have = true;
    return true;
}

/* Starts the fetches of the blocks after idx that the store lacks, up to
 * --fetch-parallelism blocks from idx on, within the answer. */
static void keep_ahead(struct gw_req *q, uint32_t idx)
{
    struct gw_blocks *b = q->blocks;
    unsigned p = q->g->cfg->fetch_parallelism;
    uint64_t until = (uint64_t)idx + p - 1;
    if (until > b->ahead_last)
        until = b->ahead_last;
    if (b->next_ahead <= idx)
        b->next_ahead = idx + 1;
    if (b->next_ahead > until)
        return;
    /* Fetches hold their blocks in memory until stored, and a reader keeps those it started
     * ahead until it gets there (at most fetch-parallelism blocks a connection): all readers
     * together start no more fetches ahead than BLOCK_FETCH_READERS readers at full
     * parallelism would (blocks already in wait for slow readers besides). */
    if (block_fetches_running(q->g->block_fetches) >= BLOCK_FETCH_READERS * p)
        return;
    store_obj *obj = view_of_version(q);
    for (uint32_t j = b->next_ahead; j <= until && b->n_ahead < GW_FETCH_PARALLELISM_MAX; j++) {
        b->next_ahead = j + 1;
        struct block_ref ref = ref_of(q, j);
        /* (a block another reader's opening asks is left to it: it may be this version) */
        if ((obj != NULL && store_obj_blocks_cached(obj, j, j) == 1) ||
            block_fetch_being_opened(q->g->block_fetches, &ref))
            continue;
        if (!fetch_ahead(q, j))
            break;
    }
    store_obj_close(obj);
}

/* ---- the body ------------------------------------------------------------------------ */

/* The object changed at the upstream: its fills are invalidated and its cached copy removed
 * (waited for: the next request must not find it). */
static void drop_object(struct gw_req *q)
{
    fill_invalidate(q->g->fills, q->tgt.bucket, q->tgt.key);
    store_remove(q->g->st, q->tgt.bucket, q->tgt.key);
}

/* Copies from a fetch's relay; parks the connection when nothing has arrived yet. */
static ssize_t read_fetch(struct gw_req *q, char *buf, size_t n)
{
    struct gw_blocks *b = q->blocks;
    ssize_t got = relay_read(block_fetch_relay(b->fetch), &b->cursor, buf, n, &q->waiter);
    if (got == RELAY_AGAIN)
        return 0; /* the connection is suspended until bytes arrive */
    if (got > 0)
        return got;
    bool changed = block_fetch_changed(b->fetch);
    sc_warn("block %" PRIu32 " of %s/%s failed during the transfer (%s%s): the response is cut "
            "short",
            b->cur, q->tgt.bucket, q->tgt.key, sc_strerror(block_fetch_outcome(b->fetch)),
            changed ? ", the object changed" : "");
    if (changed)
        drop_object(q); /* before the client learns: its next request fetches afresh */
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

static ssize_t read_blocks(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct gw_req *q = cls;
    struct gw_blocks *b = q->blocks;
    if (pos >= b->a.len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    uint64_t off = b->a.start + pos;
    uint32_t idx = (uint32_t)(off / b->block_size);
    uint64_t in = off - (uint64_t)idx * b->block_size;
    if (!b->have || b->cur != idx) {
        sc_code rc = open_source(q, idx, in);
        if (rc != SC_OK) {
            sc_warn("block %" PRIu32 " of %s/%s: %s: the response is cut short", idx, q->tgt.bucket,
                    q->tgt.key, sc_strerror(rc));
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        keep_ahead(q, idx);
    }
    uint64_t n = block_len(q, idx) - in;
    if (n > b->a.len - pos)
        n = b->a.len - pos;
    if (n > max)
        n = max;
    ssize_t got = (ssize_t)n;
    if (b->view != NULL) {
        memcpy(buf, b->data + in, n);
        sc_stat_add(q->g->stats.bytes_from_cache, n);
    } else {
        got = read_fetch(q, buf, (size_t)n);
    }
    if (got > 0)
        q->bytes_out += (uint64_t)got;
    return got;
}

/* ---- the answer ---------------------------------------------------------------------- */

static void count(struct gw_req *q, bool hit, uint64_t bytes)
{
    if (hit)
        sc_stat_add(q->g->stats.hits, 1);
    else
        sc_stat_add(q->g->stats.misses, 1);
    gw_buckets_count(&q->g->buckets, q->tgt.bucket, hit ? GW_READ_HIT : GW_READ_MISS, bytes);
}

/*
 * X-Cache from how many of the answer's blocks need no upstream work for it: held by the
 * store at this version, or arrived whole in another's fetch still being stored; never the
 * block fetched for this request (xcache.h), which the store may already hold. Returns the
 * first block after `first` the store lacks, for proof_of_version (b->last + 1 when there is
 * none, or when the answer spans more than JUDGE_BLOCKS_MAX blocks and is not looked at block
 * by block).
 */
static uint32_t judge_cached(struct gw_req *q, uint32_t first)
{
    struct gw_blocks *b = q->blocks;
    store_obj *obj = view_of_version(q);
    uint64_t all = (uint64_t)b->last - first + 1;
    uint64_t cached = obj ? store_obj_blocks_cached(obj, first, b->last) : 0;
    bool own_in = b->own_block >= first && b->own_block <= b->last; /* NO_BLOCK is never */
    if (own_in && obj != NULL && store_obj_blocks_cached(obj, b->own_block, b->own_block) == 1)
        cached--; /* stored since it was fetched for this request: still not from the cache */
    uint32_t missing = b->last + 1;
    if (cached < all && all <= JUDGE_BLOCKS_MAX) {
        cached = 0;
        for (uint32_t i = first; i <= b->last; i++) {
            struct block_ref ref = ref_of(q, i);
            bool own = i == b->own_block;
            bool stored = obj != NULL && store_obj_blocks_cached(obj, i, i) == 1;
            if (!stored && i > first && missing > b->last)
                missing = i;
            bool arrived = !own && !stored && block_fetch_arrived(q->g->block_fetches, &ref);
            if (gw_xcache_block_counts(own, stored, arrived))
                cached++;
        }
    }
    store_obj_close(obj);
    q->x_cache = gw_xcache_of(cached, all);
    return missing;
}

static struct MHD_Response *with_headers(struct gw_req *q, struct MHD_Response *resp)
{
    struct gw_blocks *b = q->blocks;
    if (resp == NULL)
        return NULL;
    gw_reply_blob_headers(q, resp, b->hdrs, b->hdrs_len, b->a.status);
    gw_reply_range_headers(resp, &b->a, b->size);
    if (b->stale) {
        MHD_add_response_header(resp, "Warning", "111 s3cached \"Revalidation Failed\"");
        MHD_add_response_header(resp, "x-s3cached-stale", "true");
    }
    return resp;
}

/* Answers that send no block: 304, 412, 416, and HEAD. */
static struct gw_next answer_without_body(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    q->x_cache = b->from_cache ? "HIT" : "MISS";
    count(q, b->from_cache, 0);
    if (b->a.status != 200 && b->a.status != 206) {
        const char *lm = hdrblob_get(b->hdrs, b->hdrs_len, "Last-Modified");
        return GW_SENT(gw_reply_bodiless(q, &b->a, b->size, b->etag, lm));
    }
    struct MHD_Response *resp = with_headers(q, gw_respond_head(b->a.len));
    return resp ? GW_SENT(gw_respond_queue(q, b->a.status, resp)) : GW_CLOSE;
}

/*
 * An answer that starts from the store but needs a fetch further on: the fetch of the first
 * block the store lacks (from `missing`, which judge_cached found in its walk), started now
 * (or found among those ahead). Its head proves the object is still this version before any
 * byte is sent, so that a copy the upstream has replaced since is dropped and fetched afresh,
 * not cut short mid-answer (an upstream that ignores If-Match answers with the new version's
 * ETag). NULL when the store holds the whole answer, or the answer spans more than
 * JUDGE_BLOCKS_MAX blocks.
 */
static block_fetch *proof_of_version(struct gw_req *q, uint32_t missing)
{
    struct gw_blocks *b = q->blocks;
    if (missing > b->last)
        return NULL;
    store_obj *obj = view_of_version(q);
    uint32_t m = missing; /* (stored since judge_cached looked, maybe: the next one then) */
    while (m <= b->last && obj != NULL && store_obj_blocks_cached(obj, m, m) == 1)
        m++;
    store_obj_close(obj);
    if (m > b->last)
        return NULL;
    for (unsigned i = 0; i < b->n_ahead; i++)
        if (b->ahead[i].idx == m)
            return b->ahead[i].fetch;
    return fetch_ahead(q, m) ? b->ahead[b->n_ahead - 1].fetch : NULL;
}

/* Decides the answer and opens its first block. False (*next set) when answered already. */
static bool begin(struct gw_req *q, struct gw_next *next)
{
    struct gw_blocks *b = q->blocks;
    const char *lm = hdrblob_get(b->hdrs, b->hdrs_len, "Last-Modified");
    b->a = gw_reply_decide(q, b->etag, lm, b->size);
    if (q->tgt.kind == S3_REQ_HEAD_OBJECT || (b->a.status != 200 && b->a.status != 206)) {
        *next = answer_without_body(q);
        return false;
    }
    uint32_t first = (uint32_t)(b->a.start / b->block_size);
    b->last = (uint32_t)((b->a.start + b->a.len - 1) / b->block_size);
    b->ahead_last = b->last;
    /* A peer asks block by block for its own reader, whose read-ahead is the asker's. */
    if (!q->peer.from && gw_readahead_note(&q->g->readahead, q->tgt.bucket, q->tgt.key, b->a.start,
                                           b->a.start + b->a.len) >= GW_READAHEAD_RUN) {
        /* A sequential reader: the next fetch-parallelism blocks after this range too. */
        uint64_t beyond = (uint64_t)b->last + q->g->cfg->fetch_parallelism;
        uint32_t count = block_count(b->size, b->block_size);
        b->ahead_last = beyond < count ? (uint32_t)beyond : count - 1;
    }
    uint32_t missing = judge_cached(q, first);
    uint64_t in = b->a.start - (uint64_t)first * b->block_size;
    sc_code rc = SC_OK;
    if (!(b->opening != NULL && source_from_opening(q, first, in)) &&
        !source_from_part(q, first, in))
        rc = open_source(q, first, in);
    if (rc != SC_OK) {
        *next = GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL));
        return false;
    }
    keep_ahead(q, first);
    if (b->fetch == NULL)
        b->proof = proof_of_version(q, missing);
    b->answered = true;
    return true;
}

/*
 * A fetch the answer waited for before its first byte (its first block's, or the proof of
 * its version) failed. An object that changed at the upstream is dropped and fetched
 * afresh, once; any other failure is answered.
 */
static struct gw_next failed_before_answer(struct gw_req *q, block_fetch *f)
{
    struct gw_blocks *b = q->blocks;
    bool changed = block_fetch_changed(f);
    long status = block_fetch_status(f);
    sc_code why = block_fetch_outcome(f);
    release_blocks(q); /* f may be gone after this */
    q->x_cache = NULL;
    if (changed && !b->restarted) {
        sc_info("%s/%s changed at the upstream (status %ld): its cached blocks are dropped and "
                "it is fetched afresh",
                q->tgt.bucket, q->tgt.key, status);
        b->restarted = true;
        drop_object(q);
        return GW_NEXT(GW_STEP_MISS);
    }
    sc_warn("a block of %s/%s failed before the answer: %s (status %ld)", q->tgt.bucket, q->tgt.key,
            sc_strerror(why), status);
    count(q, false, 0);
    enum s3_xml_error e = status == 403   ? S3_XML_ACCESS_DENIED
                          : status == 404 ? S3_XML_NO_SUCH_KEY
                                          : S3_XML_BAD_GATEWAY;
    return GW_SENT(gw_respond_known_error(q, e, NULL));
}

/*
 * The reader's own span of its first block was not answered as asked (s3rver answers
 * "bytes=0-0" with the whole object): the answer waits for the shared fetch of the block.
 */
static struct gw_next part_failed(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    uint32_t idx = b->cur;
    sc_warn("the span of block %" PRIu32 " of %s/%s was not answered as asked: reading the "
            "block",
            idx, q->tgt.bucket, q->tgt.key);
    uint64_t in = b->a.start - (uint64_t)idx * b->block_size;
    struct block_ref ref = ref_of(q, idx);
    block_fetch *f = NULL;
    release_source(q);
    if (block_fetch_join(q->g->block_fetches, &ref, &q->as, &f, NULL) != SC_OK)
        return GW_SENT(gw_respond_known_error(q, S3_XML_SLOW_DOWN, NULL));
    read_fetch_of_block(q, f, idx, in);
    b->cur = idx;
    b->have = true;
    return GW_NEXT(GW_STEP_BLOCKS);
}

/*
 * The whole answer as iovecs into the store's map when the first block comes from the store
 * and the few others are cached at this version too (each checked against its checksum
 * here): libmicrohttpd sends them as they are, and the response takes over the view, which
 * keeps the bytes in place until it is freed. An answer inside one block may be sent from the
 * data file instead (--zero-copy), the view held by q until the client has read it
 * (zerocopy.h). NULL otherwise (the callback response serves).
 */
static struct MHD_Response *body_from_store(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    uint32_t more = b->last - b->cur; /* blocks after the first */
    if (b->view == NULL || more >= BLOCKS_IOVEC_MAX ||
        (more > 0 && store_obj_blocks_cached(b->view, b->cur + 1, b->last) != more))
        return NULL;
    const void *data[BLOCKS_IOVEC_MAX] = {b->data};
    uint32_t len[BLOCKS_IOVEC_MAX] = {b->data_len};
    uint32_t bad = 0;
    if (more > 0 &&
        store_obj_blocks_read(b->view, b->cur + 1, more, &data[1], &len[1], &bad) != SC_OK) {
        (void)fetch_ahead(q, bad); /* taken over there, not read from the store again */
        return NULL;
    }
    struct iovec iov[BLOCKS_IOVEC_MAX];
    uint64_t skip = b->a.start - (uint64_t)b->cur * b->block_size;
    uint64_t left = b->a.len;
    for (uint32_t i = 0; i <= more; i++) { /* from the answer's first byte to its last */
        uint64_t n = len[i] - skip < left ? len[i] - skip : left;
        iov[i] = (struct iovec){(void *)((const char *)data[i] + skip), (size_t)n};
        left -= n;
        skip = 0;
    }
    /* One block: from the data file if it can, q holding the view (zerocopy.h); else the map. */
    struct MHD_Response *resp =
        more == 0 ? gw_zc_response(q, b->view, iov[0].iov_base, iov[0].iov_len) : NULL;
    if (resp == NULL)
        resp = gw_reply_from_view(b->view, iov, more + 1);
    if (resp == NULL)
        return NULL;
    b->view = NULL; /* the response's now, or q's (zerocopy.h) */
    b->data = NULL;
    b->have = false;
    keep_ahead(q, b->last); /* a sequential reader's next blocks, as the callback path does */
    sc_stat_add(q->g->stats.bytes_from_cache, b->a.len);
    q->bytes_out = b->a.len;
    return resp;
}

struct gw_next gw_blocks_serve(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    struct gw_next next;
    if (!b->answered && !begin(q, &next))
        return next;
    if (b->fetch != NULL) {
        /* Nothing is sent before the first fetched block proves its version. */
        bool failed = false;
        const struct relay_head *h = relay_head(block_fetch_relay(b->fetch), &q->waiter, &failed);
        if (h == NULL && !failed)
            return GW_WAIT(GW_STEP_BLOCKS); /* resumed when the head arrives */
        if (h == NULL && b->part && !block_fetch_changed(b->fetch))
            return part_failed(q); /* the block itself may be served well */
        if (h == NULL)
            return failed_before_answer(q, b->fetch);
    }
    if (b->proof != NULL) {
        bool failed = false;
        const struct relay_head *h = relay_head(block_fetch_relay(b->proof), &q->waiter, &failed);
        if (h == NULL && !failed)
            return GW_WAIT(GW_STEP_BLOCKS); /* resumed when the head arrives */
        if (h == NULL)
            return failed_before_answer(q, b->proof);
        b->proof = NULL; /* the version holds: the answer goes */
    }
    bool hit = strcmp(q->x_cache, "HIT") == 0;
    count(q, hit, b->a.len);
    struct MHD_Response *resp = body_from_store(q);
    if (resp == NULL)
        resp = MHD_create_response_from_callback(b->a.len, BLOCKS_READ_CHUNK, read_blocks, q, NULL);
    resp = with_headers(q, resp);
    return resp ? GW_SENT(gw_respond_queue(q, b->a.status, resp)) : GW_CLOSE;
}

/* ---- a range of an object not cached yet ----------------------------------------------- */

/* block_named_fn: an opening named a version: the record of a large object goes to the store
 * before its block can (upstream thread). */
static void record_opened(void *ctx, const char *bucket, const char *key,
                          const struct http_head *head, const char *etag, uint64_t size,
                          uint64_t epoch)
{
    struct gw *g = ctx;
    char *hdrs = NULL;
    size_t len = 0;
    if (!blocks_fit(g->cfg, size) ||
        hdrblob_encode(head->headers, head->n_headers, &hdrs, &len) != SC_OK)
        return;
    (void)fill_put_meta(g->fills, bucket, key, etag, hdrs, len, size,
                        epoch); /* a write in flight: not recorded */
    free(hdrs);
}

/*
 * A range of an object not seen yet is asked in one round trip, with the range's first
 * block (block_fetch_open, no If-Match): its answer names the object's size and version, and
 * its bytes are the answer's first. A range whose first byte needs the size (a suffix) asks
 * a HEAD first, as does a range whose opening was not answered as one.
 */
bool gw_blocks_ask_size(struct gw_req *q, struct gw_next *next)
{
    const char *range = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Range");
    if (q->tgt.kind != S3_REQ_GET_OBJECT || range == NULL)
        return false;
    struct gw_blocks *b = state(q);
    if (b == NULL || b->asked)
        return false;
    b->asked = true;
    b->epoch = fill_write_epoch(q->g->fills, q->tgt.bucket, q->tgt.key);
    struct block_opener o = {.bucket = q->tgt.bucket,
                             .key = q->tgt.key,
                             .block_size = q->g->cfg->block_size,
                             .max_size = q->g->cfg->max_object_size,
                             .named = record_opened,
                             .named_ctx = q->g,
                             .epoch = b->epoch};
    if (range_span(range, &o.first, &o.last)) {
        /* A range that starts early in its block and runs to the block's end (or past it)
         * opens the whole block and waits for its front: the block comes once, for the cache
         * too. Any other opens its own span, which is served as soon as it is in (its last
         * byte does not wait for the rest of the block), and the block is fetched beside it. */
        uint64_t block_start = o.first - o.first % o.block_size;
        if (o.last >= block_start + o.block_size - 1 &&
            (block_start + o.block_size - o.first) * BLOCKS_PART_SHARE > o.block_size)
            o.first = block_start;
        if (block_fetch_open(q->g->block_fetches, &o, &q->as, &b->opening) == SC_OK) {
            *next = GW_NEXT(GW_STEP_BLOCK_META);
            return true;
        }
    }
    gw_ask_head(q, &q->ask, NULL, true);
    *next = GW_WAIT(GW_STEP_BLOCK_META);
    return true;
}

/*
 * The opening's head. A large object's version goes to the blocks step with the opening as
 * its first block's source. A small object (or one above --max-object-size), a missing or
 * forbidden one go to the miss path, which reads it whole or answers the error, as a HEAD
 * saying so would have; any other answer (416, an upstream that ignores Range, a failure)
 * asks the HEAD.
 */
static struct gw_next opening_answer(struct gw_req *q)
{
    struct gw_blocks *b = q->blocks;
    bool failed = false;
    const struct relay_head *h = relay_head(block_fetch_relay(b->opening), &q->waiter, &failed);
    if (h == NULL && !failed)
        return GW_WAIT(GW_STEP_BLOCK_META); /* resumed when the head arrives */
    struct block_opened o;
    bool named = h != NULL && block_fetch_opened(b->opening, &o);
    if (named && gw_blocks_is_large(q, o.size) &&
        take_head(q, h->headers, h->n_headers, o.size) == SC_OK) {
        b->own_block = o.idx;
        return GW_NEXT(GW_STEP_BLOCKS); /* its record was queued at its head (record_opened) */
    }
    long status = block_fetch_status(b->opening);
    release_opening(q);
    if (named || status == 206 || status == 403 || status == 404)
        return GW_NEXT(GW_STEP_MISS);
    gw_ask_head(q, &q->ask, NULL, true);
    return GW_WAIT(GW_STEP_BLOCK_META);
}

struct gw_next gw_blocks_meta_answer(struct gw_req *q)
{
    if (q->blocks->opening != NULL)
        return opening_answer(q);
    struct gw_ask *a = &q->ask;
    bool large = a->result == SC_OK && a->status == 200 && a->length >= 0 && a->etag[0] &&
                 a->hdrs != NULL && gw_blocks_is_large(q, (uint64_t)a->length);
    struct gw_blocks_meta m = {.etag = a->etag,
                               .hdrs = a->hdrs,
                               .hdrs_len = a->hdrs_len,
                               .size = (uint64_t)a->length,
                               .block_size = q->g->cfg->block_size};
    sc_code rc = large ? gw_blocks_take_meta(q, &m) : SC_EINVAL;
    if (rc == SC_OK)
        (void)fill_put_meta(q->g->fills, q->tgt.bucket, q->tgt.key, a->etag, a->hdrs, a->hdrs_len,
                            m.size,
                            q->blocks->epoch); /* a write in flight: read by blocks, not recorded */
    gw_ask_release(a);
    return GW_NEXT(rc == SC_OK ? GW_STEP_BLOCKS : GW_STEP_MISS);
}
