/*
 * manifest.c - the manifest registry and its API (see manifest.h); the walk
 * ahead of the trainer is in prefetch.c.
 *
 * A manifest's dataset is known at once for "keys" and "epochs" and after
 * the listing for "prefix"; then mf_activate() builds what the prefetcher and
 * the policy use: the future (in order, a whole item by its key's sc_key_hash,
 * a ranged item by the sc_block_key_hash of each block its range covers at the
 * gateway's block size), the order as dataset indices (and, with ranges, where
 * each access starts in the future), and one state and size per item. The
 * newest manifest with a future is the one the policy plans by.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "manifest_int.h"

static const char *const state_names[] = {
    [MF_LISTING] = "listing", [MF_WARMING] = "warming", [MF_WARM] = "warm",
    [MF_PLANNED] = "planned", [MF_DONE] = "done",       [MF_CANCELED] = "canceled",
    [MF_FAILED] = "failed",
};

/* ---- one manifest ------------------------------------------------------------ */

void mf_ref(struct mf *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void mf_unref(struct mf *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    for (size_t i = 0; i < m->n_failures; i++) {
        free(m->failures[i].key);
        free(m->failures[i].reason);
    }
    future_unref(m->fut);
    plan_free(m->plan);
    free(m->order);
    free(m->fstart);
    free(m->starts);
    free(m->obj);
    free(m->size);
    free(m->stamp);
    free(m->khash);
    block_set_free(&m->charged);
    free(m->error);
    free(m->list_token);
    free(m->list_sizes);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

uint32_t mf_block_size(const struct mf_registry *r)
{
    return r->cfg.block_size ? r->cfg.block_size : STORE_DEFAULT_BLOCK_SIZE;
}

uint64_t mf_item_bytes(const struct mf *m, uint32_t idx)
{
    struct plan_range r;
    uint64_t size = m->size[idx];
    if (!plan_item_range(m->plan, idx, &r))
        return size;
    if (size == 0)
        return r.length;
    if (r.offset >= size)
        return 0;
    return r.length < size - r.offset ? r.length : size - r.offset;
}

void mf_learn_size(struct mf *m, uint32_t idx, uint64_t size)
{
    if (size == 0 || m->size[idx] != 0)
        return;
    bool ranged = plan_item_range(m->plan, idx, NULL);
    uint64_t before = ranged ? mf_item_bytes(m, idx) : 0; /* a range counted its length */
    m->size[idx] = size;
    uint64_t after = mf_item_bytes(m, idx);
    m->bytes_known = m->bytes_known - before + after;
    if (!ranged) { /* a range's object is not a sample of the whole objects' sizes */
        m->whole_bytes += size;
        m->whole_known++;
    }
    if (m->obj[idx] == MF_OBJ_CACHED)
        m->bytes_cached = m->bytes_cached - before + after;
}

void mf_mark_cached(struct mf *m, uint32_t idx, uint64_t size)
{
    if (m->obj[idx] == MF_OBJ_CACHED)
        return;
    mf_learn_size(m, idx, size);
    m->obj[idx] = MF_OBJ_CACHED;
    m->cached++;
    m->bytes_cached += mf_item_bytes(m, idx);
}

/* Sizes from the listing, where the sorted dataset still matches the listing order. */
static void take_listed_sizes(struct mf *m)
{
    if (m->list_sizes == NULL || m->n_listed != m->n)
        return;
    for (uint32_t i = 0; i < m->n; i++) {
        m->size[i] = m->list_sizes[i];
        m->bytes_known += m->size[i];
        m->whole_bytes += m->size[i]; /* a listing names whole objects only */
        m->whole_known++;
    }
    free(m->list_sizes);
    m->list_sizes = NULL;
}

/*
 * The blocks dataset index idx's range is planned by, at block size bs: those it covers, up
 * to MF_OBSERVE_BLOCKS (a read consumes no more; and a few bytes of body cannot make the
 * future millions of entries per access). False for a whole item.
 */
static bool item_blocks(const struct mf *m, uint32_t idx, uint32_t bs, uint32_t *first,
                        uint32_t *last)
{
    struct plan_range r;
    if (!plan_item_range(m->plan, idx, &r))
        return false;
    *first = (uint32_t)(r.offset / bs); /* ranges end within 5 TiB: indices fit */
    *last = (uint32_t)((r.offset + r.length - 1) / bs);
    if (*last - *first >= MF_OBSERVE_BLOCKS)
        *last = *first + MF_OBSERVE_BLOCKS - 1;
    return true;
}

/*
 * With ranges: where each access starts in the future (fstart), and its length, which must
 * fit the limit on accesses (a future costs ~16 bytes per entry).
 */
static sc_code map_ranged_positions(struct mf *m, uint64_t *length, struct api_err *err)
{
    uint32_t bs = mf_block_size(m->reg), first, last;
    uint64_t at = 0;
    *length = m->accesses;
    if (!plan_has_ranges(m->plan))
        return SC_OK;
    m->fstart = malloc((m->accesses ? m->accesses : 1) * sizeof(*m->fstart));
    if (m->fstart == NULL)
        return SC_ENOMEM;
    for (uint64_t pos = 0; pos < m->accesses; pos++) {
        m->fstart[pos] = (uint32_t)at;
        at += item_blocks(m, m->order[pos], bs, &first, &last) ? (uint64_t)last - first + 1 : 1;
        if (at > PLAN_MAX_ACCESSES) {
            api_err_set(err, API_TOO_LARGE,
                        "the plan's ranges cover more blocks of %u bytes over this rank's "
                        "accesses than a plan may read (%u)",
                        bs, PLAN_MAX_ACCESSES);
            return SC_ETOOBIG;
        }
    }
    *length = at;
    return SC_OK;
}

/* Access pos of the plan into the future: its key's hash, or its blocks' (see the top). */
static sc_code append_access(struct mf *m, future *f, uint64_t pos, const uint64_t *hashes)
{
    uint32_t idx = m->order[pos], first, last;
    if (!item_blocks(m, idx, mf_block_size(m->reg), &first, &last))
        return future_append(f, hashes[idx]);
    sc_code rc = SC_OK;
    for (uint64_t b = first; rc == SC_OK && b <= last; b++)
        rc = future_append(f, sc_block_key_hash(hashes[idx], (uint32_t)b));
    return rc;
}

/* Names where an item of the object khash starts, at byte offset. */
static uint64_t item_start(uint64_t khash, uint64_t offset)
{
    return sc_hash_mix(khash ^ sc_hash_mix(offset + 1));
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* m->starts: where the plan's ranged items start, for consume() to tell a read that starts
 * an item from one that continues it. */
static sc_code map_item_starts(struct mf *m)
{
    if (!plan_has_ranges(m->plan))
        return SC_OK;
    m->starts = malloc((m->n ? m->n : 1) * sizeof(*m->starts));
    if (m->starts == NULL)
        return SC_ENOMEM;
    struct plan_range r;
    for (uint32_t idx = 0; idx < m->n; idx++)
        if (plan_item_range(m->plan, idx, &r))
            m->starts[m->n_starts++] = item_start(plan_key_hash(m->plan, idx), r.offset);
    qsort(m->starts, m->n_starts, sizeof(*m->starts), by_value);
    return SC_OK;
}

/*
 * The future, in access order; counts the items this rank reads and a range's bytes (in
 * progress only: a range's length says nothing of the size of the whole objects). A plan with
 * ranges keeps its items' key hashes for the walk (m->khash).
 */
static sc_code build_future(struct mf *m, struct api_err *err)
{
    future *f = NULL;
    uint64_t *hashes = NULL;
    uint64_t length;
    sc_code rc = map_ranged_positions(m, &length, err);
    if (rc == SC_OK)
        rc = map_item_starts(m);
    if (rc == SC_OK)
        rc = plan_key_hashes(m->plan, &hashes);
    if (rc == SC_OK)
        rc = future_new(&f);
    for (uint64_t pos = 0; rc == SC_OK && pos < m->accesses; pos++) {
        uint32_t idx = m->order[pos];
        if (m->stamp[idx] == 0) {
            m->stamp[idx] = 1;
            m->used++;
            if (plan_item_range(m->plan, idx, NULL))
                m->bytes_known += mf_item_bytes(m, idx); /* known before the object is seen */
        }
        rc = append_access(m, f, pos, hashes);
    }
    if (rc == SC_OK && m->fstart != NULL)
        m->khash = hashes;
    else
        free(hashes);
    if (rc == SC_OK)
        rc = future_seal(f);
    if (rc != SC_OK) {
        future_unref(f);
        return rc;
    }
    memset(m->stamp, 0, (size_t)m->n * sizeof(*m->stamp));
    m->fut = f;
    return SC_OK;
}

uint64_t mf_position(struct mf *m)
{
    uint64_t fpos = future_position(m->fut);
    if (m->fstart == NULL)
        return fpos;
    /* the last access starting at or before fpos; past the future's end, all of them */
    if (fpos >= future_length(m->fut))
        return m->accesses;
    uint64_t lo = 0, hi = m->accesses;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (m->fstart[mid] <= fpos)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

sc_code mf_activate(struct mf *m, struct api_err *err)
{
    const struct plan *p = m->plan;
    m->n = plan_objects(p);
    m->accesses = plan_accesses(p);
    m->order = malloc((m->accesses ? m->accesses : 1) * sizeof(*m->order));
    m->obj = calloc(m->n ? m->n : 1, sizeof(*m->obj));
    m->size = calloc(m->n ? m->n : 1, sizeof(*m->size));
    m->stamp = calloc(m->n ? m->n : 1, sizeof(*m->stamp));
    if (!m->order || !m->obj || !m->size || !m->stamp)
        return SC_ENOMEM;
    struct plan_iter it;
    plan_iter_init(&it, p);
    uint32_t idx;
    uint64_t pos;
    sc_code rc;
    while ((rc = plan_iter_next(&it, &idx, &pos)) == SC_OK)
        m->order[pos] = idx;
    plan_iter_free(&it);
    if (rc != SC_ENOTFOUND)
        return rc;
    rc = build_future(m, err);
    if (rc != SC_OK)
        return rc;
    take_listed_sizes(m);
    m->state = plan_params(p)->prefetch ? MF_WARMING : MF_PLANNED;
    return SC_OK;
}

/* ---- the registry ------------------------------------------------------------ */

void mf_kick(struct mf_registry *r)
{
    pthread_mutex_lock(&r->wake_mu);
    r->kicked = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->wake_mu);
}

static bool active(const struct mf *m)
{
    return m->state != MF_CANCELED && m->state != MF_FAILED && m->fut != NULL;
}

/* Gives the policy the newest active plan, if it changed (list_lock held for writing). */
void mf_refresh_hint(struct mf_registry *r)
{
    struct mf *m = r->list;
    while (m && !active(m))
        m = m->next;
    future *fut = m ? m->fut : NULL;
    if (fut == r->hinted)
        return;
    struct policy_hint h = {.kind = POLICY_HINT_FUTURE, .future = fut};
    if (store_hint(r->cfg.st, &h) != SC_OK)
        sc_warn("the policy could not take manifest %s's plan", m ? m->id : "-");
    future_unref(r->hinted);
    r->hinted = fut;
    if (fut)
        future_ref(fut);
}

static struct mf *find(struct mf_registry *r, const char *id)
{
    for (struct mf *m = r->list; m; m = m->next)
        if (strcmp(m->id, id) == 0)
            return m;
    return NULL;
}

/* Keeps the body in the cache directory, so the manifest outlives a restart. */
static void persist(struct mf_registry *r, const char *id, const char *body, size_t len)
{
    char path[4096];
    if (r->cfg.dir == NULL ||
        snprintf(path, sizeof(path), "%s/%s.json", r->cfg.dir, id) >= (int)sizeof(path))
        return;
    FILE *f = fopen(path, "wbx");
    bool ok = f && fwrite(body, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        sc_warn("cannot keep manifest %s in %s: %s", id, r->cfg.dir, strerror(errno));
}

static void forget(struct mf_registry *r, const char *id)
{
    char path[4096];
    if (r->cfg.dir &&
        snprintf(path, sizeof(path), "%s/%s.json", r->cfg.dir, id) < (int)sizeof(path))
        unlink(path);
}

/* Parses and lists a new manifest under id (list_lock held for writing). */
static sc_code add(struct mf_registry *r, const char *id, const char *body, size_t len,
                   struct mf **out, struct api_err *err)
{
    struct mf *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return SC_ENOMEM;
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->reg = r;
    m->created = time(NULL);
    m->state = MF_LISTING;
    sc_code rc = plan_parse(body, len, NULL, &m->plan, err);
    if (rc == SC_OK && plan_ready(m->plan))
        rc = mf_activate(m, err);
    if (rc != SC_OK) {
        mf_unref(m);
        return rc;
    }
    m->next = r->list;
    r->list = m;
    mf_refresh_hint(r);
    *out = m;
    return SC_OK;
}

static json_t *progress_locked(struct mf *m, bool failures);

sc_code mf_create(mf_registry *r, const char *body, size_t len, json_t **reply, struct api_err *err)
{
    char id[MF_ID_MAX];
    struct mf *m = NULL;
    err->code = API_OK;
    pthread_rwlock_wrlock(&r->list_lock);
    snprintf(id, sizeof(id), "m%llu", (unsigned long long)r->next_id);
    sc_code rc = add(r, id, body, len, &m, err);
    if (rc == SC_OK) {
        r->next_id++;
        persist(r, id, body, len);
        pthread_mutex_lock(&m->mu);
        *reply = progress_locked(m, false);
        if (*reply)
            json_object_set_new(*reply, "objects", m->fut ? json_integer(m->used) : json_null());
        pthread_mutex_unlock(&m->mu);
        if (*reply == NULL)
            rc = SC_ENOMEM; /* the manifest stands; only the reply failed */
    }
    pthread_rwlock_unlock(&r->list_lock);
    if (rc == SC_OK)
        mf_kick(r);
    return rc;
}

/* ---- progress ---------------------------------------------------------------- */

/* Rates since the first prefetch and the time left for what still fits. */
static void add_rates(json_t *o, const struct mf *m)
{
    double secs = m->first_fetch.tv_sec ? sc_seconds_since(&m->first_fetch) : 0;
    double bps = secs > 0 ? (double)m->bytes_fetched / secs : 0;
    double ops = secs > 0 ? (double)m->fetched / secs : 0;
    uint32_t target = m->fits < m->used ? m->fits : m->used;
    uint32_t left = target > m->cached ? target - m->cached : 0;
    json_object_set_new(o, "rate_bytes_per_s", json_real(bps));
    json_object_set_new(o, "rate_objects_per_s", json_real(ops));
    json_object_set_new(o, "eta_seconds",
                        left == 0 ? json_real(0)
                        : ops > 0 ? json_real((double)left / ops)
                                  : json_null());
}

static json_t *failures_json(const struct mf *m)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < m->n_failures; i++) {
        const struct mf_failure *f = &m->failures[i];
        json_t *o = json_pack("{s:s, s:s}", "key", f->key, "reason", f->reason);
        if (o != NULL && f->range.length > 0)
            json_object_set_new(
                o, "range",
                json_pack("[I, I]", (json_int_t)f->range.offset, (json_int_t)f->range.length));
        json_array_append_new(a, o);
    }
    return a;
}

/* The progress object (m->mu held). */
static json_t *progress_locked(struct mf *m, bool failures)
{
    json_t *o = plan_describe_json(m->plan);
    if (o == NULL)
        return NULL;
    bool known = m->fut != NULL;
    uint64_t pos = known ? mf_position(m) : 0;
    json_object_set_new(o, "id", json_string(m->id));
    json_object_set_new(o, "state", json_string(state_names[m->state]));
    json_object_set_new(o, "created_at", json_integer((json_int_t)m->created));
    json_object_set_new(o, "position", json_integer((json_int_t)pos));
    json_object_set_new(o, "objects_total", known ? json_integer(m->used) : json_null());
    json_object_set_new(o, "objects_cached", json_integer(m->cached));
    json_object_set_new(o, "objects_in_flight", json_integer(m->inflight));
    json_object_set_new(o, "objects_failed", json_integer(m->failed));
    json_object_set_new(o, "fits", json_integer(m->fits));
    json_object_set_new(o, "bytes_total", json_integer((json_int_t)m->bytes_known));
    json_object_set_new(o, "bytes_cached", json_integer((json_int_t)m->bytes_cached));
    json_object_set_new(o, "percent",
                        json_real(known && m->used ? 100.0 * m->cached / m->used : 0.0));
    json_object_set_new(o, "error", m->error ? json_string(m->error) : json_null());
    add_rates(o, m);
    if (failures)
        json_object_set_new(o, "failures", failures_json(m));
    return o;
}

json_t *mf_progress(mf_registry *r, const char *id)
{
    json_t *o = NULL;
    pthread_rwlock_rdlock(&r->list_lock);
    struct mf *m = find(r, id);
    if (m) {
        pthread_mutex_lock(&m->mu);
        o = progress_locked(m, true);
        pthread_mutex_unlock(&m->mu);
    }
    pthread_rwlock_unlock(&r->list_lock);
    return o;
}

json_t *mf_list(mf_registry *r)
{
    json_t *a = json_array();
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; a && m; m = m->next) {
        pthread_mutex_lock(&m->mu);
        json_t *o = progress_locked(m, false);
        pthread_mutex_unlock(&m->mu);
        if (o == NULL || json_array_insert_new(a, 0, o) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    pthread_rwlock_unlock(&r->list_lock);
    return a ? json_pack("{s:o}", "manifests", a) : NULL;
}

void mf_get_totals(mf_registry *r, struct mf_totals *t)
{
    *t = (struct mf_totals){.prefetch_inflight = atomic_load(&r->inflight)};
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next) {
        pthread_mutex_lock(&m->mu);
        if (m->state <= MF_PLANNED) {
            t->active++;
            t->objects += m->used;
            t->cached += m->cached;
            t->inflight += m->inflight;
            t->failed += m->failed;
        }
        pthread_mutex_unlock(&m->mu);
    }
    pthread_rwlock_unlock(&r->list_lock);
}

json_t *mf_order(mf_registry *r, const char *id, uint32_t e, struct api_err *err)
{
    json_t *o = NULL;
    err->code = API_OK;
    pthread_rwlock_rdlock(&r->list_lock);
    struct mf *m = find(r, id);
    if (m == NULL)
        api_err_set(err, API_NOT_FOUND, "no manifest \"%s\"", id);
    else if (!plan_ready(m->plan))
        api_err_set(err, API_INVALID_FIELD, "manifest %s is still listing its prefix", id);
    else if (e >= plan_epochs(m->plan))
        api_err_set(err, API_INVALID_FIELD, "epoch %u is out of range: the plan has %u epochs", e,
                    plan_epochs(m->plan));
    else
        o = plan_order_json(m->plan, id, e);
    pthread_rwlock_unlock(&r->list_lock);
    return o;
}

json_t *mf_cancel(mf_registry *r, const char *id)
{
    json_t *o = NULL;
    pthread_rwlock_wrlock(&r->list_lock);
    struct mf **pp = &r->list;
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->next;
    struct mf *m = *pp;
    if (m) {
        *pp = m->next;
        pthread_mutex_lock(&m->mu);
        m->state = MF_CANCELED;
        o = progress_locked(m, true);
        pthread_mutex_unlock(&m->mu);
        mf_refresh_hint(r);
        forget(r, id);
    }
    pthread_rwlock_unlock(&r->list_lock);
    mf_unref(m); /* fetches in flight keep it until they end */
    return o;
}

/* Whether a read from byte `first` of the object khash starts an item of m's plan: a whole
 * object at byte 0, a range at its offset. */
static bool starts_an_item(const struct mf *m, uint64_t khash, uint64_t first)
{
    uint64_t name = item_start(khash, first);
    return first == 0 || (m->starts != NULL && bsearch(&name, m->starts, m->n_starts,
                                                       sizeof(*m->starts), by_value) != NULL);
}

/*
 * A ranged read's blocks, in a plan that names ranges. One that starts an item takes its
 * first block's next occurrence and the others' within that occurrence; one that continues
 * an item (its second part, a column chunk) takes only occurrences before the position plus
 * what it covers: what is left of the occurrence being read, never the next epoch's.
 */
static bool consume_blocks(struct mf *m, uint64_t khash, const struct mf_read *range)
{
    uint64_t bs = mf_block_size(m->reg), first = range->first / bs;
    uint64_t last = range->last == UINT64_MAX ? first : range->last / bs;
    if (last - first >= MF_OBSERVE_BLOCKS)
        last = first + MF_OBSERVE_BLOCKS - 1;
    uint64_t span = last - first + 1, limit = future_position(m->fut) + span;
    bool any = false;
    for (uint64_t b = first; b <= last && b <= UINT32_MAX; b++) {
        uint64_t h = sc_block_key_hash(khash, (uint32_t)b);
        if (b == first && starts_an_item(m, khash, range->first)) {
            uint64_t at = future_take(m->fut, h, FUTURE_NEVER, false);
            if (at != FUTURE_NEVER)
                limit = at + span;
            any |= at != FUTURE_NEVER;
            continue;
        }
        any |= future_take(m->fut, h, limit, false) != FUTURE_NEVER;
    }
    return any;
}

/*
 * The read consumes, in m's future, the blocks it covers that the plan holds, else the key:
 * a whole read its next occurrence, a ranged one (a part of the object, in any order) its
 * next occurrence unless a part of it was read lately.
 */
static bool consume(struct mf *m, uint64_t khash, const struct mf_read *range)
{
    uint64_t bs = mf_block_size(m->reg);
    if (range != NULL && m->fstart != NULL && range->first / bs <= UINT32_MAX &&
        consume_blocks(m, khash, range))
        return true;
    return future_take(m->fut, khash, FUTURE_NEVER, range != NULL) != FUTURE_NEVER;
}

void mf_observe(mf_registry *r, const char *bucket, const char *key, const struct mf_read *range)
{
    uint64_t khash = 0;
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next) {
        if (m->fut == NULL || strcmp(plan_params(m->plan)->bucket, bucket) != 0)
            continue;
        if (khash == 0)
            khash = sc_key_hash(bucket, key);
        if (consume(m, khash, range) && atomic_exchange(&m->blocked, false))
            mf_kick(r);
    }
    pthread_rwlock_unlock(&r->list_lock);
}

/* ---- start and stop ---------------------------------------------------------- */

static int by_number(const void *a, const void *b)
{
    unsigned long long x = strtoull(*(char *const *)a + 1, NULL, 10);
    unsigned long long y = strtoull(*(char *const *)b + 1, NULL, 10);
    return (x > y) - (x < y);
}

static void reload_one(struct mf_registry *r, const char *name)
{
    char path[4096], id[MF_ID_MAX];
    snprintf(path, sizeof(path), "%s/%s", r->cfg.dir, name);
    snprintf(id, sizeof(id), "%.*s", (int)(strlen(name) - 5), name);
    FILE *f = fopen(path, "rb");
    char *body = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        body = malloc((size_t)len + 1);
    struct api_err err = {0};
    struct mf *m = NULL;
    if (body && fread(body, 1, (size_t)len, f) == (size_t)len &&
        add(r, id, body, (size_t)len, &m, &err) == SC_OK)
        sc_info("manifest %s registered again from %s", id, path);
    else
        sc_warn("cannot register manifest %s again: %s", path,
                err.code ? err.message : "unreadable");
    unsigned long long n = strtoull(id + 1, NULL, 10);
    if (n >= r->next_id)
        r->next_id = n + 1;
    free(body);
    if (f)
        fclose(f);
}

/* Registers the manifests kept in the directory, oldest first. */
static sc_code reload(struct mf_registry *r)
{
    if (mkdir(r->cfg.dir, 0700) != 0 && errno != EEXIST)
        return SC_EIO;
    DIR *d = opendir(r->cfg.dir);
    if (d == NULL)
        return SC_EIO;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != 'm' || len < 7 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char **grown = realloc(names, (n + 1) * sizeof(*names));
        if (grown == NULL || (grown[n] = strdup(e->d_name)) == NULL) {
            names = grown ? grown : names;
            break;
        }
        names = grown;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), by_number);
    pthread_rwlock_wrlock(&r->list_lock);
    for (size_t i = 0; i < n; i++) {
        reload_one(r, names[i]);
        free(names[i]);
    }
    pthread_rwlock_unlock(&r->list_lock);
    free(names);
    return SC_OK;
}

