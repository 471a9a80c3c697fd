/*
 * prefetch.c - the prefetcher: one thread that keeps the cache ahead of the
 * trainer (see manifest.h).
 *
 * Each walk goes through the jobs' plans from their trainers' positions onwards,
 * all together: each step takes the item needed soonest over every job, in time at
 * the jobs' measured read rates (a job twice as fast has its items come twice as
 * soon), so the window and the prefetch slots are shared by need, and one job's
 * warm-up cannot starve another's next reads. It counts every distinct item once,
 * until the items counted would no longer fit in the cache (WALK_SHARE of it). An
 * item is a whole object or a byte range of one (range_prefetch.h: a large
 * object's range takes, and warms, only the blocks it covers). A ranged item
 * is charged the blocks it covers (of a small object, the object) that no item
 * before it in the walk covered (block_set.h): 4 KiB samples of a tokenized
 * file take one block between them, not one each.
 * Within that window it starts a fill for each object neither cached nor in
 * flight, up to the concurrency bound (none for a ranged item whose blocks are
 * all being fetched for items before it: those fetches warm it too, and the
 * slots go to blocks further on), and stops at the first object the
 * policy would not admit: with `clairvoyant`, that object is needed later than
 * everything cached, so fetching it would push out something needed sooner.
 * Objects near the trainer are checked against the store, so one evicted by
 * other traffic is fetched again before the trainer gets there; so is every object the
 * trainer read since the last walk, wherever the walk meets it (note_read).
 *
 * A fetch holds its slot until its body has arrived and waits for the store
 * within the fill table's buffer (on_arrived), or else until it ends (on_fetched);
 * the item is in flight until it ends either way.
 * A walk runs when a slot frees or a fetch ends, when the trainer moves while the
 * last walk was blocked, when a manifest arrives, and at least every WALK_PERIOD_MS.
 * Prefix manifests are listed here, one page per walk, so a long listing
 * never holds up the other manifests' prefetching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "manifest_int.h"
#include "../upstream/list.h"
#include "../upstream/range_prefetch.h"

#define WALK_PERIOD_MS  50
#define WALK_SHARE      0.9             /* of the capacity a walk may plan for */
#define NEAR_CHECK      64              /* cached objects next to the trainer checked per walk */
#define DEFAULT_SIZE    (1024u * 1024u) /* assumed size of an object not seen yet */
#define MAX_LAUNCH      256             /* fills started per manifest per walk */
#define FLEET_REPLAN_MS 5000            /* at least this long between replans for the fleet */

/* A prefetch in flight: what its completion updates. */
struct fetch {
    struct mf *m;
    uint32_t idx;
    bool slot_freed;  /* its body arrived (on_arrived): it no longer counts against the bound */
    uint64_t read_to; /* m->read_to when it started */
};

/* The size taken for a whole object not seen yet: the mean of the whole objects seen. */
static uint64_t assumed_size(const struct mf *m)
{
    return m->whole_known ? m->whole_bytes / m->whole_known : DEFAULT_SIZE;
}

static void add_failure(struct mf *m, uint32_t idx, const char *reason)
{
    m->obj[idx] = MF_OBJ_FAILED;
    m->failed++;
    if (m->n_failures == MF_MAX_FAILURES)
        return;
    struct mf_failure *f = &m->failures[m->n_failures];
    plan_item_range(m->plan, idx, &f->range);
    f->key = strdup(plan_key(m->plan, idx));
    f->reason = strdup(reason);
    if (f->key && f->reason) {
        m->n_failures++;
    } else {
        free(f->key);
        free(f->reason);
    }
}

static const char *reason_of(const struct fill_result *res, char *buf, size_t cap)
{
    switch (res->rc) {
    case SC_ENOTFOUND:
        return "NoSuchKey: the object does not exist upstream";
    case SC_ETOOBIG:
        return "TooLarge: the object is larger than --max-object-size";
    case SC_EMISMATCH:
        return "Mismatch: the body did not match its length, ETag or checksum";
    case SC_EINVAL:
        return "NoETag: the upstream sent the object without an ETag, which is never cached";
    default:
        break;
    }
    if (res->status != 0 && res->status != 200)
        snprintf(buf, cap, "Upstream: HTTP %ld", res->status);
    else
        snprintf(buf, cap, "Upstream: %s", sc_strerror(res->rc));
    return buf;
}

