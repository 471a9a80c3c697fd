/*
 * queue.c - one direction of a relayed connection: the chunks read from the sender,
 * each held until its release time, then written out in order. Pure: no sockets, no
 * clock; the caller passes the time in.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lrelay.h"

void lr_queue_init(struct lr_queue *q)
{
    q->head = q->tail = NULL;
    q->bytes = 0;
    q->chunks = 0;
}

struct lr_chunk *lr_chunk_new(struct lr_pool *p)
{
    struct lr_chunk *c = p->free;
    if (c != NULL) {
        p->free = c->next;
        p->n_free--;
    } else {
        c = malloc(sizeof(*c) + LR_CHUNK);
        if (c == NULL)
            return NULL;
    }
    c->next = NULL;
    c->release_ns = 0;
    c->len = 0;
    c->off = 0;
    c->eof = false;
    return c;
}

void lr_chunk_free(struct lr_pool *p, struct lr_chunk *c)
{
    if (c == NULL)
        return;
    if (p->n_free >= LR_POOL_KEEP) {
        free(c);
        return;
    }
    c->next = p->free;
    p->free = c;
    p->n_free++;
}

void lr_pool_drain(struct lr_pool *p)
{
    while (p->free != NULL) {
        struct lr_chunk *c = p->free;
        p->free = c->next;
        free(c);
    }
    p->n_free = 0;
}

void lr_queue_push(struct lr_queue *q, struct lr_chunk *c, int64_t release_ns)
{
    if (q->tail != NULL && release_ns < q->tail->release_ns)
        release_ns = q->tail->release_ns;
    c->release_ns = release_ns;
    c->next = NULL;
    if (q->tail != NULL)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    q->bytes += c->len - c->off;
    q->chunks++;
}

sc_code lr_queue_push_eof(struct lr_queue *q, struct lr_pool *p, int64_t release_ns)
{
    struct lr_chunk *c = lr_chunk_new(p);
    if (c == NULL)
        return SC_ENOMEM;
    c->eof = true;
    lr_queue_push(q, c, release_ns);
    return SC_OK;
}

int lr_queue_due_iov(const struct lr_queue *q, int64_t now_ns, struct iovec *iov, int max)
{
    int n = 0;
    for (const struct lr_chunk *c = q->head; c != NULL && n < max; c = c->next) {
        if (c->eof || c->release_ns > now_ns)
            break;
        iov[n].iov_base = (void *)(c->data + c->off);
        iov[n].iov_len = c->len - c->off;
        n++;
    }
    return n;
}

void lr_queue_consume(struct lr_queue *q, struct lr_pool *p, size_t n)
{
    while (n > 0 && q->head != NULL && !q->head->eof) {
        struct lr_chunk *c = q->head;
        size_t left = c->len - c->off;
        if (n < left) {
            c->off += (uint32_t)n;
            q->bytes -= n;
            return;
        }
        n -= left;
        q->bytes -= left;
        q->head = c->next;
        if (q->head == NULL)
            q->tail = NULL;
        q->chunks--;
        lr_chunk_free(p, c);
    }
}

bool lr_queue_eof_due(const struct lr_queue *q, int64_t now_ns)
{
    return q->head != NULL && q->head->eof && q->head->release_ns <= now_ns;
}

void lr_queue_pop_eof(struct lr_queue *q, struct lr_pool *p)
{
    struct lr_chunk *c = q->head;
    if (c == NULL || !c->eof)
        return;
    q->head = c->next;
    if (q->head == NULL)
        q->tail = NULL;
    q->chunks--;
    lr_chunk_free(p, c);
}

int64_t lr_queue_next_release(const struct lr_queue *q)
{
    return q->head != NULL ? q->head->release_ns : INT64_MAX;
}

void lr_queue_clear(struct lr_queue *q, struct lr_pool *p)
{
    while (q->head != NULL) {
        struct lr_chunk *c = q->head;
        q->head = c->next;
        lr_chunk_free(p, c);
    }
    lr_queue_init(q);
}

int64_t lr_release_at(int64_t from_ns, int64_t delay_ns, uint64_t rate, size_t n, int64_t *free_ns)
{
    int64_t at = from_ns + delay_ns;
    if (rate == 0)
        return at;
    int64_t start = at > *free_ns ? at : *free_ns;
    *free_ns = start + (int64_t)((n * 1000000000ull) / rate);
    return *free_ns;
}
