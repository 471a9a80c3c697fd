/*
 * bucket_stats.c - per-bucket read counters (see bucket_stats.h).
 *
 * An open-addressing table with linear probing. Rows are only ever added, and only
 * under add_lock, so a reader needs no lock: a slot whose ready flag is set (release
 * after its name was written) is final, and a slot without it ends the probe. A reader
 * that finds no row takes the lock, probes again and adds the row; once the table holds
 * GW_BUCKETS_MAX rows the full flag sends unknown buckets straight to "other".
 */
#include "bucket_stats.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"

#define LOAD(x)   atomic_load_explicit(&(x), memory_order_relaxed)
#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)

_Static_assert((GW_BUCKETS_SLOTS & (GW_BUCKETS_SLOTS - 1)) == 0, "slots: a power of two");
_Static_assert(GW_BUCKETS_SLOTS >= 2 * GW_BUCKETS_MAX, "slots: at most half full");

void gw_buckets_init(struct gw_buckets *b)
{
    memset(b, 0, sizeof(*b));
    pthread_mutex_init(&b->add_lock, NULL);
}

void gw_buckets_destroy(struct gw_buckets *b)
{
    pthread_mutex_destroy(&b->add_lock);
}

/* The name's hash; the length is returned too, to refuse names too long for a row. */
static uint32_t hash(const char *s, size_t *len)
{
    *len = strlen(s);
    return (uint32_t)sc_bytes_hash(s, *len);
}

/* The row of name, or NULL when it has none (yet); lock-free. */
static struct gw_bucket_slot *find(struct gw_buckets *b, const char *name, uint32_t h)
{
    for (uint32_t i = 0; i < GW_BUCKETS_SLOTS; i++) {
        struct gw_bucket_slot *s = &b->slot[(h + i) & (GW_BUCKETS_SLOTS - 1)];
        if (!atomic_load_explicit(&s->ready, memory_order_acquire))
            return NULL;
        if (strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

/* Adds a row for name unless it has one or the table is full; the row, or NULL. */
static struct gw_bucket_slot *add(struct gw_buckets *b, const char *name, size_t len, uint32_t h)
{
    struct gw_bucket_slot *s = NULL;
    pthread_mutex_lock(&b->add_lock);
    for (uint32_t i = 0; i < GW_BUCKETS_SLOTS; i++) {
        struct gw_bucket_slot *t = &b->slot[(h + i) & (GW_BUCKETS_SLOTS - 1)];
        if (atomic_load_explicit(&t->ready, memory_order_relaxed)) {
            if (strcmp(t->name, name) == 0) {
                s = t; /* another thread added it first */
                break;
            }
            continue;
        }
        if (b->used >= GW_BUCKETS_MAX)
            break;
        memcpy(t->name, name, len + 1);
        atomic_store_explicit(&t->ready, 1, memory_order_release);
        if (++b->used == GW_BUCKETS_MAX)
            atomic_store_explicit(&b->full, true, memory_order_release);
        s = t;
        break;
    }
    pthread_mutex_unlock(&b->add_lock);
    return s;
}

void gw_buckets_count(struct gw_buckets *b, const char *bucket, enum gw_read_result result,
                      uint64_t bytes)
{
    struct gw_bucket_slot *s = NULL;
    if (bucket != NULL) {
        size_t len;
        uint32_t h = hash(bucket, &len);
        if (len <= GW_BUCKET_NAME_MAX) {
            s = find(b, bucket, h);
            if (s == NULL && !atomic_load_explicit(&b->full, memory_order_acquire))
                s = add(b, bucket, len, h);
        }
    }
    struct gw_bucket_counts *n = s ? &s->n : &b->other;
    switch (result) {
    case GW_READ_HIT:
        ADD(n->hits, 1);
        break;
    case GW_READ_MISS:
        ADD(n->misses, 1);
        break;
    case GW_READ_BYPASS:
        ADD(n->bypasses, 1);
        break;
    }
    if (bytes)
        ADD(n->bytes, bytes);
}

/* ---- JSON ----------------------------------------------------------------------- */

struct row {
    const char *name;
    uint64_t hits, misses, bypasses, bytes;
};

static struct row snapshot(const char *name, struct gw_bucket_counts *n)
{
    return (struct row){name, LOAD(n->hits), LOAD(n->misses), LOAD(n->bypasses), LOAD(n->bytes)};
}

static int by_reads(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    uint64_t ra = a->hits + a->misses + a->bypasses, rb = b->hits + b->misses + b->bypasses;
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return strcmp(a->name, b->name);
}

static json_t *row_json(const struct row *r)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "hits", (json_int_t)r->hits, "misses",
                          (json_int_t)r->misses, "bypasses", (json_int_t)r->bypasses, "bytes",
                          (json_int_t)r->bytes);
    if (o != NULL && r->name != NULL && json_object_set_new(o, "bucket", json_string(r->name))) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

char *gw_buckets_json(struct gw_buckets *b)
{
    struct row rows[GW_BUCKETS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < GW_BUCKETS_SLOTS && n < GW_BUCKETS_MAX; i++) {
        struct gw_bucket_slot *s = &b->slot[i];
        if (atomic_load_explicit(&s->ready, memory_order_acquire))
            rows[n++] = snapshot(s->name, &s->n);
    }
    qsort(rows, n, sizeof(rows[0]), by_reads);
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++)
        if (json_array_append_new(a, row_json(&rows[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    struct row other = snapshot(NULL, &b->other);
    json_t *o = json_object();
    if (o == NULL) {
        json_decref(a);
        return NULL;
    }
    /* json_object_set_new() takes its value even when it fails, and refuses NULL. */
    int bad = json_object_set_new(o, "buckets", a);
    bad |= json_object_set_new(o, "other", row_json(&other));
    bad |= json_object_set_new(o, "max_buckets", json_integer(GW_BUCKETS_MAX));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}
