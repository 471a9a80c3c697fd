/*
 * registrar.c - the registrar: one thread that parses large manifest bodies (over
 * MF_PARSE_INLINE_MAX), off the request threads.
 *
 * A large POST is listed at once in state "parsing" (its reply is 202) and kept in the cache
 * directory; this thread parses it, oldest first, without holding the registry's lock, then
 * installs it as the small ones are: its own job, or ranks joining the job of its plan. A body
 * that does not parse leaves the registration "failed", with the reason, and its file is
 * forgotten; one canceled while parsing is dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "manifest_int.h"

/* The oldest registration waiting to be parsed, with a reference; NULL if none. */
static struct mf *next_unparsed(struct mf_registry *r)
{
    struct mf *oldest = NULL;
    pthread_rwlock_rdlock(&r->list_lock);
    for (struct mf *m = r->list; m; m = m->next)
        if (m->state == MF_PARSING)
            oldest = m;
    if (oldest)
        mf_ref(oldest);
    pthread_rwlock_unlock(&r->list_lock);
    return oldest;
}

/* Marks u failed with the reason (reg_mu held). */
static void fail_unparsed(struct mf_registry *r, struct mf *u, const char *reason)
{
    sc_warn("manifest %s: %s", u->id, reason);
    pthread_mutex_lock(&u->mu);
    u->state = MF_FAILED;
    free(u->error);
    u->error = strdup(reason);
    pthread_mutex_unlock(&u->mu);
    mf_forget(r, u->id);
}

/* Parses u's body and puts the registration it makes in u's place. */
static void parse_one(struct mf_registry *r, struct mf *u)
{
    struct plan *p = NULL;
    struct api_err err = {0};
    sc_code rc = plan_parse(u->body, u->body_len, NULL, &p, &err);
    struct mf *m = rc == SC_OK ? mf_new_registration(r, u->id) : NULL;
    if (rc == SC_OK && m == NULL)
        rc = SC_ENOMEM;
    pthread_mutex_lock(&r->reg_mu);
    bool canceled = u->state != MF_PARSING; /* changed under reg_mu only */
    if (!canceled && rc == SC_OK) {
        m->created = u->created;
        rc = mf_register_plan(r, m, p, u->resume, &err);
    }
    bool installed = !canceled && rc == SC_OK;
    if (installed) {
        pthread_rwlock_wrlock(&r->list_lock);
        mf_unlink(r, u);
        pthread_rwlock_unlock(&r->list_lock);
        p = NULL;
        m = NULL;
    } else if (!canceled) {
        fail_unparsed(r, u, err.code != API_OK ? err.message : sc_strerror(rc));
    }
    pthread_mutex_unlock(&r->reg_mu);
    if (m == NULL || m->plan != p)
        plan_free(p);
    mf_unref(m);
    free(u->body);
    u->body = NULL;
    mf_unref(u); /* ours; and the list's, when it was unlinked */
    if (installed)
        mf_unref(u);
    mf_kick(r);
}

void *mf_registrar_main(void *arg)
{
    struct mf_registry *r = arg;
    pthread_mutex_lock(&r->wake_mu);
    while (!r->stopping) {
        if (!r->parse_pending) {
            pthread_cond_wait(&r->parse_wake, &r->wake_mu);
            continue;
        }
        r->parse_pending = false;
        pthread_mutex_unlock(&r->wake_mu);
        struct mf *u;
        while (!mf_stopping(r) && (u = next_unparsed(r)) != NULL)
            parse_one(r, u);
        pthread_mutex_lock(&r->wake_mu);
    }
    pthread_mutex_unlock(&r->wake_mu);
    return NULL;
}
