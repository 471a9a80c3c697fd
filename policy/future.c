/*
 * future.c - the known order of coming accesses (see future.h).
 *
 * While building, hashes[pos] is the key planned at each position (8 bytes per access).
 * future_seal() turns it into, per access:
 *   kidx[pos]   the index in ukeys of the key planned at pos (4 bytes);
 *   occ[]       every position, grouped by key and ascending within a key: key u's
 *               occurrences are occ[start_of(u) .. start_of(u + 1)) (4 bytes);
 *   taken       one bit per entry of occ: that occurrence was consumed (1/8 byte);
 * and per distinct key:
 *   ukeys[u]    each distinct key once, ascending, found by binary search (8 bytes);
 *   start[u]    where key u's occurrences begin in occ (4 bytes), or nothing when every
 *               key occurs equally often (one epoch, or the same count in each): then
 *               start_of(u) is u times that count.
 * Positions are 32-bit, so a plan holds at most FUTURE_MAX_LENGTH accesses.
 *
 * Which occurrence an access consumes: the key's earliest occurrence that is neither
 * consumed nor skipped, and an occurrence is skipped once it lies more than `slack`
 * positions behind the position, i.e. when occ + slack < position. The position only
 * grows, so the skipped occurrences of a key are a prefix of its list (found by binary
 * search), and the consumed ones after them another: an occurrence is only ever consumed
 * when every one before it is consumed or skipped. So the live occurrence is the first
 * after both, found without a cursor per key.
 *
 * kidx, ukeys, occ and start never change after sealing and are read without a lock
 * (future_key_at, future_contains); taken and the position change under the mutex.
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
    uint64_t *hashes; /* before sealing: position -> khash; NULL after */
    uint64_t n;       /* accesses appended */
    uint64_t cap;     /* allocated hashes */
    uint32_t *kidx;   /* after sealing: position -> index in ukeys */
    uint64_t *ukeys;
    uint32_t n_ukeys;
    uint32_t *start; /* n_ukeys + 1 entries, or NULL: every key occurs per_key times */
    uint32_t per_key;
    uint32_t *occ;  /* n entries */
    uint8_t *taken; /* n bits, by index in occ */
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
        uint64_t *hashes = realloc(f->hashes, cap * sizeof(*hashes));
        if (hashes == NULL)
            return SC_ENOMEM;
        f->hashes = hashes;
        f->cap = cap;
    }
    f->hashes[f->n++] = khash;
    return SC_OK;
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

/* Where key u's occurrences begin in occ (u == n_ukeys: the end). */
static uint32_t start_of(const future *f, uint32_t u)
{
    return f->start != NULL ? f->start[u] : u * f->per_key;
}

/* ---- sealing ---- */

