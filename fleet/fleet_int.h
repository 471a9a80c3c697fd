/*
 * fleet_int.h - fleet/'s private types and the functions its files share. Nothing outside
 * fleet/ (and its unit tests) includes it.
 *
 * The members are an immutable view (struct fleet_view: sorted by URL, never changed once
 * installed but for each member's atomic health fields), swapped under f->lock's write side
 * when the membership changes; every reader (fleet_owner_of on each miss) takes the read
 * side for a walk over at most FLEET_MAX_PEERS members: no allocation, one clock read.
 *
 *   url.c        one peer URL or NAME:PORT parsed into canonical form; a URL from an address
 *   local.c      this host's interface addresses (getifaddrs): is an entry this gateway?
 *   view.c       a view built from URLs, found by URL, installed (health carried over)
 *   members.c    the static list (--peers) and the first view of either form
 *   resolve.c    --peers-dns: one resolution, and the thread that repeats it
 *   owner.c      rendezvous ownership over the live members
 *   health.c     failures, answers, backoff, the generation, per-peer counters
 *   peer_auth.c  HMAC-SHA256 signatures of peer requests
 *   fleet.c      start, free, self, the clock
 */
#ifndef FLEET_INT_H
#define FLEET_INT_H

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "fleet.h"

#define FLEET_HOST_MAX 254 /* a DNS name (253) or an address, with its NUL */
#define FLEET_PORT_MAX 6   /* "65535" and a NUL */

/* A parsed peer URL: its canonical text and the parts it was made of. */
struct fleet_url {
    char url[FLEET_URL_MAX];   /* scheme://host:port, lower case, no trailing '/' */
    char host[FLEET_HOST_MAX]; /* without brackets */
    char port[FLEET_PORT_MAX]; /* decimal, no leading zero */
};

/* One member of a view. The atomics change under the read lock; the rest never changes. */
struct fleet_member {
    char url[FLEET_URL_MAX];
    uint64_t hash; /* sc_bytes_hash of url */
    bool self;
    _Atomic int64_t down_until_ms; /* on f's clock; 0: up (a past time: up, not yet counted) */
    _Atomic uint32_t backoff_ms;   /* the last backoff given; 0 after an answer */
    _Atomic uint64_t requests, errors, bytes, micros; /* micros: to the head, answered ones */
};

struct fleet_view {
    size_t n; /* at least 1: this gateway is always a member */
    struct fleet_member m[];
};

struct fleet {
    pthread_rwlock_t lock;   /* the view pointer: read side to use it, write side to swap */
    struct fleet_view *view; /* never NULL after fleet_start */
    _Atomic uint64_t generation;

    unsigned char *secret; /* a copy, wiped on free */
    size_t secret_len;

    char self_url[FLEET_URL_MAX]; /* written once, before self_known is set */
    _Atomic bool self_known;      /* false only with DNS, no --self, this host not yet found */
    bool self_given;              /* --self: the one entry equal to it is this gateway */

    bool dns; /* --peers-dns: the name and port below are resolved every resolve_ms */
    char dns_host[FLEET_HOST_MAX];
    char dns_port[FLEET_PORT_MAX];
    bool alone_warned; /* the resolver said this gateway is not among the records */
    unsigned resolve_ms, down_min_ms, down_max_ms;

    int64_t (*now_ms)(void *arg); /* the monotonic clock in ms; a test may drive its own */
    void *now_arg;

    pthread_t resolver;
    bool resolver_running;
    pthread_mutex_t stop_mu; /* guards stopping; stop_cv wakes the resolver at once */
    pthread_cond_t stop_cv;
    bool stopping;
};

/* Whether m is down at now (a backoff that has run out is up). */
static inline bool fleet_member_down(const struct fleet_member *m, int64_t now)
{
    int64_t until = atomic_load_explicit(&m->down_until_ms, memory_order_relaxed);
    return until != 0 && now < until;
}

/* ---- fleet.c ---- */

/* Now on f's clock, in milliseconds. */
int64_t fleet_now_ms(const fleet *f);

/*
 * Lets a test drive f's clock: now_ms(arg) is called wherever f reads the time (backoffs,
 * their expiry). Set it before f is used from another thread.
 */
void fleet_set_clock(fleet *f, int64_t (*now_ms)(void *arg), void *arg);

/* ---- url.c ---- */

/* Parses "http(s)://HOST:PORT[/]" (HOST a name, an IPv4 address or [IPv6]) of len bytes.
 * Returns SC_OK or SC_EINVAL. */
sc_code fleet_url_parse(const char *text, size_t len, struct fleet_url *out);

/* Parses "NAME:PORT" (NAME a DNS name or an address, [IPv6] bracketed). SC_OK, SC_EINVAL. */
sc_code fleet_dns_parse(const char *text, char host[FLEET_HOST_MAX], char port[FLEET_PORT_MAX]);

/* "http://ADDR:PORT" or "http://[V6]:PORT" for an AF_INET or AF_INET6 address. SC_OK, SC_EINVAL. */
sc_code fleet_url_of_addr(const struct sockaddr *sa, const char *port, struct fleet_url *out);

/* ---- local.c ---- */

/* This host's interface addresses (AF_INET and AF_INET6). */
struct fleet_local {
    size_t n;
    struct sockaddr_storage *addr;
};

/* Loads them with getifaddrs. SC_OK, SC_EIO, SC_ENOMEM; fleet_local_free() after SC_OK. */
sc_code fleet_local_load(struct fleet_local *out);
void fleet_local_free(struct fleet_local *l);

/* Whether host (an address, or a name resolved here) is one of l's addresses. */
bool fleet_local_has(const struct fleet_local *l, const char *host);

/* ---- view.c ---- */

/* A view of n URLs (sorted here; n >= 1, distinct), self[i] marking this gateway's. NULL: ENOMEM.
 * self may be NULL: no entry is this gateway. */
struct fleet_view *fleet_view_new(const struct fleet_url *urls, const bool *self, size_t n);

/* The view of this gateway alone (url: its URL, or "" while unknown). NULL: ENOMEM. */
struct fleet_view *fleet_view_alone(const char *url);

/* The member of v whose URL is url, or NULL. */
struct fleet_member *fleet_view_find(struct fleet_view *v, const char *url);

/* Makes v f's view (taking it), carrying over the health of members still present, and bumps
 * the generation when the set of URLs or which is this gateway changed. */
void fleet_view_install(fleet *f, struct fleet_view *v);

/* ---- members.c ---- */

/* Parses the --peers list into urls (cap entries). SC_OK, SC_EINVAL (the reason logged: malformed,
 * empty entry, a duplicate, more than cap). */
sc_code fleet_parse_peers(const char *list, struct fleet_url *urls, size_t cap, size_t *n);

/* Builds and installs f's first view from cfg (the static list, or one DNS resolution). */
sc_code fleet_members_start(fleet *f, const struct fleet_config *cfg);

/* ---- resolve.c ---- */

/* Resolves f's DNS name once and installs the view it gives (none on a failed lookup:
 * the last view stays). SC_OK, SC_EUPSTREAM (lookup failed), SC_ENOMEM. */
sc_code fleet_resolve_once(fleet *f);

/* Starts and stops the thread that calls fleet_resolve_once every resolve_ms. */
sc_code fleet_resolver_start(fleet *f);
void fleet_resolver_stop(fleet *f);

#endif
