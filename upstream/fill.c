/*
 * fill.c - single-flight cache fills (see fill.h).
 *
 * References: the upstream transfer holds one until the fill is stored or
 * dropped, and each reader holds one. The table holds none: an entry stays
 * listed while new readers may still join it, and is unlinked (under the
 * table lock) when the object turns out uncacheable, fails, is invalidated,
 * or has been committed to the store, whichever comes first.
 *
 * Writes in flight: the table also counts, per key (or per bucket, for writes
 * whose keys are in their body), the writes forwarded and not yet answered. A
 * fill that overlaps such a write in any way may have read the bytes the write
 * replaces, so it is never stored: fills running when the write begins are
 * marked, fills that start while it is in flight are born marked, and when it
 * ends the fills started meanwhile leave the table, so the next miss fetches
 * afresh. The decision to store and the store's queueing of the put happen
 * under the table lock, so a write that begins after the decision finds the
 * put queued before its own removal. A write whose outcome is unknown (no
 * answer, or a 5xx) keeps counting for FILL_WRITE_DOUBT_SECONDS after it
 * ended: the upstream may still commit it.
 */
#include "fill.h"

#include "block_object.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "../proto/digest.h"
#include "../proto/hdrblob.h"
#include "verify.h"

#define N_SLOTS 256
/* Bodies up to this size have their MD5 checked by the verifier, at their end: their readers'
 * last byte waits about 1.5 ms more at most (one lane, 650 MB/s); larger ones stream it. */
#define VERIFY_MAX (1024u * 1024u)

/* A prefetcher waiting for a fill to end (see fill_prefetch). */
struct fill_watch {
    struct fill_watcher w; /* w.arrived is cleared once called (upstream thread) */
    struct fill_watch *next;
};

struct fill {
    fill_table *t;
    atomic_int refs;
    atomic_int readers;
    char *bucket, *key;
    struct up_identity as; /* who fetches it */
    relay *relay;
    up_req *req;
    bool listed;               /* in the table (table lock) */
    bool invalidated;          /* must not be stored (table lock) */
    bool cacheable;            /* decided at the head (upstream thread) */
    struct origin_route route; /* where it went and whether the fleet's copy rule lets it be
                                  stored here (origin_fetch: set before the transfer starts); a
                                  prefetcher watching it keeps it anyway */
    char *hdrs;                /* replayable headers, for the store */
    size_t hdrs_len;
    struct body_check check;    /* the body's length and digest (digest.h) */
    uint8_t md5[SC_MD5_LEN];    /* the check is deferred to the verifier: the MD5 wanted */
    long status;                /* the upstream's, once the head is in */
    int64_t length;             /* its Content-Length, or -1 */
    bool no_etag;               /* a 200 without an ETag: never cached */
    bool large;                 /* cached by blocks: the fill stops at its head ... */
    char *etag;                 /* then its ETag (upstream thread, before the end) */
    bool adopted;               /* ... or at the end of block 0, which it fetches (upstream
                                   thread: see adopt_block0) */
    block_fetch *block0;        /* while it feeds that block (upstream thread) */
    atomic_bool feeding;        /* block0 is being fed: readers leaving do not cancel */
    bool abandoned;             /* uncacheable and nobody reads it: cancel (table lock) */
    struct fill_watch *watches; /* notified when the fill ends (table lock) */
    uint64_t unstored;          /* bytes of the table's unstored budget it holds (table lock) */
    fill *next;
};

/* Writes forwarded and not yet answered, for one key or (key NULL) a whole bucket. */
struct fill_write {
    char *bucket, *key;
    unsigned count;
    double doubt_until; /* monotonic seconds: a write ended in doubt counts until then */
    struct fill_write *next;
};

struct fill_table {
    const struct fill_ctx *ctx;
    pthread_mutex_t mu;
    fill *slots[N_SLOTS];
    uint64_t write_epochs[N_SLOTS]; /* bumped when a write to a key of the slot begins */
    struct fill_write *writes;      /* table lock */
    uint64_t unstored; /* bodies told arrived and not stored yet (table lock; fill_ctx) */
};

sc_code fill_table_new(const struct fill_ctx *ctx, fill_table **out)
{
    fill_table *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return SC_ENOMEM;
    t->ctx = ctx;
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return SC_OK;
}

