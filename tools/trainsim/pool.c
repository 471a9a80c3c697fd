/*
 * pool.c - a fixed number of concurrent object transfers over one curl multi
 * handle, whose connection cache keeps the connections alive between them.
 *
 * A GET's body is compared with the expected bytes as it arrives (nothing is
 * stored); a PUT's body is generated as it is sent. A transfer that fails in
 * transport, or gets a 5xx or 429, is tried again after 100, 200, 400 ms (up
 * to TS_RETRIES times) in the same slot; a wrong byte is never retried. Each
 * failure and corruption is reported on stderr with the key.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim.h"

#define ERR_BODY 300 /* bytes of an error answer kept for the report */

struct slot {
    ts_pool *p;
    CURL *easy;
    bool busy;     /* started, not yet handed back */
    bool in_multi; /* added to the multi handle */
    bool finished; /* waiting in the done list */
    enum ts_method method;
    uint32_t obj, pos;
    uint64_t size; /* expected (GET) or sent (PUT) */
    char key[TS_MAX_KEY];
    char *url;
    struct curl_slist *headers;
    uint32_t attempts;
    int64_t retry_at_ns; /* 0, or when to start the next attempt */
    /* the current attempt */
    long status;
    uint64_t got; /* body bytes received (GET) or sent (PUT) */
    bool mismatch;
    uint64_t bad_off;
    uint8_t head[TS_HEADER_LEN];
    char err_body[ERR_BODY + 1];
    size_t err_len;
    char errbuf[CURL_ERROR_SIZE];
    struct ts_done done;
};

struct ts_pool {
    const struct ts_s3 *s3;
    const struct ts_dataset *d;
    CURLM *multi;
    struct slot *slots;
    uint32_t n_slots;
    uint32_t busy;
    uint32_t *done; /* slot indices finished and not yet handed back, FIFO */
    uint32_t done_head, done_len;
};

uint32_t ts_pool_busy(const ts_pool *p)
{
    return p->busy;
}

bool ts_pool_has_room(const ts_pool *p)
{
    return p->busy < p->n_slots;
}

/* ---- per-attempt callbacks ------------------------------------------------------------------ */

static void keep_error_body(struct slot *s, const char *data, size_t n)
{
    size_t room = ERR_BODY - s->err_len;
    size_t take = n < room ? n : room;
    for (size_t k = 0; k < take; k++) /* one line on stderr */
        s->err_body[s->err_len + k] = data[k] == '\n' || data[k] == '\r' ? ' ' : data[k];
    s->err_len += take;
    s->err_body[s->err_len] = '\0';
}

/* Receives a GET's body, comparing it with the expected bytes; stops at the first wrong one. */
static size_t on_get_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct slot *s = arg;
    size_t n = size * nmemb;
    if (s->status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200) {
        keep_error_body(s, data, n);
        return n;
    }
    for (uint64_t k = s->got; k < TS_HEADER_LEN && k - s->got < n; k++)
        s->head[k] = (uint8_t)data[k - s->got];
    size_t in_size = s->got >= s->size ? 0 : (s->size - s->got < n ? s->size - s->got : n);
    if (!ts_object_check(s->p->d, s->obj, s->size, s->got, (const uint8_t *)data, in_size,
                         &s->bad_off)) {
        s->mismatch = true;
    } else if (in_size < n) {
        s->mismatch = true; /* longer than the object */
        s->bad_off = s->size;
    }
    s->got += n;
    return s->mismatch ? 0 : n;
}

static size_t on_put_body(char *buf, size_t size, size_t nmemb, void *arg)
{
    struct slot *s = arg;
    size_t n = size * nmemb;
    uint64_t left = s->size - s->got;
    if (n > left)
        n = (size_t)left;
    ts_object_fill(s->p->d, s->obj, s->size, s->got, (uint8_t *)buf, n);
    s->got += n;
    return n;
}

/* curl rewinds a PUT when it resends it on a fresh connection. */
static int on_put_seek(void *arg, curl_off_t offset, int origin)
{
    struct slot *s = arg;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > s->size)
        return CURL_SEEKFUNC_FAIL;
    s->got = (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

static size_t on_put_answer(char *data, size_t size, size_t nmemb, void *arg)
{
    keep_error_body(arg, data, size * nmemb);
    return size * nmemb;
}

/* ---- attempts ------------------------------------------------------------------------------- */

/* Sets up and adds the next attempt of slot s: fresh URL, signature and counters. */
static sc_code attempt(struct slot *s)
{
    const char *method = s->method == TS_PUT ? "PUT" : "GET";
    curl_slist_free_all(s->headers);
    free(s->url);
    sc_code rc = ts_s3_request(s->p->s3, method, s->key, &s->url, &s->headers);
    if (rc != SC_OK)
        return rc;
    s->status = 0;
    s->got = 0;
    s->mismatch = false;
    s->err_len = 0;
    s->err_body[0] = '\0';
    s->errbuf[0] = '\0';
    s->retry_at_ns = 0;
    s->attempts++;
    CURL *c = s->easy;
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, s->headers);
    if (s->method == TS_PUT) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)s->size);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_put_body);
        curl_easy_setopt(c, CURLOPT_READDATA, s);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_put_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, s);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_put_answer);
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_get_body);
    }
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    if (curl_multi_add_handle(s->p->multi, c) != CURLM_OK)
        return SC_EUPSTREAM;
    s->in_multi = true;
    return SC_OK;
}

