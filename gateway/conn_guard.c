/*
 * conn_guard.c - the slow-client watchdog (see conn_guard.h): a list of connections under one
 * lock, a thread that looks at each twice a second, and conn_guard_judge(), which decides.
 * Request threads do not take the lock for a request: they post its phase and the suspensions
 * to atomics of the connection's entry, which the watchdog reads at each look.
 */
#include "conn_guard.h"

#include <arpa/inet.h>
#include <linux/sockios.h> /* SIOCOUTQ */
#include <linux/tcp.h>     /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "addr.h"
#include "gw.h"

#define LOOK_EVERY_NS (500 * 1000 * 1000L)

struct guard_conn {
    struct guard_conn *prev, *next;
    int fd;
    bool cut;                  /* shut down: libmicrohttpd closes it next */
    atomic_bool suspended;     /* the gateway holds the connection now */
    atomic_bool was_suspended; /* ... or did since the last look */
    atomic_uint posted;        /* the request thread's phase (conn_guard_post) */
    unsigned seen;             /* posted as of the watchdog's last look */
    struct guard_track track;  /* the watchdog's alone */
};

struct conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    bool stopping;
    struct guard_limits lim;
    struct guard_conn *conns;
    atomic_uint_fast64_t counts[GUARD_SLOW_READER + 1]; /* by verdict */
};

/* ---- the decision ------------------------------------------------------------------ */

static enum guard_verdict judge_idle(struct guard_track *t, const struct guard_sample *s)
{
    /* Without a byte count the head is timed from the end of the previous request. */
    bool head_began = !s->have_bytes || s->unread || (t->have_mark && s->bytes > t->mark);
    if (head_began) {
        t->phase = GUARD_HEAD;
        t->since = s->now;
    } else if (!t->have_mark) {
        t->mark = s->bytes;
        t->have_mark = true;
    }
    return GUARD_OK;
}

/*
 * One look at a body moving at bytes so far, which must average lim->min_rate over windows of
 * window seconds of the client's time; counted: the time since the last look was the client's.
 */
static bool rate_too_low(struct guard_track *t, double now, uint64_t bytes, bool counted,
                         double window, const struct guard_limits *lim)
{
    if (!t->have_mark) {
        t->mark = bytes;
        t->have_mark = true;
        t->since = now;
        t->active = 0;
        return false;
    }
    if (counted)
        t->active += now - t->since;
    t->since = now;
    if (t->active < window)
        return false;
    if ((double)(bytes - t->mark) < lim->min_rate * t->active)
        return true;
    t->mark = bytes;
    t->active = 0;
    return false;
}

static enum guard_verdict judge_body(struct guard_track *t, const struct guard_sample *s,
                                     const struct guard_limits *lim)
{
    if (lim->min_rate <= 0 || !s->have_bytes)
        return GUARD_OK;
    /* Time the gateway held the connection, or left bytes unread, is not the client's. */
    bool counted = !s->held && !s->unread;
    return rate_too_low(t, s->now, s->bytes, counted, lim->window, lim) ? GUARD_SLOW_BODY
                                                                        : GUARD_OK;
}

static enum guard_verdict judge_response(struct guard_track *t, const struct guard_sample *s,
                                         const struct guard_limits *lim)
{
    if (lim->min_rate <= 0 || !s->have_bytes)
        return GUARD_OK;
    /* Only while bytes wait for the client: the gateway's own waits leave the socket empty. */
    return rate_too_low(t, s->now, s->acked, s->unsent, lim->send_window, lim) ? GUARD_SLOW_READER
                                                                               : GUARD_OK;
}

unsigned conn_guard_post(unsigned posted, enum guard_phase phase)
{
    return ((posted >> 2) + 1) << 2 | ((unsigned)phase & 3u);
}

bool conn_guard_catch_up(struct guard_track *t, unsigned *seen, unsigned posted)
{
    if (posted == *seen)
        return false;
    *seen = posted;
    t->phase = GUARD_POST_PHASE(posted);
    t->have_mark = false;
    return true;
}

