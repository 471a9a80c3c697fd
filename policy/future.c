/*
 * future.c - the known order of coming accesses (see future.h).
 *
 * Layout, built by future_seal():
 *   keys[pos]   the key planned at each position (8 bytes per access);
 *   ukeys[u]    each distinct key once, ascending, found by binary search;
 *   occ[]       every position, grouped by key and ascending within a key:
 *               key u's occurrences are occ[start[u] .. start[u + 1]);
 *   cursor[u]   index into occ of key u's first occurrence not yet consumed
 *               or skipped.
 * That is 12 bytes per access and 16 per distinct key; positions are 32-bit,
 * so a plan holds at most FUTURE_MAX_LENGTH accesses.
 *
 * Why one cursor per key suffices: an access consumes the key's earliest
 * occurrence that is neither consumed nor skipped, and an occurrence is
 * skipped once it lies more than `slack` positions behind the position,
 * i.e. when occ + slack < position. The position only grows, so each
 * key's consumed and skipped occurrences always form a prefix of its list;
 * the cursor moves forward only, lazily past skipped ones, and the work of
 * all calls together is bounded by the plan's length.
 *
 * keys, ukeys, occ and start never change after sealing and are read without
 * a lock (future_key_at, future_contains); cursor and the position change
 * under the mutex.
 */
#include "future.h"

#include "../common/hash.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MIN_KEYS 1024u
#define NO_KEY   UINT32_MAX

struct future {
    atomic_uint refs;
    bool sealed;
    uint64_t *keys; /* position -> khash */
    uint64_t n;     /* accesses appended */
    uint64_t cap;   /* allocated keys */
    uint64_t *ukeys;
    uint32_t n_ukeys;
    uint32_t *start;  /* n_ukeys + 1 entries */
    uint32_t *occ;    /* n entries */
    uint32_t *cursor; /* n_ukeys entries */
    pthread_mutex_t lock;
    uint64_t position; /* one past the furthest consumed occurrence */
    uint64_t slack;    /* positions an access may lag behind it (FUTURE_SLACK by default) */
};

sc_code future_new(future **out)
{
    future *f = calloc(1, sizeof(*f));
    *out = NULL;
    if (f == NULL)
        return SC_ENOMEM;
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        free(f);
        return SC_ENOMEM;
    }
    atomic_init(&f->refs, 1);
    f->slack = FUTURE_SLACK;
    *out = f;
    return SC_OK;
}

void future_slack_to(future *f, uint64_t slack)
{
    if (!f->sealed)
        f->slack = slack;
}

void future_start_at(future *f, uint64_t pos)
{
    pthread_mutex_lock(&f->lock);
    f->position = pos < f->n ? pos : f->n;
    pthread_mutex_unlock(&f->lock);
}