const struct fill_ctx *fill_table_ctx(const fill_table *t)
{
    return t->ctx;
}

static void write_free(struct fill_write *w)
{
    if (w == NULL)
        return;
    free(w->bucket);
    free(w->key);
    free(w);
}

static void free_writes(struct fill_write *w);

void fill_table_free(fill_table *t)
{
    if (t == NULL)
        return;
    free_writes(t->writes);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static unsigned slot_of(const char *bucket, const char *key)
{
    return (unsigned)(sc_key_hash(bucket, key) % N_SLOTS);
}

static void fill_unref(fill *f)
{
    if (atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    relay_unref(f->relay);
    up_req_release(f->req);
    body_check_release(&f->check);
    free(f->hdrs);
    free(f->etag);
    free(f->bucket);
    free(f->key);
    free(f);
}

/* Unlinks f from the table (table locked). */
static void unlist(fill *f)
{
    if (!f->listed)
        return;
    f->listed = false;
    for (fill **pp = &f->t->slots[slot_of(f->bucket, f->key)]; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            return;
        }
}

static void unlist_locked(fill *f)
{
    pthread_mutex_lock(&f->t->mu);
    unlist(f);
    pthread_mutex_unlock(&f->t->mu);
}

static void tell_watches(struct fill_watch *w, const struct fill_result *r)
{
    while (w) {
        struct fill_watch *next = w->next;
        w->w.done(w->w.arg, r);
        free(w);
        w = next;
    }
}

/* Watchers of a large object, told once its blocks are fetched. */
struct block_warm {
    struct fill_watch *watches;
    uint64_t size;
};

static void on_warmed(void *arg, sc_code rc, uint64_t bytes)
{
    struct block_warm *bw = arg;
    struct fill_result r = {.rc = rc, .status = 200, .size = bw->size};
    (void)bytes;
    tell_watches(bw->watches, &r);
    free(bw);
}

/* Hands a large object's watchers to a fetch of its blocks; false if it cannot start. */
static bool warm_by_blocks(fill *f, struct fill_watch *w)
{
    const struct fill_ctx *ctx = f->t->ctx;
    struct block_warm *bw = malloc(sizeof(*bw));
    if (bw == NULL || ctx->blocks == NULL || f->etag == NULL) {
        free(bw);
        return false;
    }
    *bw = (struct block_warm){w, (uint64_t)f->length};
    struct block_ref ref = {f->bucket, f->key, f->etag, (uint64_t)f->length, ctx->block_size, 0};
    static const struct up_identity gateway = {0}; /* prefetches are the gateway's */
    if (block_object_fetch(ctx->blocks, ctx->st, &ref, &gateway, ctx->parallelism, on_warmed, bw) ==
        SC_OK)
        return true;
    free(bw);
    return false;
}

/* Tells every watcher how the fill ended, once (a large object: once its blocks are in). */
static void notify(fill *f, sc_code rc)
{
    pthread_mutex_lock(&f->t->mu);
    struct fill_watch *w = f->watches;
    f->watches = NULL;
    pthread_mutex_unlock(&f->t->mu);
    bool large = f->large && rc == SC_ETOOBIG;
    if (w != NULL && large && warm_by_blocks(f, w))
        return;
    struct fill_result r = {.rc = rc,
                            .status = f->status,
                            .size = f->length > 0 ? (uint64_t)f->length : 0,
                            .large = large};
    tell_watches(w, &r);
}

/* Why a fill that was not stored ended, for its watchers. */
static sc_code failure_of(const fill *f, sc_code rc)
{
    if (f->no_etag && !f->invalidated)
        return SC_EINVAL; /* before canceled: an unread uncacheable fill is canceled */
    if (f->large && !f->invalidated)
        return SC_ETOOBIG; /* likewise: a large object's fill stops at its head */
    if (f->invalidated || rc == SC_ECANCELED)
        return SC_ECANCELED;
    if (f->status == 404)
        return SC_ENOTFOUND;
    if (f->status != 200)
        return SC_EUPSTREAM;
    if (f->large || (f->length >= 0 && (uint64_t)f->length > f->t->ctx->max_object_size))
        return SC_ETOOBIG;
    if (rc == SC_EMISMATCH)
        return SC_EMISMATCH;
    return rc == SC_OK ? SC_EUPSTREAM : rc;
}

/*
 * Cancels the transfer, or (only_if_unread) does so if nobody reads it: an uncacheable object
 * nobody reads (a prefetch, or every client left before the head) would fill its window and
 * pause forever. f->req may not be set yet when the head is quick; fill_join cancels then.
 */
static void abandon(fill *f, bool only_if_unread)
{
    pthread_mutex_lock(&f->t->mu);
    up_req *req = NULL;
    if (!only_if_unread || atomic_load(&f->readers) == 0) {
        f->abandoned = true;
        req = f->req;
    }
    pthread_mutex_unlock(&f->t->mu);
    if (req)
        up_req_cancel(req);
}

/* ---- the upstream side (upstream thread) --------------------------------- */

/* A 200 of size bytes is a large object, cached by blocks (the gateway's
 * gw_blocks_is_large() says the same). */
static bool is_large(const struct fill_ctx *ctx, uint64_t size)
{
    return size > ctx->block_size && size <= ctx->max_object_size &&
           size / ctx->block_size < STORE_BLOCKS_MAX;
}

bool fill_is_large(const fill_table *t, uint64_t size)
{
    return is_large(t->ctx, size);
}

/* Whether a write to (bucket, key), or to the whole bucket, is in flight (table locked). */
static bool write_in_flight(const fill_table *t, const char *bucket, const char *key);

/* Queues a large object's metadata unless a write to it is in flight (table locked). */
static sc_code put_meta_locked(fill_table *t, const char *bucket, const char *key, const char *etag,
                               const char *hdrs, size_t hdrs_len, uint64_t size)
{
    if (write_in_flight(t, bucket, key))
        return SC_ECANCELED;
    return store_put_meta(t->ctx->st, bucket, key, etag, hdrs, hdrs_len, size, NULL, NULL);
}

uint64_t fill_write_epoch(fill_table *t, const char *bucket, const char *key)
{
    pthread_mutex_lock(&t->mu);
    uint64_t epoch = t->write_epochs[slot_of(bucket, key)];
    pthread_mutex_unlock(&t->mu);
    return epoch;
}

sc_code fill_put_meta(fill_table *t, const char *bucket, const char *key, const char *etag,
                      const char *hdrs, size_t hdrs_len, uint64_t size, uint64_t epoch)
{
    pthread_mutex_lock(&t->mu);
    sc_code rc = t->write_epochs[slot_of(bucket, key)] != epoch
                     ? SC_ECANCELED
                     : put_meta_locked(t, bucket, key, etag, hdrs, hdrs_len, size);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* A large object's head: its metadata goes to the store, its blocks are fetched by readers.
 * Queued under the table lock, as a put is: a write beginning now removes after it. */
static void record_large(fill *f, const struct http_head *head)
{
    const char *etag = http_header_get(head->headers, head->n_headers, "ETag");
    char *hdrs = NULL;
    size_t len = 0;
    if (hdrblob_encode(head->headers, head->n_headers, &hdrs, &len) != SC_OK)
        return;
    pthread_mutex_lock(&f->t->mu);
    if (!f->invalidated)
        (void)put_meta_locked(f->t, f->bucket, f->key, etag, hdrs, len,
                              (uint64_t)head->content_length);
    pthread_mutex_unlock(&f->t->mu);
    free(hdrs);
}

/*
 * A large object's fill goes on as the fetch of its block 0 (block_fetch_adopt): the reader
 * who asked for the object gets its first bytes from this GET, not from a second request a
 * round trip later. Unless block 0 is being fetched already.
 */
static void adopt_block0(fill *f, const struct http_head *head)
{
    const struct fill_ctx *ctx = f->t->ctx;
    if (ctx->blocks == NULL || f->etag == NULL ||
        block_fetches_running(ctx->blocks) >= BLOCK_FETCH_READERS * ctx->parallelism)
        return; /* each holds its block in memory: as many as readers may start ahead */
    struct block_ref ref = {f->bucket,       f->key, f->etag, (uint64_t)head->content_length,
                            ctx->block_size, 0};
    f->block0 = block_fetch_adopt(ctx->blocks, &ref, &f->as, head, f->route.keep);
    f->adopted = f->block0 != NULL;
    atomic_store(&f->feeding, f->adopted);
}

/* Ends the feeding of block 0 (the block is whole, or failed with rc). */
static void block0_fed(fill *f, sc_code rc, bool whole)
{
    if (!whole)
        block_fetch_fed(f->block0, rc);
    f->block0 = NULL;
    atomic_store(&f->feeding, false);
}

/* The body of a fill feeding block 0: once the block is whole the GET stops, the object's
 * other blocks being fetched by their readers. False then: the transfer pauses at once, so
 * that no more of it is read while its cancel is on its way. */
static bool feed_block0(fill *f, const char *p, size_t n)
{
    bool whole = false;
    size_t took = block_fetch_feed(f->block0, p, n, &whole);
    sc_stat_add(f->t->ctx->stats->bytes_from_upstream, n - took); /* the block counts its own */
    if (!whole)
        return true;
    block0_fed(f, SC_OK, true);
    abandon(f, false);
    return false;
}

static void on_head(void *arg, const struct http_head *head)
{
    fill *f = arg;
    const struct fill_ctx *ctx = f->t->ctx;
    f->status = head->status;
    f->length = head->content_length;
    /* Without an ETag a copy could not be revalidated, answer conditionals, or have a
     * range fetched beside its fill pinned to its version: relayed, never cached. */
    f->no_etag = head->status == 200 && !http_header_get(head->headers, head->n_headers, "etag");
    f->large = head->status == 200 && head->content_length >= 0 && !f->no_etag &&
               is_large(ctx, (uint64_t)head->content_length);
    f->cacheable = head->status == 200 && head->content_length >= 0 &&
                   (uint64_t)head->content_length <= ctx->max_object_size && !f->no_etag &&
                   !f->large;
    if (f->large) {
        f->etag = strdup(http_header_get(head->headers, head->n_headers, "ETag"));
        record_large(f, head);
        adopt_block0(f, head);
    }
    if (f->cacheable &&
        hdrblob_encode(head->headers, head->n_headers, &f->hdrs, &f->hdrs_len) != SC_OK)
        f->cacheable = false;
    /* The body's length and MD5 ETag or checksum are checked, cached or not; every reader's
     * last byte waits for the verdict, so a body that fails reaches no client as a success. */
    if (!f->adopted) /* an adopted GET is not read to its end */
        body_check_start(&f->check, head);
    if (f->check.active)
        relay_hold_tail(f->relay);
    if (f->no_etag)
        sc_warn("upstream sent %s/%s without an ETag: relayed, not cached", f->bucket, f->key);
    if (!f->cacheable)
        unlist_locked(f);
    /* Keep-all for fills and for short error bodies; an uncacheable object is windowed. */
    bool small_error =
        head->status != 200 && head->content_length >= 0 && head->content_length <= 1024 * 1024;
    if (relay_set_head(f->relay, head, f->cacheable || small_error) != SC_OK)
        f->cacheable = false;
    /* A body kept whole (its relay keeps all) has its MD5 checked at its end, with others, off
     * this thread. */
    if (f->cacheable && ctx->verify != NULL && (uint64_t)head->content_length <= VERIFY_MAX)
        body_check_defer(&f->check, f->md5);
    if (!f->cacheable && !small_error && !atomic_load(&f->feeding))
        abandon(f, true);
}

static bool on_body(void *arg, const char *p, size_t n)
{
    fill *f = arg;
    if (f->adopted) /* past block 0: paused until the cancel lands */
        return f->block0 != NULL && feed_block0(f, p, n);
    if (!relay_push(f->relay, p, n))
        return false;
    sc_stat_add(f->t->ctx->stats->bytes_from_upstream, n);
    body_check_add(&f->check, p, n);
    return true;
}

/* Gives back the part of the unstored budget f holds (table locked). */
static void release_unstored(fill *f)
{
    fill_table *t = f->t;
    t->unstored -= f->unstored;
    f->unstored = 0;
    atomic_store(&t->ctx->stats->prefetch_unstored, t->unstored);
}

/*
 * The body of f is whole, and verified or about to be (verify.h), before its put is queued
 * for the store: the prefetchers watching it that asked (fill_watcher.arrived) are told, if
 * the table's budget of bodies waiting for the store holds it; else they wait for done, as
 * the bound on memory says. Before the put is queued, so that done cannot overtake it on the
 * store thread. Once only: a body charged to the budget is not charged again. The list is
 * read from the head taken under the lock: a watch joining since is added before it and waits
 * for done; no watch is freed before notify(), which only the put's end calls.
 */
static void tell_arrived(fill *f, uint64_t len)
{
    fill_table *t = f->t;
    uint64_t max = t->ctx->unstored_max;
    pthread_mutex_lock(&t->mu);
    struct fill_watch *first = f->watches;
    bool asked = false;
    for (struct fill_watch *w = first; w; w = w->next)
        asked = asked || w->w.arrived != NULL;
    bool room = asked && f->unstored == 0 && !f->invalidated && max > 0 && t->unstored <= max &&
                len <= max - t->unstored;
    if (room) {
        f->unstored = len;
        t->unstored += len;
        struct sc_stats *stats = t->ctx->stats;
        atomic_store(&stats->prefetch_unstored, t->unstored);
        if (t->unstored > atomic_load(&stats->prefetch_unstored_peak))
            atomic_store(&stats->prefetch_unstored_peak, t->unstored);
    }
    pthread_mutex_unlock(&t->mu);
    for (struct fill_watch *w = first; room && w; w = w->next) {
        fill_arrived_fn arrived = w->w.arrived;
        w->w.arrived = NULL;
        if (arrived)
            arrived(w->w.arg);
    }
}

static void on_stored(void *arg, sc_code rc)
{
    fill *f = arg;
    struct sc_stats *stats = f->t->ctx->stats;
    if (rc == SC_OK)
        sc_stat_add(stats->fills_stored, 1);
    else
        sc_debug("not cached %s/%s: %s", f->bucket, f->key, sc_strerror(rc));
    pthread_mutex_lock(&f->t->mu);
    unlist(f);
    release_unstored(f);
    pthread_mutex_unlock(&f->t->mu);
    notify(f, rc == SC_OK ? SC_OK : SC_EFULL);
    fill_unref(f);
}

/* A fill whose body passed its check: counted by what was checked. */
static void count_check(struct sc_stats *stats, const struct body_check *c)
{
    enum digest_check check = digest_check_of(c->digest);
    static_assert(DIGEST_CHECKS <= sizeof(stats->fill_checks) / sizeof(stats->fill_checks[0]),
                  "a counter for every check");
    sc_stat_add(stats->fill_checks[check], 1);
}

/* The transfer ended with rc, the body's verdict given: readers learn it, and the body goes
 * to the store if it may (upstream thread, or the verifier's). */
static void conclude(fill *f, sc_code rc)
{
    const struct fill_ctx *ctx = f->t->ctx;
    if (rc != SC_OK)
        unlist_locked(f); /* before its readers learn: a retry starts a new fill, not this one */
    else if (f->check.active)
        count_check(ctx->stats, &f->check);
    relay_finish(f->relay, rc);
    const char *body = NULL;
    uint64_t len = 0;
    bool complete = f->cacheable && relay_body(f->relay, &body, &len) == SC_OK;
    if (complete)
        tell_arrived(f, len);
    pthread_mutex_lock(&f->t->mu);
    /* Not kept (a peer's name, --fleet-copy): verified and relayed all the same. */
    bool store_it = complete && !f->invalidated && (f->route.keep || f->watches != NULL);
    /* Queued under the table lock: a write beginning now removes after this put. */
    bool queued = store_it && store_put(ctx->st, f->bucket, f->key, f->hdrs, f->hdrs_len, body, len,
                                        on_stored, f) == SC_OK;
    if (!store_it) {
        unlist(f);
        release_unstored(f);
    }
    pthread_mutex_unlock(&f->t->mu);
    if (!store_it) {
        if (f->cacheable && !f->invalidated && !complete)
            sc_stat_add(ctx->stats->fills_failed, 1);
        notify(f, failure_of(f, rc));
        fill_unref(f);
        return;
    }
    if (!queued)
        on_stored(f, SC_EFULL);
}

/* The verifier's verdict on a deferred MD5 (verifier thread). */
static void on_verified(void *arg, bool matches)
{
    fill *f = arg;
    conclude(f, body_check_md5_verdict(&f->check, matches, f->bucket, f->key));
}

static void on_done(void *arg, sc_code rc)
{
    fill *f = arg;
    if (f->block0 != NULL)
        block0_fed(f, rc, false);
    rc = body_check_verdict(&f->check, rc, f->bucket, f->key);
    if (rc == SC_OK && f->check.deferred) {
        const char *body = NULL;
        uint64_t len = 0;
        if (relay_kept(f->relay, &body, &len) == SC_OK) {
            /* A prefetch's slot goes to the next fetch now; if the body fails, done says so. */
            if (f->cacheable)
                tell_arrived(f, len);
            bool patient = !relay_has_readers(f->relay);
            verifier_submit(f->t->ctx->verify, body, len, f->md5, patient, on_verified, f);
            return; /* on_verified() concludes */
        }
        rc = body_check_md5_verdict(&f->check, false, f->bucket, f->key); /* not kept: unchecked */
    }
    conclude(f, rc);
}

static const struct up_handler fill_handler = {
    .on_head = on_head,
    .on_body = on_body,
    .read_body = NULL,
    .on_done = on_done,
};

/* ---- the reader side ------------------------------------------------------- */

static fill *find(fill_table *t, const char *bucket, const char *key)
{
    for (fill *f = t->slots[slot_of(bucket, key)]; f; f = f->next)
        if (strcmp(f->key, key) == 0 && strcmp(f->bucket, bucket) == 0)
            return f;
    return NULL;
}

static bool write_counts(const struct fill_write *w, double now)
{
    return w->count > 0 || now < w->doubt_until;
}

static bool write_in_flight(const fill_table *t, const char *bucket, const char *key)
{
    double now = -1;
    for (const struct fill_write *w = t->writes; w; w = w->next) {
        if (strcmp(w->bucket, bucket) != 0 || (w->key != NULL && strcmp(w->key, key) != 0))
            continue;
        if (w->count > 0)
            return true;
        if (now < 0)
            now = sc_now_seconds();
        if (now < w->doubt_until)
            return true;
    }
    return false;
}

static fill *fill_new(fill_table *t, const char *bucket, const char *key,
                      const struct up_identity *as)
{
    fill *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->t = t;
    f->as = *as;
    atomic_init(&f->refs, 1);
    f->bucket = strdup(bucket);
    f->key = strdup(key);
    f->relay = relay_new(t->ctx->window);
    if (!f->bucket || !f->key || !f->relay) {
        fill_unref(f);
        return NULL;
    }
    return f;
}

/* Starts the transfer of a fill just listed, which holds a reference for it. A prefetch's is
 * stored whoever owns the name; a reader's as the fleet's copy rule says. */
static void start_transfer(fill_table *t, fill *f, bool prefetch)
{
    sc_stat_add(t->ctx->stats->upstream_fetches, 1);
    up_req *req = NULL;
    f->route = (struct origin_route){.by_rule = !prefetch};
    sc_code rc =
        origin_fetch(t->ctx->origin, f->bucket, f->key, &f->as, &f->route, &fill_handler, f, &req);
    if (rc != SC_OK) {
        relay_finish(f->relay, rc);
        unlist_locked(f);
        notify(f, rc);
        fill_unref(f); /* the transfer's reference: it never started */
        return;
    }
    pthread_mutex_lock(&t->mu);
    f->req = req;
    bool abandoned = f->abandoned;
    pthread_mutex_unlock(&t->mu);
    relay_set_upstream(f->relay, req);
    if (abandoned)
        up_req_cancel(req);
}

/*
 * Finds the fill of (bucket, key), or lists a new one when create (table locked), and
 * takes a reference for the caller. *started tells whether it is new.
 */
static fill *join_locked(fill_table *t, const char *bucket, const char *key,
                         const struct up_identity *as, bool create, bool *started)
{
    fill *f = find(t, bucket, key);
    *started = f == NULL && create;
    if (f == NULL && create) {
        f = fill_new(t, bucket, key, as);
        if (f == NULL)
            return NULL;
        atomic_fetch_add(&f->refs, 1); /* the transfer's; fill_new's is the caller's */
        f->listed = true;
        f->invalidated = write_in_flight(t, bucket, key); /* may read what is being replaced */
        unsigned s = slot_of(bucket, key);
        f->next = t->slots[s];
        t->slots[s] = f;
    } else if (f) {
        atomic_fetch_add(&f->refs, 1);
    }
    return f;
}

/* Whether (bucket, key) is stored now, as a lookup would find it (table locked: see
 * fill_join): a block object's record counts however few of its blocks are cached, since the
 * lookup reads such an object by blocks. */
static bool stored_now(fill_table *t, const char *bucket, const char *key)
{
    return find(t, bucket, key) == NULL && store_recorded(t->ctx->st, bucket, key) == SC_OK;
}

static sc_code join_reader(fill_table *t, const char *bucket, const char *key,
                           const struct up_identity *as, bool create, bool unless_stored,
                           fill **out, bool *started)
{
    pthread_mutex_lock(&t->mu);
    if (unless_stored && stored_now(t, bucket, key)) {
        pthread_mutex_unlock(&t->mu);
        *started = false;
        return SC_EEXIST;
    }
    fill *f = join_locked(t, bucket, key, as, create, started);
    if (f)
        atomic_fetch_add(&f->readers, 1);
    pthread_mutex_unlock(&t->mu);
    if (f == NULL)
        return create ? SC_ENOMEM : SC_ENOTFOUND;
    if (*started)
        start_transfer(t, f, false);
    *out = f;
    return SC_OK;
}

sc_code fill_join(fill_table *t, const char *bucket, const char *key, const struct up_identity *as,
                  bool unless_stored, fill **out, bool *started)
{
    return join_reader(t, bucket, key, as, true, unless_stored, out, started);
}

sc_code fill_join_running(fill_table *t, const char *bucket, const char *key, bool unless_stored,
                          fill **out)
{
    static const struct up_identity unused = {0};
    bool started = false;
    return join_reader(t, bucket, key, &unused, false, unless_stored, out, &started);
}

sc_code fill_prefetch(fill_table *t, const char *bucket, const char *key,
                      const struct fill_watcher *watcher)
{
    struct fill_watch *w = malloc(sizeof(*w));
    if (w == NULL)
        return SC_ENOMEM;
    *w = (struct fill_watch){.w = *watcher};
    static const struct up_identity gateway = {0};
    bool started = false;
    pthread_mutex_lock(&t->mu);
    fill *f = join_locked(t, bucket, key, &gateway, true, &started);
    if (f) {
        w->next = f->watches;
        f->watches = w;
    }
    pthread_mutex_unlock(&t->mu);
    if (f == NULL) {
        free(w);
        return SC_ENOMEM;
    }
    if (started)
        start_transfer(t, f, true);
    fill_unref(f); /* the watch needs no reference: the fill notifies before it goes */
    return SC_OK;
}

const struct up_identity *fill_identity(fill *f)
{
    return &f->as;
}

relay *fill_relay(fill *f)
{
    return f->relay;
}

void fill_leave(fill *f)
{
    if (f == NULL)
        return;
    bool last = atomic_fetch_sub(&f->readers, 1) == 1;
    /* Nobody reads an uncacheable object any more: stop fetching it. A cacheable one
     * goes on, so the next reader finds it cached. */
    pthread_mutex_lock(&f->t->mu);
    bool cancel = last && !f->listed && f->req != NULL && !atomic_load(&f->feeding);
    pthread_mutex_unlock(&f->t->mu);
    if (cancel)
        up_req_cancel(f->req);
    fill_unref(f);
}

/* A write to (bucket, key), or to keys of bucket named in its body (key NULL), begins or
 * ends, or the key changed at the upstream: the epochs of what it may touch move (table
 * locked). */
static void bump_epochs(fill_table *t, const char *bucket, const char *key)
{
    if (key != NULL) {
        t->write_epochs[slot_of(bucket, key)]++;
        return;
    }
    for (unsigned s = 0; s < N_SLOTS; s++)
        t->write_epochs[s]++;
}

/* Marks the fill of (bucket, key) as not to be stored and unlists it (table locked). */
static void invalidate_key(fill_table *t, const char *bucket, const char *key)
{
    fill *f = find(t, bucket, key);
    if (f) {
        f->invalidated = true;
        unlist(f);
    }
}

/* invalidate_key() for every fill of bucket (table locked). */
static void invalidate_bucket(fill_table *t, const char *bucket)
{
    for (unsigned s = 0; s < N_SLOTS; s++) {
        fill **pp = &t->slots[s];
        while (*pp) {
            fill *f = *pp;
            if (strcmp(f->bucket, bucket) == 0) {
                f->invalidated = true;
                f->listed = false;
                *pp = f->next;
            } else {
                pp = &f->next;
            }
        }
    }
}

/* invalidate_key(), or invalidate_bucket() when key is NULL (table locked). */
static void invalidate_scope(fill_table *t, const char *bucket, const char *key)
{
    if (key != NULL)
        invalidate_key(t, bucket, key);
    else
        invalidate_bucket(t, bucket);
}

void fill_invalidate(fill_table *t, const char *bucket, const char *key)
{
    pthread_mutex_lock(&t->mu);
    bump_epochs(t, bucket, key);
    invalidate_key(t, bucket, key);
    pthread_mutex_unlock(&t->mu);
}

void fill_invalidate_bucket(fill_table *t, const char *bucket)
{
    pthread_mutex_lock(&t->mu);
    bump_epochs(t, bucket, NULL);
    invalidate_bucket(t, bucket);
    pthread_mutex_unlock(&t->mu);
}

static struct fill_write **find_write(fill_table *t, const char *bucket, const char *key)
{
    struct fill_write **pp = &t->writes;
    for (; *pp; pp = &(*pp)->next) {
        const struct fill_write *w = *pp;
        if (strcmp(w->bucket, bucket) == 0 &&
            (key == NULL ? w->key == NULL : w->key != NULL && strcmp(w->key, key) == 0))
            break;
    }
    return pp;
}

static struct fill_write *write_new(const char *bucket, const char *key)
{
    struct fill_write *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->bucket = strdup(bucket);
    w->key = key != NULL ? strdup(key) : NULL;
    if (w->bucket == NULL || (key != NULL && w->key == NULL)) {
        write_free(w);
        return NULL;
    }
    return w;
}

/* Unlinks the writes that no longer count onto *gone (table locked). */
static void prune_writes(fill_table *t, double now, struct fill_write **gone)
{
    struct fill_write **pp = &t->writes;
    while (*pp) {
        struct fill_write *w = *pp;
        if (write_counts(w, now)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        w->next = *gone;
        *gone = w;
    }
}

static void free_writes(struct fill_write *w)
{
    while (w) {
        struct fill_write *next = w->next;
        write_free(w);
        w = next;
    }
}

sc_code fill_write_begin(fill_table *t, const char *bucket, const char *key)
{
    struct fill_write *fresh = write_new(bucket, key); /* allocated unlocked; may go unused */
    if (fresh == NULL)
        return SC_ENOMEM;
    pthread_mutex_lock(&t->mu);
    struct fill_write **pp = find_write(t, bucket, key);
    if (*pp == NULL) {
        *pp = fresh;
        fresh = NULL;
    }
    (*pp)->count++;
    bump_epochs(t, bucket, key);
    invalidate_scope(t, bucket, key);
    pthread_mutex_unlock(&t->mu);
    write_free(fresh);
    return SC_OK;
}

void fill_write_end(fill_table *t, const char *bucket, const char *key, bool in_doubt)
{
    struct fill_write *gone = NULL;
    double now = sc_now_seconds();
    pthread_mutex_lock(&t->mu);
    struct fill_write *w = *find_write(t, bucket, key);
    if (w != NULL && w->count > 0) {
        w->count--;
        if (in_doubt && w->doubt_until < now + FILL_WRITE_DOUBT_SECONDS)
            w->doubt_until = now + FILL_WRITE_DOUBT_SECONDS;
    }
    prune_writes(t, now, &gone);
    /* Fills started during the write were born marked; new misses must not join them, nor
     * the openings asked during it (block_fetch_open joins only its own epoch). */
    bump_epochs(t, bucket, key);
    invalidate_scope(t, bucket, key);
    pthread_mutex_unlock(&t->mu);
    free_writes(gone);
}