enum guard_verdict conn_guard_judge(struct guard_track *t, const struct guard_sample *s,
                                    const struct guard_limits *lim)
{
    switch (t->phase) {
    case GUARD_IDLE:
        return judge_idle(t, s);
    case GUARD_HEAD:
        return lim->head_seconds > 0 && s->now - t->since >= lim->head_seconds ? GUARD_SLOW_HEAD
                                                                               : GUARD_OK;
    case GUARD_BODY:
        return judge_body(t, s, lim);
    case GUARD_BUSY:
        return judge_response(t, s, lim);
    }
    return GUARD_OK;
}

/* ---- looking at sockets ------------------------------------------------------------- */

/* One look at c's socket (guard locked, so c->fd is still c's). */
static void look(struct guard_conn *c, double now, struct guard_sample *s)
{
    struct tcp_info ti = {0};
    socklen_t len = sizeof(ti);
    int unread = 0, unsent = 0;
    size_t need = offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received);
    s->now = now;
    s->have_bytes = getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && len >= need;
    s->bytes = s->have_bytes ? ti.tcpi_bytes_received : 0;
    s->acked = s->have_bytes ? ti.tcpi_bytes_acked : 0;
    s->unread = ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0;
    s->unsent = ioctl(c->fd, SIOCOUTQ, &unsent) == 0 && unsent > 0;
    bool suspended = atomic_load(&c->suspended);
    s->held = atomic_exchange(&c->was_suspended, suspended) || suspended;
}

/* Ends c: libmicrohttpd reads the end of input, or cannot write, and closes it (guard locked). */
static void cut(struct conn_guard *cg, struct guard_conn *c, enum guard_verdict v)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char peer[INET6_ADDRSTRLEN] = "?";
    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0)
        gw_addr_string((const struct sockaddr *)&ss, peer, sizeof(peer));
    /* A reset when libmicrohttpd closes it: what is still queued for a slow reader is dropped,
     * not trickled out by the kernel for minutes after the connection is gone. */
    struct linger reset = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    shutdown(c->fd, SHUT_RDWR);
    c->cut = true;
    atomic_fetch_add(&cg->counts[v], 1);
    if (v == GUARD_SLOW_HEAD)
        sc_info("closed a connection from %s: its request head was not whole %g s after its "
                "first byte (--header-timeout)",
                peer, cg->lim.head_seconds);
    else
        sc_info("closed a connection from %s: it %s slower than %g bytes a second "
                "(--min-body-rate)",
                peer, v == GUARD_SLOW_BODY ? "sent its request body" : "read its response",
                cg->lim.min_rate);
}

static void look_at_all(struct conn_guard *cg)
{
    double now = sc_now_seconds();
    for (struct guard_conn *c = cg->conns; c != NULL; c = c->next) {
        if (c->cut)
            continue;
        conn_guard_catch_up(&c->track, &c->seen, atomic_load(&c->posted));
        if (c->track.phase == GUARD_BUSY && cg->lim.min_rate <= 0)
            continue;
        struct guard_sample s;
        look(c, now, &s);
        enum guard_verdict v = conn_guard_judge(&c->track, &s, &cg->lim);
        if (v != GUARD_OK)
            cut(cg, c, v);
    }
}

static void *watch(void *arg)
{
    struct conn_guard *cg = arg;
    pthread_mutex_lock(&cg->mu);
    while (!cg->stopping) {
        struct timespec until = sc_deadline_in_ns(LOOK_EVERY_NS);
        pthread_cond_timedwait(&cg->wake, &cg->mu, &until);
        if (!cg->stopping)
            look_at_all(cg);
    }
    pthread_mutex_unlock(&cg->mu);
    return NULL;
}

/* ---- the guard ------------------------------------------------------------------------ */

