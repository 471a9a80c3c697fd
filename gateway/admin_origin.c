/*
 * admin_origin.c - keeps web pages on other sites away from the admin API.
 *
 * A browser on the gateway's machine reaches a loopback listener too, so without a token a
 * malicious page could POST manifests (cross-site requests) or, by pointing its own domain
 * at 127.0.0.1, read the replies (DNS rebinding). Browsers say where a request comes from
 * (Sec-Fetch-Site, Origin) and name the site in Host; the gateway refuses what is not its
 * own page, including the opaque origin "null". Non-browser clients (curl, SDKs, s3cachectl) send
 * none of these headers.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gw.h"

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
static bool is_local_name(const char *host)
{
    char name[128];
    unsigned char addr[16];
    host_name(host, name, sizeof(name));
    return strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, addr) == 1 ||
           inet_pton(AF_INET6, name, addr) == 1;
}

/* True if origin ("scheme://host[:port]") names the same host and port as Host. */
static bool same_origin(const char *origin, const char *host)
{
    const char *auth = strstr(origin, "://");
    return auth != NULL && host != NULL && strcasecmp(auth + 3, host) == 0;
}

bool gw_admin_from_other_site(struct gw_req *q, bool token_checked, const char **why)
{
    const char *site = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    const char *origin = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Host");
    if (site != NULL && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0) {
        *why = "the admin API does not answer requests from other web sites";
        return true;
    }
    /* "null" is an opaque origin (a sandboxed iframe, a file: page): no site of ours. */
    if (origin != NULL && !same_origin(origin, host)) {
        *why = "the admin API does not answer requests from other web origins";
        return true;
    }
    if (!token_checked && host != NULL && !is_local_name(host)) {
        *why = "without an admin token, the admin API answers only requests addressed to "
               "localhost or an IP address";
        return true;
    }
    return false;
}