/*
 * A prefetch's body arrived and waits for the store within the fill table's budget (upstream
 * thread): its slot goes to the next fetch. The item stays in flight until on_fetched.
 */
static void on_arrived(void *arg)
{
    struct fetch *f = arg;
    struct mf_registry *r = f->m->reg;
    f->slot_freed = true;
    atomic_fetch_sub(&r->inflight, 1);
    mf_kick(r);
}

/* A prefetch ended (upstream or store thread; after on_arrived if that came). */
static void on_fetched(void *arg, const struct fill_result *res)
{
    struct fetch *f = arg;
    struct mf *m = f->m;
    struct mf_registry *r = m->reg;
    char buf[64];
    pthread_mutex_lock(&m->mu);
    m->inflight--;
    /* Stored after its slot was freed: the walk that slot called is done or coming, so a
     * walk is owed only when the manifest may be warm now. */
    bool walk = !f->slot_freed || res->rc != SC_OK || m->inflight == 0;
    mf_learn_size(m, f->idx, res->size);
    if (res->rc == SC_OK) {
        mf_mark_cached(m, f->idx, res->size);
        /* The trainer moved meanwhile and may have read it in flight, when note_read passed
         * over it (not cached then): checked again when next counted, as if read since. */
        if (m->read_to != f->read_to)
            m->obj[f->idx] = MF_OBJ_RECHECK;
        m->fetched++;
        m->bytes_fetched += mf_item_bytes(m, f->idx);
        sc_stat_add(r->cfg.stats->prefetched, 1);
    } else if (res->rc == SC_EFULL || res->rc == SC_ECANCELED) {
        m->obj[f->idx] = MF_OBJ_PENDING; /* refused for now, or invalidated: a later walk decides */
    } else {
        add_failure(m, f->idx, reason_of(res, buf, sizeof(buf)));
    }
    pthread_mutex_unlock(&m->mu);
    if (!f->slot_freed)
        atomic_fetch_sub(&r->inflight, 1);
    if (walk)
        mf_kick(r);
    mf_unref(m);
    free(f);
}

/* Starts the prefetch of item idx: a fill of the whole object, or of a range's blocks. */
static sc_code start(struct mf *m, uint32_t idx, struct fetch *f)
{
    struct mf_registry *r = m->reg;
    const char *bucket = plan_params(m->plan)->bucket;
    const struct fill_watcher w = {.done = on_fetched, .arrived = on_arrived, .arg = f};
    struct plan_range rg;
    if (!plan_item_range(m->plan, idx, &rg))
        return fill_prefetch(r->cfg.fills, bucket, plan_key(m->plan, idx), &w);
    return range_prefetch(r->cfg.fills, bucket, plan_key(m->plan, idx), rg.offset,
                          rg.offset + rg.length - 1, &w);
}

/* Starts the prefetches a walk chose (no lock held: a failed start calls back at once);
 * read_to: m->read_to at that walk. */
static void launch(struct mf *m, const uint32_t *idx, unsigned n, uint64_t read_to)
{
    struct mf_registry *r = m->reg;
    for (unsigned i = 0; i < n; i++) {
        struct fetch *f = malloc(sizeof(*f));
        sc_code rc = SC_ENOMEM;
        if (f) {
            *f = (struct fetch){m, idx[i], false, read_to};
            mf_ref(m);
            atomic_fetch_add(&r->inflight, 1);
            rc = start(m, idx[i], f);
        }
        if (rc == SC_OK)
            continue;
        if (f) {
            atomic_fetch_sub(&r->inflight, 1);
            mf_unref(m);
            free(f);
        }
        pthread_mutex_lock(&m->mu);
        m->inflight--;
        m->obj[idx[i]] = MF_OBJ_PENDING;
        pthread_mutex_unlock(&m->mu);
    }
}

