/*
 * fleet_sync.c - manifests on a fleet (docs/fleet.md, "Manifests on a fleet"): the fleet
 * thread sends every registration and withdrawal made on this gateway to every live peer, so
 * that each gateway knows the whole plan (and warms the names it owns, build.c), and asks each
 * live peer for its progress of every job once a second, so that any gateway reports the
 * fleet's progress. Requests to peers are fleet-signed and go to the peer alone
 * (upstream/call.h); a forwarded copy is registered by the peer under the same id and
 * never forwarded again (gateway/admin/admin.c). A peer that was down when a registration or
 * a withdrawal was sent is mended later, by the same thread (fleet_reconcile.c). The thread is
 * the only one that waits for a peer: HTTP workers only queue (mf_forward) or read the latest
 * numbers (mf_fleet_progress).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "../common/log.h"
#include "../sigv4/sigv4.h"
#include "../upstream/call.h"
#include "manifest_int.h"

#define REPORT_MAX_BODY (1024u * 1024u) /* a progress answer: 100 failures of long keys fit */

void mf_forward(struct mf_registry *r, const char *id, const char *body, size_t len)
{
    if (r->cfg.fleet == NULL || !r->fleet_running)
        return;
    struct mf_forward *f = calloc(1, sizeof(*f));
    char *copy = body ? malloc(len ? len : 1) : NULL;
    if (f == NULL || (body != NULL && copy == NULL)) {
        sc_warn("manifest %s: out of memory: not sent to the fleet's peers", id);
        free(f);
        free(copy);
        return;
    }
    if (copy)
        memcpy(copy, body, len);
    f->withdraw = body == NULL;
    snprintf(f->id, sizeof(f->id), "%s", id);
    f->body = copy;
    f->len = copy ? len : 0;
    pthread_mutex_lock(&r->wake_mu);
    if (r->fwd_bytes + f->len > MF_PARSE_PENDING_MAX) {
        pthread_mutex_unlock(&r->wake_mu);
        sc_warn("manifest %s: %llu bytes wait to be sent to the peers already: not sent", id,
                (unsigned long long)r->fwd_bytes);
        free(copy);
        free(f);
        return;
    }
    r->fwd_bytes += f->len;
    if (r->fwd_tail)
        r->fwd_tail->next = f;
    else
        r->fwd_head = f;
    r->fwd_tail = f;
    pthread_cond_signal(&r->fleet_wake);
    pthread_mutex_unlock(&r->wake_mu);
}

void mf_forward_free_all(struct mf_registry *r)
{
    while (r->fwd_head) {
        struct mf_forward *f = r->fwd_head;
        r->fwd_head = f->next;
        free(f->body);
        free(f);
    }
    r->fwd_tail = NULL;
    r->fwd_bytes = 0;
}

void mf_fleet_tag(const char *url, char tag[8])
{
    snprintf(tag, 8, "-%06x", (unsigned)(sc_key_hash("fleet", url) & 0xffffff));
}

struct fleet_peer_info *mf_other_peers(struct mf_registry *r, size_t *n)
{
    struct fleet_peer_info *all = calloc(FLEET_MAX_PEERS, sizeof(*all));
    size_t k = 0, total = all ? fleet_peers(r->cfg.fleet, all, FLEET_MAX_PEERS) : 0;
    for (size_t i = 0; i < total && i < FLEET_MAX_PEERS; i++)
        if (!all[i].self)
            all[k++] = all[i];
    *n = k;
    return all;
}

bool mf_send_to_peer(struct mf_registry *r, const char *peer, const char *id, const char *body,
                     size_t len)
{
    char sha[65], query[160], key[64];
    if (body != NULL) {
        sigv4_sha256_hex(body, len, sha); /* the body is not signed; its hash is */
        snprintf(query, sizeof(query), "id=%s&sha256=%s", id, sha);
    }
    snprintf(key, sizeof(key), body ? "manifests" : "manifests/%s", id);
    struct up_peer_call c = {.peer = peer,
                             .method = body ? "POST" : "DELETE",
                             .bucket = "_s3cached",
                             .key = key,
                             .query = body ? query : NULL,
                             .body = body,
                             .body_len = body ? len : 0};
    struct sc_buf answer;
    sc_buf_init(&answer, REPORT_MAX_BODY);
    long status = 0;
    sc_code rc = up_peer_call(r->cfg.up, &c, &status, &answer);
    bool ok = rc == SC_OK && status < 300;
    if (!ok)
        sc_warn("manifest %s: %s to the peer %s failed: %s %ld %.200s", id,
                body ? "the registration" : "the withdrawal", peer, sc_strerror(rc), status,
                answer.data ? answer.data : "");
    else
        sc_debug("manifest %s: %s sent to %s", id, c.method, peer);
    sc_buf_free(&answer);
    return ok;
}

