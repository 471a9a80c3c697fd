/* range_prefetch.c - a byte range of an object warmed into the cache (see range_prefetch.h). */
#include "range_prefetch.h"

#include <stdlib.h>
#include <string.h>

#include "../proto/hdrblob.h"
#include "block_object.h"

static const struct up_identity gateway = {0}; /* prefetches are the gateway's */

struct range_job {
    fill_table *t;
    char *bucket, *key;
    uint64_t first, last;
    struct fill_watcher w;
    uint64_t epoch; /* fill_write_epoch() when the HEAD was sent */
    long status;    /* the HEAD's, 0 before */
    int64_t length; /* the object's size, -1 while unknown */
    char *etag;     /* the version whose blocks are fetched */
    char *hdrs;     /* the HEAD's replayable headers, for the metadata */
    size_t hdrs_len;
    bool stored_etag; /* etag is the store's: the upstream may have replaced the object since */
};

static void job_free(struct range_job *j)
{
    free(j->bucket);
    free(j->key);
    free(j->etag);
    free(j->hdrs);
    free(j);
}

static void finish(struct range_job *j, sc_code rc)
{
    struct fill_result r = {
        .rc = rc, .status = j->status, .size = j->length > 0 ? (uint64_t)j->length : 0};
    j->w.done(j->w.arg, &r);
    job_free(j);
}

static sc_code send_head(struct range_job *j);

/*
 * The blocks are in, or not. A version taken from the store that the upstream no longer has
 * (a 412, or another ETag: SC_EMISMATCH) is asked for once more through a HEAD, whose answer
 * replaces the stale metadata, as a whole object's fill recovers with its plain GET.
 */
static void on_blocks(void *arg, sc_code rc, uint64_t bytes_fetched)
{
    struct range_job *j = arg;
    (void)bytes_fetched;
    if (rc == SC_EMISMATCH && j->stored_etag) {
        j->stored_etag = false;
        free(j->etag);
        j->etag = NULL;
        j->length = -1;
        rc = send_head(j);
        if (rc == SC_OK)
            return;
    }
    finish(j, rc);
}

/* Fetches the blocks the range covers, of version j->etag, j->length bytes long. */
static void fetch_blocks(struct range_job *j)
{
    const struct fill_ctx *ctx = fill_table_ctx(j->t);
    uint64_t size = (uint64_t)j->length;
    if (j->first >= size) {
        finish(j, SC_OK); /* no byte of it exists: nothing to warm */
        return;
    }
    uint64_t last = j->last < size - 1 ? j->last : size - 1;
    struct block_ref ref = {j->bucket, j->key, j->etag, size, ctx->block_size, 0};
    sc_code rc = block_object_fetch_range(
        ctx->blocks, ctx->st, &ref, (uint32_t)(j->first / ctx->block_size),
        (uint32_t)(last / ctx->block_size), &gateway, ctx->parallelism, on_blocks, j);
    if (rc != SC_OK)
        finish(j, rc);
}

/*
 * What the store knows settles it when it holds the object whole, or all its blocks, or its
 * metadata at our block size (then the blocks are fetched at its ETag). False: ask upstream.
 */
static bool from_store(struct range_job *j)
{
    const struct fill_ctx *ctx = fill_table_ctx(j->t);
    uint64_t size = 0;
    if (store_peek(ctx->st, j->bucket, j->key, &size) == SC_OK) {
        j->length = (int64_t)size;
        finish(j, SC_OK);
        return true;
    }
    store_obj *obj = NULL;
    if (store_obj_open(ctx->st, j->bucket, j->key, &obj) != SC_OK)
        return false;
    bool ours = store_obj_is_blocks(obj) && store_obj_block_size(obj) == ctx->block_size;
    size_t hlen = 0;
    const char *hdrs = ours ? store_obj_headers(obj, &hlen) : NULL;
    const char *etag = hdrs ? hdrblob_get(hdrs, hlen, "ETag") : NULL;
    j->etag = etag ? strdup(etag) : NULL;
    j->length = (int64_t)store_obj_size(obj);
    bool whole = !store_obj_is_blocks(obj); /* stored between the peek and the open */
    store_obj_close(obj);
    if (whole) {
        finish(j, SC_OK);
        return true;
    }
    if (j->etag == NULL) {
        j->length = -1; /* of another block size, or unreadable: ask upstream */
        return false;
    }
    j->stored_etag = true;
    fetch_blocks(j);
    return true;
}

