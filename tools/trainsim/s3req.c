/*
 * s3req.c - the URL and headers of one object request: path-style addressing,
 * the key percent-encoded once, and SigV4 (sigv4/sigv4.c) when credentials
 * are in the environment.
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/uri.h"
#include "../../sigv4/sigv4.h"
#include "trainsim.h"

/* getenv, but "" counts as unset. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static sc_code dup_into(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && *dst == NULL ? SC_ENOMEM : SC_OK;
}

/* Fills s->base and s->host from endpoint. */
static sc_code parse_endpoint(struct ts_s3 *s, const char *endpoint)
{
    sc_code rc = SC_EINVAL;
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    CURLU *u = curl_url();
    if (u == NULL)
        return SC_ENOMEM;
    if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto out;
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK || strcmp(path, "/") != 0)
        goto out; /* the endpoint names a server, not a place on it */
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
        port = NULL;
    rc = SC_ENOMEM;
    size_t need = strlen(host) + (port ? strlen(port) + 1 : 0) + 1;
    s->host = malloc(need);
    if (s->host == NULL)
        goto out;
    snprintf(s->host, need, "%s%s%s", host, port ? ":" : "", port ? port : "");
    size_t len = strlen(endpoint);
    while (len > 0 && endpoint[len - 1] == '/')
        len--;
    s->base = strndup(endpoint, len);
    rc = s->base ? SC_OK : SC_ENOMEM;
out:
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return rc;
}

sc_code ts_s3_init(struct ts_s3 *s, const char *endpoint, const char *bucket)
{
    memset(s, 0, sizeof(*s));
    sc_code rc = parse_endpoint(s, endpoint);
    if (rc == SC_OK)
        rc = dup_into(&s->bucket, bucket);
    if (rc == SC_OK && env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        const char *region = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
        rc = dup_into(&s->access_key, env("AWS_ACCESS_KEY_ID"));
        if (rc == SC_OK)
            rc = dup_into(&s->secret_key, env("AWS_SECRET_ACCESS_KEY"));
        if (rc == SC_OK)
            rc = dup_into(&s->session_token, env("AWS_SESSION_TOKEN"));
        if (rc == SC_OK)
            rc = dup_into(&s->region, region ? region : "us-east-1");
    }
    return rc;
}

void ts_s3_free(struct ts_s3 *s)
{
    if (s->secret_key)
        OPENSSL_cleanse(s->secret_key, strlen(s->secret_key));
    free(s->base);
    free(s->host);
    free(s->bucket);
    free(s->access_key);
    free(s->secret_key);
    free(s->session_token);
    free(s->region);
    memset(s, 0, sizeof(*s));
}

/* Appends "name: value" to *list. */
static sc_code add_header(struct curl_slist **list, const char *name, const char *value)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof(line))
        return SC_ETOOBIG;
    struct curl_slist *grown = curl_slist_append(*list, line);
    if (grown == NULL)
        return SC_ENOMEM;
    *list = grown;
    return SC_OK;
}

/* Adds x-amz-date, x-amz-content-sha256, the token and Authorization to *list. */
static sc_code sign(const struct ts_s3 *s, const char *method, const char *path,
                    struct curl_slist **list)
{
    char date[17], auth[1024];
    const char *payload = strcmp(method, "PUT") == 0 ? SIGV4_UNSIGNED_PAYLOAD : SIGV4_EMPTY_SHA256;
    sigv4_amz_date(time(NULL), date);
    struct sigv4_header h[4] = {
        {"host", s->host}, {"x-amz-date", date}, {"x-amz-content-sha256", payload}};
    size_t n = 3;
    if (s->session_token)
        h[n++] = (struct sigv4_header){"x-amz-security-token", s->session_token};
    struct sigv4_request req = {method, path, NULL, h, n, payload};
    struct sigv4_key key = {s->access_key, s->secret_key, s->region, "s3"};
    sc_code rc = sigv4_authorization(&req, &key, date, true, auth, sizeof(auth));
    for (size_t i = 1; rc == SC_OK && i < n; i++)
        rc = add_header(list, h[i].name, h[i].value);
    if (rc == SC_OK)
        rc = add_header(list, "Authorization", auth);
    OPENSSL_cleanse(auth, sizeof(auth));
    return rc;
}

sc_code ts_s3_request(const struct ts_s3 *s, const char *method, const char *key, char **url,
                      struct curl_slist **headers)
{
    char *ebucket = NULL, *ekey = NULL, *path = NULL;
    struct curl_slist *list = NULL;
    *url = NULL;
    *headers = NULL;
    sc_code rc = uri_encode(s->bucket, strlen(s->bucket), false, &ebucket);
    if (rc == SC_OK)
        rc = uri_encode(key, strlen(key), true, &ekey);
    if (rc != SC_OK)
        goto out;
    rc = SC_ENOMEM;
    size_t plen = strlen(ebucket) + strlen(ekey) + 3;
    path = malloc(plen);
    *url = malloc(strlen(s->base) + plen);
    if (path == NULL || *url == NULL)
        goto out;
    snprintf(path, plen, "/%s/%s", ebucket, ekey);
    snprintf(*url, strlen(s->base) + plen, "%s%s", s->base, path);
    rc = add_header(&list, "Host", s->host);
    if (rc == SC_OK)
        rc = add_header(&list, "Expect", ""); /* no 100-continue round trip on PUT */
    if (rc == SC_OK && s->access_key)
        rc = sign(s, method, path, &list);
out:
    free(ebucket);
    free(ekey);
    free(path);
    if (rc != SC_OK) {
        curl_slist_free_all(list);
        free(*url);
        *url = NULL;
        return rc;
    }
    *headers = list;
    return SC_OK;
}
