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
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "manifest_int.h"

static const char *const state_names[] = {
    [MF_LISTING] = "listing", [MF_WARMING] = "warming", [MF_WARM] = "warm",
    [MF_PLANNED] = "planned", [MF_DONE] = "done",       [MF_CANCELED] = "canceled",
    [MF_FAILED] = "failed",   [MF_JOINED] = "joined",   [MF_PARSING] = "parsing",
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
    mf_unref(m->job);
    free(m->own);
    future_unref(m->fut);
    plan_free(m->plan);
    free(m->order);
    free(m->fstart);
    free(m->starts);
    free(m->obj);
    free(m->size);
    free(m->stamp);
    free(m->khash);
    free(m->used_bits);
    block_set_free(&m->charged);
    free(m->error);
    free(m->body);
    free(m->list_token);
    free(m->list_sizes);
    free(m->reports);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/*
 * Makes a job of m, whose plan is ready: its item state, and its order and future built at
 * step m->resume. With `listed`, m is in the registry already (a prefix whose listing ended):
 * the future is attached under the list lock; otherwise nobody sees m yet. reg_mu held.
 */
static sc_code activate(struct mf *m, bool listed, struct api_err *err)
{
    struct mf_registry *r = m->reg;
    struct mf_built b;
    pthread_mutex_lock(&m->mu);
    m->n = plan_objects(m->plan);
    m->obj = calloc(m->n ? m->n : 1, sizeof(*m->obj));
    m->size = calloc(m->n ? m->n : 1, sizeof(*m->size));
    m->stamp = calloc(m->n ? m->n : 1, sizeof(*m->stamp));
    sc_code rc = m->obj && m->size && m->stamp ? SC_OK : SC_ENOMEM;
    if (rc == SC_OK) {
        mf_take_listed_sizes(m);
        mf_replay_decisions(r, m->id, m->plan);
    }
    pthread_mutex_unlock(&m->mu);
    if (rc == SC_OK)
        rc = mf_build_into(m, m->resume, &b, err);
    if (rc != SC_OK)
        return rc;
    if (listed)
        pthread_rwlock_wrlock(&r->list_lock);
    pthread_mutex_lock(&m->mu);
    mf_built_attach(m, &b);
    mf_recount(m);
    m->state = plan_params(m->plan)->prefetch ? MF_WARMING : MF_PLANNED;
    pthread_mutex_unlock(&m->mu);
    if (listed) {
        mf_refresh_hint(r);
        pthread_rwlock_unlock(&r->list_lock);
    }
    return SC_OK;
}

sc_code mf_activate(struct mf *m, struct api_err *err)
{
    return activate(m, true, err);
}

/*
 * Builds job j again for its plan's current ranks and decisions, at step j->resume, and
 * swaps it in: the build runs without locks, the swap under the list lock. reg_mu held.
 */
static sc_code rebuild(struct mf_registry *r, struct mf *j, struct api_err *err)
{
    struct mf_built b, was;
    sc_code rc = mf_build_into(j, j->resume, &b, err);
    if (rc != SC_OK)
        return rc;
    pthread_rwlock_wrlock(&r->list_lock);
    pthread_mutex_lock(&j->mu);
    was = mf_built_detach(j);
    mf_built_attach(j, &b);
    mf_recount(j);
    j->rate = 0; /* positions of the new plan: measured anew */
    j->rate_n = 0;
    pthread_mutex_unlock(&j->mu);
    mf_refresh_hint(r);
    pthread_rwlock_unlock(&r->list_lock);
    mf_built_free(&was);
    return SC_OK;
}

/* Notes in j->resume the step its trainers reached, so a rebuild starts there (list lock). */
static void keep_step(struct mf *j, uint64_t resume)
{
    uint64_t step = j->fut != NULL ? mf_step(j) : 0;
    step = step > resume ? step : resume;
    j->resume = step > j->resume ? step : j->resume;
}

/*
 * Makes job j read for these ranks (at least step `resume`): the plan's ranks change at once,
 * its order and future are built again after. On error j is unchanged. reg_mu held.
 */
static sc_code set_ranks(struct mf_registry *r, struct mf *j, const uint32_t *ranks, uint32_t n,
                         uint64_t resume, struct api_err *err)
{
    const struct plan_params *pp = plan_params(j->plan);
    uint32_t old_n = pp->n_ranks, *old = malloc((size_t)old_n * sizeof(*old));
    if (old == NULL)
        return SC_ENOMEM;
    memcpy(old, pp->ranks, (size_t)old_n * sizeof(*old));
    pthread_rwlock_wrlock(&r->list_lock);
    pthread_mutex_lock(&j->mu);
    keep_step(j, resume);
    sc_code rc = plan_set_ranks(j->plan, ranks, n, err);
    pthread_mutex_unlock(&j->mu);
    pthread_rwlock_unlock(&r->list_lock);
    if (rc == SC_OK && j->fut != NULL && (rc = rebuild(r, j, err)) != SC_OK) {
        pthread_rwlock_wrlock(&r->list_lock);
        plan_set_ranks(j->plan, old, old_n, NULL); /* they held before */
        pthread_rwlock_unlock(&r->list_lock);
    }
    free(old);
    return rc;
}

/*
 * On a fleet each job's future names only what this gateway owns (build.c); when the live
 * set of peers changes, ownership moved, so every job is built again at its trainers' step.
 * Prefetch thread; takes reg_mu.
 */
void mf_replan_for_fleet(struct mf_registry *r)
{
    pthread_mutex_lock(&r->reg_mu);
    pthread_rwlock_rdlock(&r->list_lock);
    size_t n = 0;
    for (struct mf *m = r->list; m; m = m->next)
        n++;
    struct mf **jobs = calloc(n ? n : 1, sizeof(*jobs));
    size_t k = 0;
    for (struct mf *m = r->list; jobs && m; m = m->next)
        if (m->job == NULL && mf_active(m)) {
            mf_ref(m);
            jobs[k++] = m;
        }
    pthread_rwlock_unlock(&r->list_lock);
    for (size_t i = 0; i < k; i++) {
        struct api_err err = {0};
        pthread_rwlock_wrlock(&r->list_lock);
        keep_step(jobs[i], 0);
        pthread_rwlock_unlock(&r->list_lock);
        if (rebuild(r, jobs[i], &err) != SC_OK)
            sc_log(SC_LOG_WARN, "manifest %s: not planned again for the fleet's new members: %s",
                   jobs[i]->id, err.message);
        mf_unref(jobs[i]);
    }
    free(jobs);
    pthread_mutex_unlock(&r->reg_mu);
}

/* ---- the registry ------------------------------------------------------------ */

void mf_kick(struct mf_registry *r)
{
    pthread_mutex_lock(&r->wake_mu);
    r->kicked = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->wake_mu);
}

