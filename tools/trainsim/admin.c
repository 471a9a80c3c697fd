/*
 * admin.c - the calls to the gateway's admin API (docs/manifests.md): the
 * stats counters, registering a manifest, and a manifest's order per epoch.
 * Each is one blocking request outside the timed part of an epoch, with
 * "Authorization: Bearer $S3CACHED_ADMIN_TOKEN" when that is set.
 */
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "trainsim.h"

#define MAX_REPLY     (512u << 20) /* an order of 10M keys is about 200 MB */
#define PARSE_POLLS   6000         /* a large plan may take 10 minutes to be parsed */
#define PARSE_POLL_US 100000

/* Collects the reply's body (into a struct sc_buf bounded by MAX_REPLY). */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    return sc_buf_append(arg, p, size * n) == SC_OK ? size * n : 0;
}

/* The request's headers: the admin token if set, and the body's type. NULL is a valid list. */
static sc_code admin_headers(bool json_body, struct curl_slist **out)
{
    const char *token = getenv("S3CACHED_ADMIN_TOKEN");
    struct curl_slist *list = NULL, *grown = NULL;
    *out = NULL;
    if (token && *token) {
        size_t need = strlen(token) + sizeof("Authorization: Bearer ");
        char *line = malloc(need);
        if (line == NULL)
            return SC_ENOMEM;
        snprintf(line, need, "Authorization: Bearer %s", token);
        list = curl_slist_append(NULL, line);
        OPENSSL_cleanse(line, need);
        free(line);
        if (list == NULL)
            return SC_ENOMEM;
    }
    if (json_body) {
        grown = curl_slist_append(list, "Content-Type: application/json");
        if (grown == NULL) {
            curl_slist_free_all(list);
            return SC_ENOMEM;
        }
        list = grown;
    }
    *out = list;
    return SC_OK;
}

/* Frees a header list, wiping each line first (one may hold the token). */
static void free_headers(struct curl_slist *list)
{
    for (struct curl_slist *l = list; l; l = l->next)
        OPENSSL_cleanse(l->data, strlen(l->data));
    curl_slist_free_all(list);
}

/*
 * One request: GET, or POST of a JSON body. *status is the HTTP status (0 if
 * none came); *reply is the body, NUL-terminated ("" when empty) and the caller's, or NULL
 * on failure.
 */
static sc_code http_call(const char *url, const char *post_json, long timeout_s, long *status,
                         char **reply)
{
    struct curl_slist *h = NULL;
    struct sc_buf r;
    CURL *c = curl_easy_init();
    *status = 0;
    *reply = NULL;
    sc_buf_init(&r, MAX_REPLY);
    sc_code rc = c ? admin_headers(post_json != NULL, &h) : SC_ENOMEM;
    if (rc != SC_OK)
        goto out;
    if (post_json) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_json);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(post_json));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    CURLcode cc = curl_easy_perform(c);
    rc = r.err == SC_ETOOBIG ? SC_ETOOBIG : cc == CURLE_OK ? SC_OK : SC_EUPSTREAM;
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
out:
    free_headers(h);
    curl_easy_cleanup(c);
    if (rc == SC_OK)
        return sc_buf_take(&r, reply, NULL);
    sc_buf_free(&r);
    return rc;
}

sc_code ts_stats_parse(const char *json, struct ts_counters *out)
{
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    json_t *h = json_object_get(root, "hits");
    json_t *m = json_object_get(root, "misses");
    json_t *b = json_object_get(root, "bypasses");
    bool ok = json_is_integer(h) && json_is_integer(m) && json_integer_value(h) >= 0 &&
              json_integer_value(m) >= 0 && (b == NULL || json_is_integer(b));
    if (ok) {
        out->hits = (uint64_t)json_integer_value(h);
        out->misses = (uint64_t)json_integer_value(m);
        out->bypasses = b ? (uint64_t)json_integer_value(b) : 0;
    }
    json_decref(root);
    return ok ? SC_OK : SC_EINVAL;
}

sc_code ts_stats_fetch(const char *url, struct ts_counters *out)
{
    long status = 0;
    char *reply = NULL;
    sc_code rc = http_call(url, NULL, 10, &status, &reply);
    if (rc == SC_OK)
        rc = status == 200 ? ts_stats_parse(reply, out) : SC_EUPSTREAM;
    free(reply);
    return rc;
}

/* endpoint (trailing '/' dropped) + "/_s3cached/" + what, malloc'd. */
static char *admin_url(const char *endpoint, const char *what)
{
    size_t len = strlen(endpoint);
    while (len > 0 && endpoint[len - 1] == '/')
        len--;
    size_t need = len + strlen(what) + sizeof("/_s3cached/");
    char *url = malloc(need);
    if (url)
        snprintf(url, need, "%.*s/_s3cached/%s", (int)len, endpoint, what);
    return url;
}