static void insertion_sort(uint64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t x = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/*
 * Sorts a[0..n) ascending by the byte at shift and those below it, in place: an MSD radix
 * sort (American flag sort), no memory beside the array. Hashes spread evenly, so a few
 * levels leave buckets small enough for insertion sort.
 */
static void radix_sort(uint64_t *a, size_t n, unsigned shift)
{
    if (n <= 32) { /* before the counters: most calls are this small */
        insertion_sort(a, n);
        return;
    }
    size_t count[256] = {0}, next[256], end[256];
    for (size_t i = 0; i < n; i++)
        count[(a[i] >> shift) & 0xff]++;
    for (size_t b = 0, at = 0; b < 256; b++) {
        next[b] = at;
        at += count[b];
        end[b] = at;
    }
    for (size_t b = 0; b < 256; b++) {
        while (next[b] < end[b]) { /* put a[next[b]] where it belongs, and so on around */
            uint64_t x = a[next[b]];
            size_t d = (x >> shift) & 0xff;
            while (d != b) {
                uint64_t t = a[next[d]];
                a[next[d]++] = x;
                x = t;
                d = (x >> shift) & 0xff;
            }
            a[next[b]++] = x;
        }
    }
    for (size_t b = 0, at = 0; shift > 0 && b < 256; at += count[b], b++)
        if (count[b] > 1)
            radix_sort(a + at, count[b], shift - 8);
}

/* Fills ukeys with the distinct keys, ascending. */
static sc_code index_keys(future *f)
{
    uint64_t *u = malloc((f->n ? f->n : 1) * sizeof(*u));
    if (u == NULL)
        return SC_ENOMEM;
    if (f->n)
        memcpy(u, f->hashes, f->n * sizeof(*u));
    radix_sort(u, f->n, 56);
    uint32_t m = 0;
    for (uint64_t i = 0; i < f->n; i++)
        if (m == 0 || u[m - 1] != u[i])
            u[m++] = u[i];
    uint64_t *shrunk = realloc(u, (m ? m : 1) * sizeof(*u));
    f->ukeys = shrunk != NULL ? shrunk : u;
    f->n_ukeys = m;
    return SC_OK;
}

/*
 * A directory of the sorted ukeys by their top bits, so that each position's key is found
 * in a step or two rather than a binary search: keys with top bits b are
 * ukeys[first[b] .. first[b + 1]). Only while sealing.
 */
struct key_dir {
    uint32_t *first;
    unsigned bits;
};

static sc_code key_dir_build(const future *f, struct key_dir *d)
{
    d->bits = 0;
    while (d->bits < 24 && (2ull << d->bits) <= f->n_ukeys)
        d->bits++; /* about one key per bucket */
    size_t buckets = (size_t)1 << d->bits;
    d->first = malloc((buckets + 1) * sizeof(*d->first));
    if (d->first == NULL)
        return SC_ENOMEM;
    uint32_t u = 0;
    for (size_t b = 0; b < buckets; b++) {
        while (u < f->n_ukeys && (d->bits == 0 ? 0 : f->ukeys[u] >> (64 - d->bits)) < b)
            u++;
        d->first[b] = u;
    }
    d->first[buckets] = f->n_ukeys;
    return SC_OK;
}

/* The index in ukeys of khash, which is there. */
static uint32_t key_dir_find(const future *f, const struct key_dir *d, uint64_t khash)
{
    size_t b = d->bits == 0 ? 0 : (size_t)(khash >> (64 - d->bits));
    uint32_t u = d->first[b];
    while (f->ukeys[u] != khash)
        u++;
    return u;
}

/*
 * Turns hashes into kidx in place: kidx[pos] takes the bytes hashes[pos / 2] held, which
 * were read before (memcpy: the two arrays share the block), then gives back the rest.
 */
static sc_code index_positions(future *f)
{
    struct key_dir d;
    unsigned char *block = (unsigned char *)f->hashes;
    if (key_dir_build(f, &d) != SC_OK)
        return SC_ENOMEM;
    for (uint64_t pos = 0; pos < f->n; pos++) {
        uint64_t h;
        memcpy(&h, block + pos * sizeof(h), sizeof(h));
        uint32_t u = key_dir_find(f, &d, h);
        memcpy(block + pos * sizeof(u), &u, sizeof(u));
    }
    free(d.first);
    uint32_t *kidx = realloc(block, (f->n ? f->n : 1) * sizeof(*kidx));
    f->kidx = kidx != NULL ? kidx : (uint32_t *)(void *)block;
    f->hashes = NULL;
    f->cap = 0;
    return SC_OK;
}

/*
 * Counts each key's occurrences, keeps start only when they differ, then lays the
 * positions out in occ, key by key. @param count n_ukeys counters, zeroed.
 */
static sc_code index_occurrences(future *f, uint32_t *count)
{
    uint32_t m = f->n_ukeys;
    bool uniform = true;
    for (uint64_t pos = 0; pos < f->n; pos++)
        count[f->kidx[pos]]++;
    for (uint32_t u = 1; u < m && uniform; u++)
        uniform = count[u] == count[0];
    f->per_key = m ? count[0] : 0;
    if (!uniform) {
        f->start = malloc(((size_t)m + 1) * sizeof(*f->start));
        if (f->start == NULL)
            return SC_ENOMEM;
        f->start[0] = 0;
        for (uint32_t u = 0; u < m; u++)
            f->start[u + 1] = f->start[u] + count[u];
    }
    for (uint32_t u = 0; u < m; u++)
        count[u] = start_of(f, u); /* the next free entry of key u */
    for (uint64_t pos = 0; pos < f->n; pos++)
        f->occ[count[f->kidx[pos]]++] = (uint32_t)pos;
    return SC_OK;
}

static void free_index(future *f)
{
    free(f->kidx);
    free(f->ukeys);
    free(f->start);
    free(f->occ);
    free(f->taken);
    f->kidx = f->start = f->occ = NULL;
    f->ukeys = NULL;
    f->taken = NULL;
    f->n_ukeys = 0;
}

sc_code future_seal(future *f)
{
    if (f->sealed)
        return SC_OK;
    uint64_t *hashes = f->n ? realloc(f->hashes, f->n * sizeof(*hashes)) : NULL;
    if (hashes != NULL) { /* the slack of the last doubling back, before the copies */
        f->hashes = hashes;
        f->cap = f->n;
    }
    sc_code rc = index_keys(f);
    if (rc == SC_OK)
        rc = index_positions(f);
    if (rc != SC_OK) { /* still unsealed, hashes as they were */
        free(f->ukeys);
        f->ukeys = NULL;
        f->n_ukeys = 0;
        return rc;
    }
    uint32_t *count = calloc(f->n_ukeys ? f->n_ukeys : 1, sizeof(*count));
    f->occ = malloc((f->n ? f->n : 1) * sizeof(*f->occ));
    f->taken = calloc(f->n / 8 + 1, 1);
    rc = count && f->occ && f->taken ? index_occurrences(f, count) : SC_ENOMEM;
    free(count);
    if (rc != SC_OK) { /* the hashes are gone: an empty plan */
        free_index(f);
        f->n = 0;
    }
    f->sealed = true;
    return rc;
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
    free(f->hashes);
    free_index(f);
    free(f);
}

uint64_t future_length(const future *f)
{
    return f->n;
}

uint64_t future_key_at(const future *f, uint64_t pos)
{
    return f->sealed ? f->ukeys[f->kidx[pos]] : f->hashes[pos];
}

static bool is_taken(const future *f, uint32_t c)
{
    return f->taken[c / 8] & (1u << (c % 8));
}

/*
 * The index in occ of key u's first live occurrence, neither skipped nor consumed (see the
 * top), or start_of(u + 1) if none. Called with the lock held.
 */
static uint32_t live_occurrence(const future *f, uint32_t u)
{
    uint32_t lo = start_of(f, u), hi = start_of(f, u + 1), end = hi;
    while (lo < hi) { /* the first not skipped */
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uint64_t)f->occ[mid] + f->slack < f->position)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < end && is_taken(f, lo))
        lo++;
    return lo;
}