/* Re-checks an item counted cached; false (and pending again) if it was evicted since. */
static bool still_cached(struct mf *m, uint32_t idx)
{
    uint64_t size = 0;
    if (mf_item_cached(m, idx, &size)) {
        m->obj[idx] = MF_OBJ_CACHED;
        return true;
    }
    m->cached--;
    m->bytes_cached -= mf_item_bytes(m, idx);
    m->obj[idx] = MF_OBJ_PENDING;
    return false;
}

/* Whether the policy would take item idx, of footprint bytes (a range: as its first block). */
static bool would_admit(struct mf *m, uint32_t idx, uint64_t footprint)
{
    store *st = m->reg->cfg.st;
    const char *bucket = plan_params(m->plan)->bucket;
    const char *key = plan_key(m->plan, idx);
    struct plan_range r;
    if (!plan_item_range(m->plan, idx, &r))
        return store_would_admit(st, bucket, key, footprint);
    uint64_t first = r.offset / mf_block_size(m->reg);
    return store_would_admit_block(st, bucket, key, (uint32_t)first, footprint);
}

/* Whether a pending item is worth a prefetch; marks it cached if the store has it. */
static bool wants_fetch(struct mf *m, uint32_t idx, uint64_t footprint, bool *refused)
{
    uint64_t have = 0;
    if (mf_item_cached(m, idx, &have)) {
        mf_mark_cached(m, idx, have);
        return false;
    }
    mf_learn_size(m, idx, have);
    *refused = !would_admit(m, idx, footprint);
    return !*refused;
}

/*
 * The bytes item idx takes in the cache: a whole object's size (the mean while unknown); a
 * range of a large object, the blocks it covers (as if large while the size is unknown); a
 * range of an object stored whole, the object.
 */
static uint64_t footprint(const struct mf *m, uint32_t idx)
{
    struct plan_range r;
    uint64_t size = m->size[idx], bs = mf_block_size(m->reg);
    if (!plan_item_range(m->plan, idx, &r))
        return size ? size : assumed_size(m);
    if (size != 0 && size <= bs)
        return size;
    uint64_t end = r.offset + r.length;
    if (size != 0 && end > size)
        end = size;
    if (end <= r.offset)
        return 0; /* past the object's end */
    uint64_t from = r.offset / bs * bs, to = (end + bs - 1) / bs * bs;
    return (size != 0 && to > size ? size : to) - from;
}

/*
 * The blocks of its object ranged item idx takes, [*first, *last]: at the registry's block
 * size; a range of an object stored whole (not over a block), block 0 as the whole object.
 * *last_bytes: what block *last takes (a large object's last block may be short). False:
 * none (the range starts past the object's end).
 */
static bool item_span(const struct mf *m, uint32_t idx, const struct plan_range *r, uint32_t *first,
                      uint32_t *last, uint64_t *last_bytes)
{
    uint64_t size = m->size[idx], bs = mf_block_size(m->reg);
    uint64_t end = r->offset + r->length;
    if (size != 0 && end > size)
        end = size;
    if (end <= r->offset)
        return false;
    if (size != 0 && size <= bs) {
        *first = *last = 0;
        *last_bytes = size;
        return true;
    }
    *first = (uint32_t)(r->offset / bs); /* ranges end within 5 TiB: indices fit */
    *last = (uint32_t)((end - 1) / bs);
    *last_bytes = size != 0 && (uint64_t)*last * bs + bs > size ? size - (uint64_t)*last * bs : bs;
    return true;
}

/* What a walk counts item idx for, given what it counted before it. */
struct charge {
    uint64_t bytes;  /* new bytes to the walk's budget */
    bool on_its_way; /* a ranged item whose every block is being fetched for an item before */
};

/*
 * The charge of item idx in this walk: a whole item, footprint(); a ranged one, the blocks
 * of it not counted yet this walk (nothing if its whole object was), counted no further than
 * past `left` (then it does not fit anyway). A whole object counted after ranges of it is
 * charged whole: the overlap is counted twice (rare, and on the safe side).
 */