sc_code conn_guard_start(unsigned head_seconds, uint64_t min_rate, unsigned send_window,
                         conn_guard **out)
{
    *out = NULL;
    if (head_seconds == 0 && min_rate == 0)
        return SC_OK;
    struct conn_guard *cg = calloc(1, sizeof(*cg));
    if (cg == NULL)
        return SC_ENOMEM;
    cg->lim = (struct guard_limits){
        .head_seconds = head_seconds,
        .min_rate = (double)min_rate,
        .window = head_seconds > 0 ? head_seconds : GUARD_DEFAULT_WINDOW,
        .send_window = send_window > 0 ? send_window : GUARD_DEFAULT_WINDOW,
    };
    sc_cond_init_monotonic(&cg->wake);
    pthread_mutex_init(&cg->mu, NULL);
    if (pthread_create(&cg->thread, NULL, watch, cg) != 0) {
        pthread_cond_destroy(&cg->wake);
        pthread_mutex_destroy(&cg->mu);
        free(cg);
        return SC_EIO;
    }
    *out = cg;
    return SC_OK;
}

void conn_guard_stop(conn_guard *cg)
{
    if (cg == NULL)
        return;
    pthread_mutex_lock(&cg->mu);
    cg->stopping = true;
    pthread_cond_signal(&cg->wake);
    pthread_mutex_unlock(&cg->mu);
    pthread_join(cg->thread, NULL);
    while (cg->conns != NULL) { /* none once the daemon has closed every connection */
        struct guard_conn *c = cg->conns;
        cg->conns = c->next;
        free(c);
    }
    pthread_cond_destroy(&cg->wake);
    pthread_mutex_destroy(&cg->mu);
    free(cg);
}

struct guard_conn *conn_guard_open(conn_guard *cg, int fd)
{
    if (cg == NULL || fd < 0)
        return NULL;
    struct guard_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->fd = fd;
    /* A new connection has received nothing: its head begins with the first byte. */
    c->track = (struct guard_track){.phase = GUARD_IDLE, .have_mark = true, .mark = 0};
    pthread_mutex_lock(&cg->mu);
    c->next = cg->conns;
    if (cg->conns != NULL)
        cg->conns->prev = c;
    cg->conns = c;
    pthread_mutex_unlock(&cg->mu);
    return c;
}

void conn_guard_close(conn_guard *cg, struct guard_conn *c)
{
    if (cg == NULL || c == NULL)
        return;
    pthread_mutex_lock(&cg->mu);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        cg->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&cg->mu);
    free(c);
}

/* Moves c to phase; the next look takes a fresh byte count. The request's thread only. */
static void set_phase(conn_guard *cg, struct guard_conn *c, enum guard_phase phase)
{
    if (cg == NULL || c == NULL)
        return;
    unsigned posted = atomic_load_explicit(&c->posted, memory_order_relaxed);
    atomic_store_explicit(&c->posted, conn_guard_post(posted, phase), memory_order_release);
}

void conn_guard_head_in(conn_guard *cg, struct guard_conn *c, bool body)
{
    set_phase(cg, c, body ? GUARD_BODY : GUARD_BUSY);
}

void conn_guard_body_in(conn_guard *cg, struct guard_conn *c)
{
    if (c != NULL &&
        GUARD_POST_PHASE(atomic_load_explicit(&c->posted, memory_order_relaxed)) == GUARD_BODY)
        set_phase(cg, c, GUARD_BUSY);
}

void conn_guard_request_done(conn_guard *cg, struct guard_conn *c)
{
    set_phase(cg, c, GUARD_IDLE);
}

void conn_guard_hold(conn_guard *cg, struct guard_conn *c, bool held)
{
    if (cg == NULL || c == NULL)
        return;
    atomic_store(&c->suspended, held);
    if (held)
        atomic_store(&c->was_suspended, true);
}

uint64_t conn_guard_count(conn_guard *cg, enum guard_verdict verdict)
{
    return cg && verdict != GUARD_OK ? atomic_load(&cg->counts[verdict]) : 0;
}
