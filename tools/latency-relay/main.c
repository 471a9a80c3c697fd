/*
 * main.c - latency-relay's event loop: one thread, one epoll set, one timerfd.
 *
 * Each accepted connection gets its own connection to the target. Bytes read from
 * either side go into a chunk stamped "release at arrival + delay"; the chunk waits in
 * that direction's queue (queue.c) and is written, in order, once due. The direction
 * whose head is due next sits in a min-heap (heap.c), and the timerfd is armed for the
 * heap's earliest entry. A FIN is held like data and passed on with shutdown(SHUT_WR);
 * the connection closes once both FINs have been passed on, or at once on an error or
 * a reset. A direction holding --window bytes stops reading its sender: the sender's
 * TCP window then closes, as it would on a long link.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "lrelay.h"

#define MAX_EVENTS   256
#define MAX_IOV      64
#define READS_PER_EV 16 /* reads from one socket per wake-up, so no connection starves others */

enum { CLIENT = 0, UPSTREAM = 1 };
enum ep_kind { EP_CONN, EP_LISTEN, EP_TIMER, EP_SIGNAL };

struct conn;

/* What an epoll event points at. */
struct endpoint {
    enum ep_kind kind;
    struct conn *c; /* EP_CONN */
    int side;       /* EP_CONN: CLIENT or UPSTREAM */
};

/* Bytes read from one side, on their way to the other. */
struct dir {
    struct lr_queue q;
    struct lr_timer timer; /* in the heap while the head waits for its release time */
    bool eof_read;         /* the sender's FIN was read (and queued as a marker) */
    bool eof_sent;         /* the FIN was passed on: shutdown(SHUT_WR) on the receiver */
    bool want_out;         /* due bytes wait for the receiver's socket to drain */
    int64_t free_ns;       /* --rate: when the chunks queued so far have passed */
    struct conn *c;        /* the connection it belongs to */
    int side;              /* the side it reads from */
};

struct conn {
    int fd[2];
    struct endpoint ep[2];
    struct dir d[2];  /* d[s]: read from fd[s], written to fd[1 - s] */
    uint32_t mask[2]; /* events registered for fd[s] */
    bool registered[2];
    bool hup[2];     /* epoll reported EPOLLHUP on fd[s] */
    bool connecting; /* the connection to the target is not up yet */
    bool dead;       /* closed; freed after the current batch of events */
    int64_t open_ns; /* no byte is released before open_ns + delay */
    struct conn *prev, *next;
};

struct relay {
    struct lr_opts o;
    int epfd, lfd, tfd, sfd;
    bool listening; /* the listener is in the epoll set (not while out of fds) */
    struct endpoint ep_listen, ep_timer, ep_signal;
    struct lr_heap heap;
    struct lr_pool pool;
    int64_t armed_ns; /* what the timerfd is set to; INT64_MAX: disarmed */
    struct conn *conns;
    struct conn *dead; /* closed during this batch, freed after it */
    size_t held;       /* bytes held over all connections */
    struct {
        uint64_t accepted, active, failed, bytes[2], peak_held;
    } st;
};

static struct dir *dir_of_timer(struct lr_timer *t)
{
    return (struct dir *)((char *)t - offsetof(struct dir, timer));
}

static void print_counters(const struct relay *r)
{
    fprintf(stderr,
            "latency-relay: connections %" PRIu64 " accepted, %" PRIu64 " open, %" PRIu64
            " failed to reach the target; bytes %" PRIu64 " to the target, %" PRIu64
            " back; at most %" PRIu64 " bytes held\n",
            r->st.accepted, r->st.active, r->st.failed, r->st.bytes[CLIENT], r->st.bytes[UPSTREAM],
            r->st.peak_held);
}

