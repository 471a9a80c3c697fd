/*
 * http.c - s3cachectl's HTTP client (see http.h): a libcurl easy handle,
 * reset before each request so no option leaks from one to the next, while
 * its connection cache keeps the gateway's connection open between polls.
 */
#include "../../common/buf.h"
#include "../../common/clock.h"
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#define USER_AGENT "s3cachectl/" CTL_VERSION

struct ctl_http {
    CURL *easy;
    struct ctl_http_config cfg;
    char *base_url;
    char *auth; /* "Authorization: Bearer <token>", or NULL */
};

/* Collects the reply (into a struct sc_buf bounded by max_reply). */
static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
    return sc_buf_append(arg, data, size * n) == SC_OK ? size * n : 0;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    volatile sig_atomic_t *flag = arg;
    return flag != NULL && *flag ? 1 : 0;
}

sc_code ctl_http_open(const struct ctl_http_config *cfg, ctl_http **out)
{
    sc_code rc = SC_ENOMEM;
    struct ctl_http *h = calloc(1, sizeof(*h));
    *out = NULL;
    if (h == NULL)
        goto out;
    h->cfg = *cfg;
    h->base_url = strdup(cfg->base_url);
    if (h->base_url == NULL)
        goto out;
    if (cfg->token != NULL) {
        size_t n = strlen("Authorization: Bearer ") + strlen(cfg->token) + 1;
        h->auth = malloc(n);
        if (h->auth == NULL)
            goto out;
        snprintf(h->auth, n, "Authorization: Bearer %s", cfg->token);
    }
    h->cfg.base_url = h->base_url;
    h->cfg.token = NULL;
    h->easy = curl_easy_init();
    if (h->easy == NULL) {
        rc = SC_EIO;
        goto out;
    }
    *out = h;
    h = NULL;
    rc = SC_OK;
out:
    ctl_http_close(h);
    return rc;
}

static sc_code translate(CURLcode cc, const struct sc_buf *s)
{
    switch (cc) {
    case CURLE_OK:
        return SC_OK;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return SC_EUPSTREAM;
    case CURLE_OPERATION_TIMEDOUT:
        return SC_ETIMEOUT;
    case CURLE_ABORTED_BY_CALLBACK:
        return SC_ECANCELED;
    case CURLE_OUT_OF_MEMORY:
        return SC_ENOMEM;
    case CURLE_WRITE_ERROR:
        return s->err != SC_OK ? s->err : SC_EIO;
    default:
        return SC_EIO;
    }
}

/* Sets every option of one request; false if curl refused one. */
static bool set_options(ctl_http *h, const char *method, const char *url, const char *body,
                        size_t len, struct curl_slist *headers, struct sc_buf *s)
{
    CURL *e = h->easy;
    bool ok = curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_WRITEDATA, s) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_XFERINFODATA, h->cfg.abort_flag) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->cfg.timeout_ms) == CURLE_OK &&
              curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->cfg.connect_timeout_ms) == CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
    ok = ok && curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
#endif
    if (ok && h->cfg.insecure)
        ok = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
             curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
    if (ok && body != NULL)
        ok = curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
             curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) == CURLE_OK;
    if (ok && strcmp(method, body != NULL ? "POST" : "GET") != 0)
        ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK;
    return ok;
}

static struct curl_slist *make_headers(const ctl_http *h, bool has_body)
{
    struct curl_slist *list = NULL;
    const char *lines[] = {"Accept: application/json",
                           has_body ? "Content-Type: application/json" : NULL,
                           has_body ? "Expect:" : NULL, h->auth};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (lines[i] == NULL)
            continue;
        struct curl_slist *grown = curl_slist_append(list, lines[i]);
        if (grown == NULL) {
            curl_slist_free_all(list);
            return NULL;
        }
        list = grown;
    }
    return list;
}

/* Runs the transfer set up on h->easy; on success hands the body collected in s to reply. */
static sc_code perform(ctl_http *h, const char *method, const char *url, size_t len,
                       struct sc_buf *s, struct ctl_http_reply *reply, char *err, size_t err_len)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    if (curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK)
        return SC_EIO;
    if (h->cfg.debug)
        fprintf(h->cfg.debug, "> %s %s (%zu bytes)\n", method, url, len);
    double start = sc_now_seconds();
    CURLcode cc = curl_easy_perform(h->easy);
    curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, NULL); /* errbuf goes out of scope */
    sc_code rc = translate(cc, s);
    if (rc != SC_OK) {
        snprintf(err, err_len, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
        if (h->cfg.debug)
            fprintf(h->cfg.debug, "< failed: %s\n", err);
        return rc;
    }
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &reply->status);
    if (h->cfg.debug)
        fprintf(h->cfg.debug, "< %ld (%zu bytes in %.0f ms)\n", reply->status, s->len,
                (sc_now_seconds() - start) * 1e3);
    return sc_buf_take(s, &reply->body, &reply->len);
}

sc_code ctl_http_request(ctl_http *h, const char *method, const char *path, const char *body,
                         size_t len, struct ctl_http_reply *reply, char *err, size_t err_len)
{
    struct sc_buf s;
    sc_buf_init(&s, h->cfg.max_reply);
    sc_code rc = SC_ENOMEM;
    memset(reply, 0, sizeof(*reply));
    snprintf(err, err_len, "out of memory");
    size_t url_len = strlen(h->base_url) + strlen(path) + 1;
    char *url = malloc(url_len);
    struct curl_slist *headers = make_headers(h, body != NULL);
    if (url == NULL || headers == NULL)
        goto out;
    snprintf(url, url_len, "%s%s", h->base_url, path);
    curl_easy_reset(h->easy);
    if (!set_options(h, method, url, body, len, headers, &s)) {
        snprintf(err, err_len, "libcurl refused an option");
        rc = SC_EIO;
        goto out;
    }
    rc = perform(h, method, url, body ? len : 0, &s, reply, err, err_len);
    if (rc == SC_OK)
        err[0] = '\0';
out:
    sc_buf_free(&s);
    free(url);
    curl_slist_free_all(headers);
    return rc;
}

void ctl_http_reply_free(struct ctl_http_reply *reply)
{
    free(reply->body);
    memset(reply, 0, sizeof(*reply));
}

void ctl_http_close(ctl_http *h)
{
    if (h == NULL)
        return;
    if (h->easy)
        curl_easy_cleanup(h->easy);
    if (h->auth) {
        explicit_bzero(h->auth, strlen(h->auth));
        free(h->auth);
    }
    free(h->base_url);
    free(h);
}
