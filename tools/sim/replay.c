/*
 * replay.c - runs a trace through one real policy against an emulated store:
 * a byte capacity, object ids never reused, and the store's order of policy
 * calls (admit, pick_victim and on_remove until the object fits, on_insert;
 * on_hit for hits). A planned trace becomes the policy's future and each
 * access is consumed from it first, as the gateway does; minibatch losses
 * become importance score hints.
 */
#include "sim.h"

#include <stdlib.h>

#include "../../policy/future_set.h"

/* The emulated store. */
struct emu {
    const struct sim_trace *t;
    const struct policy_ops *ops;
    void *pol;
    uint64_t capacity;
    uint64_t used;
    uint64_t next_id; /* ids start at 1; 0 means "not cached" */
    uint64_t *cached; /* per object: its id while cached, else 0 */
    uint32_t *owner;  /* per id: the object it names */
    uint64_t *khash;  /* per object: sc_key_hash */
    double *scores;   /* one minibatch's scores */
};

static void emu_free(struct emu *e)
{
    if (e->pol != NULL)
        e->ops->free(e->pol);
    free(e->cached);
    free(e->owner);
    free(e->khash);
    free(e->scores);
}

static sc_code emu_init(struct emu *e, const struct sim_trace *t, const struct policy_ops *ops,
                        uint64_t capacity)
{
    *e = (struct emu){.t = t, .ops = ops, .capacity = capacity, .next_id = 1};
    size_t n = t->n_objs ? t->n_objs : 1;
    e->cached = calloc(n, sizeof(*e->cached));
    e->owner = malloc((t->n_acc + 1) * sizeof(*e->owner));
    e->khash = malloc(n * sizeof(*e->khash));
    e->scores = malloc((t->batch ? t->batch : 1) * sizeof(*e->scores));
    if (e->cached == NULL || e->owner == NULL || e->khash == NULL || e->scores == NULL)
        return SC_ENOMEM;
    for (uint32_t i = 0; i < t->n_objs; i++)
        e->khash[i] = sc_key_hash(SIM_BUCKET, t->objs[i].key);
    return ops->init(capacity, &e->pol);
}

/* Builds the trace's future and hands it to the policy; *out keeps our reference. */
static sc_code give_future(struct emu *e, future **out)
{
    future *f = NULL;
    sc_code rc = future_new(&f);
    for (uint64_t i = 0; i < e->t->n_acc && rc == SC_OK; i++)
        rc = future_append(f, e->khash[e->t->acc[i]]);
    if (rc == SC_OK)
        rc = future_seal(f);
    future_set *set = NULL;
    if (rc == SC_OK && e->ops->hint != NULL)
        rc = future_set_new(&f, 1, &set);
    if (rc == SC_OK && e->ops->hint != NULL) {
        struct policy_hint h = {.kind = POLICY_HINT_FUTURE, .futures = set};
        rc = e->ops->hint(e->pol, &h);
    }
    future_set_unref(set);
    if (rc != SC_OK) {
        future_unref(f);
        f = NULL;
    }
    *out = f;
    return rc;
}

/* Evicts until size more bytes fit; *fits is false when even an empty cache is too small. */
static sc_code make_room(struct emu *e, uint64_t size, bool *fits)
{
    while (e->used + size > e->capacity) {
        uint64_t id = 0;
        if (!e->ops->pick_victim(e->pol, &id)) {
            if (e->used != 0)
                return SC_EINVAL; /* objects are cached but the policy knows none */
            break;
        }
        if (id == 0 || id >= e->next_id || e->cached[e->owner[id]] != id)
            return SC_EINVAL; /* the policy named something not cached */
        uint32_t victim = e->owner[id];
        e->ops->on_remove(e->pol, id);
        e->cached[victim] = 0;
        e->used -= e->t->objs[victim].size;
    }
    *fits = e->used + size <= e->capacity;
    return SC_OK;
}

/* A miss on object o: admit, make room, insert, as store_put does. */
static sc_code miss(struct emu *e, uint32_t o)
{
    const struct sim_object *so = &e->t->objs[o];
    struct policy_obj obj = {
        .id = e->next_id, .size = so->size, .bucket = SIM_BUCKET, .key = so->key};
    if (e->ops->admit != NULL && !e->ops->admit(e->pol, &obj))
        return SC_OK;
    bool fits = false;
    sc_code rc = make_room(e, so->size, &fits);
    if (rc != SC_OK || !fits)
        return rc;
    rc = e->ops->on_insert(e->pol, &obj);
    if (rc != SC_OK)
        return rc;
    e->owner[e->next_id] = o;
    e->cached[o] = e->next_id++;
    e->used += so->size;
    return SC_OK;
}

/* Posts the minibatch ending before access end as score hints. */
static sc_code post_scores(struct emu *e, uint64_t end)
{
    uint32_t b = e->t->batch;
    if (e->ops->hint == NULL)
        return SC_OK;
    sc_code rc = policy_rank_scores(&e->t->loss[end - b], b, e->scores);
    for (uint32_t i = 0; i < b && rc == SC_OK; i++) {
        struct policy_hint h = {.kind = POLICY_HINT_SCORE,
                                .khash = e->khash[e->t->acc[end - b + i]],
                                .score = e->scores[i]};
        rc = e->ops->hint(e->pol, &h);
    }
    return rc;
}

sc_code sim_replay(const struct sim_trace *t, const struct policy_ops *ops, uint64_t capacity,
                   struct sim_result *out)
{
    struct emu e;
    future *f = NULL;
    *out = (struct sim_result){0};
    sc_code rc = emu_init(&e, t, ops, capacity);
    if (rc == SC_OK && t->planned)
        rc = give_future(&e, &f);
    for (uint64_t i = 0; i < t->n_acc && rc == SC_OK; i++) {
        uint32_t o = t->acc[i];
        if (f != NULL)
            future_consume(f, e.khash[o]);
        out->accesses++;
        out->bytes += t->objs[o].size;
        if (e.cached[o] != 0) {
            out->hits++;
            out->hit_bytes += t->objs[o].size;
            ops->on_hit(e.pol, e.cached[o]);
        } else {
            rc = miss(&e, o);
        }
        if (e.used > out->max_used)
            out->max_used = e.used;
        if (rc == SC_OK && t->loss != NULL && t->batch != 0 && (i + 1) % t->batch == 0)
            rc = post_scores(&e, i + 1);
    }
    future_unref(f);
    emu_free(&e);
    return rc;
}
