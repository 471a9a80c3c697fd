/*
 * endpoint.c - where s3cachectl sends requests and with which token (see
 * ctl.h): the endpoint in the AWS CLI's order (--endpoint-url,
 * AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, a default), checked so that paths
 * can be appended to it, and the admin token, checked so that it cannot
 * break out of its header. Neither the token nor a URL's user info is ever
 * put into a message.
 */
#include <string.h>
#include <strings.h>

#include "ctl.h"

static const char *nonempty(const char *s)
{
    return s != NULL && *s != '\0' ? s : NULL;
}

/* Checks url (scheme, host, no user info, query or fragment) and copies it without trailing '/'. */
static sc_code check_url(const char *url, const char *source, struct ctl_endpoint *out, char *err,
                         size_t err_len)
{
    size_t scheme = strncasecmp(url, "http://", 7) == 0    ? 7
                    : strncasecmp(url, "https://", 8) == 0 ? 8
                                                           : 0;
    const char *host = url + scheme;
    size_t host_len = strcspn(host, "/");
    const char *why = NULL;
    if (scheme == 0)
        why = "it must start with http:// or https:// (like http://127.0.0.1:8080)";
    else if (host_len == 0)
        why = "it has no host";
    else if (memchr(host, '@', host_len) != NULL)
        why = "user info (user:password@) is not allowed";
    else if (strpbrk(url, "?# \t\r\n") != NULL)
        why = "it must not have a query, a fragment or spaces";
    else if (strlen(url) >= sizeof(out->url))
        why = "it is too long";
    if (why != NULL) {
        snprintf(err, err_len, "bad endpoint URL from %s: %s", source, why);
        return SC_EINVAL;
    }
    snprintf(out->url, sizeof(out->url), "%s", url);
    size_t n = strlen(out->url);
    while (n > scheme + host_len && out->url[n - 1] == '/')
        out->url[--n] = '\0';
    out->source = source;
    return SC_OK;
}

sc_code ctl_resolve_endpoint(const char *flag, ctl_getenv_fn env, struct ctl_endpoint *out,
                             char *err, size_t err_len)
{
    static const char *const vars[] = {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"};
    if (nonempty(flag))
        return check_url(flag, "--endpoint-url", out, err, err_len);
    const char *ignore = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    bool skip = ignore != NULL && strcasecmp(ignore, "true") == 0;
    for (size_t i = 0; !skip && i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = nonempty(env(vars[i]));
        if (v != NULL)
            return check_url(v, vars[i], out, err, err_len);
    }
    return check_url(CTL_DEFAULT_ENDPOINT, "default", out, err, err_len);
}

sc_code ctl_resolve_token(const char *flag, ctl_getenv_fn env, const char **out, char *err,
                          size_t err_len)
{
    const char *source = "--admin-token";
    const char *t = nonempty(flag);
    if (t == NULL) {
        source = "S3CACHED_ADMIN_TOKEN";
        t = nonempty(env(source));
    }
    *out = NULL;
    for (const unsigned char *p = (const unsigned char *)t; p && *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(err, err_len, "the admin token from %s has a control character", source);
            return SC_EINVAL;
        }
    }
    *out = t;
    return SC_OK;
}
