/*
 * url.c - one peer URL ("http(s)://HOST:PORT") or DNS name ("NAME:PORT") parsed into the
 * canonical form every gateway of a fleet computes alike (so their hashes agree), and the URL
 * of a resolved address. Everything here is input from flags or DNS: bounded, strict.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fleet_int.h"

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-';
}

/* "1".."65535" without a sign or a leading zero, to its canonical text. */
static bool parse_port(const char *p, const char *end, char port[FLEET_PORT_MAX])
{
    size_t len = (size_t)(end - p);
    if (len == 0 || len > 5 || p[0] == '0')
        return false;
    unsigned v = 0;
    for (const char *s = p; s < end; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (unsigned)(*s - '0');
    }
    if (v > 65535)
        return false;
    snprintf(port, FLEET_PORT_MAX, "%u", v);
    return true;
}

/* A bracketed IPv6 address at p (p[0] == '['), canonical in host; *after: past the ']'. */
static bool parse_v6(const char *p, const char *end, char host[FLEET_HOST_MAX], const char **after)
{
    const char *close = memchr(p, ']', (size_t)(end - p));
    char text[INET6_ADDRSTRLEN];
    size_t len = close ? (size_t)(close - p - 1) : 0;
    struct in6_addr a;
    if (len == 0 || len >= sizeof(text))
        return false;
    memcpy(text, p + 1, len);
    text[len] = '\0';
    if (inet_pton(AF_INET6, text, &a) != 1 || inet_ntop(AF_INET6, &a, host, FLEET_HOST_MAX) == NULL)
        return false;
    *after = close + 1;
    return true;
}

/* A name or an IPv4 address up to the next ':', lower case in host. Digits and dots only must
 * be a valid IPv4 address (no name is all digits). */
static bool parse_name(const char *p, const char *end, char host[FLEET_HOST_MAX],
                       const char **after)
{
    const char *s = p;
    bool only_digits = true;
    while (s < end && *s != ':') {
        if (!is_name_char(*s))
            return false;
        only_digits = only_digits && (*s == '.' || (*s >= '0' && *s <= '9'));
        s++;
    }
    size_t len = (size_t)(s - p);
    if (len == 0 || len >= FLEET_HOST_MAX || p[0] == '-' || p[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        host[i] = (char)((p[i] >= 'A' && p[i] <= 'Z') ? p[i] - 'A' + 'a' : p[i]);
    host[len] = '\0';
    if (only_digits) {
        struct in_addr a;
        if (inet_pton(AF_INET, host, &a) != 1 ||
            inet_ntop(AF_INET, &a, host, FLEET_HOST_MAX) == NULL)
            return false;
    }
    *after = s;
    return true;
}

/* HOST:PORT from p to end exactly; *bracketed: HOST was an [IPv6] address. */
static bool parse_host_port(const char *p, const char *end, char host[FLEET_HOST_MAX],
                            char port[FLEET_PORT_MAX], bool *bracketed)
{
    const char *s = NULL;
    *bracketed = p < end && p[0] == '[';
    if (!(*bracketed ? parse_v6(p, end, host, &s) : parse_name(p, end, host, &s)))
        return false;
    return s < end && *s == ':' && parse_port(s + 1, end, port);
}

sc_code fleet_url_parse(const char *text, size_t len, struct fleet_url *out)
{
    static const char *const schemes[] = {"http://", "https://"};
    const char *end = text + len;
    memset(out, 0, sizeof(*out));
    if (len == 0 || len >= FLEET_URL_MAX + 1) /* room for a trailing '/' */
        return SC_EINVAL;
    if (memchr(text, '\0', len) != NULL)
        return SC_EINVAL;
    if (end[-1] == '/')
        end--;
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(schemes[i]);
        bool v6;
        if (len < n || strncasecmp(text, schemes[i], n) != 0)
            continue;
        if (!parse_host_port(text + n, end, out->host, out->port, &v6))
            return SC_EINVAL;
        int w = snprintf(out->url, sizeof(out->url), v6 ? "%.*s[%s]:%s" : "%.*s%s:%s", (int)n,
                         schemes[i], out->host, out->port);
        return w > 0 && (size_t)w < sizeof(out->url) ? SC_OK : SC_EINVAL;
    }
    return SC_EINVAL;
}

sc_code fleet_dns_parse(const char *text, char host[FLEET_HOST_MAX], char port[FLEET_PORT_MAX])
{
    bool v6;
    size_t len = text ? strnlen(text, FLEET_HOST_MAX + FLEET_PORT_MAX + 2) : 0;
    if (len == 0 || len > FLEET_HOST_MAX + FLEET_PORT_MAX + 1)
        return SC_EINVAL;
    return parse_host_port(text, text + len, host, port, &v6) ? SC_OK : SC_EINVAL;
}

sc_code fleet_url_of_addr(const struct sockaddr *sa, const char *port, struct fleet_url *out)
{
    const void *a = NULL;
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET)
        a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6)
        a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (a == NULL || inet_ntop(sa->sa_family, a, out->host, sizeof(out->host)) == NULL)
        return SC_EINVAL;
    snprintf(out->port, sizeof(out->port), "%s", port);
    int w = snprintf(out->url, sizeof(out->url),
                     sa->sa_family == AF_INET6 ? "http://[%s]:%s" : "http://%s:%s", out->host,
                     out->port);
    return w > 0 && (size_t)w < sizeof(out->url) ? SC_OK : SC_EINVAL;
}