void mf_kick_registrar(struct mf_registry *r)
{
    pthread_mutex_lock(&r->wake_mu);
    r->parse_pending = true;
    pthread_cond_signal(&r->parse_wake);
    pthread_mutex_unlock(&r->wake_mu);
}

/* Fills futs (if not NULL) with the active jobs' futures, oldest first; returns how many. */
static size_t active_futures(struct mf_registry *r, future **futs)
{
    size_t n = 0;
    for (struct mf *m = r->list; m; m = m->next)
        n += mf_active(m);
    size_t i = n;
    for (struct mf *m = r->list; futs && m; m = m->next)
        if (mf_active(m)) {
            futs[--i] = m->fut;
            m->slot = i;
        }
    return n;
}

static bool same_futures(const future_set *set, future *const *futs, size_t n)
{
    if (set == NULL || future_set_count(set) != n)
        return set == NULL && n == 0;
    for (size_t i = 0; i < n; i++)
        if (future_set_at(set, i) != futs[i])
            return false;
    return true;
}

void mf_refresh_hint(struct mf_registry *r)
{
    size_t n = active_futures(r, NULL);
    future **futs = malloc((n ? n : 1) * sizeof(*futs));
    future_set *set = NULL;
    if (futs == NULL || (active_futures(r, futs), same_futures(r->hinted, futs, n)) ||
        (n > 0 && future_set_new(futs, n, &set) != SC_OK)) {
        if (futs == NULL || !same_futures(r->hinted, futs, n))
            sc_warn("out of memory: the policy keeps the manifests' plans it had");
        free(futs);
        return;
    }
    free(futs);
    for (struct mf *m = r->list; set && m; m = m->next)
        if (mf_active(m))
            future_set_rate(set, m->slot, m->rate);
    struct policy_hint h = {.kind = POLICY_HINT_FUTURE, .futures = set};
    if (store_hint(r->cfg.st, &h) != SC_OK)
        sc_warn("the policy could not take the manifests' plans");
    future_set_unref(r->hinted);
    r->hinted = set;
}

/* Job m's read rate from its position samples: over the window, at least a trickle once it
 * has moved (it stopped: its next reads are far off), 0 before. */
static double window_rate(const struct mf *m)
{
    unsigned newest = (m->rate_n - 1) % MF_RATE_WINDOW;
    unsigned oldest = m->rate_n > MF_RATE_WINDOW ? m->rate_n % MF_RATE_WINDOW : 0;
    double secs = m->rate_t[newest] - m->rate_t[oldest];
    uint64_t moved = m->rate_pos[newest] - m->rate_pos[oldest];
    if (secs <= 0 || (moved == 0 && m->rate == 0))
        return m->rate;
    double rate = (double)moved / secs;
    return rate > 1e-3 ? rate : 1e-3;
}

