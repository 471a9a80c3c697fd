/* test_verify.c - the verifier's queue: every body gets its own verdict, once, in the order
 * submitted; bodies no one waits on are not forgotten when no others come to share the lanes;
 * stopping gives every queued body its verdict before it returns, and a body submitted after
 * is checked on the caller's thread. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/clock.h"
#include "../../upstream/verify.h"
#include "pattern.h"

#define MAX_JOBS 64

/* What the callbacks saw, in order. */
struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int order[MAX_JOBS]; /* job indices, in the order their verdicts came */
    int verdict[MAX_JOBS];
    int calls[MAX_JOBS];
    int n;
};

struct job_arg {
    struct seen *seen;
    int index;
};

static void on_verdict(void *arg, bool matches)
{
    struct job_arg *a = arg;
    struct seen *s = a->seen;
    pthread_mutex_lock(&s->mu);
    s->order[s->n++] = a->index;
    s->verdict[a->index] = matches;
    s->calls[a->index]++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void seen_init(struct seen *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    sc_cond_init_monotonic(&s->cv);
}

/* Waits for n verdicts in all (a generous deadline: liveness, not speed). */
static void wait_for(struct seen *s, int n)
{
    struct timespec until = sc_deadline_in_ms(20000);
    pthread_mutex_lock(&s->mu);
    while (s->n < n && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
        ;
    int got = s->n;
    pthread_mutex_unlock(&s->mu);
    assert_int_equal(got, n);
}

/* n bodies of lengths around MD5's block edges; odd ones are submitted with a wrong digest. */
struct bodies {
    uint8_t *p[MAX_JOBS];
    size_t len[MAX_JOBS];
    uint8_t want[MAX_JOBS][SC_MD5_LEN];
    struct job_arg arg[MAX_JOBS];
};

static void make_bodies(struct bodies *b, struct seen *s, int n)
{
    for (int i = 0; i < n; i++) {
        b->len[i] = (size_t)i * 1031 + (size_t)(i % 3) * 55;
        b->p[i] = malloc(b->len[i] ? b->len[i] : 1);
        assert_non_null(b->p[i]);
        fill_bytes(b->p[i], b->len[i], (uint32_t)i + 7);
        sc_md5(b->p[i], b->len[i], b->want[i]);
        if (i % 2)
            b->want[i][i % SC_MD5_LEN] ^= 0x01;
        b->arg[i] = (struct job_arg){s, i};
    }
}

static void free_bodies(struct bodies *b, int n)
{
    for (int i = 0; i < n; i++)
        free(b->p[i]);
}

static void submit(verifier *v, struct bodies *b, int i, bool patient)
{
    verifier_submit(v, b->p[i], b->len[i], b->want[i], patient, on_verdict, &b->arg[i]);
}

static void assert_verdicts(struct seen *s, int n)
{
    for (int i = 0; i < n; i++) {
        assert_int_equal(s->calls[i], 1);
        assert_int_equal(s->verdict[i], i % 2 == 0);
    }
}

/* A running verifier, and n bodies whose verdicts go to s. */
static verifier *start(struct seen *s, struct bodies *b, int n)
{
    seen_init(s);
    make_bodies(b, s, n);
    verifier *v = NULL;
    assert_int_equal(verifier_start(&v), SC_OK);
    return v;
}

static void every_body_gets_its_own_verdict_in_order(void **state)
{
    (void)state;
    enum { N = 40 };
    static struct seen s;
    static struct bodies b;
    verifier *v = start(&s, &b, N);
    for (int i = 0; i < N; i++)
        submit(v, &b, i, i % 5 != 4); /* mostly patient, some waited on */
    wait_for(&s, N);
    assert_verdicts(&s, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.order[i], i);
    verifier_free(v);
    free_bodies(&b, N);
}

static void a_lone_patient_body_is_not_forgotten(void **state)
{
    (void)state;
    static struct seen s;
    static struct bodies b;
    verifier *v = start(&s, &b, 2);
    submit(v, &b, 0, true);
    wait_for(&s, 1); /* no other body comes: its patience ends and it is checked alone */
    submit(v, &b, 1, true);
    wait_for(&s, 2);
    assert_verdicts(&s, 2);
    verifier_free(v);
    free_bodies(&b, 2);
}

static void stop_gives_every_queued_body_its_verdict(void **state)
{
    (void)state;
    enum { N = 5 };
    static struct seen s;
    static struct bodies b;
    verifier *v = start(&s, &b, N + 1);
    for (int i = 0; i < N; i++)
        submit(v, &b, i, true);
    verifier_stop(v);
    assert_int_equal(s.n, N); /* all of them before stop returned */
    submit(v, &b, N, true);
    assert_int_equal(s.n, N + 1); /* after stop: on this thread, before submit returned */
    assert_verdicts(&s, N + 1);
    verifier_free(v);
    free_bodies(&b, N + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_body_gets_its_own_verdict_in_order),
        cmocka_unit_test(a_lone_patient_body_is_not_forgotten),
        cmocka_unit_test(stop_gives_every_queued_body_its_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