/* Registers fd[s] for what the connection can use now. */
static void sync_mask(struct relay *r, struct conn *c, int s)
{
    uint32_t want = 0;
    struct dir *in = &c->d[s], *out = &c->d[1 - s];
    bool can_read = !in->eof_read && in->q.bytes < r->o.window;
    if (s == UPSTREAM && c->connecting)
        want = EPOLLOUT;
    else {
        if (can_read)
            want |= EPOLLIN;
        if (out->want_out)
            want |= EPOLLOUT;
    }
    if (want == 0 && c->hup[s]) {
        /* A hung-up socket with nothing to do would wake us up forever. */
        if (c->registered[s])
            epoll_ctl(r->epfd, EPOLL_CTL_DEL, c->fd[s], NULL);
        c->registered[s] = false;
        c->mask[s] = 0;
        return;
    }
    if (c->registered[s] && want == c->mask[s])
        return;
    struct epoll_event ev = {.events = want, .data.ptr = &c->ep[s]};
    int op = c->registered[s] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(r->epfd, op, c->fd[s], &ev) == 0) {
        c->registered[s] = true;
        c->mask[s] = want;
    }
}

/* Closes both sockets now; the memory goes after the current batch of events. */
static void conn_close(struct relay *r, struct conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    for (int s = 0; s < 2; s++) {
        lr_heap_remove(&r->heap, &c->d[s].timer);
        r->held -= c->d[s].q.bytes;
        lr_queue_clear(&c->d[s].q, &r->pool);
        if (c->fd[s] >= 0)
            close(c->fd[s]); /* also leaves the epoll set */
        c->fd[s] = -1;
    }
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        r->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->next = r->dead;
    r->dead = c;
    r->st.active--;
    if (!r->listening) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &r->ep_listen};
        if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->lfd, &ev) == 0)
            r->listening = true;
    }
}

/*
 * Writes what is due of the bytes read from side s to the other side, passes on a due
 * FIN, and sets the direction's timer for the rest. May close the connection.
 */
static void flush(struct relay *r, struct conn *c, int s)
{
    struct dir *d = &c->d[s];
    int dst = c->fd[1 - s];
    if (c->dead || (s == CLIENT && c->connecting))
        return;
    int64_t now = sc_now_ns();
    d->want_out = false;
    for (;;) {
        struct iovec iov[MAX_IOV];
        int n = lr_queue_due_iov(&d->q, now, iov, MAX_IOV);
        if (n > 0) {
            size_t total = 0;
            for (int i = 0; i < n; i++)
                total += iov[i].iov_len;
            ssize_t w = writev(dst, iov, n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                d->want_out = true;
                break;
            }
            if (w < 0) {
                conn_close(r, c); /* reset or gone: so is the whole connection */
                return;
            }
            lr_queue_consume(&d->q, &r->pool, (size_t)w);
            r->held -= (size_t)w;
            if ((size_t)w < total) {
                d->want_out = true;
                break;
            }
            continue;
        }
        if (lr_queue_eof_due(&d->q, now)) {
            lr_queue_pop_eof(&d->q, &r->pool);
            shutdown(dst, SHUT_WR);
            d->eof_sent = true;
        }
        break;
    }
    int64_t next = lr_queue_next_release(&d->q);
    if (!d->want_out && next != INT64_MAX && next > now) {
        if (lr_heap_set(&r->heap, &d->timer, next) != SC_OK) {
            conn_close(r, c);
            return;
        }
    } else {
        lr_heap_remove(&r->heap, &d->timer);
    }
    if (c->d[CLIENT].eof_sent && c->d[UPSTREAM].eof_sent) {
        conn_close(r, c);
        return;
    }
    sync_mask(r, c, s);
    sync_mask(r, c, 1 - s);
}