/* How many of key u's occurrences lie before pos (occ is ascending within a key). */
static uint32_t occurrences_before(const future *f, uint32_t u, uint64_t pos)
{
    uint32_t lo = f->start[u], hi = f->start[u + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (f->occ[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - f->start[u];
}

static uint32_t find_key(const future *f, uint64_t khash);

void future_start_like(future *f, future *old, uint64_t pos)
{
    if (!f->sealed || !old->sealed)
        return;
    pthread_mutex_lock(&old->lock);
    pthread_mutex_lock(&f->lock);
    f->position = pos < f->n ? pos : f->n;
    for (uint32_t u = 0; u < f->n_ukeys; u++) {
        uint32_t v = find_key(old, f->ukeys[u]);
        uint32_t read = v == NO_KEY ? 0 : old->cursor[v] - old->start[v];
        uint32_t before = occurrences_before(f, u, f->position);
        f->cursor[u] = f->start[u] + (read < before ? read : before);
    }
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_unlock(&old->lock);
}

sc_code future_append(future *f, uint64_t khash)
{
    if (f->sealed)
        return SC_EINVAL;
    if (f->n == FUTURE_MAX_LENGTH)
        return SC_ETOOBIG;
    if (f->n == f->cap) {
        uint64_t cap = f->cap ? f->cap * 2 : MIN_KEYS;
        if (cap > FUTURE_MAX_LENGTH)
            cap = FUTURE_MAX_LENGTH;
        uint64_t *keys = realloc(f->keys, cap * sizeof(*keys));
        if (keys == NULL)
            return SC_ENOMEM;
        f->keys = keys;
        f->cap = cap;
    }
    f->keys[f->n++] = khash;
    return SC_OK;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Returns the index of khash in ukeys, or NO_KEY. Needs no lock after sealing. */
static uint32_t find_key(const future *f, uint64_t khash)
{
    uint32_t lo = 0, hi = f->n_ukeys;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (f->ukeys[mid] < khash)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->n_ukeys && f->ukeys[lo] == khash ? lo : NO_KEY;
}

/* Fills ukeys with the distinct keys, ascending. */
static sc_code index_keys(future *f)
{
    uint64_t *u = malloc((f->n ? f->n : 1) * sizeof(*u));
    if (u == NULL)
        return SC_ENOMEM;
    if (f->n)
        memcpy(u, f->keys, f->n * sizeof(*u));
    qsort(u, f->n, sizeof(*u), by_u64);
    uint32_t m = 0;
    for (uint64_t i = 0; i < f->n; i++)
        if (m == 0 || u[m - 1] != u[i])
            u[m++] = u[i];
    uint64_t *shrunk = realloc(u, (m ? m : 1) * sizeof(*u));
    f->ukeys = shrunk != NULL ? shrunk : u;
    f->n_ukeys = m;
    return SC_OK;
}

/* Counts each key's occurrences into start, then lays them out in occ by position. */
static void index_occurrences(future *f)
{
    uint32_t m = f->n_ukeys;
    memset(f->cursor, 0, (size_t)m * sizeof(*f->cursor));
    for (uint64_t pos = 0; pos < f->n; pos++)
        f->cursor[find_key(f, f->keys[pos])]++;
    f->start[0] = 0;
    for (uint32_t u = 0; u < m; u++) {
        f->start[u + 1] = f->start[u] + f->cursor[u];
        f->cursor[u] = f->start[u];
    }
    for (uint64_t pos = 0; pos < f->n; pos++)
        f->occ[f->cursor[find_key(f, f->keys[pos])]++] = (uint32_t)pos;
    for (uint32_t u = 0; u < m; u++)
        f->cursor[u] = f->start[u];
}

sc_code future_seal(future *f)
{
    if (f->sealed)
        return SC_OK;
    sc_code rc = index_keys(f);
    if (rc != SC_OK)
        return rc;
    size_t m = f->n_ukeys;
    f->start = malloc((m + 1) * sizeof(*f->start));
    f->cursor = malloc((m ? m : 1) * sizeof(*f->cursor));
    f->occ = malloc((f->n ? f->n : 1) * sizeof(*f->occ));
    if (f->start == NULL || f->cursor == NULL || f->occ == NULL) {
        free(f->ukeys);
        free(f->start);
        free(f->cursor);
        free(f->occ);
        f->ukeys = NULL;
        f->start = f->cursor = f->occ = NULL;
        f->n_ukeys = 0;
        return SC_ENOMEM;
    }
    index_occurrences(f);
    f->sealed = true;
    return SC_OK;
}

void future_ref(future *f)
{
    atomic_fetch_add(&f->refs, 1);
}

void future_unref(future *f)
{
    if (f == NULL || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&f->lock);
    free(f->keys);
    free(f->ukeys);
    free(f->start);
    free(f->occ);
    free(f->cursor);
    free(f);
}

uint64_t future_length(const future *f)
{
    return f->n;
}

uint64_t future_key_at(const future *f, uint64_t pos)
{
    return f->keys[pos];
}

/*
 * Moves key u's cursor past the occurrences skipped at the current position
 * and returns the index of its first live occurrence (start[u + 1] if none).
 * Called with the lock held.
 */
static uint32_t live_cursor(future *f, uint32_t u)
{
    uint32_t c = f->cursor[u], end = f->start[u + 1];
    while (c < end && (uint64_t)f->occ[c] + f->slack < f->position)
        c++;
    f->cursor[u] = c;
    return c;
}

/* Whether an occurrence of key u was consumed within the last slack positions (the one
 * before the live cursor c is consumed, or skipped and so further behind). */
static bool consumed_lately(const future *f, uint32_t u, uint32_t c)
{
    return c > f->start[u] && (uint64_t)f->occ[c - 1] + f->slack > f->position;
}

/*
 * The next planned use of khash at or after the trainer's position (minus the slack) and
 * before limit, or FUTURE_NEVER; with consume, that use is also taken as happening now
 * (with once, not if one was taken lately).
 */
static uint64_t next_use(future *f, uint64_t khash, bool consume, uint64_t limit, bool once)
{
    if (!f->sealed)
        return FUTURE_NEVER;
    uint32_t u = find_key(f, khash);
    if (u == NO_KEY)
        return FUTURE_NEVER;
    uint64_t next = FUTURE_NEVER;
    pthread_mutex_lock(&f->lock);
    uint32_t c = live_cursor(f, u);
    if (c < f->start[u + 1] && f->occ[c] < limit && !(once && consumed_lately(f, u, c))) {
        next = f->occ[c];
        if (consume) {
            f->cursor[u] = c + 1;
            if (next + 1 > f->position)
                f->position = next + 1;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return next;
}

bool future_consume(future *f, uint64_t khash)
{
    return next_use(f, khash, true, FUTURE_NEVER, false) != FUTURE_NEVER;
}

uint64_t future_take(future *f, uint64_t khash, uint64_t limit, bool once)
{
    return next_use(f, khash, true, limit, once);
}

uint64_t future_position(future *f)
{
    pthread_mutex_lock(&f->lock);
    uint64_t pos = f->position;
    pthread_mutex_unlock(&f->lock);
    return pos;
}

uint64_t future_next_use(future *f, uint64_t khash)
{
    return next_use(f, khash, false, FUTURE_NEVER, false);
}

uint64_t future_next_use_block(future *f, uint64_t khash, uint32_t block)
{
    uint64_t whole = next_use(f, khash, false, FUTURE_NEVER, false);
    uint64_t part = next_use(f, sc_block_key_hash(khash, block), false, FUTURE_NEVER, false);
    return whole < part ? whole : part;
}

bool future_contains(const future *f, uint64_t khash)
{
    return f->sealed && find_key(f, khash) != NO_KEY;
}
