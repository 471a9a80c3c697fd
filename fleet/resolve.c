/*
 * resolve.c - --peers-dns NAME:PORT: every A and AAAA record of NAME is a peer
 * ("http://ADDR:PORT"), resolved at start and then every resolve_ms on a thread of its own.
 * A failed lookup keeps the last members (a DNS hiccup must not split the fleet); an answer
 * without this gateway leaves it alone (it owns everything) until one has it, since its peers
 * do not count it either.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "fleet_int.h"

static int by_url(const void *a, const void *b)
{
    return strcmp(((const struct fleet_url *)a)->url, ((const struct fleet_url *)b)->url);
}

/* The records of res as URLs, sorted, without repeats: *n of them (0: none usable). */
static struct fleet_url *urls_of(const struct addrinfo *res, const char *port, size_t *n)
{
    size_t cap = 0, k = 0;
    for (const struct addrinfo *r = res; r; r = r->ai_next)
        cap++;
    struct fleet_url *urls = calloc(cap ? cap : 1, sizeof(*urls));
    if (urls == NULL)
        return NULL;
    for (const struct addrinfo *r = res; r; r = r->ai_next) {
        if (fleet_url_of_addr(r->ai_addr, port, &urls[k]) == SC_OK)
            k++;
    }
    qsort(urls, k, sizeof(*urls), by_url);
    *n = 0;
    for (size_t i = 0; i < k; i++) {
        if (*n == 0 || strcmp(urls[*n - 1].url, urls[i].url) != 0)
            urls[(*n)++] = urls[i];
    }
    return urls;
}

/* Marks which of urls is this gateway; returns how many are. Learns self_url on the first. */
static size_t mark_self(fleet *f, const struct fleet_url *urls, size_t n, bool *self)
{
    struct fleet_local local = {0};
    size_t found = 0;
    if (!f->self_given && fleet_local_load(&local) != SC_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        self[i] = f->self_given ? strcmp(urls[i].url, f->self_url) == 0
                                : fleet_local_has(&local, urls[i].host);
        if (self[i] && found++ == 0 && !atomic_load(&f->self_known)) {
            snprintf(f->self_url, sizeof(f->self_url), "%s", urls[i].url);
            atomic_store(&f->self_known, true);
        }
    }
    fleet_local_free(&local);
    return found;
}

static struct fleet_view *view_of(fleet *f, struct fleet_url *urls, size_t n)
{
    if (n > FLEET_MAX_PEERS) {
        sc_warn("fleet: %s has %zu records; the first %d by address are the fleet", f->dns_host, n,
                FLEET_MAX_PEERS);
        n = FLEET_MAX_PEERS;
    }
    bool *self = calloc(n ? n : 1, sizeof(*self));
    if (self == NULL)
        return NULL;
    struct fleet_view *v = NULL;
    if (n > 0 && mark_self(f, urls, n, self) > 0) {
        v = fleet_view_new(urls, self, n);
        f->alone_warned = false;
    } else {
        if (!f->alone_warned)
            sc_warn("fleet: this gateway is not among the %zu records of %s: alone until it is", n,
                    f->dns_host);
        f->alone_warned = true;
        v = fleet_view_alone(atomic_load(&f->self_known) ? f->self_url : "");
    }
    free(self);
    return v;
}

sc_code fleet_resolve_once(fleet *f)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    size_t n = 0;
    int e = getaddrinfo(f->dns_host, f->dns_port, &hints, &res);
    if (e != 0) {
        sc_warn("fleet: resolving %s: %s (the members stay as they were)", f->dns_host,
                gai_strerror(e));
        return SC_EUPSTREAM;
    }
    struct fleet_url *urls = urls_of(res, f->dns_port, &n);
    freeaddrinfo(res);
    struct fleet_view *v = urls ? view_of(f, urls, n) : NULL;
    free(urls);
    if (v == NULL)
        return SC_ENOMEM;
    fleet_view_install(f, v);
    return SC_OK;
}

static void *resolver_main(void *arg)
{
    fleet *f = arg;
    pthread_mutex_lock(&f->stop_mu);
    while (!f->stopping) {
        struct timespec until = sc_deadline_in_ms(f->resolve_ms);
        int e = 0;
        while (!f->stopping && e != ETIMEDOUT)
            e = pthread_cond_timedwait(&f->stop_cv, &f->stop_mu, &until);
        if (f->stopping)
            break;
        pthread_mutex_unlock(&f->stop_mu);
        fleet_resolve_once(f);
        pthread_mutex_lock(&f->stop_mu);
    }
    pthread_mutex_unlock(&f->stop_mu);
    return NULL;
}

sc_code fleet_resolver_start(fleet *f)
{
    if (sc_cond_init_monotonic(&f->stop_cv) != 0)
        return SC_ENOMEM;
    if (pthread_mutex_init(&f->stop_mu, NULL) != 0) {
        pthread_cond_destroy(&f->stop_cv);
        return SC_ENOMEM;
    }
    f->stopping = false;
    if (pthread_create(&f->resolver, NULL, resolver_main, f) != 0) {
        pthread_mutex_destroy(&f->stop_mu);
        pthread_cond_destroy(&f->stop_cv);
        return SC_ENOMEM;
    }
    f->resolver_running = true;
    return SC_OK;
}

void fleet_resolver_stop(fleet *f)
{
    if (!f->resolver_running)
        return;
    pthread_mutex_lock(&f->stop_mu);
    f->stopping = true;
    pthread_cond_signal(&f->stop_cv);
    pthread_mutex_unlock(&f->stop_mu);
    pthread_join(f->resolver, NULL);
    pthread_mutex_destroy(&f->stop_mu);
    pthread_cond_destroy(&f->stop_cv);
    f->resolver_running = false;
}