void mf_send_forward(struct mf_registry *r, struct mf_forward *f)
{
    size_t n;
    struct fleet_peer_info *peers = mf_other_peers(r, &n);
    for (size_t i = 0; peers && i < n; i++)
        if (peers[i].state == FLEET_UP) /* one down is mended later (fleet_reconcile.c) */
            mf_send_to_peer(r, peers[i].url, f->id, f->withdraw ? NULL : f->body, f->len);
    free(peers);
    free(f->body);
    free(f);
}

/* The counts of one answer to a progress poll: what that gateway holds of the job. */
static bool parse_report(const struct sc_buf *answer, struct mf_peer_report *rep)
{
    json_t *o = answer->data ? json_loadb(answer->data, answer->len, 0, NULL) : NULL;
    json_t *c = json_object_get(o, "objects_cached"), *b = json_object_get(o, "bytes_cached");
    json_t *i = json_object_get(o, "objects_in_flight"), *f = json_object_get(o, "objects_failed");
    bool ok = json_is_integer(c) && json_is_integer(b) && json_is_integer(i) &&
              json_is_integer(f) && json_integer_value(c) >= 0 && json_integer_value(b) >= 0 &&
              json_integer_value(i) >= 0 && json_integer_value(f) >= 0;
    if (ok) {
        rep->cached = (uint64_t)json_integer_value(c);
        rep->bytes_cached = (uint64_t)json_integer_value(b);
        rep->inflight = (uint64_t)json_integer_value(i);
        rep->failed = (uint64_t)json_integer_value(f);
    }
    json_decref(o);
    return ok;
}

sc_code mf_ask_peer(struct mf_registry *r, const char *peer, const char *id, long *status,
                    struct sc_buf *answer)
{
    char key[64];
    snprintf(key, sizeof(key), "manifests/%s", id);
    struct up_peer_call c = {.peer = peer, .method = "GET", .bucket = "_s3cached", .key = key};
    sc_buf_init(answer, REPORT_MAX_BODY);
    *status = 0;
    return up_peer_call(r->cfg.up, &c, status, answer);
}

/* Asks one live peer for its progress of registration id. */
static void ask_peer(struct mf_registry *r, const char *id, struct mf_peer_report *rep)
{
    struct sc_buf answer;
    long status;
    sc_code rc = mf_ask_peer(r, rep->url, id, &status, &answer);
    rep->reported = rc == SC_OK && status == 200 && parse_report(&answer, rep);
    rep->why = rep->reported   ? NULL
               : rc != SC_OK   ? "no answer"
               : status == 404 ? "unknown manifest"
                               : "refused";
    sc_buf_free(&answer);
}

/* Gives the reports to job id, if it is still listed (another poll replaces them). */
static void store_reports(struct mf_registry *r, const char *id, struct mf_peer_report *reps,
                          size_t n)
{
    pthread_rwlock_rdlock(&r->list_lock);
    struct mf *j = r->list;
    while (j != NULL && (j->job != NULL || strcmp(j->id, id) != 0))
        j = j->next;
    if (j != NULL) {
        pthread_mutex_lock(&j->mu);
        free(j->reports);
        j->reports = reps;
        j->n_reports = n;
        clock_gettime(CLOCK_MONOTONIC, &j->reported_at);
        pthread_mutex_unlock(&j->mu);
    }
    pthread_rwlock_unlock(&r->list_lock);
    if (j == NULL)
        free(reps);
}

/* Polls every peer for job id and gives it the reports. */
static void poll_job(struct mf_registry *r, const char *id, const struct fleet_peer_info *peers,
                     size_t n)
{
    struct mf_peer_report *reps = calloc(n ? n : 1, sizeof(*reps));
    if (reps == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        snprintf(reps[i].url, sizeof(reps[i].url), "%s", peers[i].url);
        if (peers[i].state != FLEET_UP)
            reps[i].why = "down";
        else
            ask_peer(r, id, &reps[i]);
    }
    store_reports(r, id, reps, n);
}