sc_code mf_registry_start(const struct mf_config *cfg, mf_registry **out)
{
    struct mf_registry *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return SC_ENOMEM;
    r->cfg = *cfg;
    r->cfg.dir = NULL;
    if (cfg->dir && (r->dir = strdup(cfg->dir)) == NULL) {
        free(r);
        return SC_ENOMEM;
    }
    r->cfg.dir = r->dir;
    r->next_id = 1;
    pthread_rwlock_init(&r->list_lock, NULL);
    pthread_mutex_init(&r->wake_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &ca);
    pthread_condattr_destroy(&ca);
    sc_code rc = cfg->dir ? reload(r) : SC_OK;
    if (rc == SC_OK && pthread_create(&r->thread, NULL, mf_prefetch_main, r) != 0)
        rc = SC_EIO;
    r->running = rc == SC_OK;
    if (rc != SC_OK) {
        mf_registry_free(r);
        return rc;
    }
    *out = r;
    return SC_OK;
}

void mf_registry_stop(mf_registry *r)
{
    if (r == NULL || !r->running)
        return;
    pthread_mutex_lock(&r->wake_mu);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->wake_mu);
    pthread_join(r->thread, NULL);
    r->running = false;
}

void mf_registry_free(mf_registry *r)
{
    if (r == NULL)
        return;
    mf_registry_stop(r);
    while (r->list) {
        struct mf *m = r->list;
        r->list = m->next;
        mf_unref(m);
    }
    future_unref(r->hinted);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->wake_mu);
    pthread_rwlock_destroy(&r->list_lock);
    free(r->dir);
    free(r);
}
