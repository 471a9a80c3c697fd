/*
 * zerocopy.c - hits sent from the data file (see zerocopy.h): the fd response, and the drain
 * that holds each view until its client has read the bytes.
 *
 * The drain is a list and one thread. A zero-copy response's held entry (the view, the
 * connection's ends, the client socket's cookie) goes into the list when the response is made,
 * so that the client's socket's destruction is seen whenever it comes; the drain looks at it
 * once its request has handed it over (its cleanup, when libmicrohttpd has queued the last
 * byte). The drain reads the destroyed sockets' cookies at every wake (every
 * GW_ZC_POLL_MAX_MS at least). The thread looks at an entry 1 ms after its hand-over (the
 * client is still reading what was just queued), then again after 2, 4 ... up to GW_ZC_POLL_MAX_MS
 * ms while its bytes are not read, outside the lock (one sock_diag socket of its own), and closes
 * the views whose bytes are read. A hand-over wakes the thread only when it sleeps past the new
 * entry's first look. The HTTP threads' lookups (is the client's socket here?) take a socket from a
 * small pool.
 */
#include "zerocopy.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../common/tcp_diag.h"
#include "config.h"
#include "req.h"

/* A view is first looked at GW_ZC_FIRST_LOOK_MS after its hand-over; while its bytes are not
 * read, again after twice as long each time, up to GW_ZC_POLL_MAX_MS (a reader slot held a
 * little longer, not a poll per client every millisecond). */
#define GW_ZC_FIRST_LOOK_MS 1
#define GW_ZC_POLL_MAX_MS   64
#define GW_ZC_STOP_SECONDS  2  /* within docker stop's grace, after --shutdown-timeout */
#define GW_ZC_DIAG_POOL     16 /* sock_diag sockets kept for the HTTP threads' lookups */

struct gw_zc_held {
    store_obj *view;
    struct sc_tcp_ends ends; /* the gateway's side of the client's connection */
    uint64_t cookie;         /* the client's socket's (sc_tcp_look) */
    uint64_t due_ms;         /* when to look again (CLOCK_MONOTONIC ms); the drain's */
    unsigned wait_ms;        /* the last wait; the drain's */
    atomic_bool handed;      /* its request ended (hand_over): the drain may close it */
    bool gone;               /* the client's socket was destroyed (the drain's) */
    struct gw_zc_held *next;
};