static struct charge charge_of(const struct mf *m, uint32_t idx, uint64_t left)
{
    struct plan_range r;
    if (m->khash == NULL || !plan_item_range(m->plan, idx, &r))
        return (struct charge){footprint(m, idx), false};
    enum block_set_state whole = block_set_get(&m->charged, m->khash[idx], BLOCK_SET_WHOLE);
    if (whole != BLOCK_SET_ABSENT)
        return (struct charge){0, whole == BLOCK_SET_FETCHING};
    uint32_t first, last;
    uint64_t last_bytes, bs = mf_block_size(m->reg);
    struct charge c = {0, false};
    if (!item_span(m, idx, &r, &first, &last, &last_bytes))
        return c;
    c.on_its_way = true;
    for (uint64_t b = first; b <= last && c.bytes <= left; b++) {
        enum block_set_state st = block_set_get(&m->charged, m->khash[idx], (uint32_t)b);
        if (st == BLOCK_SET_ABSENT)
            c.bytes += b == last ? last_bytes : bs;
        c.on_its_way = c.on_its_way && st == BLOCK_SET_FETCHING;
    }
    return c;
}

/*
 * Records that this walk counted item idx (for a ranged plan): its blocks, or its whole
 * object; `fetching` when a prefetch of it is on its way. Out of memory, later items sharing
 * them are charged again: too little fits, never too much.
 */
static void note_charged(struct mf *m, uint32_t idx, bool fetching)
{
    struct plan_range r;
    uint32_t first, last;
    uint64_t last_bytes;
    if (m->khash == NULL)
        return;
    if (!plan_item_range(m->plan, idx, &r)) {
        block_set_put(&m->charged, m->khash[idx], BLOCK_SET_WHOLE, fetching);
        return;
    }
    if (!item_span(m, idx, &r, &first, &last, &last_bytes))
        return;
    for (uint64_t b = first; b <= last; b++)
        if (block_set_put(&m->charged, m->khash[idx], (uint32_t)b, fetching) != SC_OK)
            return;
}

/*
 * What fits when a walk stopped early because every prefetch slot was taken: the objects
 * counted so far, plus what the rest of the budget holds at the mean object size, or, in a
 * plan with ranges (whose items share blocks), at the mean charge of the items counted.
 * Walking the whole window on every fill completion would cost too much for large manifests.
 */
static uint32_t estimate_fits(const struct mf *m, uint32_t counted, uint64_t bytes,
                              uint64_t budget_left)
{
    uint64_t mean = m->khash && counted && bytes ? bytes / counted : assumed_size(m);
    uint64_t more = budget_left / (mean ? mean : 1);
    uint64_t fits = (uint64_t)counted + more;
    return fits < m->used ? (uint32_t)fits : m->used;
}

/* One job's part of a walk: where it stands, what it counted and chose to fetch. */
struct walker {
    struct mf *m;
    uint64_t pos;     /* the next position to look at */
    uint64_t from;    /* the future's position where the walk began */
    double rate;      /* the job's read rate, for the order between jobs */
    uint32_t *idx;    /* the items to fetch (MAX_LAUNCH) */
    uint64_t read_to; /* m->read_to once noted at the walk's start */
    unsigned n, near;
    uint64_t bytes; /* charged to the shared budget */
    uint32_t fits;
    bool blocked, slots_full, done;
};

/*
 * Notes the items the trainer read since the last walk, up to position pos, as to be checked:
 * cached when last seen, but what was just read is what a policy that knows the future evicts
 * first. Without this, the walk at an epoch's end took last epoch's evicted items for cached,
 * and fetched nothing until the trainer met them.
 */
static void note_read(struct mf *m, uint64_t pos)
{
    if (m->read_to > pos)
        m->read_to = pos; /* a new order, or a job that started over */
    for (; m->read_to < pos; m->read_to++) {
        uint32_t i = m->order[m->read_to];
        if (m->obj[i] == MF_OBJ_CACHED)
            m->obj[i] = MF_OBJ_RECHECK;
    }
}

