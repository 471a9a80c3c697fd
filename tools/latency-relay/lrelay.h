/*
 * lrelay.h - the pieces of latency-relay, a TCP relay that holds every byte for a
 * fixed one-way delay in each direction, to put a local server "far away":
 *
 *   queue.c  one direction's chunks, each released a fixed time after it arrived (pure)
 *   heap.c   the directions waiting for their next release, earliest first (pure)
 *   opts.c   the command line, parsed and range-checked (pure)
 *   main.c   the epoll loop: accept, connect, read, hold, writev, half-close, shutdown
 *
 * Bytes are copied once into a chunk when read and written from it when due; nothing
 * else touches them. One thread serves every connection.
 */
#ifndef LRELAY_H
#define LRELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "../../common/sc_err.h"

#define LR_CHUNK (64 * 1024) /* bytes one read() fills at most: one chunk */

/* ---- queue.c: one direction's held bytes ---------------------------------------------------- */

/* Bytes read at one moment, released together. */
struct lr_chunk {
    struct lr_chunk *next;
    int64_t release_ns; /* when it may be written (CLOCK_MONOTONIC) */
    uint32_t len;       /* bytes in data */
    uint32_t off;       /* bytes of data already written */
    bool eof;           /* no data: the sender's FIN, to pass on once due */
    unsigned char data[];
};

/* A FIFO of chunks; release times never decrease along it. */
struct lr_queue {
    struct lr_chunk *head, *tail;
    size_t bytes;  /* unwritten data bytes held */
    size_t chunks; /* chunks held, EOF markers included */
};

/* Spent chunks kept for reuse, so that a busy relay does not malloc per read. */
struct lr_pool {
    struct lr_chunk *free;
    size_t n_free;
};

#define LR_POOL_KEEP 256 /* spent chunks kept at most (16 MiB) */

/* @brief An empty queue. Cannot fail. */
void lr_queue_init(struct lr_queue *q);

/*
 * @brief A chunk with room for LR_CHUNK bytes, from the pool or malloc.
 * @return the chunk (len, off 0, not eof), or NULL when out of memory. Ownership passes
 *         to the caller until lr_queue_push or lr_chunk_free.
 */
struct lr_chunk *lr_chunk_new(struct lr_pool *p);

/* @brief Returns c to the pool (or frees it when the pool is full). NULL is fine. */
void lr_chunk_free(struct lr_pool *p, struct lr_chunk *c);

/* @brief Frees every chunk the pool keeps. */
void lr_pool_drain(struct lr_pool *p);

/*
 * @brief Appends c (filled, len > 0, or an EOF marker) to be released at release_ns.
 * A release time before the tail's is raised to the tail's, so order always holds.
 * The queue owns c from here.
 */
void lr_queue_push(struct lr_queue *q, struct lr_chunk *c, int64_t release_ns);

/* @brief An EOF marker: pushes the sender's FIN behind everything it sent. @return SC_ENOMEM. */
sc_code lr_queue_push_eof(struct lr_queue *q, struct lr_pool *p, int64_t release_ns);

/*
 * @brief The unwritten bytes of the chunks due at now, in order, as at most max iovecs;
 * stops before the first chunk not yet due and before an EOF marker.
 * @return the number of iovecs filled (0: nothing due, or an EOF marker comes first).
 */
int lr_queue_due_iov(const struct lr_queue *q, int64_t now_ns, struct iovec *iov, int max);

/* @brief Marks n bytes (at most what lr_queue_due_iov offered) written; spent chunks go to p. */
void lr_queue_consume(struct lr_queue *q, struct lr_pool *p, size_t n);

/* @brief Whether the head is an EOF marker due at now (every byte before it is written). */
bool lr_queue_eof_due(const struct lr_queue *q, int64_t now_ns);

/* @brief Drops the head when it is an EOF marker. */
void lr_queue_pop_eof(struct lr_queue *q, struct lr_pool *p);

/* @brief The head's release time, or INT64_MAX when empty. */
int64_t lr_queue_next_release(const struct lr_queue *q);

/* @brief Gives every chunk back to p; q is empty afterwards. */
void lr_queue_clear(struct lr_queue *q, struct lr_pool *p);

/* ---- heap.c: what to wake up for ------------------------------------------------------------ */

/* An entry of the heap: embed it in whatever waits; pos is the heap's bookkeeping. */
struct lr_timer {
    int64_t at_ns;
    size_t pos; /* index in the heap + 1; 0 while not in the heap */
};

/* A binary min-heap of timers by at_ns. */
struct lr_heap {
    struct lr_timer **v;
    size_t n, cap;
};

/* @brief An empty heap. Cannot fail. */
void lr_heap_init(struct lr_heap *h);

/* @brief Frees the heap's array (not the timers). */
void lr_heap_free(struct lr_heap *h);

/*
 * @brief Puts t in the heap at at_ns, or moves it there when it is in already.
 * @return SC_OK, SC_ENOMEM (t is then not in the heap).
 */
sc_code lr_heap_set(struct lr_heap *h, struct lr_timer *t, int64_t at_ns);

/* @brief Takes t out of the heap; a no-op when it is not in. */
void lr_heap_remove(struct lr_heap *h, struct lr_timer *t);

/* @brief The earliest timer, or NULL. */
struct lr_timer *lr_heap_min(const struct lr_heap *h);

/* ---- opts.c --------------------------------------------------------------------------------- */

struct lr_opts {
    struct sockaddr_storage listen, target;
    socklen_t listen_len, target_len;
    int64_t delay_ns; /* one-way delay applied to each direction */
    size_t window;    /* most bytes held per direction of a connection */
    uint64_t rate;    /* most bytes a second per direction of a connection; 0: no bound */
    bool connect_rtt; /* a new connection's first bytes wait one round trip more */
    bool quiet;
};

/*
 * @brief Parses "HOST:PORT" or "[HOST]:PORT" with a numeric IPv4/IPv6 host.
 * @return SC_OK or SC_EINVAL.
 */
sc_code lr_parse_addr(const char *s, struct sockaddr_storage *out, socklen_t *len);

/* @brief Parses milliseconds, "10" or "2.5", 0..60000, into nanoseconds. @return SC_OK, SC_EINVAL.
 */
sc_code lr_parse_ms(const char *s, int64_t *ns);

/* @brief Parses bytes with an optional K/M/G (binary) suffix, 64K..1G. @return SC_OK, SC_EINVAL. */
sc_code lr_parse_window(const char *s, size_t *out);

/* @brief Parses bytes a second with an optional K/M/G (binary) suffix, 1K..64G.
 * @return SC_OK, SC_EINVAL. */
sc_code lr_parse_rate(const char *s, uint64_t *out);

/*
 * @brief When a chunk of n bytes read at from_ns leaves a direction delayed delay_ns and bound
 * to rate bytes a second (0: no bound): after the delay, and after the chunks before it have
 * passed at that rate. *free_ns is when the direction's last chunk has passed; updated.
 */
int64_t lr_release_at(int64_t from_ns, int64_t delay_ns, uint64_t rate, size_t n, int64_t *free_ns);

/*
 * @brief Parses argv into o; problems go to err, --help to out.
 * @return 0 to run, 1 after --help, 2 on a bad command line.
 */
int lr_opts_parse(int argc, char **argv, struct lr_opts *o, FILE *out, FILE *err);

#endif
