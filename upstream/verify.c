/*
 * verify.c - the verifier's queue and thread (see verify.h).
 *
 * Each round takes what is queued, up to ROUND_MAX bodies or about ROUND_BYTES, so that a
 * body queued behind a long round waits for a few milliseconds at most. A round starts at
 * once for a body someone waits on; bodies no one waits on (prefetches) wait up to PATIENCE_MS
 * for SC_MD5_LANES of them to share the lanes: one body alone is hashed at a third of the
 * lanes' rate, and at a few hundred prefetches a second most rounds would hold one.
 */
#include "verify.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"

#define ROUND_MAX   32
#define ROUND_BYTES (8u * 1024 * 1024)
#define PATIENCE_MS 4

struct job {
    const void *body;
    uint64_t len;
    uint8_t want[SC_MD5_LEN];
    verify_done_fn done;
    void *arg;
    bool patient;      /* no one waits on the verdict */
    int64_t queued_ms; /* when submitted (sc_now_ms) */
    struct job *next;
};

struct verifier {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct job *head, *tail; /* mu */
    unsigned queued, urgent; /* mu: the jobs queued, and those not patient */
    bool stopping, running;  /* mu; running: the thread was started and not joined */
    pthread_t thread;
};

/* Detaches the next round's jobs (mu held). */
static struct job *take_round(verifier *v)
{
    struct job *first = v->head, *last = NULL;
    uint64_t bytes = 0;
    unsigned n = 0;
    for (struct job *j = first; j && n < ROUND_MAX && (n == 0 || bytes < ROUND_BYTES);
         j = j->next) {
        last = j;
        bytes += j->len;
        n++;
        v->queued--;
        v->urgent -= !j->patient;
    }
    if (last == NULL)
        return NULL;
    v->head = last->next;
    if (v->head == NULL)
        v->tail = NULL;
    last->next = NULL;
    return first;
}

/* Hashes the jobs of a list together and gives each its verdict. */
static void run_round(const struct job *first)
{
    struct sc_md5_msg m[ROUND_MAX];
    size_t n = 0;
    for (const struct job *j = first; j; j = j->next)
        m[n++] = (struct sc_md5_msg){.p = j->body, .len = j->len};
    sc_md5_many(m, n);
    n = 0;
    for (const struct job *j = first; j; j = j->next)
        j->done(j->arg, memcmp(m[n++].digest, j->want, SC_MD5_LEN) == 0);
}

static void free_jobs(struct job *j)
{
    while (j) {
        struct job *next = j->next;
        free(j);
        j = next;
    }
}

/* Whether a round is due (mu held): a body someone waits on, lanes' worth of bodies, the
 * oldest body's patience spent, or stopping. Else *at: when the oldest one's ends. */
static bool round_due(const verifier *v, int64_t *at)
{
    if (v->stopping || v->urgent > 0 || v->queued >= SC_MD5_LANES)
        return true;
    if (v->head == NULL)
        return false;
    *at = v->head->queued_ms + PATIENCE_MS;
    return sc_now_ms() >= *at;
}

static void *verifier_main(void *arg)
{
    verifier *v = arg;
    pthread_setname_np(pthread_self(), "verifier");
    pthread_mutex_lock(&v->mu);
    for (;;) {
        int64_t at = 0;
        while (!round_due(v, &at)) {
            if (v->head == NULL) {
                pthread_cond_wait(&v->wake, &v->mu);
            } else {
                int64_t left = at - sc_now_ms(); /* may have just run out */
                struct timespec until = sc_deadline_in_ms(left > 0 ? left : 0);
                pthread_cond_timedwait(&v->wake, &v->mu, &until);
            }
        }
        struct job *round = take_round(v);
        if (round == NULL)
            break; /* stopping, and nothing left */
        pthread_mutex_unlock(&v->mu);
        run_round(round);
        free_jobs(round);
        pthread_mutex_lock(&v->mu);
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

sc_code verifier_start(verifier **out)
{
    verifier *v = calloc(1, sizeof(*v));
    if (v == NULL)
        return SC_ENOMEM;
    pthread_mutex_init(&v->mu, NULL);
    sc_cond_init_monotonic(&v->wake);
    if (pthread_create(&v->thread, NULL, verifier_main, v) != 0) {
        verifier_free(v);
        return SC_EIO;
    }
    v->running = true;
    *out = v;
    return SC_OK;
}

void verifier_submit(verifier *v, const void *body, uint64_t len, const uint8_t want[SC_MD5_LEN],
                     bool patient, verify_done_fn done, void *arg)
{
    struct job one = {.body = body, .len = len, .done = done, .arg = arg, .patient = patient};
    memcpy(one.want, want, SC_MD5_LEN);
    struct job *j = malloc(sizeof(*j));
    if (j != NULL) {
        *j = one;
        j->queued_ms = sc_now_ms();
        pthread_mutex_lock(&v->mu);
        bool queued = !v->stopping;
        if (queued) {
            if (v->tail)
                v->tail->next = j;
            else
                v->head = j;
            v->tail = j;
            v->queued++;
            v->urgent += !patient;
            /* Woken for the first body (to time its patience) and when a round is due. */
            if (v->queued == 1 || !patient || v->queued == SC_MD5_LANES)
                pthread_cond_signal(&v->wake);
        }
        pthread_mutex_unlock(&v->mu);
        if (queued)
            return;
        free(j);
    }
    run_round(&one); /* stopped, or out of memory: checked here, now */
}

void verifier_stop(verifier *v)
{
    if (v == NULL)
        return;
    pthread_mutex_lock(&v->mu);
    v->stopping = true;
    bool join = v->running;
    v->running = false;
    pthread_cond_signal(&v->wake);
    pthread_mutex_unlock(&v->mu);
    if (join)
        pthread_join(v->thread, NULL);
}

void verifier_free(verifier *v)
{
    if (v == NULL)
        return;
    verifier_stop(v);
    pthread_cond_destroy(&v->wake);
    pthread_mutex_destroy(&v->mu);
    free(v);
}