/* Reads what side s has sent (up to the window) into its direction's queue. */
static void drain(struct relay *r, struct conn *c, int s)
{
    struct dir *d = &c->d[s];
    for (int i = 0; i < READS_PER_EV && !d->eof_read && d->q.bytes < r->o.window; i++) {
        struct lr_chunk *k = lr_chunk_new(&r->pool);
        if (k == NULL) {
            conn_close(r, c);
            return;
        }
        ssize_t n = read(c->fd[s], k->data, LR_CHUNK);
        if (n < 0 && errno == EINTR) {
            lr_chunk_free(&r->pool, k);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            lr_chunk_free(&r->pool, k);
            break;
        }
        if (n < 0) {
            lr_chunk_free(&r->pool, k);
            conn_close(r, c);
            return;
        }
        int64_t now = sc_now_ns();
        int64_t from = now > c->open_ns ? now : c->open_ns;
        if (n == 0) {
            lr_chunk_free(&r->pool, k);
            if (lr_queue_push_eof(&d->q, &r->pool,
                                  lr_release_at(from, r->o.delay_ns, r->o.rate, 0, &d->free_ns)) !=
                SC_OK) {
                conn_close(r, c);
                return;
            }
            d->eof_read = true;
            break;
        }
        k->len = (uint32_t)n;
        lr_queue_push(&d->q, k,
                      lr_release_at(from, r->o.delay_ns, r->o.rate, (size_t)n, &d->free_ns));
        r->held += (size_t)n;
        r->st.bytes[s] += (uint64_t)n;
        if (r->held > r->st.peak_held)
            r->st.peak_held = r->held;
        if (n < LR_CHUNK)
            break; /* most likely drained; level-triggered epoll says if not */
    }
    flush(r, c, s);
}

static void tune_socket(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Takes every pending connection and opens its twin to the target. */
static void accept_all(struct relay *r)
{
    for (;;) {
        int fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: stop listening until a connection closes. */
                epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->lfd, NULL);
                r->listening = false;
                if (!r->o.quiet)
                    fprintf(stderr, "latency-relay: accept: %s; paused\n", strerror(errno));
            }
            return;
        }
        int up = socket(r->o.target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct conn *c = up >= 0 ? calloc(1, sizeof(*c)) : NULL;
        if (c == NULL) {
            if (up >= 0)
                close(up);
            close(fd);
            r->st.failed++;
            continue;
        }
        tune_socket(fd);
        tune_socket(up);
        c->fd[CLIENT] = fd;
        c->fd[UPSTREAM] = up;
        for (int s = 0; s < 2; s++) {
            c->ep[s] = (struct endpoint){.kind = EP_CONN, .c = c, .side = s};
            lr_queue_init(&c->d[s].q);
            c->d[s].c = c;
            c->d[s].side = s;
        }
        c->open_ns = r->o.connect_rtt ? sc_now_ns() + 2 * r->o.delay_ns : 0;
        c->next = r->conns;
        if (r->conns != NULL)
            r->conns->prev = c;
        r->conns = c;
        r->st.accepted++;
        r->st.active++;
        int rc = connect(up, (struct sockaddr *)&r->o.target, r->o.target_len);
        if (rc < 0 && errno != EINPROGRESS) {
            r->st.failed++;
            conn_close(r, c);
            continue;
        }
        c->connecting = rc < 0;
        sync_mask(r, c, CLIENT);
        sync_mask(r, c, UPSTREAM);
    }
}

static void on_conn_event(struct relay *r, struct conn *c, int s, uint32_t ev)
{
    if (c->dead)
        return;
    if (s == UPSTREAM && c->connecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd[UPSTREAM], SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
            r->st.failed++;
            conn_close(r, c);
            return;
        }
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        c->connecting = false;
        flush(r, c, CLIENT);
        if (c->dead)
            return;
        sync_mask(r, c, UPSTREAM);
        return;
    }
    if (ev & EPOLLHUP)
        c->hup[s] = true;
    if (ev & EPOLLERR) {
        conn_close(r, c);
        return;
    }
    if (ev & EPOLLOUT)
        flush(r, c, 1 - s);
    if (!c->dead && (ev & (EPOLLIN | EPOLLHUP)))
        drain(r, c, s);
    if (!c->dead)
        sync_mask(r, c, s);
}

