/*
 * relay.c - an upstream response shared by its readers (see relay.h).
 *
 * The buffer holds the bytes [base, end) of the body. A keep-all relay never
 * moves base; a windowed relay drops what every cursor has passed before it
 * appends, and pauses the producer when the window is full.
 */
#include "relay.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct relay {
    pthread_mutex_t mu;
    atomic_int refs;
    size_t window; /* 0: keep everything */
    bool keep_all;
    bool hold_tail; /* the body's last byte waits for a good end */
    bool have_head;
    bool finished;
    sc_code result;
    bool paused; /* the producer was refused and waits for resume */
    struct relay_head head;
    char *buf;
    size_t cap;
    uint64_t base, end;
    up_req *upstream; /* borrowed: its owner outlives the relay's readers */
    struct relay_waiter *waiters;
    struct relay_cursor *cursors;
};

relay *relay_new(size_t window)
{
    relay *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    atomic_init(&r->refs, 1);
    r->window = window;
    return r;
}

void relay_ref(relay *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void relay_unref(relay *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    http_headers_free(r->head.headers, r->head.n_headers);
    free(r->buf);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static up_req *resume_if_room(relay *r);

void relay_set_upstream(relay *r, up_req *req)
{
    pthread_mutex_lock(&r->mu);
    r->upstream = req;
    up_req *resume = resume_if_room(r); /* a reader made room before the transfer was known */
    pthread_mutex_unlock(&r->mu);
    if (resume)
        up_req_resume(resume);
}

void relay_hold_tail(relay *r)
{
    pthread_mutex_lock(&r->mu);
    r->hold_tail = true;
    pthread_mutex_unlock(&r->mu);
}

/* Parks w (relay locked). */
static void park(relay *r, struct relay_waiter *w)
{
    if (w->parked)
        return;
    w->parked = true;
    w->next = r->waiters;
    r->waiters = w;
    w->park(w->arg);
}

/* Takes the waiter list out (relay locked); wake_all() then wakes them unlocked. */
static struct relay_waiter *take_waiters(relay *r)
{
    struct relay_waiter *list = r->waiters;
    r->waiters = NULL;
    for (struct relay_waiter *w = list; w; w = w->next)
        w->parked = false;
    return list;
}

static void wake_all(struct relay_waiter *list)
{
    while (list) {
        struct relay_waiter *next = list->next;
        list->wake(list->arg);
        list = next;
    }
}

void relay_unpark(relay *r, struct relay_waiter *w)
{
    pthread_mutex_lock(&r->mu);
    for (struct relay_waiter **pp = &r->waiters; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            w->parked = false;
            break;
        }
    pthread_mutex_unlock(&r->mu);
}

static sc_code copy_head(struct relay_head *dst, const struct http_head *src)
{
    dst->status = src->status;
    dst->content_length = src->content_length;
    return http_headers_copy(src->headers, src->n_headers, &dst->headers, &dst->n_headers);
}

sc_code relay_set_head(relay *r, const struct http_head *head, bool keep_all)
{
    pthread_mutex_lock(&r->mu);
    sc_code rc = copy_head(&r->head, head);
    r->keep_all = keep_all || r->window == 0;
    if (rc == SC_OK) {
        r->cap =
            r->keep_all ? (size_t)(head->content_length > 0 ? head->content_length : 0) : r->window;
        if (r->cap > 0 && (r->buf = malloc(r->cap)) == NULL)
            rc = SC_ENOMEM;
    }
    r->have_head = true;
    if (rc != SC_OK) {
        r->finished = true;
        r->result = rc;
    }
    struct relay_waiter *list = take_waiters(r);
    pthread_mutex_unlock(&r->mu);
    wake_all(list);
    return rc;
}

/* The lowest position any reader still needs (relay locked). Until a reader attaches,
 * everything is kept: the first reader starts from the beginning. */
static uint64_t slowest_cursor(const relay *r)
{
    uint64_t lo = r->cursors ? r->end : r->base;
    for (const struct relay_cursor *c = r->cursors; c; c = c->next)
        if (c->pos < lo)
            lo = c->pos;
    return lo;
}

/* Makes room for n bytes in a windowed relay (relay locked); false if the window is full. */
static bool make_room(relay *r, size_t n)
{
    uint64_t lo = slowest_cursor(r);
    if (lo > r->base) {
        size_t drop = (size_t)(lo - r->base);
        memmove(r->buf, r->buf + drop, (size_t)(r->end - lo));
        r->base = lo;
    }
    return (size_t)(r->end - r->base) + n <= r->cap;
}

bool relay_push(relay *r, const char *p, size_t n)
{
    pthread_mutex_lock(&r->mu);
    if (r->finished) {
        pthread_mutex_unlock(&r->mu);
        return true; /* failed already: swallow, the transfer is being torn down */
    }
    bool fits = r->keep_all ? r->end + n <= r->cap : make_room(r, n);
    if (!fits && r->keep_all) {
        /* More bytes than announced: fail rather than store a wrong object. */
        r->finished = true;
        r->result = SC_EMISMATCH;
    } else if (!fits) {
        r->paused = true;
        pthread_mutex_unlock(&r->mu);
        return false;
    } else {
        memcpy(r->buf + (r->end - r->base), p, n);
        r->end += n;
    }
    struct relay_waiter *list = take_waiters(r);
    pthread_mutex_unlock(&r->mu);
    wake_all(list);
    return true;
}

void relay_finish(relay *r, sc_code rc)
{
    pthread_mutex_lock(&r->mu);
    if (!r->finished) {
        r->finished = true;
        r->result = rc;
        if (rc == SC_OK && r->keep_all && r->head.content_length >= 0 &&
            r->end != (uint64_t)r->head.content_length)
            r->result = SC_EMISMATCH;
    }
    struct relay_waiter *list = take_waiters(r);
    pthread_mutex_unlock(&r->mu);
    wake_all(list);
}

const struct relay_head *relay_head(relay *r, struct relay_waiter *w, bool *failed)
{
    const struct relay_head *h = NULL;
    pthread_mutex_lock(&r->mu);
    *failed = false;
    if (r->have_head)
        h = &r->head;
    else if (r->finished)
        *failed = true;
    else
        park(r, w);
    pthread_mutex_unlock(&r->mu);
    return h;
}

void relay_attach(relay *r, struct relay_cursor *c, uint64_t pos)
{
    pthread_mutex_lock(&r->mu);
    c->pos = pos;
    c->hold_at = UINT64_MAX;
    c->next = r->cursors;
    r->cursors = c;
    pthread_mutex_unlock(&r->mu);
}

void relay_detach(relay *r, struct relay_cursor *c)
{
    pthread_mutex_lock(&r->mu);
    for (struct relay_cursor **pp = &r->cursors; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    pthread_mutex_unlock(&r->mu);
}

void relay_hold_from(relay *r, struct relay_cursor *c, uint64_t at)
{
    pthread_mutex_lock(&r->mu);
    c->hold_at = at;
    pthread_mutex_unlock(&r->mu);
}

/* Where c may read up to now (relay locked): the end, short of the bytes that wait for the
 * verdict until the transfer has ended well. */
static uint64_t readable_end(const relay *r, const struct relay_cursor *c)
{
    if (r->finished && r->result == SC_OK)
        return r->end;
    uint64_t hold = c->hold_at;
    if (r->hold_tail) {
        /* Without a Content-Length, the last byte is the last one received so far. */
        int64_t len = r->head.content_length;
        uint64_t tail = len >= 0 ? (uint64_t)len : r->end;
        if (tail > 0 && tail - 1 < hold)
            hold = tail - 1;
    }
    return r->end < hold ? r->end : hold;
}

/*
 * A paused producer is resumed once half the window is free again (relay locked). A fill's
 * transfer may fill the window and pause before its starter has called relay_set_upstream()
 * (another reader joined the fill meanwhile): the pause then waits for that call, which
 * resumes it, instead of being cleared with nobody to resume.
 */
static up_req *resume_if_room(relay *r)
{
    if (!r->paused || r->keep_all || r->upstream == NULL)
        return NULL;
    if ((size_t)(r->end - slowest_cursor(r)) > r->cap / 2)
        return NULL;
    r->paused = false;
    return r->upstream;
}

ssize_t relay_read(relay *r, struct relay_cursor *c, char *buf, size_t max, struct relay_waiter *w)
{
    ssize_t got;
    up_req *resume = NULL;
    pthread_mutex_lock(&r->mu);
    uint64_t limit = readable_end(r, c);
    if (c->pos < r->base) {
        got = RELAY_ERROR;
    } else if (c->pos < limit) {
        size_t n = (size_t)(limit - c->pos);
        if (n > max)
            n = max;
        memcpy(buf, r->buf + (c->pos - r->base), n);
        c->pos += n;
        got = (ssize_t)n;
        resume = resume_if_room(r);
    } else if (r->finished) {
        got = r->result == SC_OK ? 0 : RELAY_ERROR;
    } else {
        park(r, w);
        got = RELAY_AGAIN;
    }
    pthread_mutex_unlock(&r->mu);
    if (resume)
        up_req_resume(resume);
    return got;
}

sc_code relay_body(relay *r, const char **body, uint64_t *len)
{
    sc_code rc = SC_EBUSY;
    pthread_mutex_lock(&r->mu);
    if (r->finished && r->result == SC_OK && r->keep_all) {
        *body = r->buf;
        *len = r->end;
        rc = SC_OK;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

sc_code relay_kept(relay *r, const char **body, uint64_t *len)
{
    sc_code rc = SC_EBUSY;
    pthread_mutex_lock(&r->mu);
    if (r->keep_all && !r->finished) {
        *body = r->buf;
        *len = r->end;
        rc = SC_OK;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

bool relay_reached(relay *r, uint64_t pos)
{
    pthread_mutex_lock(&r->mu);
    bool reached = pos < r->end || r->finished;
    pthread_mutex_unlock(&r->mu);
    return reached;
}

bool relay_has_readers(relay *r)
{
    pthread_mutex_lock(&r->mu);
    bool any = r->cursors != NULL;
    pthread_mutex_unlock(&r->mu);
    return any;
}

bool relay_has_all(relay *r)
{
    pthread_mutex_lock(&r->mu);
    bool all = r->have_head && r->keep_all && r->head.content_length >= 0 &&
               r->end == (uint64_t)r->head.content_length && (!r->finished || r->result == SC_OK);
    pthread_mutex_unlock(&r->mu);
    return all;
}