/* Starts w's walk over m from the trainer's position (m->mu held); done if it is at the end. */
static void walk_begin(struct walker *w, struct mf *m, uint32_t *idx)
{
    *w = (struct walker){.m = m, .idx = idx, .pos = mf_position(m), .rate = m->rate};
    w->from = future_position(m->fut);
    if (w->pos >= m->accesses) {
        m->state = MF_DONE;
        w->done = true;
        return;
    }
    if (++m->walk == 0) {
        memset(m->stamp, 0, (size_t)m->n * sizeof(*m->stamp));
        m->walk = 1;
    }
    block_set_clear(&m->charged);
    note_read(m, w->pos);
    w->read_to = m->read_to;
}

/* How far ahead of w's trainer its next position lies, in seconds at its read rate. */
static double walk_distance(const struct walker *w)
{
    const struct mf *m = w->m;
    uint64_t at = w->pos >= m->accesses ? future_length(m->fut)
                  : m->fstart != NULL   ? m->fstart[w->pos]
                                        : w->pos;
    return (double)(at > w->from ? at - w->from : 0) / w->rate;
}

/*
 * Looks at w's next item not counted yet this walk: charges it to *budget, and chooses it
 * for a fetch if it is neither cached nor on its way, while *slots last. Stops w at the end,
 * at an item that does not fit, or one the policy would not admit.
 */
static void walk_step(struct walker *w, uint64_t *budget, unsigned *slots)
{
    struct mf *m = w->m;
    while (w->pos < m->accesses &&
           (m->stamp[m->order[w->pos]] == m->walk || !mf_planned_here(m, w->pos)))
        w->pos++; /* counted already, or another gateway of the fleet warms it */
    if (w->pos >= m->accesses) {
        w->done = true;
        return;
    }
    uint32_t i = m->order[w->pos++];
    m->stamp[i] = m->walk;
    struct charge c = charge_of(m, i, *budget);
    if (c.bytes > *budget) {
        w->blocked = w->done = true;
        return;
    }
    *budget -= c.bytes;
    w->bytes += c.bytes;
    w->fits++;
    bool check =
        m->obj[i] == MF_OBJ_RECHECK || (m->obj[i] == MF_OBJ_CACHED && w->near++ < NEAR_CHECK);
    if (check && still_cached(m, i)) {
        note_charged(m, i, false);
        return;
    }
    note_charged(m, i, m->obj[i] == MF_OBJ_INFLIGHT);
    if (m->obj[i] != MF_OBJ_PENDING || c.on_its_way)
        return; /* on its way: a later walk finds it cached */
    bool refused = false;
    if (*slots == 0 || w->n == MAX_LAUNCH) {
        w->blocked = w->slots_full = w->done = true;
    } else if (wants_fetch(m, i, footprint(m, i), &refused)) {
        w->idx[w->n++] = i;
        (*slots)--;
        note_charged(m, i, true);
    }
    if (refused)
        w->blocked = w->done = true;
}

/* Ends w's walk: its choices go in flight, its progress and state are updated (m->mu held). */
static void walk_end(struct walker *w, uint64_t budget_left)
{
    struct mf *m = w->m;
    if (m->state == MF_DONE)
        return;
    for (unsigned k = 0; k < w->n; k++)
        m->obj[w->idx[k]] = MF_OBJ_INFLIGHT;
    m->inflight += w->n;
    m->fits = w->slots_full ? estimate_fits(m, w->fits, w->bytes, budget_left) : w->fits;
    atomic_store(&m->blocked, w->blocked);
    if (w->n > 0 && m->first_fetch.tv_sec == 0)
        clock_gettime(CLOCK_MONOTONIC, &m->first_fetch);
    m->state = w->n > 0 || m->inflight > 0 ? MF_WARMING : MF_WARM;
}

/* The walker whose next item is needed soonest, in time at the jobs' rates; NULL when all
 * are done. */
static struct walker *soonest(struct walker *w, size_t n)
{
    struct walker *best = NULL;
    double best_at = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i].done)
            continue;
        double at = walk_distance(&w[i]);
        if (best == NULL || at < best_at) {
            best = &w[i];
            best_at = at;
        }
    }
    return best;
}

/* The jobs' rates for ordering: unknown ones at the mean of the known, or all alike. */
static void fill_rates(struct walker *w, size_t n)
{
    double known = 0;
    size_t n_known = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i].rate > 0) {
            known += w[i].rate;
            n_known++;
        }
    for (size_t i = 0; i < n; i++)
        if (w[i].rate <= 0)
            w[i].rate = n_known ? known / (double)n_known : 1.0;
}

