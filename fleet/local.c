/*
 * local.c - this host's interface addresses, to find which entry of the fleet is this gateway
 * when --self is not given (on Kubernetes, the pod IP among the Service's records).
 */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_int.h"

static bool is_inet(const struct sockaddr *sa)
{
    return sa != NULL && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

sc_code fleet_local_load(struct fleet_local *out)
{
    struct ifaddrs *all = NULL;
    size_t n = 0;
    memset(out, 0, sizeof(*out));
    if (getifaddrs(&all) != 0)
        return SC_EIO;
    for (struct ifaddrs *i = all; i; i = i->ifa_next)
        n += is_inet(i->ifa_addr);
    out->addr = calloc(n ? n : 1, sizeof(*out->addr));
    if (out->addr == NULL) {
        freeifaddrs(all);
        return SC_ENOMEM;
    }
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (!is_inet(i->ifa_addr))
            continue;
        size_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                       : sizeof(struct sockaddr_in6);
        memcpy(&out->addr[out->n++], i->ifa_addr, len);
    }
    freeifaddrs(all);
    return SC_OK;
}

void fleet_local_free(struct fleet_local *l)
{
    free(l->addr);
    memset(l, 0, sizeof(*l));
}

/* The same address (the port and an IPv6 scope do not count). */
static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
    return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
                  sizeof(struct in6_addr)) == 0;
}

bool fleet_local_has(const struct fleet_local *l, const char *host)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    bool found = false;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return false;
    for (struct addrinfo *r = res; r && !found; r = r->ai_next) {
        for (size_t i = 0; i < l->n && !found; i++) {
            if (is_inet(r->ai_addr))
                found = same_addr(r->ai_addr, (const struct sockaddr *)&l->addr[i]);
        }
    }
    freeaddrinfo(res);
    return found;
}