/* ---- the HEAD (upstream thread) -------------------------------------------------------- */

static void on_head(void *arg, const struct http_head *head)
{
    struct range_job *j = arg;
    const char *etag = http_header_get(head->headers, head->n_headers, "ETag");
    j->status = head->status;
    j->length = head->content_length;
    free(j->etag);
    j->etag = etag && head->status == 200 ? strdup(etag) : NULL;
    if (head->status == 200 &&
        hdrblob_encode(head->headers, head->n_headers, &j->hdrs, &j->hdrs_len) != SC_OK)
        j->hdrs = NULL;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    return true; /* a HEAD has none; an error body is dropped */
}

/* Whatever the HEAD said that ends the job before any block: the rc, or SC_OK to go on. */
static sc_code head_verdict(const struct range_job *j, sc_code rc)
{
    if (rc != SC_OK)
        return rc == SC_ECANCELED ? SC_ECANCELED : SC_EUPSTREAM;
    if (j->status == 404)
        return SC_ENOTFOUND;
    if (j->status != 200 || j->length < 0)
        return SC_EUPSTREAM;
    if (j->etag == NULL)
        return SC_EINVAL;
    return SC_OK;
}

static void on_head_done(void *arg, sc_code rc)
{
    struct range_job *j = arg;
    rc = head_verdict(j, rc);
    if (rc != SC_OK) {
        finish(j, rc);
        return;
    }
    if (!fill_is_large(j->t, (uint64_t)j->length)) {
        if (j->first >= (uint64_t)j->length) {
            finish(j, SC_OK); /* no byte of it exists: nothing to warm (as in fetch_blocks) */
            return;
        }
        /* stored whole: the fill reports to done, this job is over */
        rc = fill_prefetch(j->t, j->bucket, j->key, &j->w);
        if (rc != SC_OK)
            finish(j, rc);
        else
            job_free(j);
        return;
    }
    rc = j->hdrs == NULL ? SC_ENOMEM
                         : fill_put_meta(j->t, j->bucket, j->key, j->etag, j->hdrs, j->hdrs_len,
                                         (uint64_t)j->length, j->epoch);
    if (rc != SC_OK)
        finish(j, rc);
    else
        fetch_blocks(j); /* queued after the metadata, so the store takes them */
}

static const struct up_handler head_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_head_done,
};

/* Asks the upstream what the object is now; on_head_done goes on (on error, nothing follows). */
static sc_code send_head(struct range_job *j)
{
    j->status = 0;
    j->epoch = fill_write_epoch(j->t, j->bucket, j->key);
    return origin_head(fill_table_ctx(j->t)->origin, j->bucket, j->key, &gateway, &head_handler, j,
                       NULL);
}

sc_code range_prefetch(fill_table *t, const char *bucket, const char *key, uint64_t first,
                       uint64_t last, const struct fill_watcher *w)
{
    const struct fill_ctx *ctx = fill_table_ctx(t);
    if (first > last || ctx->blocks == NULL || ctx->block_size == 0)
        return SC_EINVAL;
    struct range_job *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return SC_ENOMEM;
    *j = (struct range_job){.t = t, .first = first, .last = last, .w = *w, .length = -1};
    j->bucket = strdup(bucket);
    j->key = strdup(key);
    if (j->bucket == NULL || j->key == NULL) {
        job_free(j);
        return SC_ENOMEM;
    }
    if (from_store(j))
        return SC_OK;
    sc_code rc = send_head(j);
    if (rc != SC_OK)
        job_free(j);
    return rc;
}