bool mf_ids_add(struct mf_ids *l, const char *id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        char(*grown)[MF_ID_MAX] = realloc(l->v, cap * sizeof(*grown));
        if (grown == NULL)
            return false;
        l->v = grown;
        l->cap = cap;
    }
    snprintf(l->v[l->n++], MF_ID_MAX, "%s", id);
    return true;
}

struct mf_ids mf_listed_ids(struct mf_registry *r, bool (*keep)(const struct mf *m))
{
    struct mf_ids l = {0};
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next)
        if (keep(m) && !mf_ids_add(&l, m->id))
            break;
    pthread_rwlock_unlock(&r->list_lock);
    return l;
}

/* A job at work, with its plan: one whose progress the peers are asked for. */
static bool polled(const struct mf *m)
{
    return m->job == NULL && m->plan != NULL && mf_active(m);
}

void mf_poll_peers(struct mf_registry *r)
{
    size_t n;
    struct mf_ids jobs = mf_listed_ids(r, polled);
    struct fleet_peer_info *peers = jobs.n ? mf_other_peers(r, &n) : NULL;
    for (size_t i = 0; peers && i < jobs.n; i++)
        poll_job(r, jobs.v[i], peers, n);
    free(peers);
    free(jobs.v);
}

struct mf_forward *mf_next_forward(struct mf_registry *r, int64_t poll_at_ms)
{
    int64_t wait_ms = poll_at_ms - sc_now_ms();
    struct timespec poll_at = sc_deadline_in_ms(wait_ms > 0 ? wait_ms : 0);
    pthread_mutex_lock(&r->wake_mu);
    while (!r->stopping && r->fwd_head == NULL &&
           pthread_cond_timedwait(&r->fleet_wake, &r->wake_mu, &poll_at) == 0)
        ;
    struct mf_forward *f = r->stopping ? NULL : r->fwd_head;
    if (f != NULL) {
        r->fwd_head = f->next;
        if (r->fwd_head == NULL)
            r->fwd_tail = NULL;
        r->fwd_bytes -= f->len;
    }
    pthread_mutex_unlock(&r->wake_mu);
    return f;
}

/* One peer's entry of the "fleet" object. */
static json_t *report_json(const struct mf_peer_report *p)
{
    if (!p->reported)
        return json_pack("{s:s, s:b, s:s}", "url", p->url, "reporting", 0, "why", p->why);
    return json_pack("{s:s, s:b, s:I, s:I, s:I, s:I}", "url", p->url, "reporting", 1,
                     "objects_cached", (json_int_t)p->cached, "bytes_cached",
                     (json_int_t)p->bytes_cached, "objects_in_flight", (json_int_t)p->inflight,
                     "objects_failed", (json_int_t)p->failed);
}

json_t *mf_fleet_progress(struct mf *j)
{
    fleet *f = j->reg->cfg.fleet;
    if (f == NULL)
        return NULL;
    uint64_t cached = j->cached, bytes = j->bytes_cached, inflight = j->inflight;
    uint64_t failed = j->failed, reporting = 1;
    json_t *peers = json_array();
    for (size_t i = 0; i < j->n_reports; i++) {
        const struct mf_peer_report *p = &j->reports[i];
        json_array_append_new(peers, report_json(p));
        if (!p->reported)
            continue;
        reporting++;
        cached += p->cached;
        bytes += p->bytes_cached;
        inflight += p->inflight;
        failed += p->failed;
    }
    size_t gateways = j->reports ? j->n_reports + 1 : fleet_peers(f, NULL, 0);
    return json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "gateways",
                     (json_int_t)gateways, "reporting", (json_int_t)reporting, "objects_total",
                     j->fut ? json_integer(j->used) : json_null(), "objects_cached",
                     (json_int_t)cached, "bytes_cached", (json_int_t)bytes, "objects_in_flight",
                     (json_int_t)inflight, "objects_failed", (json_int_t)failed, "as_of_seconds",
                     j->reports ? json_real(sc_seconds_since(&j->reported_at)) : json_null(),
                     "peers", peers ? peers : json_array());
}