void mf_measure_rates(struct mf_registry *r)
{
    double now = sc_now_seconds();
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next) {
        if (!mf_active(m))
            continue;
        uint64_t pos = future_position(m->fut);
        /* Not started yet: its window begins at its last still sample, not at its plan's
         * registration (a trainer may load for a while before its first read). */
        if (m->rate == 0 && m->rate_n > 0 && m->rate_pos[(m->rate_n - 1) % MF_RATE_WINDOW] == pos)
            m->rate_n = 0;
        unsigned at = m->rate_n % MF_RATE_WINDOW;
        m->rate_t[at] = now;
        m->rate_pos[at] = pos;
        m->rate_n++;
        m->rate = window_rate(m);
        if (r->hinted && m->slot < future_set_count(r->hinted) &&
            future_set_at(r->hinted, m->slot) == m->fut)
            future_set_rate(r->hinted, m->slot, m->rate);
    }
    pthread_rwlock_unlock(&r->list_lock);
}

static struct mf *find(struct mf_registry *r, const char *id)
{
    for (struct mf *m = r->list; m; m = m->next)
        if (strcmp(m->id, id) == 0)
            return m;
    return NULL;
}

/* Puts m at the head of the list (list_lock held for writing). */
static void link_first(struct mf_registry *r, struct mf *m)
{
    m->next = r->list;
    r->list = m;
    atomic_store_explicit(&r->listed, true, memory_order_release);
}

void mf_unlink(struct mf_registry *r, struct mf *m)
{
    struct mf **pp = &r->list;
    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (*pp)
        *pp = m->next;
    atomic_store_explicit(&r->listed, r->list != NULL, memory_order_release);
}

/* A job plan p may join, or NULL; SC_EINVAL when p names a job it cannot join (reg_mu). */
static sc_code find_job(struct mf_registry *r, const struct plan *p, struct mf **job,
                        struct api_err *err)
{
    *job = NULL;
    for (struct mf *j = r->list; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        enum mf_state st = j->state;
        pthread_mutex_unlock(&j->mu);
        if (j->job != NULL || j->plan == NULL || st == MF_CANCELED || st == MF_FAILED ||
            st == MF_DONE)
            continue;
        bool same;
        sc_code rc = plan_same_job(j->plan, p, &same, err);
        if (rc != SC_OK || same) {
            *job = same ? j : NULL;
            return rc;
        }
    }
    return SC_OK;
}

/* The job's ranks and n more, in a new array of *total. */
static uint32_t *ranks_with(const struct plan *job, const uint32_t *more, uint32_t n,
                            uint32_t *total)
{
    const struct plan_params *pp = plan_params(job);
    uint32_t *all = malloc(((size_t)pp->n_ranks + n) * sizeof(*all));
    if (all == NULL)
        return NULL;
    memcpy(all, pp->ranks, (size_t)pp->n_ranks * sizeof(*all));
    memcpy(all + pp->n_ranks, more, (size_t)n * sizeof(*all));
    *total = pp->n_ranks + n;
    return all;
}

/* Registration m brings its ranks to job j (at least at step `resume`). reg_mu held. */
static sc_code join(struct mf_registry *r, struct mf *j, struct mf *m, uint64_t resume,
                    struct api_err *err)
{
    uint32_t n;
    uint32_t *all = ranks_with(j->plan, m->own, m->n_own, &n);
    sc_code rc = all != NULL ? set_ranks(r, j, all, n, resume, err) : SC_ENOMEM;
    free(all);
    if (rc != SC_OK)
        return rc;
    mf_ref(j);
    m->job = j;
    m->state = MF_JOINED;
    mf_log_decisions_of(r, j, m->id);
    return SC_OK;
}

struct mf *mf_new_registration(struct mf_registry *r, const char *id)
{
    struct mf *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    atomic_init(&m->refs, 1);
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->reg = r;
    m->created = time(NULL);
    m->state = MF_LISTING;
    return m;
}

sc_code mf_register_plan(struct mf_registry *r, struct mf *m, struct plan *p, uint64_t resume,
                         struct api_err *err)
{
    const struct plan_params *pp = plan_params(p);
    m->own = malloc((size_t)pp->n_ranks * sizeof(*m->own));
    if (m->own == NULL)
        return SC_ENOMEM;
    memcpy(m->own, pp->ranks, (size_t)pp->n_ranks * sizeof(*m->own));
    m->n_own = pp->n_ranks;
    struct mf *j;
    sc_code rc = find_job(r, p, &j, err); /* the list changes only under reg_mu */
    if (rc == SC_OK && j != NULL && (rc = join(r, j, m, resume, err)) == SC_OK)
        plan_free(p);
    if (rc == SC_OK && j == NULL) {
        m->plan = p;
        m->resume = resume;
        if (plan_ready(p))
            rc = activate(m, false, err);
    }
    if (rc != SC_OK)
        return rc;
    pthread_rwlock_wrlock(&r->list_lock);
    link_first(r, m);
    mf_refresh_hint(r);
    pthread_rwlock_unlock(&r->list_lock);
    return SC_OK;
}

