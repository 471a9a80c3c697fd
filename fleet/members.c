/*
 * members.c - the fleet's first members: the static --peers list (parsed, this gateway found
 * in it), or one resolution of --peers-dns (resolve.c), which may leave this gateway alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "fleet_int.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool seen_before(const struct fleet_url *urls, size_t n, const char *url)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(urls[i].url, url) == 0)
            return true;
    }
    return false;
}

sc_code fleet_parse_peers(const char *list, struct fleet_url *urls, size_t cap, size_t *n)
{
    const char *p = list;
    *n = 0;
    if (list == NULL)
        return SC_EINVAL;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *s = p;
        while (s < end && is_space(*s))
            s++;
        while (end > s && is_space(end[-1]))
            end--;
        if (*n == cap) {
            sc_err("fleet: --peers: more than %zu URLs", cap);
            return SC_EINVAL;
        }
        if (fleet_url_parse(s, (size_t)(end - s), &urls[*n]) != SC_OK) {
            sc_err("fleet: --peers: entry %zu is not http(s)://HOST:PORT", *n + 1);
            return SC_EINVAL;
        }
        if (seen_before(urls, *n, urls[*n].url)) {
            sc_err("fleet: --peers: %s is there twice", urls[*n].url);
            return SC_EINVAL;
        }
        (*n)++;
        if (comma == NULL)
            return SC_OK;
        p = comma + 1;
    }
}

/* The one entry whose address is this host's (several: ambiguous, say which with --self). */
static sc_code find_local(const struct fleet_url *urls, size_t n, size_t *which)
{
    struct fleet_local local;
    size_t found = 0;
    sc_code rc = fleet_local_load(&local);
    if (rc != SC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (fleet_local_has(&local, urls[i].host)) {
            *which = i;
            found++;
        }
    }
    fleet_local_free(&local);
    if (found == 1)
        return SC_OK;
    sc_err("fleet: %s entry of --peers is this host; give --self", found ? "more than one" : "no");
    return SC_EINVAL;
}

static sc_code find_self(fleet *f, const struct fleet_url *urls, size_t n, size_t *which)
{
    if (!f->self_given)
        return find_local(urls, n, which);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(urls[i].url, f->self_url) == 0) {
            *which = i;
            return SC_OK;
        }
    }
    sc_err("fleet: --self %s is not in --peers", f->self_url);
    return SC_EINVAL;
}

static sc_code start_static(fleet *f, const char *list)
{
    struct fleet_url *urls = calloc(FLEET_MAX_PEERS, sizeof(*urls));
    bool *self = calloc(FLEET_MAX_PEERS, sizeof(*self));
    size_t n = 0, which = 0;
    sc_code rc = urls && self ? SC_OK : SC_ENOMEM;
    if (rc == SC_OK)
        rc = fleet_parse_peers(list, urls, FLEET_MAX_PEERS, &n);
    if (rc == SC_OK)
        rc = find_self(f, urls, n, &which);
    if (rc == SC_OK) {
        self[which] = true;
        snprintf(f->self_url, sizeof(f->self_url), "%s", urls[which].url);
        atomic_store(&f->self_known, true);
        struct fleet_view *v = fleet_view_new(urls, self, n);
        if (v == NULL)
            rc = SC_ENOMEM;
        else
            fleet_view_install(f, v);
    }
    free(urls);
    free(self);
    return rc;
}

static sc_code start_dns(fleet *f, const char *name_port)
{
    if (fleet_dns_parse(name_port, f->dns_host, f->dns_port) != SC_OK) {
        sc_err("fleet: --peers-dns wants NAME:PORT");
        return SC_EINVAL;
    }
    f->dns = true;
    sc_code rc = fleet_resolve_once(f);
    if (rc == SC_ENOMEM)
        return rc;
    if (f->view == NULL) { /* the name does not resolve yet: alone until it does */
        struct fleet_view *v = fleet_view_alone(f->self_given ? f->self_url : "");
        if (v == NULL)
            return SC_ENOMEM;
        fleet_view_install(f, v);
    }
    return SC_OK;
}

sc_code fleet_members_start(fleet *f, const struct fleet_config *cfg)
{
    return cfg->peers ? start_static(f, cfg->peers) : start_dns(f, cfg->peers_dns);
}
