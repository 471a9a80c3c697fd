/*
 * block_fetch.c - single-flight fetches of one block (see block_fetch.h).
 *
 * References: the upstream transfer holds one until the block is stored or dropped, and
 * each reader holds one. The table holds none: an entry is listed while others may join
 * it and unlisted when it fails or once its block is committed (or refused) by the store.
 */
#include "block_fetch.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "../common/log.h"
#include "../proto/range.h"

#define N_SLOTS 256

struct block_fetch {
    block_table *t;
    atomic_int refs;
    atomic_int readers;
    char *bucket, *key, *etag;
    uint64_t size;
    uint32_t block_size, idx;
    uint64_t start; /* the block's first byte in the object */
    uint32_t len;   /* its length */
    struct up_identity as;
    relay *relay;
    up_req *req;
    up_req *check;             /* the HEAD that checks the version once the bytes are in */
    uint64_t got;              /* body bytes received (upstream thread) */
    bool check_same;           /* the HEAD named the same ETag (upstream thread) */
    bool doomed;               /* the bytes fell short: the HEAD only tells whether it changed */
    bool check_changed;        /* the HEAD said the object is gone or of another ETag */
    long check_status;         /* the HEAD's status */
    bool listed;               /* table lock */
    bool part;                 /* a span for one reader (block_fetch_part): never stored */
    struct origin_route route; /* where it went, whether the fleet's copy rule lets the block be
                                  stored here (set before its transfer starts) */
    atomic_bool wanted;        /* a prefetch joined it: stored whatever the copy rule says */
    bool opening;         /* asked without If-Match (block_fetch_open): etag and size are NULL and 0
                             until its head names them (written under the table lock, on the upstream
                             thread, which alone reads it unlocked) */
    bool opened;          /* started by block_fetch_open (set before listed, never changed) */
    uint64_t max_size;    /* an opening's: the largest object it names */
    uint64_t asked_last;  /* an opening's last byte asked */
    block_named_fn named; /* an opening's: told when its head names the version */
    void *named_ctx;
    uint64_t named_epoch;
    bool canceled;       /* a cancel was sent for an answer that is not the block (table lock) */
    atomic_long status;  /* the upstream's, once the head is in */
    atomic_int outcome;  /* sc_code: SC_OK until it failed */
    atomic_bool changed; /* the object is no longer this version */
    bool good_head;      /* the head proved the block (upstream thread) */
    store_done_fn done;  /* the prefetcher's report, or NULL (table lock) */
    void *done_arg;
    block_fetch *next;
};

/* Whether the upstream honors If-Match on a GET (learned once: see probe_if_match). */
enum if_match_state { IF_MATCH_UNKNOWN, IF_MATCH_PROBING, IF_MATCH_HONORED, IF_MATCH_IGNORED };

struct block_table {
    const struct block_ctx *ctx;
    pthread_mutex_t mu;
    block_fetch *slots[N_SLOTS];
    atomic_uint running;
    atomic_int if_match; /* enum if_match_state */
    up_req *probe;       /* the probe in flight, if any (table lock) */
};

sc_code block_table_new(const struct block_ctx *ctx, block_table **out)
{
    block_table *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return SC_ENOMEM;
    t->ctx = ctx;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return SC_OK;
}

