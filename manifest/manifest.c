/*
 * manifest.c - the manifest registry and its API (see manifest.h); the walk
 * ahead of the trainer is in prefetch.c.
 *
 * A manifest's dataset is known at once for "keys" and "epochs" and after
 * the listing for "prefix"; then mf_activate() builds what the prefetcher and
 * the policy use: the future (the plan's keys by sc_key_hash, in order),
 * the order as dataset indices, and one state and size per object. The
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
    free(m->obj);
    free(m->size);
    free(m->stamp);
    free(m->error);
    free(m->list_token);
    free(m->list_sizes);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void mf_mark_cached(struct mf *m, uint32_t idx, uint64_t size)
{
    if (m->obj[idx] == MF_OBJ_CACHED)
        return;
    if (m->size[idx] == 0 && size > 0) {
        m->size[idx] = size;
        m->bytes_known += size;
        m->known_count++;
    }
    m->obj[idx] = MF_OBJ_CACHED;
    m->cached++;
    m->bytes_cached += m->size[idx];
}

/* Sizes from the listing, where the sorted dataset still matches the listing order. */
static void take_listed_sizes(struct mf *m)
{
    if (m->list_sizes == NULL || m->n_listed != m->n)
        return;
    for (uint32_t i = 0; i < m->n; i++) {
        m->size[i] = m->list_sizes[i];
        m->bytes_known += m->size[i];
        m->known_count++;
    }
    free(m->list_sizes);
    m->list_sizes = NULL;
}

/* The plan's keys by sc_key_hash, in access order; counts the objects this rank reads. */
static sc_code build_future(struct mf *m)
{
    future *f = NULL;
    uint64_t *hashes = NULL;
    sc_code rc = plan_key_hashes(m->plan, &hashes);
    if (rc == SC_OK)
        rc = future_new(&f);
    for (uint64_t pos = 0; rc == SC_OK && pos < m->accesses; pos++) {
        uint32_t idx = m->order[pos];
        if (m->stamp[idx] == 0) {
            m->stamp[idx] = 1;
            m->used++;
        }
        rc = future_append(f, hashes[idx]);
    }
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

sc_code mf_activate(struct mf *m)
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
    rc = build_future(m);
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
        rc = mf_activate(m);
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
    for (size_t i = 0; a && i < m->n_failures; i++)
        json_array_append_new(
            a, json_pack("{s:s, s:s}", "key", m->failures[i].key, "reason", m->failures[i].reason));
    return a;
}

/* The progress object (m->mu held). */
static json_t *progress_locked(struct mf *m, bool failures)
{
    json_t *o = plan_describe_json(m->plan);
    if (o == NULL)
        return NULL;
    bool known = m->fut != NULL;
    uint64_t pos = known ? future_position(m->fut) : 0;
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

void mf_observe(mf_registry *r, const char *bucket, const char *key)
{
    uint64_t khash = 0;
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next) {
        if (m->fut == NULL || strcmp(plan_params(m->plan)->bucket, bucket) != 0)
            continue;
        if (khash == 0)
            khash = sc_key_hash(bucket, key);
        if (future_consume(m->fut, khash) && atomic_exchange(&m->blocked, false))
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
