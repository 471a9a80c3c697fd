/*
 * zerocopy.c - hits sent from the data file (see zerocopy.h): the fd response, and the drain
 * that holds each view until its client has read the bytes.
 *
 * The drain is a list and one thread. A request that sent a zero-copy hit keeps its held
 * entry (the view and the connection's ends, made before the response so that handing it on
 * cannot fail) and hands it to the list from its cleanup, when libmicrohttpd has queued the
 * last byte. The thread looks at every entry each GW_ZC_POLL_MS while there are any, outside
 * the lock, and closes the views whose bytes are read.
 */
#include "zerocopy.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/tcp_diag.h"
#include "config.h"
#include "req.h"

#define GW_ZC_POLL_MS      2
#define GW_ZC_STOP_SECONDS 5

struct gw_zc_held {
    store_obj *view;
    struct sc_tcp_ends ends; /* the gateway's side of the client's connection */
    struct gw_zc_held *next;
};

struct gw_zc {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    struct gw_zc_held *list; /* handed over, bytes maybe not read yet */
    bool stopping;
    atomic_uint held; /* views handed over by their requests and not closed yet */
};

/*
 * True once no byte of the connection is left for its client to read from a kernel queue:
 * the client's socket is gone (its queue with it; bytes the gateway's socket still holds can
 * reach no reader), or everything the gateway sent was acknowledged and then the client's
 * process read everything it received. A socket that cannot be looked at is waited for.
 */
static bool bytes_read(const struct gw_zc_held *h)
{
    uint32_t unacked = 0, unread = 0, ignored = 0;
    struct sc_tcp_ends peer = sc_tcp_ends_peer(&h->ends);
    sc_code ours = sc_tcp_queues(&h->ends, &unacked, &ignored);
    if (ours == SC_EIO)
        return false;
    sc_code theirs = sc_tcp_queues(&peer, &ignored, &unread); /* after: what was acknowledged
                                                                 is in their queue by now */
    if (theirs == SC_ENOTFOUND)
        return true;
    return theirs == SC_OK && (ours == SC_ENOTFOUND || unacked == 0) && unread == 0;
}

/* Closes a view of the drain's list. */
static void release(struct gw_zc *zc, struct gw_zc_held *h)
{
    store_obj_close(h->view);
    free(h);
    atomic_fetch_sub(&zc->held, 1);
}

static void *drain(void *arg)
{
    struct gw_zc *zc = arg;
    struct timespec deadline = {0};
    pthread_mutex_lock(&zc->lock);
    for (;;) {
        if (zc->list == NULL && zc->stopping)
            break;
        if (zc->list == NULL) {
            pthread_cond_wait(&zc->wake, &zc->lock);
            continue;
        }
        struct gw_zc_held *todo = zc->list, *keep = NULL;
        zc->list = NULL;
        bool stopping = zc->stopping;
        pthread_mutex_unlock(&zc->lock);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (stopping && deadline.tv_sec == 0)
            deadline = (struct timespec){now.tv_sec + GW_ZC_STOP_SECONDS, now.tv_nsec};
        bool give_up =
            stopping && (now.tv_sec > deadline.tv_sec ||
                         (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec));
        while (todo != NULL) {
            struct gw_zc_held *h = todo;
            todo = h->next;
            if (give_up || bytes_read(h)) {
                if (give_up)
                    sc_warn("stopping: a zero-copy hit's client has not read all of it; its "
                            "view is closed anyway");
                release(zc, h);
            } else {
                h->next = keep;
                keep = h;
            }
        }
        if (keep != NULL)
            nanosleep(&(struct timespec){0, GW_ZC_POLL_MS * 1000 * 1000}, NULL);
        pthread_mutex_lock(&zc->lock);
        while (keep != NULL) {
            struct gw_zc_held *h = keep;
            keep = h->next;
            h->next = zc->list;
            zc->list = h;
        }
    }
    pthread_mutex_unlock(&zc->lock);
    return NULL;
}

sc_code gw_zc_start(struct gw *g)
{
    g->zc = NULL;
    if (g->cfg->no_zero_copy)
        return SC_OK;
    if (MHD_is_feature_supported(MHD_FEATURE_SENDFILE) != MHD_YES ||
        MHD_is_feature_supported(MHD_FEATURE_RESPONSES_SHARED_FD) != MHD_YES) {
        sc_info("libmicrohttpd does not send files with sendfile: hits are copied");
        return SC_OK;
    }
    struct gw_zc *zc = calloc(1, sizeof(*zc));
    if (zc == NULL)
        return SC_ENOMEM;
    if (pthread_mutex_init(&zc->lock, NULL) != 0) {
        free(zc);
        return SC_ENOMEM;
    }
    if (pthread_cond_init(&zc->wake, NULL) != 0) {
        pthread_mutex_destroy(&zc->lock);
        free(zc);
        return SC_ENOMEM;
    }
    if (pthread_create(&zc->thread, NULL, drain, zc) != 0) {
        pthread_cond_destroy(&zc->wake);
        pthread_mutex_destroy(&zc->lock);
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
    pthread_mutex_lock(&zc->lock);
    h->next = zc->list;
    zc->list = h;
    atomic_fetch_add(&zc->held, 1);
    pthread_cond_signal(&zc->wake);
    pthread_mutex_unlock(&zc->lock);
}

/* The connection's ends, when its client's socket is in this network namespace (so that the
 * drain can see its unread bytes). */
static bool watchable(struct gw_req *q, struct sc_tcp_ends *ends)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    uint32_t unacked = 0, unread = 0;
    if (ci == NULL || sc_tcp_ends_of(ci->connect_fd, ends) != SC_OK)
        return false;
    struct sc_tcp_ends peer = sc_tcp_ends_peer(ends);
    return sc_tcp_queues(&peer, &unacked, &unread) == SC_OK;
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
        atomic_load(&zc->held) >= GW_ZC_HELD_MAX ||
        store_obj_file_span(view, data, len, &fd, &offset) != SC_OK)
        return NULL;
    h = calloc(1, sizeof(*h));
    if (h == NULL || !watchable(q, &h->ends))
        goto fail;
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* libmicrohttpd closes the one it is given */
    if (fd < 0)
        goto fail;
    resp = MHD_create_response_from_fd_at_offset64(len, fd, offset);
    if (resp == NULL) {
        close(fd);
        goto fail;
    }
    h->view = view;
    q->zc = h;
    gw_req_cleanup_add(q, hand_over, q);
    sc_stat_add(q->g->stats.hits_zero_copy, 1);
    sc_stat_add(q->g->stats.bytes_zero_copy, len);
    return resp;
fail:
    free(h);
    return NULL;
}