void block_table_free(block_table *t)
{
    if (t == NULL)
        return;
    up_req_release(t->probe);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

uint32_t block_count(uint64_t size, uint32_t block_size)
{
    return (uint32_t)((size + block_size - 1) / block_size);
}

uint64_t block_ref_start(const struct block_ref *b)
{
    return (uint64_t)b->idx * b->block_size;
}

uint32_t block_ref_len(const struct block_ref *b)
{
    uint64_t left = b->size - block_ref_start(b);
    return left < b->block_size ? (uint32_t)left : b->block_size;
}

unsigned block_fetches_running(block_table *t)
{
    return atomic_load(&t->running);
}

static unsigned slot_of(const char *bucket, const char *key, uint32_t idx)
{
    return (unsigned)(sc_hash_mix(sc_key_hash(bucket, key) ^ idx) % N_SLOTS);
}

static void fetch_unref(block_fetch *f)
{
    if (atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    relay_unref(f->relay);
    up_req_release(f->req);
    up_req_release(f->check);
    free(f->bucket);
    free(f->key);
    free(f->etag);
    free(f);
}

static block_fetch *find(block_table *t, const struct block_ref *b);

/* Links f into the table, where others may join it (table locked). */
static void list_locked(block_table *t, block_fetch *f)
{
    unsigned s = slot_of(f->bucket, f->key, f->idx);
    f->listed = true;
    f->next = t->slots[s];
    t->slots[s] = f;
}

/* Unlinks f from the table (table locked). */
static void unlist(block_fetch *f)
{
    if (!f->listed)
        return;
    f->listed = false;
    for (block_fetch **pp = &f->t->slots[slot_of(f->bucket, f->key, f->idx)]; *pp;
         pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            return;
        }
}

/* Unlists f and takes its prefetcher's report, to call unlocked. */
static store_done_fn unlist_take_done(block_fetch *f, void **arg)
{
    pthread_mutex_lock(&f->t->mu);
    unlist(f);
    store_done_fn done = f->done;
    *arg = f->done_arg;
    f->done = NULL;
    pthread_mutex_unlock(&f->t->mu);
    return done;
}

/* The transfer's end: unlisted, the prefetcher told, the transfer's reference dropped. */
static void finish(block_fetch *f, sc_code rc)
{
    void *arg = NULL;
    store_done_fn done = unlist_take_done(f, &arg);
    atomic_fetch_sub(&f->t->running, 1);
    if (done)
        done(arg, rc);
    fetch_unref(f);
}

/* ---- the upstream side (upstream thread) --------------------------------- */

/* True when h is exactly block f of f's version (see block_fetch.h). */
static bool proves_block(block_fetch *f, const struct http_head *h)
{
    const char *etag = http_header_get(h->headers, h->n_headers, "ETag");
    if (h->status == 412 ||
        (etag != NULL && (h->status == 206 || h->status == 200) && strcmp(etag, f->etag) != 0)) {
        atomic_store(&f->changed, true);
        return false;
    }
    const char *cr = http_header_get(h->headers, h->n_headers, "Content-Range");
    char want[96];
    snprintf(want, sizeof(want), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, f->start,
             f->start + f->len - 1, f->size);
    return h->status == 206 && etag != NULL && cr != NULL && strcmp(cr, want) == 0 &&
           h->content_length == (int64_t)f->len;
}

/*
 * An opening's head (upstream thread): it names a version when it is a 206 with an ETag whose
 * Content-Range is the span asked, clipped to the end of a large object (larger than a
 * block), with the matching Content-Length. The fetch then becomes that version's; a whole
 * block already being fetched at that version is read by this one's readers only.
 */
static bool opening_named(block_fetch *f, const struct http_head *h)
{
    const char *etag = http_header_get(h->headers, h->n_headers, "ETag");
    const char *cr = http_header_get(h->headers, h->n_headers, "Content-Range");
    uint64_t a = 0, b = 0, size = 0;
    if (h->status != 206 || etag == NULL || etag[0] == '\0' ||
        !range_parse_content_range(cr, &a, &b, &size) || a != f->start || size <= f->block_size ||
        size > f->max_size)
        return false;
    uint64_t block_end = (uint64_t)(f->idx + 1) * f->block_size; /* past the block's last byte */
    uint64_t want = f->asked_last < block_end - 1 ? f->asked_last : block_end - 1;
    if (want > size - 1)
        want = size - 1;
    if (b != want || h->content_length != (int64_t)(b - a + 1))
        return false;
    char *copy = strdup(etag);
    if (copy == NULL)
        return false;
    struct block_ref ref = {f->bucket, f->key, copy, size, f->block_size, f->idx};
    pthread_mutex_lock(&f->t->mu);
    block_fetch *other = f->part ? NULL : find(f->t, &ref);
    f->etag = copy;
    f->size = size;
    f->len = (uint32_t)(b - a + 1);
    f->opening = false;
    if (other != NULL) {
        f->part = true; /* that version's block is being fetched already: not stored twice */
        unlist(f);
    }
    pthread_mutex_unlock(&f->t->mu);
    if (f->named != NULL)
        f->named(f->named_ctx, f->bucket, f->key, h, copy, size, f->named_epoch);
    return true;
}

/* What an answer to a GET with If-Match says about the upstream (see probe_if_match). */
static void learn_if_match(block_table *t, long status, const char *etag, const char *asked)
{
    if (status == 412)
        atomic_store(&t->if_match, IF_MATCH_HONORED);
    else if ((status == 200 || status == 206) && etag != NULL && strcmp(etag, asked) != 0)
        atomic_store(&t->if_match, IF_MATCH_IGNORED);
}

static void on_head(void *arg, const struct http_head *head)
{
    block_fetch *f = arg;
    atomic_store(&f->status, head->status);
    if (f->opening) {
        f->good_head = opening_named(f, head);
        if (f->good_head) {
            relay_hold_tail(f->relay); /* the last byte waits for the version check */
            if (relay_set_head(f->relay, head, true) != SC_OK)
                f->good_head = false;
        }
        return;
    }
    if (!f->route.peer) /* a peer's answer says what the peer does, not the bucket */
        learn_if_match(f->t, head->status, http_header_get(head->headers, head->n_headers, "ETag"),
                       f->etag);
    if (head->status == 404)
        atomic_store(&f->changed, true);
    f->good_head = proves_block(f, head);
    if (!f->good_head) {
        sc_warn("block %" PRIu32 " of %s/%s: the upstream answered status %ld%s: not served",
                f->idx, f->bucket, f->key, head->status,
                atomic_load(&f->changed) ? " (the object changed)" : " that is not the block");
        return;
    }
    relay_hold_tail(f->relay); /* the last byte waits for the version check */
    if (relay_set_head(f->relay, head, true) != SC_OK)
        f->good_head = false;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    block_fetch *f = arg;
    if (!f->good_head) {
        /* Not the block: nothing of it is wanted (an upstream that ignores Range would send
         * the whole object). */
        pthread_mutex_lock(&f->t->mu);
        up_req *req = f->canceled ? NULL : f->req;
        f->canceled = f->canceled || req != NULL;
        pthread_mutex_unlock(&f->t->mu);
        if (req != NULL)
            up_req_cancel(req);
        return true;
    }
    if (!relay_push(f->relay, p, n))
        return false;
    f->got += n;
    sc_stat_add(f->t->ctx->stats->bytes_from_upstream, n);
    return true;
}

static void on_stored(void *arg, sc_code rc)
{
    block_fetch *f = arg;
    if (rc == SC_OK)
        sc_stat_add(f->t->ctx->stats->blocks_stored, 1);
    else
        sc_debug("block %" PRIu32 " of %s/%s not cached: %s", f->idx, f->bucket, f->key,
                 sc_strerror(rc));
    finish(f, rc);
}

/*
 * Why the transfer failed (no lock held). A transfer on_body canceled itself, because the
 * answer was not the block (a 412 with its error body, another version), failed for what
 * the answer was, not as canceled: a prefetch tells "the object changed" from "shutting down".
 */
static sc_code outcome_of(block_fetch *f, sc_code rc)
{
    long status = atomic_load(&f->status);
    pthread_mutex_lock(&f->t->mu);
    bool own_cancel = f->canceled;
    pthread_mutex_unlock(&f->t->mu);
    if (rc == SC_ECANCELED && !own_cancel)
        return SC_ECANCELED;
    if (status == 404)
        return SC_ENOTFOUND;
    if (status != 0 && !f->good_head)
        return atomic_load(&f->changed) || status == 206 ? SC_EMISMATCH : SC_EUPSTREAM;
    return rc == SC_OK ? SC_EUPSTREAM : rc;
}

/* The fetch failed (why): unlisted, its readers told, the transfer's reference dropped. */
static void fail(block_fetch *f, sc_code why)
{
    atomic_store(&f->outcome, why);
    pthread_mutex_lock(&f->t->mu);
    unlist(f); /* before its readers learn: a retry starts a new fetch, not this one */
    pthread_mutex_unlock(&f->t->mu);
    relay_finish(f->relay, why);
    finish(f, why);
}

/* The block is whole and of its version: readers get its last byte, the store the block. */
static void deliver(block_fetch *f)
{
    const char *body = NULL;
    uint64_t len = 0;
    relay_finish(f->relay, SC_OK);
    if (f->part || !(f->route.keep || atomic_load(&f->wanted))) { /* relayed, not stored */
        finish(f, SC_OK);
        return;
    }
    if (relay_body(f->relay, &body, &len) != SC_OK || len != f->len) {
        fail(f, SC_EMISMATCH);
        return;
    }
    const struct block_ctx *ctx = f->t->ctx;
    if (store_put_block(ctx->st, f->bucket, f->key, f->etag, f->block_size, f->idx, body, f->len,
                        on_stored, f) != SC_OK)
        on_stored(f, SC_EFULL);
}

static void on_check_head(void *arg, const struct http_head *head)
{
    block_fetch *f = arg;
    const char *etag = http_header_get(head->headers, head->n_headers, "ETag");
    f->check_same = head->status == 200 && etag != NULL && strcmp(etag, f->etag) == 0;
    /* Changed: gone, or there with another ETag. Any other answer (503 SlowDown after its
     * retries, a 5xx, a 403) says nothing about the version: the block fails, the copy stays. */
    f->check_status = head->status;
    f->check_changed = head->status == 404 || (head->status == 200 && !f->check_same);
}

static bool on_check_body(void *arg, const char *p, size_t n)
{
    (void)arg, (void)p, (void)n;
    return true; /* a HEAD has none */
}

/*
 * The version check is in. An upstream that rewrites an object in place (s3rver) may have
 * sent bytes of two versions under one ETag and ignored If-Match; the ETag it names after
 * the last byte is still the one asked for only if no overwrite came before then.
 */
static void on_check_done(void *arg, sc_code rc)
{
    block_fetch *f = arg;
    if (rc == SC_OK && f->check_same) {
        if (f->doomed)
            fail(f, SC_EMISMATCH);
        else
            deliver(f);
        return;
    }
    if (rc == SC_OK && f->check_changed) {
        atomic_store(&f->changed, true);
        sc_warn("block %" PRIu32 " of %s/%s does not match its ETag %s: the object changed "
                "while it was fetched; not served, its cached blocks dropped",
                f->idx, f->bucket, f->key, f->etag);
        store_remove_queued(f->t->ctx->st, f->bucket, f->key);
        fail(f, SC_EMISMATCH);
        return;
    }
    if (rc == SC_OK)
        sc_warn("block %" PRIu32 " of %s/%s: its version check was not answered (status %ld): "
                "not served",
                f->idx, f->bucket, f->key, f->check_status);
    fail(f, rc == SC_OK ? SC_EUPSTREAM : rc);
}

static const struct up_handler check_handler = {
    .on_head = on_check_head,
    .on_body = on_check_body,
    .read_body = NULL,
    .on_done = on_check_done,
};

/*
 * The transfer ended. A whole block is checked for its version before it is served. One that
 * fell short, or an answer that was not the block (another range, another length), fails, but
 * after the same check, so that its readers learn whether the object changed: an upstream that
 * rewrites objects in place cuts, stretches or mixes a read it overlaps.
 */
static void on_done(void *arg, sc_code rc)
{
    block_fetch *f = arg;
    if (f->etag == NULL) { /* an opening whose head named no version: nothing to check */
        fail(f, outcome_of(f, rc));
        return;
    }
    long status = atomic_load(&f->status);
    bool whole = f->good_head && rc == SC_OK && f->got == f->len;
    bool suspect = !whole && !atomic_load(&f->changed) &&
                   (f->good_head ? f->got != f->len : status == 200 || status == 206);
    if (!whole && !suspect) {
        fail(f, outcome_of(f, rc));
        return;
    }
    f->doomed = suspect;
    if (whole && atomic_load(&f->t->if_match) == IF_MATCH_HONORED) {
        deliver(f); /* the upstream serves one version per GET: nothing to check */
        return;
    }
    sc_code sent =
        origin_head(f->t->ctx->origin, f->bucket, f->key, &f->as, &check_handler, f, &f->check);
    if (sent != SC_OK)
        fail(f, sent);
}

static const struct up_handler block_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_done,
};

/* ---- the reader side ------------------------------------------------------- */

static block_fetch *find(block_table *t, const struct block_ref *b)
{
    for (block_fetch *f = t->slots[slot_of(b->bucket, b->key, b->idx)]; f; f = f->next)
        if (f->idx == b->idx && f->block_size == b->block_size && f->size == b->size && !f->part &&
            f->etag != NULL && strcmp(f->key, b->key) == 0 && strcmp(f->bucket, b->bucket) == 0 &&
            strcmp(f->etag, b->etag) == 0)
            return f;
    return NULL;
}

static bool valid_ref(const struct block_ref *b)
{
    return b->block_size > 0 && b->etag != NULL && b->idx < block_count(b->size, b->block_size);
}

static block_fetch *fetch_new(block_table *t, const struct block_ref *b,
                              const struct up_identity *as)
{
    block_fetch *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->t = t;
    f->as = *as;
    atomic_init(&f->refs, 1);
    f->bucket = strdup(b->bucket);
    f->key = strdup(b->key);
    f->etag = b->etag ? strdup(b->etag) : NULL; /* NULL: an opening's, named by its head */
    f->size = b->size;
    f->block_size = b->block_size;
    f->idx = b->idx;
    f->start = block_ref_start(b);
    f->len = block_ref_len(b);
    f->relay = relay_new(0);
    if (!f->bucket || !f->key || (b->etag && !f->etag) || !f->relay) {
        fetch_unref(f);
        return NULL;
    }
    return f;
}

/* ---- does the upstream honor If-Match? --------------------------------------------------- */

/*
 * S3 serves every GET from one version and answers one whose If-Match names another with 412;
 * so do radosgw, MinIO and GCS. An upstream that ignores If-Match (s3rver) may also rewrite
 * an object in place under a read, and the block fetches of such an upstream are checked with
 * a HEAD after their last byte (on_done). Which kind the upstream is, is asked once, on the
 * first block fetched: a two-byte GET of it with an If-Match no object has.
 */
#define IF_MATCH_PROBE_ETAG "\"s3cached-if-match-probe\""

static void on_probe_head(void *arg, const struct http_head *head)
{
    block_table *t = arg;
    learn_if_match(t, head->status, http_header_get(head->headers, head->n_headers, "ETag"),
                   IF_MATCH_PROBE_ETAG);
}

static bool on_probe_body(void *arg, const char *p, size_t n)
{
    (void)arg, (void)p, (void)n;
    return true;
}

static void on_probe_done(void *arg, sc_code rc)
{
    block_table *t = arg;
    (void)rc;
    pthread_mutex_lock(&t->mu);
    up_req *probe = t->probe;
    t->probe = NULL;
    int expected = IF_MATCH_PROBING;
    atomic_compare_exchange_strong(&t->if_match, &expected, IF_MATCH_UNKNOWN); /* ask again */
    pthread_mutex_unlock(&t->mu);
    up_req_release(probe);
    int now = atomic_load(&t->if_match);
    if (now != IF_MATCH_UNKNOWN)
        sc_info("the upstream %s If-Match on GET: %s",
                now == IF_MATCH_HONORED ? "honors" : "ignores",
                now == IF_MATCH_HONORED
                    ? "a block is served once it has arrived whole"
                    : "each block's version is checked with a HEAD after its last byte");
}

static const struct up_handler probe_handler = {
    .on_head = on_probe_head,
    .on_body = on_probe_body,
    .read_body = NULL,
    .on_done = on_probe_done,
};

/* Asks, unless known or being asked, whether the upstream honors If-Match (f's object). */
static void probe_if_match(block_table *t, const block_fetch *f)
{
    int expected = IF_MATCH_UNKNOWN;
    if (!atomic_compare_exchange_strong(&t->if_match, &expected, IF_MATCH_PROBING))
        return;
    up_req *req = NULL;
    /* Two bytes: s3rver answers "bytes=0-0" with the whole object. */
    if (origin_bucket_range(t->ctx->origin, f->bucket, f->key, &f->as, 0, 1, IF_MATCH_PROBE_ETAG,
                            &probe_handler, t, &req) != SC_OK) {
        atomic_store(&t->if_match, IF_MATCH_UNKNOWN);
        return;
    }
    pthread_mutex_lock(&t->mu);
    if (atomic_load(&t->if_match) == IF_MATCH_PROBING)
        t->probe = req;
    else
        up_req_release(req); /* already answered */
    pthread_mutex_unlock(&t->mu);
}

/* Starts the transfer of a fetch just listed, which holds a reference for it. A reader's block
 * is stored as the fleet's copy rule says (by_rule); a prefetched one always, a part never. */
static void start_transfer(block_table *t, block_fetch *f, bool by_rule)
{
    atomic_fetch_add(&t->running, 1);
    sc_stat_add(t->ctx->stats->block_fetches, 1);
    up_req *req = NULL;
    f->route = (struct origin_route){.by_rule = by_rule};
    sc_code rc =
        origin_fetch_range(t->ctx->origin, f->bucket, f->key, &f->as, f->start,
                           f->start + f->len - 1, f->etag, &f->route, &block_handler, f, &req);
    if (rc != SC_OK) {
        atomic_store(&f->outcome, rc);
        relay_finish(f->relay, rc);
        finish(f, rc);
        return;
    }
    pthread_mutex_lock(&t->mu);
    f->req = req;
    pthread_mutex_unlock(&t->mu);
    relay_set_upstream(f->relay, req);
    probe_if_match(t, f);
}

sc_code block_fetch_part(block_table *t, const struct block_ref *b, uint32_t from, uint32_t to,
                         const struct up_identity *as, block_fetch **out)
{
    if (!valid_ref(b) || from >= to || to > block_ref_len(b))
        return SC_EINVAL;
    block_fetch *f = fetch_new(t, b, as);
    if (f == NULL)
        return SC_ENOMEM;
    f->part = true;
    f->start += from;
    f->len = to - from;
    atomic_fetch_add(&f->refs, 1); /* the transfer's; fetch_new's is the caller's */
    atomic_fetch_add(&f->readers, 1);
    start_transfer(t, f, false);
    *out = f;
    return SC_OK;
}

/* A listed whole-block opening of block idx of (bucket, key), named or not, asked at the
 * same write epoch with the same identity as o (table locked). */
static block_fetch *find_opening(block_table *t, const struct block_opener *o, uint32_t idx,
                                 const struct up_identity *as)
{
    for (block_fetch *f = t->slots[slot_of(o->bucket, o->key, idx)]; f; f = f->next)
        if (f->opened && !f->part && f->idx == idx && f->block_size == o->block_size &&
            f->named_epoch == o->epoch && f->max_size == o->max_size &&
            strcmp(f->key, o->key) == 0 && strcmp(f->bucket, o->bucket) == 0 &&
            up_identity_same(&f->as, as))
            return f;
    return NULL;
}

sc_code block_fetch_open(block_table *t, const struct block_opener *o, const struct up_identity *as,
                         block_fetch **out)
{
    uint32_t bs = o->block_size;
    if (bs == 0 || o->last < o->first || o->first / bs >= UINT32_MAX)
        return SC_EINVAL;
    uint32_t idx = (uint32_t)(o->first / bs);
    uint64_t block_start = (uint64_t)idx * bs;
    uint64_t block_last = block_start + bs - 1;
    bool whole = o->first == block_start && o->last >= block_last;
    pthread_mutex_lock(&t->mu);
    block_fetch *f = whole ? find_opening(t, o, idx, as) : NULL;
    if (f != NULL) {
        atomic_fetch_add(&f->refs, 1);
        atomic_fetch_add(&f->readers, 1);
        pthread_mutex_unlock(&t->mu);
        *out = f;
        return SC_OK;
    }
    struct block_ref ref = {o->bucket, o->key, NULL, 0, bs, idx};
    f = fetch_new(t, &ref, as);
    if (f == NULL) {
        pthread_mutex_unlock(&t->mu);
        return SC_ENOMEM;
    }
    f->opening = true;
    f->opened = true;
    f->max_size = o->max_size;
    f->part = !whole;
    f->start = o->first;
    f->asked_last = o->last < block_last ? o->last : block_last;
    f->len = (uint32_t)(f->asked_last - o->first + 1); /* until the head says where the end is */
    f->named = o->named;
    f->named_ctx = o->named_ctx;
    f->named_epoch = o->epoch;
    atomic_fetch_add(&f->refs, 1); /* the transfer's; fetch_new's is the caller's */
    atomic_fetch_add(&f->readers, 1);
    if (whole)
        list_locked(t, f);
    pthread_mutex_unlock(&t->mu);
    start_transfer(t, f, whole);
    *out = f;
    return SC_OK;
}

bool block_fetch_opened(block_fetch *f, struct block_opened *o)
{
    pthread_mutex_lock(&f->t->mu);
    bool named = f->etag != NULL && !f->opening;
    if (named)
        *o = (struct block_opened){.etag = f->etag,
                                   .size = f->size,
                                   .idx = f->idx,
                                   .block_from = f->start - (uint64_t)f->idx * f->block_size,
                                   .len = f->len,
                                   .whole = !f->part};
    pthread_mutex_unlock(&f->t->mu);
    return named;
}

bool block_fetch_being_opened(block_table *t, const struct block_ref *b)
{
    pthread_mutex_lock(&t->mu);
    bool opening = false;
    for (block_fetch *f = t->slots[slot_of(b->bucket, b->key, b->idx)]; f && !opening; f = f->next)
        opening = f->opening && f->idx == b->idx && f->block_size == b->block_size &&
                  strcmp(f->key, b->key) == 0 && strcmp(f->bucket, b->bucket) == 0;
    pthread_mutex_unlock(&t->mu);
    return opening;
}

/* Finds or lists the fetch of b (table locked), with a reference for the caller. */
static block_fetch *join_locked(block_table *t, const struct block_ref *b,
                                const struct up_identity *as, bool *started)
{
    block_fetch *f = find(t, b);
    *started = f == NULL;
    if (f != NULL) {
        atomic_fetch_add(&f->refs, 1);
        return f;
    }
    f = fetch_new(t, b, as);
    if (f == NULL)
        return NULL;
    atomic_fetch_add(&f->refs, 1); /* the transfer's; fetch_new's is the caller's */
    list_locked(t, f);
    return f;
}

sc_code block_fetch_join(block_table *t, const struct block_ref *b, const struct up_identity *as,
                         block_fetch **out, bool *started)
{
    if (!valid_ref(b))
        return SC_EINVAL;
    bool fresh = false;
    pthread_mutex_lock(&t->mu);
    block_fetch *f = join_locked(t, b, as, &fresh);
    if (f)
        atomic_fetch_add(&f->readers, 1);
    pthread_mutex_unlock(&t->mu);
    if (f == NULL)
        return SC_ENOMEM;
    if (fresh)
        start_transfer(t, f, true);
    if (started)
        *started = fresh;
    *out = f;
    return SC_OK;
}

block_fetch *block_fetch_adopt(block_table *t, const struct block_ref *b,
                               const struct up_identity *as, const struct http_head *head,
                               bool keep)
{
    if (!valid_ref(b))
        return NULL;
    bool fresh = false;
    pthread_mutex_lock(&t->mu);
    block_fetch *f = join_locked(t, b, as, &fresh);
    pthread_mutex_unlock(&t->mu);
    if (f == NULL)
        return NULL;
    fetch_unref(f); /* join_locked's for a caller; the feeder holds the transfer's */
    if (!fresh)
        return NULL; /* being fetched already: it goes on, the feeder's GET is not needed */
    f->route.keep = keep;
    atomic_fetch_add(&t->running, 1);
    sc_stat_add(t->ctx->stats->block_fetches, 1);
    atomic_store(&f->status, head->status);
    /* The GET asked for the whole object of this ETag: its first bytes are this block. */
    struct http_head block_head = *head;
    block_head.content_length = f->len;
    relay_hold_tail(f->relay); /* the last byte waits for the version check, as ever */
    if (relay_set_head(f->relay, &block_head, true) != SC_OK) {
        fail(f, SC_ENOMEM);
        return NULL;
    }
    f->good_head = true;
    probe_if_match(t, f);
    return f;
}

size_t block_fetch_feed(block_fetch *f, const char *p, size_t n, bool *whole)
{
    size_t take = n < f->len - f->got ? n : (size_t)(f->len - f->got);
    *whole = false;
    if (!on_body(f, p, take)) {
        block_fetch_fed(f, SC_ENOMEM);
        *whole = true; /* ended: no longer the feeder's */
        return take;
    }
    if (f->got == f->len) {
        on_done(f, SC_OK);
        *whole = true;
    }
    return take;
}

void block_fetch_fed(block_fetch *f, sc_code rc)
{
    on_done(f, rc == SC_OK ? SC_EUPSTREAM : rc); /* short: checked, then failed (on_done) */
}

sc_code block_fetch_prefetch(block_table *t, const struct block_ref *b,
                             const struct up_identity *as, store_done_fn done, void *arg)
{
    if (!valid_ref(b))
        return SC_EINVAL;
    bool fresh = false;
    pthread_mutex_lock(&t->mu);
    block_fetch *f = join_locked(t, b, as, &fresh);
    bool reported = f != NULL && fresh;
    if (reported) {
        f->done = done;
        f->done_arg = arg;
    }
    if (f != NULL)
        atomic_store(&f->wanted, true); /* stored, whoever owns the block */
    pthread_mutex_unlock(&t->mu);
    if (f == NULL)
        return SC_ENOMEM;
    if (fresh)
        start_transfer(t, f, false);
    fetch_unref(f);
    if (!reported && done)
        done(arg, SC_OK); /* already being fetched: whoever started it stores it */
    return SC_OK;
}

bool block_fetch_arrived(block_table *t, const struct block_ref *b)
{
    pthread_mutex_lock(&t->mu);
    block_fetch *f = find(t, b);
    bool arrived = f != NULL && relay_has_all(f->relay);
    pthread_mutex_unlock(&t->mu);
    return arrived;
}

relay *block_fetch_relay(block_fetch *f)
{
    return f->relay;
}

sc_code block_fetch_outcome(block_fetch *f)
{
    return (sc_code)atomic_load(&f->outcome);
}

bool block_fetch_changed(block_fetch *f)
{
    return atomic_load(&f->changed);
}

long block_fetch_status(block_fetch *f)
{
    return atomic_load(&f->status);
}

void block_fetch_leave(block_fetch *f)
{
    if (f == NULL)
        return;
    atomic_fetch_sub(&f->readers, 1);
    fetch_unref(f);
}