/* Bytes of the bodies waiting for the registrar (list_lock held). */
static uint64_t unparsed_bytes(const struct mf_registry *r)
{
    uint64_t sum = 0;
    for (const struct mf *m = r->list; m; m = m->next)
        sum += m->state == MF_PARSING ? m->body_len : 0;
    return sum;
}

/* A registration whose body the registrar parses: listed at once, in state "parsing". */
static sc_code add_later(struct mf_registry *r, const char *id, const char *body, size_t len,
                         uint64_t resume, struct mf **out)
{
    struct mf *m = mf_new_registration(r, id);
    char *copy = malloc(len ? len : 1);
    if (m == NULL || copy == NULL) {
        free(copy);
        mf_unref(m);
        return SC_ENOMEM;
    }
    memcpy(copy, body, len);
    m->body = copy;
    m->body_len = len;
    m->resume = resume;
    m->state = MF_PARSING;
    pthread_rwlock_wrlock(&r->list_lock);
    link_first(r, m);
    pthread_rwlock_unlock(&r->list_lock);
    mf_kick_registrar(r);
    *out = m;
    return SC_OK;
}

/*
 * Registers a body under id (reg_mu held): parsed here, or by the registrar when larger than
 * MF_PARSE_INLINE_MAX. Its job starts at step `resume` unless further.
 */
static sc_code add(struct mf_registry *r, const char *id, const char *body, size_t len,
                   uint64_t resume, struct mf **out, struct api_err *err)
{
    if (len > MF_PARSE_INLINE_MAX)
        return add_later(r, id, body, len, resume, out);
    struct plan *p = NULL;
    sc_code rc = plan_parse(body, len, NULL, &p, err);
    if (rc != SC_OK)
        return rc;
    struct mf *m = mf_new_registration(r, id);
    rc = m != NULL ? mf_register_plan(r, m, p, resume, err) : SC_ENOMEM;
    if (rc != SC_OK) {
        if (m == NULL || m->plan != p)
            plan_free(p);
        mf_unref(m);
        return rc;
    }
    *out = m;
    return SC_OK;
}

static json_t *registration_progress(struct mf *m, bool failures);

/*
 * A new registration's id: "m" and the registry's counter; on a fleet followed by "-" and 6 hex
 * digits of this gateway's URL, so that ids are unique across the fleet (a registration has
 * the same id on every gateway).
 */
static void new_id(mf_registry *r, char id[MF_ID_MAX])
{
    snprintf(id, MF_ID_MAX, "m%llu%s", (unsigned long long)r->next_id, r->id_tag);
}

/* An id a peer may register under: "m", digits, and "-" with 6 lowercase hex digits (new_id);
 * nothing that could name another file of the cache directory. */
static bool id_acceptable(const char *id)
{
    size_t digits = strspn(id + (id[0] == 'm'), "0123456789");
    const char *tag = id + 1 + digits;
    return id[0] == 'm' && digits > 0 && digits <= 12 && strlen(tag) == 7 && tag[0] == '-' &&
           strspn(tag + 1, "0123456789abcdef") == 6;
}

/* Registers body under a new id (given NULL) or under the id a peer gave it. */
static sc_code create(mf_registry *r, const char *given, const char *body, size_t len,
                      json_t **reply, struct api_err *err)
{
    char id[MF_ID_MAX];
    struct mf *m = NULL;
    err->code = API_OK;
    if (given != NULL)
        atomic_fetch_add(&r->registered_peer, 1); /* registered or not: a storm would show */
    pthread_mutex_lock(&r->reg_mu);
    if (given == NULL)
        new_id(r, id);
    else
        snprintf(id, sizeof(id), "%s", given);
    uint64_t waiting = unparsed_bytes(r);
    sc_code rc = SC_EBUSY;
    if (given != NULL && find(r, id) != NULL)
        api_err_set(err, API_INVALID_FIELD, "manifest %s is registered here already", id);
    else if (given != NULL && mf_withdrawn_here(r, id))
        api_err_set(err, API_INVALID_FIELD, "manifest %s was withdrawn through this gateway",
                    id); /* its origin has not learnt it yet: fleet_reconcile.c */
    else if (len > MF_PARSE_INLINE_MAX && waiting + len > MF_PARSE_PENDING_MAX)
        api_err_set(err, API_BUSY,
                    "%llu bytes of manifests wait to be parsed already; retry when they are",
                    (unsigned long long)waiting); /* memory held for a client: bounded */
    else
        rc = add(r, id, body, len, 0, &m, err);
    if (rc == SC_EBUSY && err->code == API_INVALID_FIELD)
        rc = SC_EINVAL;
    if (rc == SC_OK) {
        if (given == NULL)
            mf_save_next_id(r, ++r->next_id);
        if (given == NULL)
            atomic_fetch_add(&r->registered_client, 1);
        mf_persist(r, id, body, len);
        pthread_rwlock_rdlock(&r->list_lock);
        *reply = registration_progress(m, false);
        pthread_rwlock_unlock(&r->list_lock);
        if (*reply == NULL)
            rc = SC_ENOMEM; /* the manifest stands; only the reply failed */
    }
    pthread_mutex_unlock(&r->reg_mu);
    if (m != NULL)
        mf_kick(r);
    if (m != NULL && given == NULL)
        mf_forward(r, id, body, len); /* a peer's copy is never forwarded again */
    return rc;
}

