/*
 * list.c - one page of ListObjectsV2 from the upstream, waited for (see list.h); the
 * answer is parsed by proto/s3_list.c.
 */
#include "list.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/uri.h"
#include "../proto/s3_xml.h"

/* ---- one blocking request -------------------------------------------------- */

struct call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    sc_code rc;
    long status;
    struct sc_buf body; /* bounded by S3_LIST_MAX_BODY */
};

static void on_head(void *arg, const struct http_head *head)
{
    struct call *c = arg;
    c->status = head->status;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    struct call *c = arg;
    sc_code rc = sc_buf_append(&c->body, p, n);
    if (rc != SC_OK)
        c->rc = rc; /* the rest is dropped; the page is refused at the end */
    return true;
}

static void on_done(void *arg, sc_code rc)
{
    struct call *c = arg;
    pthread_mutex_lock(&c->mu);
    if (c->rc == SC_OK)
        c->rc = rc;
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static const struct up_handler list_handler = {on_head, on_body, NULL, on_done};

/* The query string, with the values encoded as SigV4 canonicalizes them. */
static sc_code build_query(const char *prefix, const char *token, char **out)
{
    char *p = NULL, *t = NULL;
    sc_code rc = uri_encode(prefix, strlen(prefix), false, &p);
    if (rc == SC_OK && token)
        rc = uri_encode(token, strlen(token), false, &t);
    if (rc == SC_OK) {
        size_t len = strlen(p) + (t ? strlen(t) : 0) + 64;
        *out = malloc(len);
        if (*out == NULL)
            rc = SC_ENOMEM;
        else if (t)
            snprintf(*out, len, "continuation-token=%s&list-type=2&prefix=%s", t, p);
        else
            snprintf(*out, len, "list-type=2&prefix=%s", p);
    }
    free(p);
    free(t);
    return rc;
}

/* Takes the <Code> of an S3 error body, for the caller's message. */
static void note_error(struct call *c, struct s3_list_page *out)
{
    const char *p = c->body.data, *t, *te;
    if (p && s3_xml_element(&p, c->body.data + c->body.len, "Code", &t, &te) == SC_OK)
        s3_xml_unescape(t, (size_t)(te - t), 128, &out->error_code);
}

sc_code up_list_page(upstream *up, const char *bucket, const char *prefix, const char *token,
                     struct s3_list_page *out)
{
    struct call c = {.rc = SC_OK, .body = {.max = S3_LIST_MAX_BODY}};
    char *query = NULL;
    memset(out, 0, sizeof(*out));
    sc_code rc = build_query(prefix, token, &query);
    if (rc != SC_OK)
        return rc;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    struct up_request req = {.method = "GET",
                             .bucket = bucket,
                             .key = NULL,
                             .query = query,
                             .body_length = -1,
                             .idempotent = true};
    rc = up_submit(up, &req, &list_handler, &c, NULL);
    if (rc == SC_OK) {
        pthread_mutex_lock(&c.mu);
        while (!c.done)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
        rc = c.rc;
    }
    if (rc == SC_OK && c.status == 200)
        rc = s3_list_parse(c.body.data ? c.body.data : "", c.body.len, out);
    else if (rc == SC_OK)
        note_error(&c, out);
    out->status = c.status;
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    sc_buf_free(&c.body);
    free(query);
    return rc;
}