/* Runs every direction whose release time has come, then arms the timerfd for the next. */
static void run_timers(struct relay *r)
{
    int64_t now = sc_now_ns();
    struct lr_timer *t;
    while ((t = lr_heap_min(&r->heap)) != NULL && t->at_ns <= now) {
        lr_heap_remove(&r->heap, t);
        struct dir *d = dir_of_timer(t);
        flush(r, d->c, d->side);
    }
    int64_t next = t != NULL ? t->at_ns : INT64_MAX;
    if (next == r->armed_ns)
        return;
    struct itimerspec its = {0};
    if (next != INT64_MAX) {
        its.it_value.tv_sec = next / 1000000000;
        its.it_value.tv_nsec = next % 1000000000;
    }
    timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    r->armed_ns = next;
}

static void free_dead(struct relay *r)
{
    while (r->dead != NULL) {
        struct conn *c = r->dead;
        r->dead = c->next;
        free(c);
    }
}

/* Opens the listener, the timerfd and the signalfd; the caller cleans up on error. */
static sc_code setup(struct relay *r)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return SC_EIO;
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    r->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    r->lfd = socket(r->o.listen.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->epfd < 0 || r->tfd < 0 || r->sfd < 0 || r->lfd < 0)
        return SC_EIO;
    int one = 1;
    setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(r->lfd, (struct sockaddr *)&r->o.listen, r->o.listen_len) < 0 ||
        listen(r->lfd, 4096) < 0)
        return SC_EIO;
    r->ep_listen.kind = EP_LISTEN;
    r->ep_timer.kind = EP_TIMER;
    r->ep_signal.kind = EP_SIGNAL;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &r->ep_listen};
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->lfd, &ev) < 0)
        return SC_EIO;
    r->listening = true;
    ev.data.ptr = &r->ep_timer;
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->tfd, &ev) < 0)
        return SC_EIO;
    ev.data.ptr = &r->ep_signal;
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sfd, &ev) < 0)
        return SC_EIO;
    return SC_OK;
}

/* Serves until SIGINT or SIGTERM. */
static void loop(struct relay *r)
{
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(r->epfd, evs, MAX_EVENTS, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "latency-relay: epoll_wait: %s\n", strerror(errno));
            return;
        }
        for (int i = 0; i < n; i++) {
            struct endpoint *ep = evs[i].data.ptr;
            switch (ep->kind) {
            case EP_LISTEN:
                accept_all(r);
                break;
            case EP_TIMER: {
                uint64_t ticks;
                while (read(r->tfd, &ticks, sizeof(ticks)) > 0) {
                }
                r->armed_ns = INT64_MAX; /* fired: arm it again below */
                break;
            }
            case EP_SIGNAL: {
                struct signalfd_siginfo si;
                while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                    if (si.ssi_signo == SIGUSR1) {
                        print_counters(r);
                        continue;
                    }
                    return;
                }
                break;
            }
            case EP_CONN:
                on_conn_event(r, ep->c, ep->side, evs[i].events);
                break;
            }
        }
        run_timers(r);
        free_dead(r);
    }
}

int main(int argc, char **argv)
{
    struct relay r;
    memset(&r, 0, sizeof(r));
    r.epfd = r.lfd = r.tfd = r.sfd = -1;
    r.armed_ns = INT64_MAX;
    lr_heap_init(&r.heap);
    int rc = lr_opts_parse(argc, argv, &r.o, stdout, stderr);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    int status = 0;
    if (setup(&r) != SC_OK) {
        fprintf(stderr, "latency-relay: cannot listen: %s\n", strerror(errno));
        status = 1;
        goto out;
    }
    if (!r.o.quiet)
        fprintf(stderr, "latency-relay: listening, delay %.3f ms each way, window %zu bytes%s\n",
                (double)r.o.delay_ns / 1e6, r.o.window,
                r.o.connect_rtt ? ", one round trip per new connection" : "");
    loop(&r);
out:
    while (r.conns != NULL)
        conn_close(&r, r.conns);
    free_dead(&r);
    if (!r.o.quiet && status == 0)
        print_counters(&r);
    lr_heap_free(&r.heap);
    lr_pool_drain(&r.pool);
    if (r.lfd >= 0)
        close(r.lfd);
    if (r.tfd >= 0)
        close(r.tfd);
    if (r.sfd >= 0)
        close(r.sfd);
    if (r.epfd >= 0)
        close(r.epfd);
    return status;
}