struct gw_zc {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a view was handed over, or the drain stops */
    pthread_t thread;
    struct gw_zc_held *list; /* handed over, bytes maybe not read yet */
    uint64_t next_ms;        /* the earliest due_ms in list (UINT64_MAX: none) */
    uint64_t sleeps_until;   /* the drain's wake-up (UINT64_MAX: a wake; 0: it is awake) */
    bool stopping;
    int diags[GW_ZC_DIAG_POOL]; /* idle sock_diag sockets (diag_take, diag_give) */
    unsigned n_diags;
    atomic_uint held;  /* views handed over by their requests and not closed yet */
    int destroyed;     /* sc_tcp_destroy_open(): the client sockets destroyed; the drain's */
    bool told_lost;    /* a lost notice was logged (the drain's) */
    atomic_uint taken; /* views of zero-copy responses not closed yet, in their requests or
                        * held: at most GW_ZC_HELD_MAX, so that held never passes it */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A sock_diag socket for this thread's lookup (give it back with diag_give); -1 if none. */
static int diag_take(struct gw_zc *zc)
{
    int fd = -1;
    pthread_mutex_lock(&zc->lock);
    if (zc->n_diags > 0)
        fd = zc->diags[--zc->n_diags];
    pthread_mutex_unlock(&zc->lock);
    return fd >= 0 ? fd : sc_tcp_diag_open();
}

static void diag_give(struct gw_zc *zc, int fd)
{
    if (fd < 0)
        return;
    pthread_mutex_lock(&zc->lock);
    if (zc->n_diags < GW_ZC_DIAG_POOL) {
        zc->diags[zc->n_diags++] = fd;
        fd = -1;
    }
    pthread_mutex_unlock(&zc->lock);
    if (fd >= 0)
        close(fd);
}

/*
 * True once no byte of the connection is left for its client to read from a kernel queue:
 * the client's socket was destroyed (its queue with it; bytes the gateway's socket still holds
 * can reach no reader), or everything the gateway sent was acknowledged and then the client's
 * process read everything it received. A socket in no table is not proof that it is gone: one
 * in TCP_CLOSE (reset, or closed by both sides, or only its TIME_WAIT left) may still be open
 * with every byte readable; only its destruction (h->gone, from the kernel) is. A socket that
 * cannot be looked at is waited for.
 */
static bool bytes_read(int diag, const struct gw_zc_held *h)
{
    struct sc_tcp_sock ours = {0}, theirs = {0};
    if (h->gone)
        return true;
    struct sc_tcp_ends peer = sc_tcp_ends_peer(&h->ends);
    sc_code o = sc_tcp_look(diag, &h->ends, &ours);
    if (o == SC_EIO || (o == SC_OK && ours.unacked > 0))
        return false; /* (whatever their queue holds, some bytes are still on their way) */
    /* (looked at after: what was acknowledged is in their queue by now) */
    sc_code t = sc_tcp_look(diag, &peer, &theirs);
    if (t == SC_OK && theirs.state != TCP_TIME_WAIT && theirs.cookie == h->cookie)
        return theirs.unread == 0;
    /* Not in the tables: maybe still open, its destruction will say. If the kernel dropped that
     * notice (absorb_destroyed), the view is held until the gateway stops: no byte is risked. */
    return false;
}

/* Takes in the sockets destroyed since the last call: marks the views of zc->list whose client's
 * socket is one of them. The lock held. */
static void absorb_destroyed(struct gw_zc *zc)
{
    uint64_t cookies[256];
    size_t n = 0;
    for (;;) {
        sc_code rc = sc_tcp_destroyed(zc->destroyed, cookies, 256, &n);
        if (rc != SC_OK && !zc->told_lost) /* (once: it may repeat at every wake) */
            sc_warn("zero-copy: socket-destroy notices %s: a view whose client has left unseen "
                    "is held until the gateway stops (at most %d; past them hits are copied)",
                    rc == SC_EFULL ? "dropped by the kernel" : "not readable", GW_ZC_HELD_MAX);
        zc->told_lost = zc->told_lost || rc != SC_OK;
        if (rc == SC_EFULL)
            continue;
        if (rc != SC_OK)
            return;
        if (n == 0)
            return;
        for (struct gw_zc_held *h = zc->list; h != NULL; h = h->next)
            for (size_t i = 0; i < n && !h->gone; i++)
                if (cookies[i] == h->cookie)
                    h->gone = true;
    }
}

/* Closes a view of the drain's list. */
static void release(struct gw_zc *zc, struct gw_zc_held *h)
{
    store_obj_close(h->view);
    free(h);
    atomic_fetch_sub(&zc->held, 1);
    atomic_fetch_sub(&zc->taken, 1);
}

/* Looks at the views that are due in todo: closes those read (all when give_up), and returns
 * the others, with the earliest time one of them is due in *next_ms. */
static struct gw_zc_held *sweep(struct gw_zc *zc, int diag, struct gw_zc_held *todo, bool give_up,
                                uint64_t *next_ms)
{
    struct gw_zc_held *keep = NULL;
    uint64_t now = now_ms();
    *next_ms = UINT64_MAX;
    while (todo != NULL) {
        struct gw_zc_held *h = todo;
        todo = h->next;
        if (!atomic_load(&h->handed)) { /* its request still sends */
            h->next = keep;
            keep = h;
            continue;
        }
        if (give_up) {
            sc_warn("stopping: a zero-copy hit's client has not read all of it; its view is "
                    "closed anyway");
            release(zc, h);
            continue;
        }
        if (h->due_ms <= now) {
            if (bytes_read(diag, h)) {
                release(zc, h);
                continue;
            }
            h->wait_ms = h->wait_ms == 0 ? 1 : h->wait_ms * 2;
            if (h->wait_ms > GW_ZC_POLL_MAX_MS)
                h->wait_ms = GW_ZC_POLL_MAX_MS;
            h->due_ms = now + h->wait_ms;
        }
        if (h->due_ms < *next_ms)
            *next_ms = h->due_ms;
        h->next = keep;
        keep = h;
    }
    return keep;
}

/* Waits, the lock held, until zc->next_ms (at most GW_ZC_POLL_MAX_MS), or a wake. */
static void drain_sleep(struct gw_zc *zc, uint64_t now)
{
    uint64_t ms = zc->next_ms - now < GW_ZC_POLL_MAX_MS ? zc->next_ms - now : GW_ZC_POLL_MAX_MS;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)ms * 1000000;
    until.tv_sec += until.tv_nsec / 1000000000;
    until.tv_nsec %= 1000000000;
    zc->sleeps_until = now + ms;
    pthread_cond_timedwait(&zc->wake, &zc->lock, &until);
    zc->sleeps_until = 0;
}