/*
 * One walk over the jobs together (their mu held): each step looks at the item needed
 * soonest over all of them, in time at their read rates, so the window and the prefetch slots
 * go to what is read first, whichever job reads it; a job warming up takes no more than its
 * share of what comes next.
 */
static void walk_jobs(struct walker *w, size_t n, uint64_t budget, unsigned slots)
{
    fill_rates(w, n);
    struct walker *next;
    while ((next = soonest(w, n)) != NULL) {
        walk_step(next, &budget, &slots);
        if (next->slots_full)
            for (size_t i = 0; i < n; i++)
                if (!w[i].done)
                    w[i].blocked = w[i].slots_full = w[i].done = true;
    }
    for (size_t i = 0; i < n; i++)
        walk_end(&w[i], budget);
}

/* ---- listing a prefix -------------------------------------------------------- */

static void fail_listing(struct mf *m, const char *fmt, const char *detail)
{
    char msg[API_ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), fmt, detail);
    sc_warn("manifest %s: %s", m->id, msg);
    pthread_mutex_lock(&m->mu);
    m->state = MF_FAILED;
    free(m->error);
    m->error = strdup(msg);
    pthread_mutex_unlock(&m->mu);
}

/* Keeps a page's keys (m->mu held); their sizes are matched to indices once sorted. */
static sc_code take_page(struct mf *m, const struct s3_list_page *page, struct api_err *err)
{
    uint64_t *grown = realloc(m->list_sizes, (m->n_listed + page->n + 1) * sizeof(*grown));
    if (grown == NULL)
        return SC_ENOMEM;
    m->list_sizes = grown;
    for (size_t i = 0; i < page->n; i++) {
        const struct s3_list_entry *e = &page->entries[i];
        sc_code rc = plan_dataset_append(m->plan, e->key, strlen(e->key), err);
        if (rc != SC_OK)
            return rc;
        m->list_sizes[m->n_listed++] = e->size;
    }
    return SC_OK;
}

/* Fetches the next page of a prefix manifest; the last one makes the dataset known. */
static void list_step(struct mf *m)
{
    struct mf_registry *r = m->reg;
    const struct plan_params *pp = plan_params(m->plan);
    struct s3_list_page page;
    struct api_err err = {0};
    sc_code rc = up_list_page(r->cfg.up, pp->bucket, pp->prefix, m->list_token, &page);
    if (rc != SC_OK || page.status != 200) {
        char detail[160];
        snprintf(detail, sizeof(detail), "%s (HTTP %ld)",
                 page.error_code ? page.error_code : sc_strerror(rc), page.status);
        fail_listing(m, "listing the prefix failed: %s", detail);
        s3_list_page_free(&page);
        return;
    }
    pthread_mutex_lock(&r->reg_mu); /* the plan changes: nobody compares it meanwhile */
    pthread_mutex_lock(&m->mu);
    rc = m->state == MF_LISTING ? take_page(m, &page, &err) : SC_ECANCELED;
    free(m->list_token);
    m->list_token = page.truncated && page.next_token ? strdup(page.next_token) : NULL;
    if (rc == SC_OK && m->list_token == NULL && page.truncated)
        rc = SC_ENOMEM;
    if (rc == SC_OK && !page.truncated)
        rc = plan_dataset_finish(m->plan, &err);
    pthread_mutex_unlock(&m->mu);
    if (rc == SC_OK && !page.truncated)
        rc = mf_activate(m, &err);
    pthread_mutex_unlock(&r->reg_mu);
    s3_list_page_free(&page);
    if (rc != SC_OK && rc != SC_ECANCELED)
        fail_listing(m, "%s", err.code != API_OK ? err.message : sc_strerror(rc));
}

/* ---- the thread -------------------------------------------------------------- */

