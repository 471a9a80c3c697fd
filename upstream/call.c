/*
 * call.c - one request, waited for (see call.h).
 */
#include "call.h"

#include <pthread.h>
#include <string.h>

struct call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    sc_code rc;
    long status;
    struct sc_buf *answer;
    const char *body; /* what is left to send */
    size_t left;
};

static void on_head(void *arg, const struct http_head *head)
{
    struct call *c = arg;
    c->status = head->status;
}

static bool on_body(void *arg, const char *p, size_t n)
{
    struct call *c = arg;
    sc_code rc = sc_buf_append(c->answer, p, n);
    if (rc != SC_OK && c->rc == SC_OK)
        c->rc = rc; /* the rest is dropped; the answer is refused at the end */
    return true;
}

static size_t read_body(void *arg, char *buf, size_t cap)
{
    struct call *c = arg;
    size_t n = c->left < cap ? c->left : cap;
    memcpy(buf, c->body, n);
    c->body += n;
    c->left -= n;
    return n;
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

static const struct up_handler call_handler = {on_head, on_body, read_body, on_done};

sc_code up_call(upstream *up, const struct up_request *req, const char *body, long *status,
                struct sc_buf *answer)
{
    size_t len = req->body_length > 0 ? (size_t)req->body_length : 0;
    struct call c = {.rc = SC_OK, .answer = answer, .body = body, .left = len};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    sc_code rc = up_submit(up, req, &call_handler, &c, NULL);
    if (rc == SC_OK) {
        pthread_mutex_lock(&c.mu);
        while (!c.done)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
        rc = c.rc;
    }
    *status = c.status;
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    return rc;
}

sc_code up_peer_call(upstream *up, const struct up_peer_call *pc, long *status,
                     struct sc_buf *answer)
{
    struct up_request req = {.method = pc->method,
                             .bucket = pc->bucket,
                             .key = pc->key,
                             .query = pc->query,
                             .body_length = pc->body ? (int64_t)pc->body_len : -1,
                             .peer = pc->peer,
                             .peer_only = true};
    return up_call(up, &req, pc->body, status, answer);
}