/* The "state" of a manifest's progress reply, or NULL; the reply is parsed into *root. */
static const char *reply_state(const char *reply, json_t **root)
{
    json_error_t jerr;
    *root = json_loads(reply, 0, &jerr);
    return json_string_value(json_object_get(*root, "state"));
}

/*
 * A large plan is answered 202 in state "parsing" and registered later by the
 * gateway's registrar (docs/manifests.md, "Large plans"): polls the manifest until
 * its state moves on. SC_EUPSTREAM (the answer on stderr) when it failed.
 */
static sc_code wait_parsed(const char *endpoint, const char *id)
{
    char what[160];
    snprintf(what, sizeof(what), "manifests/%s", id);
    char *url = admin_url(endpoint, what);
    sc_code rc = url ? SC_ETIMEOUT : SC_ENOMEM;
    for (int polls = 0; url && polls < PARSE_POLLS; polls++) {
        long status = 0;
        char *reply = NULL;
        json_t *root = NULL;
        rc = http_call(url, NULL, 60, &status, &reply);
        const char *state = rc == SC_OK ? reply_state(reply, &root) : NULL;
        bool parsing = status == 200 && state && strcmp(state, "parsing") == 0;
        if (rc == SC_OK && !parsing &&
            (status != 200 || state == NULL || strcmp(state, "failed") == 0 ||
             strcmp(state, "canceled") == 0)) {
            fprintf(stderr, "s3cached-trainsim: GET %s answered %ld: %.500s\n", url, status, reply);
            rc = SC_EUPSTREAM;
        }
        json_decref(root);
        free(reply);
        if (rc != SC_OK || !parsing)
            break;
        rc = SC_ETIMEOUT;
        usleep(PARSE_POLL_US);
    }
    if (rc == SC_ETIMEOUT)
        fprintf(stderr, "s3cached-trainsim: manifest %s still parsing after 10 minutes\n", id);
    free(url);
    return rc;
}

sc_code ts_manifest_register(const char *endpoint, const struct ts_dataset *d, const char *bucket,
                             uint32_t epochs, uint64_t seed, const struct ts_split *split, char *id,
                             size_t id_len)
{
    long status = 0;
    char *reply = NULL;
    json_t *root = NULL;
    char *body = NULL;
    char *url = admin_url(endpoint, "manifests");
    sc_code rc = url ? ts_manifest_body(d, bucket, epochs, seed, split, &body) : SC_ENOMEM;
    if (rc == SC_OK)
        rc = http_call(url, body, 300, &status, &reply);
    if (rc != SC_OK) {
        fprintf(stderr, "s3cached-trainsim: POST %s: %s\n", url ? url : "", sc_strerror(rc));
        goto out;
    }
    json_error_t jerr;
    root = json_loads(reply, 0, &jerr);
    const char *got = json_string_value(json_object_get(root, "id"));
    if ((status != 201 && status != 202) || got == NULL || strlen(got) >= id_len) {
        fprintf(stderr, "s3cached-trainsim: POST %s answered %ld: %.500s\n", url, status, reply);
        rc = SC_EUPSTREAM;
        goto out;
    }
    snprintf(id, id_len, "%s", got);
    if (status == 202)
        rc = wait_parsed(endpoint, id);
out:
    json_decref(root);
    free(reply);
    free(body);
    free(url);
    return rc;
}

sc_code ts_manifest_order(const char *endpoint, const char *id, uint32_t epoch,
                          const struct ts_dataset *d, uint32_t **order, uint32_t *len)
{
    char what[256], why[512];
    long status = 0;
    char *reply = NULL;
    *order = NULL;
    snprintf(what, sizeof(what), "manifests/%s/order?epoch=%u", id, epoch);
    char *url = admin_url(endpoint, what);
    sc_code rc = url ? SC_OK : SC_ENOMEM;
    for (int tries = 0; rc == SC_OK && tries < 600; tries++) {
        free(reply);
        rc = http_call(url, NULL, 300, &status, &reply);
        if (rc != SC_OK || status != 400 || strstr(reply, "still listing") == NULL)
            break;
        usleep(100 * 1000); /* a prefix manifest answers once its listing ends */
    }
    if (rc != SC_OK) {
        fprintf(stderr, "s3cached-trainsim: GET %s: %s\n", url ? url : "", sc_strerror(rc));
        goto out;
    }
    if (status != 200) {
        fprintf(stderr, "s3cached-trainsim: GET %s answered %ld: %.500s\n", url, status, reply);
        rc = SC_EUPSTREAM;
        goto out;
    }
    rc = ts_order_parse(d, reply, order, len, why, sizeof(why));
    if (rc != SC_OK)
        fprintf(stderr, "s3cached-trainsim: GET %s: %s\n", url, why);
out:
    free(reply);
    free(url);
    return rc;
}