sc_code mf_create(mf_registry *r, const char *body, size_t len, json_t **reply, struct api_err *err)
{
    return create(r, NULL, body, len, reply, err);
}

sc_code mf_create_forwarded(mf_registry *r, const char *id, const char *body, size_t len,
                            json_t **reply, struct api_err *err)
{
    if (!id_acceptable(id)) {
        err->code = API_OK;
        api_err_set(err, API_INVALID_FIELD, "a forwarded manifest's id must be m<n>-<6 hex>");
        return SC_EINVAL;
    }
    return create(r, id, body, len, reply, err);
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
    if (m->plan == NULL) /* parsing, or its body failed to parse */
        return json_pack("{s:s, s:s, s:I, s:o}", "id", m->id, "state", state_names[m->state],
                         "created_at", (json_int_t)m->created, "error",
                         m->error ? json_string(m->error) : json_null());
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

/*
 * The progress of registration m: its job's, with "id" m's and "job" the job's id (list_lock
 * held), and "objects" (what the job's ranks read; null while listing).
 */
static json_t *registration_progress(struct mf *m, bool failures)
{
    struct mf *j = mf_job_of(m);
    pthread_mutex_lock(&j->mu);
    json_t *o = progress_locked(j, failures);
    json_t *sampling = o ? json_object_get(o, "sampling") : NULL;
    if (sampling != NULL && m->n_own == 1) /* the registration's rank; "ranks" the job's */
        json_object_set_new(sampling, "rank", json_integer(m->own[0]));
    if (o != NULL) {
        json_object_set_new(o, "id", json_string(m->id));
        json_object_set_new(o, "job", json_string(j->id));
        json_object_set_new(o, "objects", j->fut ? json_integer(j->used) : json_null());
        json_t *whole = mf_fleet_progress(j);
        if (whole != NULL)
            json_object_set_new(o, "fleet", whole);
    }
    pthread_mutex_unlock(&j->mu);
    return o;
}

json_t *mf_progress(mf_registry *r, const char *id)
{
    json_t *o = NULL;
    pthread_rwlock_rdlock(&r->list_lock);
    struct mf *m = find(r, id);
    if (m)
        o = registration_progress(m, true);
    pthread_rwlock_unlock(&r->list_lock);
    return o;
}

bool mf_known(mf_registry *r, const char *id)
{
    pthread_rwlock_rdlock(&r->list_lock);
    bool known = find(r, id) != NULL;
    pthread_rwlock_unlock(&r->list_lock);
    return known;
}

json_t *mf_list(mf_registry *r)
{
    json_t *a = json_array();
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; a && m; m = m->next) {
        if (m->job != NULL)
            continue; /* its job is listed */
        json_t *o = registration_progress(m, false);
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
    *t = (struct mf_totals){.prefetch_inflight = atomic_load(&r->inflight),
                            .registered_client = atomic_load(&r->registered_client),
                            .registered_peer = atomic_load(&r->registered_peer)};
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next) {
        pthread_mutex_lock(&m->mu);
        if (m->state <= MF_PLANNED) { /* jobs: a joined registration is MF_JOINED */
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

/* The rank asked for, MF_RANK_OWN resolved: the registration's one rank, else all. */
static uint32_t rank_asked(const struct mf *m, uint32_t rank)
{
    if (rank != MF_RANK_OWN)
        return rank;
    return m->n_own == 1 ? m->own[0] : PLAN_ALL_RANKS;
}

/*
 * Bit idx of bits set when item idx of job m is cached; one the prefetcher counted cached but
 * that was evicted since is noted pending again, so its walk fetches it before the trainer
 * gets there (it re-checks only the items next to the trainer and those the trainer read). m->mu
 * taken a stretch at a time, so fills that complete meanwhile do not wait for the whole dataset.
 */
static void mark_cached_items(struct mf *m, uint8_t *bits)
{
    uint64_t size;
    for (uint32_t from = 0; from < m->n; from += 4096) {
        pthread_mutex_lock(&m->mu);
        for (uint32_t idx = from; idx < m->n && idx - from < 4096; idx++) {
            if (mf_item_cached(m, idx, &size)) {
                bits[idx / 8] |= (uint8_t)(1u << (idx % 8));
            } else if (mf_obj_counted(m->obj[idx])) {
                m->obj[idx] = MF_OBJ_PENDING;
                m->cached--;
                m->bytes_cached -= mf_item_bytes(m, idx);
            }
        }
        pthread_mutex_unlock(&m->mu);
    }
}

/*
 * Decides epoch e of a cache-aware job the first time its order is asked: its ranks' shares
 * read what is cached now first. The decision is logged for each of the job's registrations
 * and the job's order and future are built again (without the list lock: reads go on).
 */
static void decide_epoch(struct mf_registry *r, const char *id, uint32_t e)
{
    pthread_mutex_lock(&r->reg_mu);
    struct mf *m = find(r, id), *j = m ? mf_job_of(m) : NULL;
    struct plan *p = j ? j->plan : NULL;
    if (p == NULL || !plan_params(p)->cache_aware || j->fut == NULL || e >= plan_epochs(p) ||
        plan_epoch_decision(p, e) != NULL) {
        pthread_mutex_unlock(&r->reg_mu);
        return;
    }
    size_t len = ((size_t)j->n + 7) / 8;
    uint8_t *bits = calloc(len ? len : 1, 1);
    struct api_err err = {0};
    sc_code rc = SC_ENOMEM;
    if (bits != NULL) {
        mark_cached_items(j, bits);
        pthread_rwlock_wrlock(&r->list_lock);
        keep_step(j, 0);
        rc = plan_decide_epoch(p, e, bits);
        pthread_rwlock_unlock(&r->list_lock);
    }
    for (struct mf *x = r->list; rc == SC_OK && x; x = x->next)
        if (x->n_own > 0 && mf_job_of(x) == j)
            mf_log_decision(r, x->id, e, bits, len);
    bool decided = rc == SC_OK;
    if (decided)
        rc = rebuild(r, j, &err);
    if (rc != SC_OK) /* decided: the trainers get the decided order, the policy plans by the
                        seeded one until the next rebuild */
        sc_warn("manifest %s: epoch %u: %s; %s", j->id, e, err.code ? err.message : "out of memory",
                decided ? "the policy plans by its seeded order" : "its seeded order stands");
    pthread_mutex_unlock(&r->reg_mu);
    free(bits);
}

json_t *mf_order(mf_registry *r, const char *id, uint32_t e, uint32_t rank, struct api_err *err)
{
    json_t *o = NULL;
    err->code = API_OK;
    decide_epoch(r, id, e);
    pthread_rwlock_rdlock(&r->list_lock);
    struct mf *m = find(r, id);
    const struct plan *p = m ? mf_job_of(m)->plan : NULL;
    rank = m ? rank_asked(m, rank) : rank;
    bool ready = false;
    if (p != NULL) { /* a listing ends under the job's mu */
        pthread_mutex_lock(&mf_job_of(m)->mu);
        ready = plan_ready(p);
        pthread_mutex_unlock(&mf_job_of(m)->mu);
    }
    if (m == NULL)
        api_err_set(err, API_NOT_FOUND, "no manifest \"%s\"", id);
    else if (p == NULL)
        api_err_set(err, API_INVALID_FIELD, "manifest %s is %s", id,
                    m->state == MF_PARSING ? "still being parsed" : "not a plan (see its error)");
    else if (!ready)
        api_err_set(err, API_INVALID_FIELD, "manifest %s is still listing its prefix", id);
    else if (e >= plan_epochs(p))
        api_err_set(err, API_INVALID_FIELD, "epoch %u is out of range: the plan has %u epochs", e,
                    plan_epochs(p));
    else if (rank != PLAN_ALL_RANKS && !plan_has_rank(p, rank))
        api_err_set(err, API_INVALID_FIELD, "rank %u does not read in the job of manifest %s", rank,
                    id);
    else
        o = plan_order_json(p, id, e, rank);
    pthread_rwlock_unlock(&r->list_lock);
    return o;
}

/* The job's ranks without those of registration m, in a new array of *left (both sorted). */
static uint32_t *ranks_without(const struct mf *j, const struct mf *m, uint32_t *left)
{
    const struct plan_params *pp = plan_params(j->plan);
    uint32_t *rest = malloc(((size_t)pp->n_ranks + 1) * sizeof(*rest)), k = 0;
    *left = 0;
    for (uint32_t i = 0; rest && i < pp->n_ranks; i++) {
        while (k < m->n_own && m->own[k] < pp->ranks[i])
            k++;
        if (k == m->n_own || m->own[k] != pp->ranks[i])
            rest[(*left)++] = pp->ranks[i];
    }
    return rest;
}

/*
 * Registration m leaves its job j: its ranks go (the job built again for the others), and
 * the job ends with its last rank. reg_mu held. Returns whether j ended.
 */
static bool withdraw(struct mf_registry *r, struct mf *j, struct mf *m)
{
    uint32_t left;
    uint32_t *rest = ranks_without(j, m, &left);
    struct api_err err = {0};
    bool ended = rest != NULL && left == 0;
    if (ended) {
        pthread_mutex_lock(&j->mu);
        j->state = MF_CANCELED;
        pthread_mutex_unlock(&j->mu);
    } else if (rest == NULL || set_ranks(r, j, rest, left, 0, &err) != SC_OK) {
        sc_warn("manifest %s: the ranks of %s stay planned: %s", j->id, m->id,
                err.code ? err.message : "out of memory");
    }
    free(rest);
    pthread_rwlock_wrlock(&r->list_lock); /* the list's readers (progress, saved steps) */
    m->n_own = 0;
    pthread_rwlock_unlock(&r->list_lock);
    return ended;
}

/* Cancels a registration whose body is not parsed, or failed to be (reg_mu held). */
static json_t *cancel_unparsed(struct mf_registry *r, struct mf *m)
{
    pthread_rwlock_wrlock(&r->list_lock);
    pthread_mutex_lock(&m->mu);
    if (m->state == MF_PARSING)
        m->state = MF_CANCELED; /* the registrar drops its plan */
    json_t *o = progress_locked(m, true);
    pthread_mutex_unlock(&m->mu);
    mf_unlink(r, m);
    pthread_rwlock_unlock(&r->list_lock);
    mf_forget(r, m->id);
    mf_unref(m);
    return o;
}

static json_t *cancel(mf_registry *r, const char *id)
{
    json_t *o = NULL;
    pthread_mutex_lock(&r->reg_mu);
    struct mf *m = find(r, id);
    if (m != NULL && m->plan == NULL && m->job == NULL) { /* parsing, or failed to */
        o = cancel_unparsed(r, m);
        pthread_mutex_unlock(&r->reg_mu);
        return o;
    }
    if (m != NULL && m->n_own == 0)
        m = NULL; /* a job whose own registration left already */
    struct mf *j = m ? mf_job_of(m) : NULL;
    bool ended = m != NULL && withdraw(r, j, m);
    if (m) {
        pthread_rwlock_wrlock(&r->list_lock);
        o = registration_progress(m, true);
        if (m != j)
            mf_unlink(r, m);
        if (ended)
            mf_unlink(r, j);
        mf_refresh_hint(r);
        pthread_rwlock_unlock(&r->list_lock);
        mf_forget(r, id);
    }
    pthread_mutex_unlock(&r->reg_mu);
    if (m != NULL && m != j)
        mf_unref(m);
    if (ended)
        mf_unref(j); /* fetches in flight keep it until they end */
    return o;
}

/* Whether registration id was posted to another gateway of the fleet (its tag is not ours). */
static bool posted_elsewhere(const struct mf_registry *r, const char *id)
{
    const char *tag = strchr(id, '-');
    return r->cfg.fleet != NULL && tag != NULL && strcmp(tag, r->id_tag) != 0;
}

json_t *mf_cancel(mf_registry *r, const char *id)
{
    json_t *o = cancel(r, id);
    if (o != NULL && posted_elsewhere(r, id))
        mf_keep_withdrawal(r, id); /* until its origin has it: it may be down now */
    if (o != NULL)
        mf_forward(r, id, NULL, 0);
    return o;
}

json_t *mf_cancel_forwarded(mf_registry *r, const char *id)
{
    return cancel(r, id);
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
        if (b == first && mf_starts_an_item(m, khash, range->first)) {
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
    if (range != NULL && plan_has_ranges(m->plan) && range->first / bs <= UINT32_MAX &&
        consume_blocks(m, khash, range))
        return true;
    return future_take(m->fut, khash, FUTURE_NEVER, range != NULL) != FUTURE_NEVER;
}

void mf_observe(mf_registry *r, const char *bucket, const char *key, const struct mf_read *range)
{
    uint64_t khash = 0;
    if (!atomic_load_explicit(&r->listed, memory_order_acquire))
        return; /* as if it had locked just before a registration that is under way */
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
    char id[MF_ID_MAX];
    snprintf(id, sizeof(id), "%.*s", (int)(strlen(name) - 5), name);
    size_t len;
    char *body = mf_read_kept(r, id, &len);
    struct api_err err = {0};
    struct mf *m = NULL;
    if (body && add(r, id, body, len, mf_read_step(r, id), &m, &err) == SC_OK)
        sc_info("manifest %s registered again from %s/%s", id, r->cfg.dir, name);
    else
        sc_warn("cannot register manifest %s/%s again: %s", r->cfg.dir, name,
                err.code ? err.message : "unreadable");
    unsigned long long n = strtoull(id + 1, NULL, 10);
    if (n >= r->next_id)
        r->next_id = n + 1;
    free(body);
}

/* Withdraws here the copies the fleet's mending found withdrawn at their origin. */
static void mend(struct mf_registry *r)
{
    struct mf_ids gone = mf_reconcile(r);
    for (size_t i = 0; i < gone.n; i++)
        json_decref(cancel(r, gone.v[i])); /* here only: the others learn it as this one did */
    free(gone.v);
}

/*
 * The fleet thread (docs/fleet.md, "Manifests on a fleet"): sends the registrations and
 * withdrawals made here to the live peers, polls the peers' progress of each job
 * (fleet_sync.c), and mends what peers missed (fleet_reconcile.c). The only thread of the
 * registry that waits for a peer.
 */
static void *fleet_main(void *arg)
{
    struct mf_registry *r = arg;
    int64_t poll_at = sc_now_ms(), mend_at = poll_at + MF_RECONCILE_MS;
    while (!mf_stopping(r)) {
        struct mf_forward *f = mf_next_forward(r, poll_at);
        if (f != NULL) {
            mf_send_forward(r, f);
            continue; /* forwards first: a peer learns the plan before it is asked about it */
        }
        if (sc_now_ms() < poll_at)
            continue;
        mf_poll_peers(r);
        if (sc_now_ms() >= mend_at) {
            mend(r);
            mend_at = sc_now_ms() + MF_RECONCILE_MS;
        }
        poll_at = sc_now_ms() + MF_FLEET_POLL_MS;
    }
    return NULL;
}

/*
 * The registry's first id: the counter kept in the cache directory; without one, 1 alone, and
 * on a fleet the time in seconds, so that a gateway that lost its cache directory never gives
 * an id its peers may still hold from before (fleet_reconcile.c compares ids).
 */
static uint64_t first_id(const struct mf_registry *r)
{
    uint64_t kept = mf_read_next_id(r);
    if (kept > 0)
        return kept;
    return r->cfg.fleet != NULL ? (uint64_t)time(NULL) : 1;
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
    pthread_mutex_lock(&r->reg_mu);
    for (size_t i = 0; i < n; i++) {
        reload_one(r, names[i]);
        free(names[i]);
    }
    pthread_mutex_unlock(&r->reg_mu);
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
    r->next_id = first_id(r);
    if (cfg->fleet != NULL)
        mf_fleet_tag(fleet_self(cfg->fleet), r->id_tag);
    pthread_mutex_init(&r->reg_mu, NULL);
    pthread_rwlock_init(&r->list_lock, NULL);
    pthread_mutex_init(&r->wake_mu, NULL);
    sc_cond_init_monotonic(&r->wake);
    pthread_cond_init(&r->parse_wake, NULL);
    sc_cond_init_monotonic(&r->fleet_wake);
    sc_code rc = cfg->dir ? reload(r) : SC_OK;
    if (rc == SC_OK && pthread_create(&r->registrar, NULL, mf_registrar_main, r) != 0)
        rc = SC_EIO;
    r->registrar_running = rc == SC_OK;
    if (rc == SC_OK && pthread_create(&r->thread, NULL, mf_prefetch_main, r) != 0)
        rc = SC_EIO;
    r->running = rc == SC_OK;
    bool with_peers = cfg->fleet != NULL && cfg->up != NULL; /* the thread talks through up */
    if (rc == SC_OK && with_peers && pthread_create(&r->fleet_thread, NULL, fleet_main, r) != 0)
        rc = SC_EIO;
    r->fleet_running = rc == SC_OK && with_peers;
    if (rc != SC_OK) {
        mf_registry_free(r);
        return rc;
    }
    *out = r;
    return SC_OK;
}

void mf_registry_stop(mf_registry *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->wake_mu);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_cond_signal(&r->parse_wake);
    pthread_cond_signal(&r->fleet_wake);
    pthread_mutex_unlock(&r->wake_mu);
    if (r->fleet_running)
        pthread_join(r->fleet_thread, NULL); /* after the peer call it waits for, if any */
    r->fleet_running = false;
    if (r->registrar_running)
        pthread_join(r->registrar, NULL); /* after the body it parses, if any */
    r->registrar_running = false;
    if (r->running)
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
    future_set_unref(r->hinted);
    mf_forward_free_all(r);
    mf_reconcile_free(r);
    pthread_cond_destroy(&r->fleet_wake);
    pthread_cond_destroy(&r->parse_wake);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->wake_mu);
    pthread_rwlock_destroy(&r->list_lock);
    pthread_mutex_destroy(&r->reg_mu);
    free(r->dir);
    free(r);
}