static void finish(struct slot *s, enum ts_outcome outcome)
{
    ts_pool *p = s->p;
    curl_off_t total_us = 0;
    curl_easy_getinfo(s->easy, CURLINFO_TOTAL_TIME_T, &total_us);
    s->done = (struct ts_done){
        .obj = s->obj,
        .pos = s->pos,
        .outcome = outcome,
        .bytes = s->got,
        .latency_us = total_us > UINT32_MAX ? UINT32_MAX : (uint32_t)total_us,
        .retries = s->attempts - 1,
        .responded = s->status != 0,
        .at_ns = sc_now_ns(),
    };
    s->finished = true;
    p->done[(p->done_head + p->done_len) % p->n_slots] = (uint32_t)(s - p->slots);
    p->done_len++;
}

static void report_corrupt(const struct slot *s)
{
    uint8_t want = 0;
    ts_object_fill(s->p->d, s->obj, s->size, s->bad_off, &want, 1);
    if (s->bad_off >= s->size) {
        fprintf(stderr, "s3cached-trainsim: CORRUPT %s: body longer than its %" PRIu64 " bytes\n",
                s->key, s->size);
    } else if (s->got <= s->bad_off) {
        fprintf(stderr,
                "s3cached-trainsim: CORRUPT %s: body ends at offset %" PRIu64 " of %" PRIu64
                " bytes\n",
                s->key, s->got, s->size);
    } else {
        fprintf(stderr,
                "s3cached-trainsim: CORRUPT %s: first wrong byte at offset %" PRIu64 " of %" PRIu64
                " (expected 0x%02x)\n",
                s->key, s->bad_off, s->size, want);
    }
    if (s->got >= TS_HEADER_LEN && s->bad_off < TS_HEADER_LEN) {
        uint64_t idx = 0, size = 0;
        for (int b = 7; b >= 0; b--) {
            idx = idx << 8 | s->head[b];
            size = size << 8 | s->head[8 + b];
        }
        fprintf(stderr,
                "s3cached-trainsim:   its header reads object %" PRIu64 ", size %" PRIu64
                " (expected %" PRIu32 ", %" PRIu64 ")\n",
                idx, size, s->obj, s->size);
    }
}

static bool retryable(CURLcode cc, long status)
{
    if (cc != CURLE_OK)
        return true;
    return status >= 500 || status == 429;
}

/* Decides what an attempt that just ended means: done, corrupt, failed, or another try. */
static void attempt_ended(struct slot *s, CURLcode cc)
{
    curl_multi_remove_handle(s->p->multi, s->easy);
    s->in_multi = false;
    if (s->status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    bool ok_status = s->method == TS_PUT ? s->status / 100 == 2 : s->status == 200;
    if (s->method == TS_GET && s->mismatch) {
        report_corrupt(s);
        finish(s, TS_DONE_CORRUPT);
        return;
    }
    if (cc == CURLE_OK && ok_status) {
        if (s->method == TS_GET && s->got != s->size) {
            s->bad_off = s->got; /* shorter than the object */
            report_corrupt(s);
            finish(s, TS_DONE_CORRUPT);
            return;
        }
        finish(s, TS_DONE_OK);
        return;
    }
    if (retryable(cc, s->status) && s->attempts <= TS_RETRIES) {
        s->retry_at_ns = sc_now_ns() + ((int64_t)100000000 << (s->attempts - 1));
        return;
    }
    if (cc != CURLE_OK)
        fprintf(stderr, "s3cached-trainsim: FAILED %s %s: %s (%u attempts)\n",
                s->method == TS_PUT ? "PUT" : "GET", s->key,
                s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc), s->attempts);
    else
        fprintf(stderr, "s3cached-trainsim: FAILED %s %s: HTTP %ld %s (%u attempts)\n",
                s->method == TS_PUT ? "PUT" : "GET", s->key, s->status, s->err_body, s->attempts);
    finish(s, TS_DONE_FAILED);
}

/* ---- the pool ------------------------------------------------------------------------------- */