static void *drain(void *arg)
{
    struct gw_zc *zc = arg;
    int diag = sc_tcp_diag_open(); /* -1: every look fails, views wait until the stop */
    uint64_t give_up_at = 0;
    pthread_mutex_lock(&zc->lock);
    for (;;) {
        absorb_destroyed(zc); /* (every GW_ZC_POLL_MAX_MS at least, so that none is dropped) */
        if (zc->list == NULL && zc->stopping)
            break;
        uint64_t now = now_ms();
        if (!zc->stopping && zc->next_ms > now) {
            drain_sleep(zc, now); /* nothing due yet */
            continue;
        }
        struct gw_zc_held *todo = zc->list;
        zc->list = NULL;
        zc->next_ms = UINT64_MAX;
        bool stopping = zc->stopping;
        if (stopping && give_up_at == 0)
            give_up_at = now_ms() + GW_ZC_STOP_SECONDS * 1000;
        bool give_up = stopping && now_ms() >= give_up_at;
        pthread_mutex_unlock(&zc->lock);
        uint64_t next_ms = UINT64_MAX;
        struct gw_zc_held *keep = sweep(zc, diag, todo, give_up, &next_ms);
        if (stopping && keep != NULL) /* stopping: a look every 2 ms until the deadline */
            nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
        pthread_mutex_lock(&zc->lock);
        if (next_ms < zc->next_ms)
            zc->next_ms = next_ms;
        while (keep != NULL) {
            struct gw_zc_held *h = keep;
            keep = h->next;
            h->next = zc->list;
            zc->list = h;
        }
    }
    pthread_mutex_unlock(&zc->lock);
    if (diag >= 0)
        close(diag);
    return NULL;
}

sc_code gw_zc_start(struct gw *g)
{
    g->zc = NULL;
    if (!g->cfg->zero_copy)
        return SC_OK;
    if (MHD_is_feature_supported(MHD_FEATURE_SENDFILE) != MHD_YES ||
        MHD_is_feature_supported(MHD_FEATURE_RESPONSES_SHARED_FD) != MHD_YES) {
        sc_info("libmicrohttpd does not send files with sendfile: hits are copied");
        return SC_OK;
    }
    struct gw_zc *zc = calloc(1, sizeof(*zc));
    if (zc == NULL)
        return SC_ENOMEM;
    zc->next_ms = UINT64_MAX;
    zc->sleeps_until = 0;
    zc->destroyed = sc_tcp_destroy_open();
    if (zc->destroyed < 0) {
        sc_info("the kernel does not tell when sockets are destroyed: hits are copied");
        free(zc);
        return SC_OK;
    }
    if (sc_cond_init_monotonic(&zc->wake) != 0) {
        close(zc->destroyed);
        free(zc);
        return SC_ENOMEM;
    }
    if (pthread_mutex_init(&zc->lock, NULL) != 0) {
        pthread_cond_destroy(&zc->wake);
        close(zc->destroyed);
        free(zc);
        return SC_ENOMEM;
    }
    if (pthread_create(&zc->thread, NULL, drain, zc) != 0) {
        pthread_mutex_destroy(&zc->lock);
        pthread_cond_destroy(&zc->wake);
        close(zc->destroyed);
        free(zc);
        return SC_EIO;
    }
    g->zc = zc;
    return SC_OK;
}

void gw_zc_stop(struct gw *g)
{
    struct gw_zc *zc = g->zc;
    if (zc == NULL)
        return;
    pthread_mutex_lock(&zc->lock);
    zc->stopping = true;
    pthread_cond_signal(&zc->wake);
    pthread_mutex_unlock(&zc->lock);
    pthread_join(zc->thread, NULL);
    for (unsigned i = 0; i < zc->n_diags; i++)
        close(zc->diags[i]);
    close(zc->destroyed);
    pthread_cond_destroy(&zc->wake);
    pthread_mutex_destroy(&zc->lock);
    free(zc);
    g->zc = NULL;
}

unsigned gw_zc_held(const struct gw *g)
{
    return g->zc ? atomic_load(&g->zc->held) : 0;
}

