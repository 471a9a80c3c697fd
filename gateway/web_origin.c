/*
 * web_origin.c - keeps web pages on other sites away from what only local programs may use:
 * the admin API without a token, and S3 requests without --client-credentials (which the
 * gateway signs with its own credentials).
 *
 * A browser on the gateway's machine reaches a loopback listener too, so a malicious page
 * could POST manifests or a DeleteObjects body (cross-site requests) or, by pointing its own
 * domain at 127.0.0.1, read the replies (DNS rebinding). Browsers say where a request comes
 * from (Sec-Fetch-Site, Origin) and name the site in Host; the gateway refuses what is not its
 * own page, including the opaque origin "null". Non-browser clients (curl, SDKs, the AWS CLI,
 * s3cachectl) send none of these headers.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "web_origin.h"

#include "gw.h"
#include "config.h"

/* The host part of a Host header ("name:port", "[v6]:port"), copied into buf. */
static const char *host_name(const char *host, char *buf, size_t cap)
{
    size_t n = strlen(host);
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        n = end ? (size_t)(end - host - 1) : 0;
        host++;
    } else {
        const char *colon = strchr(host, ':');
        if (colon)
            n = (size_t)(colon - host);
    }
    snprintf(buf, cap, "%.*s", (int)n, host);
    return buf;
}

/* True for names only this machine answers to: localhost and IP literals. */
static bool is_local_name(const char *name)
{
    unsigned char addr[16];
    return strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, addr) == 1 ||
           inet_pton(AF_INET6, name, addr) == 1;
}

/* True if name is domain (the --vhost-domain, with or without its leading dot). */
static bool is_domain(const char *name, const char *domain)
{
    if (domain == NULL || domain[0] == '\0')
        return false;
    return strcasecmp(name, domain[0] == '.' ? domain + 1 : domain) == 0;
}

/*
 * True for names a DNS-rebinding page cannot take: localhost, IP literals, and the operator's
 * own --vhost-domain (the bare domain, or a bucket under it as the target's parse found).
 */
static bool is_own_name(const struct gw_req *q, const char *host)
{
    char name[128];
    host_name(host, name, sizeof(name));
    return is_local_name(name) || q->tgt.virtual_host || is_domain(name, q->g->cfg->vhost_domain);
}

/* True if origin ("scheme://host[:port]") names the same host and port as Host. */
static bool same_origin(const char *origin, const char *host)
{
    const char *auth = strstr(origin, "://");
    return auth != NULL && host != NULL && strcasecmp(auth + 3, host) == 0;
}

bool gw_from_other_site(struct gw_req *q, bool check_host, const char **why)
{
    const char *site = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    const char *origin = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Host");
    if (site != NULL && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0) {
        *why = "requests that a browser sends from another web site are refused";
        return true;
    }
    /* "null" is an opaque origin (a sandboxed iframe, a file: page): no site of ours. */
    if (origin != NULL && !same_origin(origin, host)) {
        *why = "requests from another web origin are refused";
        return true;
    }
    if (check_host && host != NULL && !is_own_name(q, host)) {
        *why = "only requests addressed to localhost, an IP address or the --vhost-domain are "
               "answered here (another name may be a DNS-rebinding web page)";
        return true;
    }
    return false;
}