static CURL *new_easy(struct slot *s)
{
    CURL *c = curl_easy_init();
    if (c == NULL)
        return NULL;
    curl_easy_setopt(c, CURLOPT_PRIVATE, s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled transfer ends after 60 s */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    return c;
}

sc_code ts_pool_new(const struct ts_s3 *s3, const struct ts_dataset *d, uint32_t workers,
                    ts_pool **out)
{
    sc_code rc = SC_ENOMEM;
    ts_pool *p = calloc(1, sizeof(*p));
    *out = NULL;
    if (p == NULL)
        return SC_ENOMEM;
    p->s3 = s3;
    p->d = d;
    p->n_slots = workers;
    p->slots = calloc(workers, sizeof(*p->slots));
    p->done = calloc(workers, sizeof(*p->done));
    p->multi = curl_multi_init();
    if (p->slots == NULL || p->done == NULL || p->multi == NULL)
        goto out;
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)workers);
    for (uint32_t i = 0; i < workers; i++) {
        p->slots[i].p = p;
        p->slots[i].easy = new_easy(&p->slots[i]);
        if (p->slots[i].easy == NULL)
            goto out;
    }
    *out = p;
    p = NULL;
    rc = SC_OK;
out:
    ts_pool_free(p);
    return rc;
}

void ts_pool_free(ts_pool *p)
{
    if (p == NULL)
        return;
    for (uint32_t i = 0; p->slots && i < p->n_slots; i++) {
        struct slot *s = &p->slots[i];
        if (s->in_multi)
            curl_multi_remove_handle(p->multi, s->easy);
        curl_easy_cleanup(s->easy);
        curl_slist_free_all(s->headers);
        free(s->url);
    }
    curl_multi_cleanup(p->multi);
    free(p->slots);
    free(p->done);
    free(p);
}

sc_code ts_pool_start(ts_pool *p, enum ts_method m, uint32_t obj, uint32_t pos)
{
    struct slot *s = NULL;
    for (uint32_t i = 0; i < p->n_slots && s == NULL; i++)
        if (!p->slots[i].busy)
            s = &p->slots[i];
    if (s == NULL)
        return SC_EBUSY;
    sc_code rc = ts_object_key(p->d, obj, s->key, sizeof(s->key));
    if (rc != SC_OK)
        return rc;
    s->method = m;
    s->obj = obj;
    s->pos = pos;
    s->size = ts_object_size(p->d, obj);
    s->attempts = 0;
    s->finished = false;
    rc = attempt(s);
    if (rc != SC_OK)
        return rc;
    s->busy = true;
    p->busy++;
    return SC_OK;
}

/* Starts the retries whose back-off has passed; returns ms until the next one is due, or -1. */
static int start_due_retries(ts_pool *p, int64_t now)
{
    int64_t next = -1;
    for (uint32_t i = 0; i < p->n_slots; i++) {
        struct slot *s = &p->slots[i];
        if (!s->busy || s->in_multi || s->finished || s->retry_at_ns == 0)
            continue;
        if (s->retry_at_ns <= now) {
            if (attempt(s) != SC_OK) {
                fprintf(stderr, "s3cached-trainsim: FAILED %s: could not start a retry\n", s->key);
                finish(s, TS_DONE_FAILED);
            }
        } else if (next < 0 || s->retry_at_ns - now < next) {
            next = s->retry_at_ns - now;
        }
    }
    return next < 0 ? -1 : (int)((next + 999999) / 1000000);
}

/* Reads curl's messages about ended attempts. */
static void collect(ts_pool *p)
{
    CURLMsg *msg;
    int left = 0;
    while ((msg = curl_multi_info_read(p->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct slot *s = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        attempt_ended(s, msg->data.result);
    }
}

sc_code ts_pool_run(ts_pool *p, int timeout_ms)
{
    int running = 0;
    int retry_ms = start_due_retries(p, sc_now_ns());
    if (curl_multi_perform(p->multi, &running) != CURLM_OK)
        return SC_EUPSTREAM;
    collect(p);
    if (p->done_len > 0)
        return SC_OK;
    int wait = timeout_ms;
    if (retry_ms >= 0 && retry_ms < wait)
        wait = retry_ms;
    if (wait > 0 && curl_multi_poll(p->multi, NULL, 0, wait, NULL) != CURLM_OK)
        return SC_EUPSTREAM;
    start_due_retries(p, sc_now_ns());
    if (curl_multi_perform(p->multi, &running) != CURLM_OK)
        return SC_EUPSTREAM;
    collect(p);
    return SC_OK;
}

bool ts_pool_next(ts_pool *p, struct ts_done *out)
{
    if (p->done_len == 0)
        return false;
    struct slot *s = &p->slots[p->done[p->done_head]];
    p->done_head = (p->done_head + 1) % p->n_slots;
    p->done_len--;
    *out = s->done;
    s->busy = false;
    s->finished = false;
    p->busy--;
    return true;
}