/* The request's cleanup: its response is done with, its view goes to the drain. */
static void hand_over(void *arg)
{
    struct gw_req *q = arg;
    struct gw_zc *zc = q->g->zc;
    struct gw_zc_held *h = q->zc;
    q->zc = NULL;
    if (h == NULL)
        return;
    /* (h is in the drain's list since gw_zc_response; the drain looks at it from here on) */
    uint64_t due = now_ms() + GW_ZC_FIRST_LOOK_MS;
    h->wait_ms = GW_ZC_FIRST_LOOK_MS;
    h->due_ms = due;
    pthread_mutex_lock(&zc->lock);
    atomic_fetch_add(&zc->held, 1);
    atomic_store(&h->handed, true);
    if (due < zc->next_ms)
        zc->next_ms = due;
    if (due < zc->sleeps_until) /* asleep past it */
        pthread_cond_signal(&zc->wake);
    pthread_mutex_unlock(&zc->lock);
}

/* The cookie of the client's socket of the connection whose gateway side is ends, if that
 * socket is in this namespace's tables and not just its TIME_WAIT. */
static bool client_cookie(struct gw_zc *zc, const struct sc_tcp_ends *ends, uint64_t *cookie)
{
    struct sc_tcp_ends peer = sc_tcp_ends_peer(ends);
    struct sc_tcp_sock s = {0};
    int diag = diag_take(zc);
    bool found = diag >= 0 && sc_tcp_look(diag, &peer, &s) == SC_OK && s.state != TCP_TIME_WAIT;
    diag_give(zc, diag);
    *cookie = s.cookie;
    return found;
}

/* The connection's ends, when its client's socket is in this network namespace (so that the
 * drain can see its unread bytes). */
static bool watchable(struct gw_req *q, struct sc_tcp_ends *ends, uint64_t *cookie)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL || sc_tcp_ends_of(ci->connect_fd, ends) != SC_OK)
        return false;
    return client_cookie(q->g->zc, ends, cookie);
}

/* Still there with that cookie (looked at after h went into the drain's list: its destruction,
 * if any, comes after, and the drain sees it). */
static bool still_there(struct gw_zc *zc, const struct gw_zc_held *h)
{
    uint64_t cookie = 0;
    return client_cookie(zc, &h->ends, &cookie) && cookie == h->cookie;
}

struct MHD_Response *gw_zc_response(struct gw_req *q, store_obj *view, const void *data,
                                    uint64_t len)
{
    struct gw_zc *zc = q->g->zc;
    int fd = -1;
    uint64_t offset = 0;
    struct gw_zc_held *h = NULL;
    struct MHD_Response *resp = NULL;
    if (zc == NULL || q->zc != NULL || len < GW_ZC_MIN_BYTES ||
        store_obj_file_span(view, data, len, &fd, &offset) != SC_OK)
        return NULL;
    /* (counted from here, not from the hand-over: requests still sending count too) */
    unsigned taken = atomic_load(&zc->taken);
    do {
        if (taken >= GW_ZC_HELD_MAX)
            return NULL;
    } while (!atomic_compare_exchange_weak(&zc->taken, &taken, taken + 1));
    h = calloc(1, sizeof(*h));
    if (h == NULL || !watchable(q, &h->ends, &h->cookie))
        goto fail;
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* libmicrohttpd closes the one it is given */
    if (fd < 0)
        goto fail;
    resp = MHD_create_response_from_fd_at_offset64(len, fd, offset);
    if (resp == NULL) {
        close(fd);
        goto fail;
    }
    /* Into the drain's list before the second look, so that the client's socket's destruction
     * after it is seen; not looked at before hand_over. */
    pthread_mutex_lock(&zc->lock);
    h->next = zc->list;
    zc->list = h;
    pthread_mutex_unlock(&zc->lock);
    q->zc = h;
    gw_req_cleanup_add(q, hand_over, q);
    if (!still_there(zc, h)) { /* (h goes, without a view, at the hand-over) */
        pthread_mutex_lock(&zc->lock);
        h->gone = true;
        pthread_mutex_unlock(&zc->lock);
        MHD_destroy_response(resp);
        return NULL;
    }
    h->view = view;
    sc_stat_add(q->g->stats.hits_zero_copy, 1);
    sc_stat_add(q->g->stats.bytes_zero_copy, len);
    return resp;
fail:
    free(h);
    atomic_fetch_sub(&zc->taken, 1);
    return NULL;
}