/* Whether an occurrence of key u was consumed within the last slack positions (the one
 * before the live occurrence c is consumed, or skipped and so further behind). */
static bool consumed_lately(const future *f, uint32_t u, uint32_t c)
{
    return c > start_of(f, u) && (uint64_t)f->occ[c - 1] + f->slack > f->position;
}

/* How many of key u's occurrences lie before pos (occ is ascending within a key). */
static uint32_t occurrences_before(const future *f, uint32_t u, uint64_t pos)
{
    uint32_t first = start_of(f, u), lo = first, hi = start_of(f, u + 1);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (f->occ[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - first;
}

void future_start_like(future *f, future *old, uint64_t pos)
{
    if (!f->sealed || !old->sealed)
        return;
    pthread_mutex_lock(&old->lock);
    pthread_mutex_lock(&f->lock);
    f->position = pos < f->n ? pos : f->n;
    for (uint32_t u = 0; u < f->n_ukeys; u++) {
        uint32_t v = find_key(old, f->ukeys[u]);
        /* old's consumed or skipped occurrences of the key: those before its live one */
        uint32_t read = v == NO_KEY ? 0 : live_occurrence(old, v) - start_of(old, v);
        uint32_t before = occurrences_before(f, u, f->position);
        uint32_t first = start_of(f, u);
        for (uint32_t c = first; c < first + (read < before ? read : before); c++)
            f->taken[c / 8] |= (uint8_t)(1u << (c % 8)); /* a prefix: see the top */
    }
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_unlock(&old->lock);
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
    uint32_t c = live_occurrence(f, u);
    if (c < start_of(f, u + 1) && f->occ[c] < limit && !(once && consumed_lately(f, u, c))) {
        next = f->occ[c];
        if (consume) {
            f->taken[c / 8] |= (uint8_t)(1u << (c % 8));
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