/* Takes a reference on every manifest, newest last, so walks go oldest first. */
static struct mf **snapshot(struct mf_registry *r, size_t *n)
{
    pthread_rwlock_rdlock(&r->list_lock);
    size_t count = 0;
    for (struct mf *m = r->list; m; m = m->next)
        count++;
    struct mf **all = calloc(count ? count : 1, sizeof(*all));
    *n = 0;
    if (all)
        for (struct mf *m = r->list; m; m = m->next) {
            mf_ref(m);
            all[count - ++*n] = m;
        }
    pthread_rwlock_unlock(&r->list_lock);
    return all;
}

static bool walks(const struct mf *m)
{
    return m->state == MF_WARMING || m->state == MF_WARM;
}

/* Lists a page of each prefix manifest, then walks every job that prefetches, together. */
static void walk_all(struct mf_registry *r)
{
    size_t n = 0, k = 0;
    struct mf **all = snapshot(r, &n);
    struct walker *w = calloc(n ? n : 1, sizeof(*w));
    uint32_t *idx = malloc((n ? n : 1) * MAX_LAUNCH * sizeof(*idx));
    for (size_t i = 0; all && i < n; i++) {
        pthread_mutex_lock(&all[i]->mu);
        bool listing = all[i]->state == MF_LISTING;
        pthread_mutex_unlock(&all[i]->mu);
        if (listing)
            list_step(all[i]);
    }
    size_t walked = w != NULL && idx != NULL ? n : 0;
    for (size_t i = 0; i < walked; i++) {
        pthread_mutex_lock(&all[i]->mu);
        if (walks(all[i]))
            walk_begin(&w[k++], all[i], idx + i * MAX_LAUNCH);
        else
            pthread_mutex_unlock(&all[i]->mu);
    }
    unsigned busy = atomic_load(&r->inflight);
    walk_jobs(w, k, (uint64_t)((double)r->cfg.capacity * WALK_SHARE),
              busy < r->cfg.concurrency ? r->cfg.concurrency - busy : 0);
    for (size_t i = 0; i < k; i++)
        pthread_mutex_unlock(&w[i].m->mu);
    for (size_t i = 0; i < k; i++)
        launch(w[i].m, w[i].idx, w[i].n, w[i].read_to);
    for (size_t i = 0; all && i < n; i++)
        mf_unref(all[i]);
    free(idx);
    free(w);
    free(all);
}

/* Whether the fleet's live set changed since *generation and the last replan is at least
 * FLEET_REPLAN_MS old (a flapping peer does not rebuild plans on every walk). */
static bool fleet_moved(struct mf_registry *r, uint64_t *generation, double *replanned)
{
    if (r->cfg.fleet == NULL)
        return false;
    uint64_t now_gen = fleet_generation(r->cfg.fleet);
    double now = sc_now_seconds();
    if (now_gen == *generation || (now - *replanned) * 1000 < FLEET_REPLAN_MS)
        return false;
    *generation = now_gen;
    *replanned = now;
    return true;
}

void *mf_prefetch_main(void *arg)
{
    struct mf_registry *r = arg;
    double saved = sc_now_seconds(), measured = saved, replanned = 0;
    uint64_t generation = r->cfg.fleet != NULL ? fleet_generation(r->cfg.fleet) : 0;
    pthread_mutex_lock(&r->wake_mu);
    while (!r->stopping) {
        if (!r->kicked) {
            struct timespec until = sc_deadline_in_ns(WALK_PERIOD_MS * 1000000L);
            pthread_cond_timedwait(&r->wake, &r->wake_mu, &until);
        }
        r->kicked = false;
        if (r->stopping)
            break;
        pthread_mutex_unlock(&r->wake_mu);
        if (fleet_moved(r, &generation, &replanned))
            mf_replan_for_fleet(r);
        walk_all(r);
        if ((sc_now_seconds() - measured) * 1000 >= MF_RATE_MS) {
            mf_measure_rates(r);
            measured = sc_now_seconds();
        }
        if ((sc_now_seconds() - saved) * 1000 >= MF_STEP_SAVE_MS) {
            mf_save_steps(r);
            saved = sc_now_seconds();
        }
        pthread_mutex_lock(&r->wake_mu);
    }
    pthread_mutex_unlock(&r->wake_mu);
    mf_save_steps(r);
    return NULL;
}
